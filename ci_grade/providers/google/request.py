"""A promptfoo prompt and `google:`/`vertex:` config as a Gemini `generateContent` request.

The request is built in the API's own JSON shape (camelCase, as promptfoo sends it): a chat prompt's
system messages become `systemInstruction` (after `config.systemInstruction`), `assistant` turns
become `model` turns, OpenAI-style content parts and function tools are converted, and the
generation options (`temperature`, `topP`, `topK`, `stopSequences`, `maxOutputTokens`, then
`generationConfig` as given, then `responseSchema` as `response_schema` with JSON output) keep
promptfoo's precedence.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ci_grade.errors import ProviderError
from ci_grade.providers.base import parse_chat_messages

OPTION_KEYS = ("temperature", "topP", "topK", "stopSequences", "maxOutputTokens")


def contents_and_system(prompt: str, config: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The `contents` turns and the `systemInstruction` (None without one)."""
    contents: list[dict[str, Any]] = []
    system_parts: list[dict[str, Any]] = []
    keep_assistant = bool(config.get("useAssistantRole"))
    for message in parse_chat_messages(prompt):
        role = str(message.get("role"))
        parts = message["parts"] if isinstance(message.get("parts"), list) else _parts(message.get("content", ""))
        if role == "system":
            system_parts.extend(parts)
        else:
            turn_role = "model" if role == "assistant" and not keep_assistant else role
            contents.append({"role": turn_role, "parts": parts})
    configured = config.get("systemInstruction")
    if isinstance(configured, str):
        system_parts = [{"text": configured}, *system_parts]
    elif isinstance(configured, dict) and isinstance(configured.get("parts"), list):
        system_parts = [*configured["parts"], *system_parts]
    return contents, ({"parts": system_parts} if system_parts else None)


def _parts(content: Any) -> list[dict[str, Any]]:
    """Message content (text, or OpenAI-style content parts) as Gemini parts."""
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append({"text": str(item.get("text", ""))})
            elif isinstance(item, dict) and "type" not in item:
                parts.append(item)  # already a Gemini part
            else:
                parts.append({"text": item if isinstance(item, str) else json.dumps(item)})
        return parts
    return [{"text": content if isinstance(content, str) else json.dumps(content)}]


def tools(config: dict[str, Any]) -> list[dict[str, Any]]:
    """`config.tools` in Gemini's shape: OpenAI-style function tools become `functionDeclarations`
    (the SDK takes the others' keys in snake_case or camelCase)."""
    raw = config.get("tools") or []
    declarations: list[dict[str, Any]] = []
    converted: list[dict[str, Any]] = []
    for tool in raw if isinstance(raw, list) else [raw]:
        if not isinstance(tool, dict):
            raise ProviderError(f"config.tools: each tool must be a mapping, got {tool!r}")
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            function = tool["function"]
            declaration = {k: function[k] for k in ("name", "description", "parameters") if function.get(k) is not None}
            declarations.append(declaration)
            continue
        converted.append(tool)
    return ([{"functionDeclarations": declarations}] if declarations else []) + converted


def generation_config(config: dict[str, Any], response_schema: dict[str, Any] | None) -> dict[str, Any]:
    """`generationConfig`: top-level options, then `config.generationConfig`, then the response schema.

    `response_schema` is a grader's JSON Schema for its verdict, sent as `responseJsonSchema`
    unless the config already asks for a schema."""
    generation = {key: config[key] for key in OPTION_KEYS if config.get(key) is not None}
    generation.update(copy.deepcopy(config.get("generationConfig") or {}))
    schema = config.get("responseSchema")
    if schema is not None:
        if "response_schema" in generation or "responseSchema" in generation:
            raise ProviderError("`responseSchema` provided but `generationConfig.response_schema` already set.")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except ValueError as exc:
                raise ProviderError(f"config.responseSchema is not valid JSON: {exc}") from None
        generation["response_schema"] = schema
        generation["response_mime_type"] = "application/json"
    elif response_schema is not None and not _asks_for_schema(generation):
        generation["responseJsonSchema"] = response_schema
        generation["responseMimeType"] = "application/json"
    return generation


def _asks_for_schema(generation: dict[str, Any]) -> bool:
    keys = ("response_schema", "responseSchema", "response_json_schema", "responseJsonSchema")
    return any(key in generation for key in keys)


def build(prompt: str, config: dict[str, Any], response_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole request body (without the model, which is in the URL)."""
    contents, system = contents_and_system(prompt, config)
    body: dict[str, Any] = {"contents": contents}
    generation = generation_config(config, response_schema)
    if generation:
        body["generationConfig"] = generation
    if config.get("safetySettings"):
        body["safetySettings"] = config["safetySettings"]
    if config.get("toolConfig"):
        body["toolConfig"] = config["toolConfig"]
    if declared := tools(config):
        body["tools"] = declared
    if system is not None:
        body["systemInstruction"] = system
    return body
