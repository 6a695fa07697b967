"""Bedrock's Converse API as promptfoo's `bedrock:converse:<model>` uses it: the request from a
prompt and config, and the output from the reply.

A prompt that is a JSON array of chat messages is sent as messages (system ones in `system`);
otherwise lines starting `system:`, `user:` or `assistant:` split it into turns, and plain text is
one user turn. Config, as promptfoo reads it: `maxTokens`/`max_tokens`, `temperature`,
`topP`/`top_p`, `stopSequences`/`stop` (defaults from AWS_BEDROCK_MAX_TOKENS,
AWS_BEDROCK_TEMPERATURE, AWS_BEDROCK_TOP_P, AWS_BEDROCK_STOP), `inferenceConfig` (sent as given,
under those), `tools` (Converse, OpenAI or Anthropic shape) and `toolChoice`, `thinking`,
`reasoningConfig` and `additionalModelRequestFields`, `additionalModelResponseFieldPaths`,
`guardrailIdentifier`/`guardrailVersion`/`trace`, `performanceConfig`, `serviceTier`.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

from ci_grade.providers.base import CallContext

EnvValue = Callable[[str], str | None]
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
MALFORMED = {
    "malformed_model_output": "Model produced invalid output. The response could not be parsed correctly.",
    "malformed_tool_use": "Model produced a malformed tool use request. Check tool configuration and input schema.",
}
_DATA_URL = re.compile(r"^data:image/([^;]+);base64,(.+)$", re.S)
_ROLE_LINE = re.compile(r"^(system|user|assistant):", re.I)


def chat_messages(prompt: str) -> list[dict[str, Any]] | None:
    """The prompt as a JSON array of `{role, ...}` messages, or None when it is not one."""
    if not prompt.lstrip().startswith("["):
        return None
    try:
        data = json.loads(prompt)
    except ValueError:
        return None
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return data
    return None


def role_turns(prompt: str) -> tuple[list[tuple[str, str]], str | None]:
    """promptfoo's line format: `system:`/`user:`/`assistant:` lines open turns; other lines
    continue the current turn (or open a user turn). Returns the turns and the system text."""
    turns: list[tuple[str, str]] = []
    system: str | None = None
    role: str | None = None
    lines: list[str] = []
    for line in prompt.split("\n"):
        found = _ROLE_LINE.match(line.strip())
        if found:
            if role and lines:
                turns.append((role, "\n".join(lines)))
            lines = []
            kind = found.group(1).lower()
            rest = line.strip()[len(kind) + 1 :].strip()
            if kind == "system":
                system, role = rest, None
            else:
                role = kind
                lines = [rest] if rest else []
        elif role:
            lines.append(line)
        else:
            role, lines = "user", [line]
    if role and lines:
        turns.append((role, "\n".join(lines)))
    if not turns:
        turns = [("user", prompt)]
    return turns, system


def converse_messages(prompt: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages, system blocks) for the Converse API."""
    chat = chat_messages(prompt)
    if chat is None:
        turns, system_text = role_turns(prompt)
        return [{"role": r, "content": [{"text": t}]} for r, t in turns], ([{"text": system_text}] if system_text else [])
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in chat:
        content = message.get("content", "")
        if message["role"] == "system":
            system.append({"text": content if isinstance(content, str) else json.dumps(content)})
        elif message["role"] in ("user", "assistant"):
            messages.append({"role": message["role"], "content": _blocks(content)})
    return messages, system


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if not isinstance(content, list):
        return [{"text": json.dumps(content)}]
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            blocks.append({"text": block})
        elif not isinstance(block, dict):
            blocks.append({"text": json.dumps(block)})
        elif block.get("type") == "text" or (set(block) == {"text"}):
            blocks.append({"text": str(block.get("text", ""))})
        elif image := _image(block):
            blocks.append(image)
        elif "toolUse" in block or "toolResult" in block or "document" in block:
            blocks.append(block)
        elif block.get("type") == "tool_use":
            blocks.append({"toolUse": {"toolUseId": block.get("id"), "name": block.get("name"), "input": block.get("input")}})
        elif block.get("type") == "tool_result":
            result = block.get("content")
            parts = [{"text": c} if isinstance(c, str) else c for c in result] if isinstance(result, list) else [{"text": str(result)}]
            blocks.append({"toolResult": {"toolUseId": block.get("tool_use_id"), "content": parts}})
        else:
            blocks.append({"text": json.dumps(block)})
    return blocks


def _image(block: dict[str, Any]) -> dict[str, Any] | None:
    """An image block (Converse, Anthropic or OpenAI `image_url` data-URL shape) with its bytes decoded."""
    url = (block.get("image_url") or {}).get("url") if isinstance(block.get("image_url"), dict) else None
    if isinstance(url, str) and (found := _DATA_URL.match(url)):
        return {"image": {"format": _format(found.group(1)), "source": {"bytes": base64.b64decode(found.group(2))}}}
    if block.get("type") != "image" and not isinstance(block.get("image"), dict):
        return None
    image = as_dict(block.get("image")) or block
    source = as_dict(image.get("source"))
    data = source.get("bytes") or source.get("data")
    if not isinstance(data, str):
        return None
    kind = image.get("format") or str(source.get("media_type") or "image/png").split("/")[-1]
    if found := _DATA_URL.match(data):
        kind, data = found.group(1), found.group(2)
    return {"image": {"format": _format(kind), "source": {"bytes": base64.b64decode(data)}}}


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a mapping, else an empty one."""
    return value if isinstance(value, dict) else {}


def _format(kind: str) -> str:
    return "jpeg" if kind == "jpg" else kind


def _number(value: Any, cast: Callable[[str], Any]) -> Any:
    try:
        return None if value in (None, "") else cast(value)
    except ValueError:
        return None


def inference_config(config: dict[str, Any], env: EnvValue) -> dict[str, Any]:
    """`inferenceConfig` as promptfoo builds it (with Nova 2 reasoning's limits: no sampling
    parameters while reasoning, no token cap at high effort)."""
    reasoning = as_dict(config.get("reasoningConfig"))
    reasoning_on = reasoning.get("type") == "enabled"
    max_tokens = config.get("maxTokens", config.get("max_tokens", _number(env("AWS_BEDROCK_MAX_TOKENS"), int)))
    temperature = config.get("temperature", _number(env("AWS_BEDROCK_TEMPERATURE"), float))
    top_p = config.get("topP", config.get("top_p", _number(env("AWS_BEDROCK_TOP_P"), float)))
    stop = config.get("stopSequences") or config.get("stop")
    if not stop and env("AWS_BEDROCK_STOP"):
        try:
            stop = json.loads(str(env("AWS_BEDROCK_STOP")))
        except ValueError:
            stop = None
    result = dict(config.get("inferenceConfig") or {})
    if max_tokens is not None and not (reasoning_on and reasoning.get("maxReasoningEffort") == "high"):
        result["maxTokens"] = int(max_tokens)
    if temperature is not None and not reasoning_on:
        result["temperature"] = float(temperature)
    if top_p is not None and not reasoning_on:
        result["topP"] = float(top_p)
    if stop:
        result["stopSequences"] = list(stop)
    return result


def converse_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool in Converse's `toolSpec` shape, from the Converse, OpenAI or Anthropic shape."""
    if "toolSpec" in tool:
        return {"toolSpec": tool["toolSpec"]}
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        function = tool["function"]
        name, description, schema = function.get("name"), function.get("description"), function.get("parameters") or {}
    elif tool.get("name"):
        name, description = tool["name"], tool.get("description")
        schema = tool.get("input_schema") or tool.get("parameters") or {"type": "object", "properties": {}}
    else:
        raise ValueError(f"invalid tool configuration: {json.dumps(tool)}")
    spec: dict[str, Any] = {"name": name, "inputSchema": {"json": schema}}
    if description:
        spec["description"] = description
    return {"toolSpec": spec}


def tool_choice(choice: Any) -> dict[str, Any]:
    """`toolChoice` in Converse's shape from Converse or OpenAI values (anything else: auto)."""
    if choice in ("any", "required"):
        return {"any": {}}
    if isinstance(choice, dict):
        if isinstance(choice.get("tool"), dict) and isinstance(choice["tool"].get("name"), str):
            return {"tool": {"name": choice["tool"]["name"]}}
        if choice.get("type") == "function" and isinstance(choice.get("function"), dict):
            return {"tool": {"name": choice["function"].get("name")}}
        if "any" in choice or "auto" in choice:
            return choice
    return {"auto": {}}


def converse_request(model: str, prompt: str, config: dict[str, Any], env: EnvValue, context: CallContext) -> tuple[dict[str, Any], bool]:
    """The `converse` call's parameters, and whether a tool call was forced for a structured reply."""
    messages, system = converse_messages(prompt)
    request: dict[str, Any] = {"modelId": model, "messages": messages}
    if system:
        request["system"] = system
    if inference := inference_config(config, env):
        request["inferenceConfig"] = inference
    forced = False
    if config.get("tools"):
        tools: dict[str, Any] = {"tools": [converse_tool(t) for t in config["tools"]]}
        if config.get("toolChoice") is not None:
            tools["toolChoice"] = tool_choice(config["toolChoice"])
        request["toolConfig"] = tools
    elif context.response_schema is not None and ("anthropic." in model or "amazon.nova" in model):
        name = context.response_schema_name
        spec = {"name": name, "description": "Record your answer.", "inputSchema": {"json": context.response_schema}}
        request["toolConfig"] = {"tools": [{"toolSpec": spec}], "toolChoice": {"tool": {"name": name}}}
        forced = True
    if config.get("guardrailIdentifier"):
        guardrail = {"guardrailIdentifier": str(config["guardrailIdentifier"]), "guardrailVersion": str(config.get("guardrailVersion") or "DRAFT")}
        if config.get("trace"):
            guardrail["trace"] = str(config["trace"])
        request["guardrailConfig"] = guardrail
    extra = dict(config.get("additionalModelRequestFields") or {})
    extra.update({key: config[key] for key in ("thinking", "reasoningConfig") if config.get(key)})
    if extra:
        request["additionalModelRequestFields"] = extra
    if config.get("additionalModelResponseFieldPaths"):
        request["additionalModelResponseFieldPaths"] = list(config["additionalModelResponseFieldPaths"])
    if isinstance(config.get("performanceConfig"), dict):
        request["performanceConfig"] = {"latency": config["performanceConfig"].get("latency")}
    if isinstance(config.get("serviceTier"), dict):
        request["serviceTier"] = {"type": config["serviceTier"].get("type")}
    return request, forced


def converse_output(blocks: list[dict[str, Any]], show_thinking: bool, forced: bool) -> Any:
    """promptfoo's output: text blocks, reasoning as `<thinking>` (unless `showThinking: false`)
    and tool calls as JSON, joined by blank lines; a forced call is just its input object."""
    calls = [b["toolUse"] for b in blocks if isinstance(b.get("toolUse"), dict)]
    if forced and len(calls) == 1 and not any(b.get("text") for b in blocks):
        return calls[0].get("input")
    parts: list[str] = []
    for block in blocks:
        if block.get("text"):
            parts.append(str(block["text"]))
        elif isinstance(block.get("reasoningContent"), dict):
            reasoning = block["reasoningContent"]
            if not show_thinking:
                continue
            if isinstance(reasoning.get("reasoningText"), dict):
                parts.append(f"<thinking>\n{reasoning['reasoningText'].get('text') or ''}\n</thinking>")
                if reasoning["reasoningText"].get("signature"):
                    parts.append(f"Signature: {reasoning['reasoningText']['signature']}")
            elif reasoning.get("redactedContent"):
                parts.append("<thinking>[Redacted]</thinking>")
        elif isinstance(block.get("toolUse"), dict):
            call = block["toolUse"]
            parts.append(json.dumps({"type": "tool_use", "id": call.get("toolUseId"), "name": call.get("name"), "input": call.get("input")}))
    return "\n\n".join(parts)
