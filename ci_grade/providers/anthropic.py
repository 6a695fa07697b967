"""Anthropic's Messages API over httpx: `anthropic:messages:<model>` (or `anthropic:<model>`).

System messages of a chat prompt go to the `system` field; tools and `tool_choice` are passed in
Anthropic's schema (OpenAI-style function tools are converted). The output is the text blocks
joined; a reply made only of tool calls is the list of those calls, and a call the request forced
(`tool_choice` of type `tool` or `any`) is just the tool's input object, which is what graders
asking for structured output read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.base import CallContext, ProviderResponse, parse_chat_messages
from ci_grade.providers.http_api import HttpApiProvider, error_detail
from ci_grade.providers.pricing import estimate_cost, price_per_token
from ci_grade.results.usage import TokenUsage

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
# Request fields copied from config as they are.
PASSTHROUGH = ("top_p", "top_k", "stop_sequences", "metadata", "thinking", "service_tier")
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class AnthropicMessagesProvider(HttpApiProvider):
    """`anthropic:messages:<model>`: one POST to `{base}/v1/messages` per call."""

    key_names = ("ANTHROPIC_API_KEY",)

    default_model: ClassVar[str] = "claude-sonnet-4-5"
    price_family: ClassVar[str | None] = "anthropic"

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str | None, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._model = model or self.default_model

    @property
    def model(self) -> str:
        return self._model

    def describe(self) -> str:
        return f"anthropic:messages:{self._model}"

    def max_output_tokens(self) -> int:
        """`max_tokens` as the request sends it (the API requires one)."""
        return int(self.spec.config.get("max_tokens") or self.env_value("ANTHROPIC_MAX_TOKENS") or DEFAULT_MAX_TOKENS)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.url()}

    def url(self) -> str:
        base = str(self.spec.config.get("apiBaseUrl") or self.env_value("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        return f"{base.removesuffix('/v1')}/v1/messages"

    def headers(self, key: str) -> dict[str, str]:
        config = self.spec.config
        headers = {"x-api-key": key, "anthropic-version": str(config.get("anthropicVersion") or API_VERSION)}
        beta = config.get("beta")
        if beta:
            headers["anthropic-beta"] = ",".join(beta) if isinstance(beta, list) else str(beta)
        headers.update({str(k): str(v) for k, v in (config.get("headers") or {}).items()})
        return headers

    def body(self, prompt: str, context: CallContext) -> dict[str, Any]:
        config = self.spec.config
        system: list[Any] = []
        messages: list[dict[str, Any]] = []
        for message in parse_chat_messages(prompt, strict=False):
            if message.get("role") == "system":
                system.append(message.get("content"))
            else:
                messages.append({"role": message["role"], "content": message.get("content", "")})
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": int(config.get("max_tokens") or self.env_value("ANTHROPIC_MAX_TOKENS") or DEFAULT_MAX_TOKENS),
            "messages": messages,
        }
        if system:
            body["system"] = _system_field(system)
        if not _omits_temperature(self._model or "", config):  # promptfoo's default: 0
            body["temperature"] = float(config.get("temperature", self.env_value("ANTHROPIC_TEMPERATURE") or 0))
        body.update({k: config[k] for k in PASSTHROUGH if config.get(k) is not None})
        if config.get("tools"):
            body["tools"] = [_anthropic_tool(t) for t in config["tools"]]
        if config.get("tool_choice") is not None:
            body["tool_choice"] = _anthropic_tool_choice(config["tool_choice"])
        elif context.response_schema is not None and not config.get("tools"):
            name = context.response_schema_name
            body["tools"] = [{"name": name, "description": "Record your answer.", "input_schema": context.response_schema}]
            body["tool_choice"] = {"type": "tool", "name": name}
        if isinstance(config.get("passthrough"), dict):
            body.update(config["passthrough"])
        return body

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        key = str(self.api_key())
        body = self.body(prompt, context)
        try:
            data = await self.post_json(self.url(), body, self.headers(key), check=_missing_content)
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return self.to_response(data, forced=_is_forced(body.get("tool_choice")))

    def to_response(self, data: Any, forced: bool) -> ProviderResponse:
        """A reply that is an error or has a content list (`_missing_content` retried the others)."""
        if data.get("type") == "error":
            return ProviderResponse(error=f"API error: {error_detail(data)}")
        blocks = [b for b in data["content"] if isinstance(b, dict)]
        calls = [b for b in blocks if b.get("type") == "tool_use"]
        texts = [b for b in blocks if b.get("type") == "text"]
        output: Any
        if len(calls) == 1 and forced and not texts:
            output = calls[0].get("input")  # a forced call (a grader's structured verdict): its arguments
        else:
            output = output_text(blocks, bool(self.spec.config.get("showThinking", True)))
        usage, cost = self.usage_and_cost(data.get("usage") or {}, str(data.get("model") or ""))
        stop = data.get("stop_reason")
        return ProviderResponse(
            output=output,
            token_usage=usage,
            cost=cost,
            finish_reason=FINISH_REASONS.get(stop or "", stop),
            is_refusal=stop == "refusal",
            metadata={"model": data["model"]} if data.get("model") else {},
        )

    def usage_and_cost(self, usage: dict[str, Any], reply_model: str) -> tuple[TokenUsage, float | None]:
        fresh = int(usage.get("input_tokens") or 0)
        read = int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
        output = int(usage.get("output_tokens") or 0)
        tokens = TokenUsage.of(fresh + read + written, output, cached=read)
        priced = self._model if price_per_token(self._model, "anthropic") else reply_model
        cost = estimate_cost(priced, self.spec.config, tokens.prompt, output, family="anthropic", cached_tokens=read, cache_write_tokens=written)
        return tokens, cost


def output_text(blocks: list[dict[str, Any]], show_thinking: bool) -> str:
    """promptfoo's `outputFromMessage`: the text blocks; with tool calls or thinking, every block in
    order, a call as its JSON and thinking as `Thinking: ...` unless `showThinking: false`."""
    if not any(b.get("type") in ("tool_use", "thinking", "redacted_thinking") for b in blocks):
        return "\n\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    parts = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "thinking":
            if show_thinking and str(block.get("thinking", "")).strip():
                parts.append(f"Thinking: {block.get('thinking')}\nSignature: {block.get('signature')}")
        elif kind == "redacted_thinking":
            if show_thinking:
                parts.append(f"Redacted Thinking: {block.get('data')}")
        else:
            parts.append(json.dumps(block, ensure_ascii=False, separators=(",", ":")))
    return "\n\n".join(part for part in parts if part)


_CLAUDE_5_OR_LATER = re.compile(r"(^|[^a-z0-9])claude-[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){0,4}-(?:[5-9]|[1-9][0-9])(?![a-z0-9])", re.I)


def _omits_temperature(model: str, config: dict[str, Any]) -> bool:
    """Where promptfoo sends no temperature: with `top_p`, with thinking on, and to Claude 5 and
    later, which refuse sampling parameters."""
    thinking = config.get("thinking")
    thinking_on = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    return config.get("top_p") is not None or thinking_on or refuses_sampling(model)


def refuses_sampling(model: str) -> bool:
    """Claude 5 and later (any id spelling: `anthropic.claude-opus-5`) refuse sampling parameters."""
    return bool(_CLAUDE_5_OR_LATER.search(model))


def _system_field(parts: list[Any]) -> Any:
    if all(isinstance(p, str) for p in parts):
        return "\n\n".join(parts)
    blocks: list[Any] = []
    for part in parts:
        blocks.extend(part if isinstance(part, list) else [{"type": "text", "text": str(part)}])
    return blocks


def _anthropic_tool(tool: Any) -> Any:
    """An OpenAI-style function tool in Anthropic's shape; Anthropic tools pass unchanged."""
    if isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        function = tool["function"]
        converted = {"name": function.get("name"), "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}
        if function.get("description"):
            converted["description"] = function["description"]
        return converted
    return tool


def _anthropic_tool_choice(choice: Any) -> Any:
    """OpenAI-style `tool_choice` values in Anthropic's shape; Anthropic values pass unchanged."""
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice in ("required", "any"):
        return {"type": "any"}
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    return choice


def _missing_content(data: Any) -> str | None:
    """What a 200 reply lacks (retried): a content list, unless it is an error."""
    if isinstance(data, dict) and (data.get("type") == "error" or isinstance(data.get("content"), list)):
        return None
    return "API reply has no content list"


def _is_forced(choice: Any) -> bool:
    return isinstance(choice, dict) and choice.get("type") in ("tool", "any")


def check_id(provider_id: str) -> str | None:
    """Why ci-grade cannot run this Anthropic id (the legacy Text Completions API, the Claude Agent
    SDK, a name that is not a Claude model, as promptfoo reads it), or None."""
    kind = provider_id.partition(":")[2].split(":")[0]
    if kind == "completion":
        return f"{provider_id}: Anthropic's legacy Text Completions API is not supported; use anthropic:messages:<model>"
    if kind in ("claude-agent-sdk", "claude-code"):
        return f"{provider_id}: the Claude Agent SDK (a local coding agent) is not run by ci-grade; use anthropic:messages:<model>"
    if kind not in ("", "messages") and not re.match(r"claude-[a-z0-9]", kind, re.I):
        return f"{provider_id}: {kind!r} is not an Anthropic model name; use anthropic:messages:<model> or anthropic:<claude model id>"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> AnthropicMessagesProvider:
    """`anthropic:messages:<model>` or `anthropic:<model>`."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    rest = spec.id.split(":", 1)[1] if ":" in spec.id else ""
    kind, _, model = rest.partition(":")
    if kind == "messages":
        return AnthropicMessagesProvider(spec, env, model or None, max_concurrency)
    return AnthropicMessagesProvider(spec, env, rest or None, max_concurrency)
