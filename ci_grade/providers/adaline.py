"""Adaline Gateway ids (`adaline:<vendor>:<chat|embedding>:<model>`) served by ci-grade's own families.

promptfoo's Adaline Gateway calls each vendor's own API with that vendor's keys, so an Adaline id
is the vendor's family under another name: `ROUTES` maps each vendor the gateway offers to the
ci-grade id that calls the same API (`adaline:openai:chat:gpt-4o` is `openai:chat:gpt-4o`), and
results keep the id as written. As in promptfoo, a call is in one of two formats:

- gateway: the prompt is a JSON message list whose content parts carry a `modality`
  (`{"modality": "text", "value": ...}`, images by URL or base64), or the config uses the
  gateway's own keys (`maxTokens`, `topP`, `responseFormat`, tools given as `definition`, ...).
  Messages and keys are rewritten into the vendor's shape (`DIALECTS`); tool calls come back as the
  gateway's content parts (`[{modality: tool-call, index, id, name, arguments}]`), and a
  `json_schema` reply as its data.
- openai: anything else; the prompt and config go to the vendor family as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    EmbeddingResponse,
    Provider,
    ProviderResponse,
    parse_chat_messages,
)

Dialect = Literal["openai", "anthropic", "google"]


@dataclass(frozen=True)
class Route:
    """A vendor behind the gateway: the ci-grade ids for its chat and embedding models, and the
    message and config shape its API takes."""

    chat: str | None
    embedding: str | None
    dialect: Dialect = "openai"


ROUTES: dict[str, Route] = {
    "openai": Route("openai:chat:{model}", "openai:embedding:{model}"),
    "azureopenai": Route("azure:chat:{model}", "azure:embedding:{model}"),
    "anthropic": Route("anthropic:messages:{model}", None, "anthropic"),
    "google": Route("google:{model}", None, "google"),
    "vertex": Route("vertex:{model}", "vertex:embedding:{model}", "google"),
    "groq": Route("groq:{model}", None),
    "openrouter": Route("openrouter:{model}", None),
    "togetherai": Route("togetherai:{model}", None),
    "voyage": Route(None, "voyage:{model}"),
}

# Gateway config keys -> each dialect's own key (None: not sent). `stop` is renamed where the API
# names it differently; keys not listed here are dropped in gateway format, as the gateway drops them.
DIALECTS: dict[Dialect, dict[str, str | None]] = {
    "openai": {"maxTokens": "max_tokens", "temperature": "temperature", "topP": "top_p", "frequencyPenalty": "frequency_penalty",
               "presencePenalty": "presence_penalty", "stop": "stop", "seed": "seed", "logProbs": "logprobs", "toolChoice": "tool_choice"},
    "anthropic": {"maxTokens": "max_tokens", "temperature": "temperature", "topP": "top_p", "topK": "top_k", "stop": "stop_sequences",
                  "toolChoice": "tool_choice"},
    "google": {"maxTokens": "maxOutputTokens", "temperature": "temperature", "topP": "topP", "topK": "topK", "stop": "stopSequences",
               "safetySettings": "safetySettings"},
}
GATEWAY_KEYS = frozenset({"maxTokens", "topP", "topK", "minP", "frequencyPenalty", "presencePenalty", "repetitionPenalty", "logProbs",
                          "responseFormat", "responseSchema", "toolChoice"})
"""promptfoo reads a call as gateway format when the config has one of these."""
PASSED_ON = ("apiKey", "apiKeyEnvar", "apiHost", "apiBaseUrl", "headers", "cost", "organization", "apiVersion", "timeout", "maxConcurrency")
"""Connection settings every call passes to the vendor's family."""


def parse(provider_id: str) -> tuple[str, str, str]:
    """(vendor, kind, model) as promptfoo splits the id; UnknownProviderError when it cannot run."""
    parts = provider_id.split(":")
    if len(parts) < 4 or not parts[3]:
        raise UnknownProviderError(f"{provider_id}: write adaline:<vendor>:<chat|embedding>:<model>, e.g. adaline:openai:chat:gpt-4o")
    vendor, kind, model = parts[1], parts[2], parts[3]
    kind = "embedding" if kind in ("embedding", "embeddings") else "chat"
    route = ROUTES.get(vendor)
    if route is None:
        raise UnknownProviderError(f"{provider_id}: the Adaline Gateway vendor {vendor!r} is not one ci-grade serves ({', '.join(ROUTES)})")
    if (route.embedding if kind == "embedding" else route.chat) is None:
        offered = "embedding" if kind == "chat" else "chat"
        raise UnknownProviderError(f"{provider_id}: Adaline Gateway's {vendor} offers {offered} models only")
    return vendor, kind, model


def check_id(provider_id: str) -> str | None:
    """Why this Adaline id cannot run (its shape, a vendor or kind the gateway does not offer), or None."""
    try:
        vendor, kind, model = parse(provider_id)
    except UnknownProviderError as exc:
        return str(exc)
    from ci_grade.providers.registry import id_problem

    return id_problem(inner_id(vendor, kind, model))


def inner_id(vendor: str, kind: str, model: str) -> str:
    route = ROUTES[vendor]
    template = route.embedding if kind == "embedding" else route.chat
    assert template is not None
    return template.format(model=model)


def is_gateway_format(prompt: str, config: Mapping[str, Any]) -> bool:
    """promptfoo's choice between the gateway's and OpenAI's request format for one call."""
    try:
        data = json.loads(prompt.strip())
    except ValueError:
        data = None
    if isinstance(data, list) and data and isinstance(data[0], dict) and "content" in data[0]:
        content = data[0]["content"]
        if isinstance(content, str) or (isinstance(content, list) and content and isinstance(content[0], dict) and "type" in content[0]):
            return False
        if isinstance(content, list) and content and isinstance(content[0], dict) and "modality" in content[0]:
            return True
    tools = config.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[0], dict):
        if "definition" in tools[0]:
            return True
        if "function" in tools[0]:
            return False
    return bool(GATEWAY_KEYS & set(config))


def gateway_config(config: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    """The gateway's config keys as the vendor family's own."""
    renames = DIALECTS[dialect]
    out: dict[str, Any] = {key: config[key] for key in PASSED_ON if key in config}
    for key, value in config.items():
        if renames.get(key) and value is not None:
            out[str(renames[key])] = value
    if isinstance(config.get("tools"), list):
        out["tools"] = [_openai_tool(tool) for tool in config["tools"]]
    fmt, schema = config.get("responseFormat"), config.get("responseSchema")
    if dialect == "openai" and fmt in ("json_object", "json_schema"):
        out["response_format"] = {"type": "json_schema", "json_schema": schema} if fmt == "json_schema" and isinstance(schema, dict) else {"type": "json_object"}
    elif dialect == "google" and fmt == "json_schema" and isinstance(schema, dict):
        out["responseSchema"] = schema.get("schema", schema)
    if dialect == "google" and config.get("seed") is not None:
        out["generationConfig"] = {"seed": config["seed"]}
    return out


def _openai_tool(tool: Any) -> Any:
    """A gateway tool (`{type: function, definition: {schema: {name, description, parameters}}}`) in OpenAI's shape."""
    if isinstance(tool, dict) and isinstance(tool.get("definition"), dict) and isinstance(tool["definition"].get("schema"), dict):
        return {"type": "function", "function": tool["definition"]["schema"]}
    return tool


def gateway_messages(prompt: str, dialect: Dialect) -> str:
    """A gateway message list (parts with a `modality`) as the vendor's chat messages, as JSON."""
    messages = []
    for message in parse_chat_messages(prompt):
        content = message.get("content")
        parts = [_part(item, dialect) for item in content] if isinstance(content, list) else content
        messages.append({"role": message.get("role"), ("parts" if dialect == "google" and isinstance(parts, list) else "content"): parts})
    return json.dumps(messages)


def _part(item: Any, dialect: Dialect) -> Any:
    """One content part (`{modality: text | image, value}`) in the dialect's shape."""
    if not isinstance(item, dict) or "modality" not in item:
        return item
    value = item.get("value")
    if item["modality"] == "text":
        return {"text": str(value)} if dialect == "google" else {"type": "text", "text": str(value)}
    if item["modality"] == "image" and isinstance(value, dict):
        media = str(value.get("media_type") or "jpeg")
        mime = media if "/" in media else f"image/{media}"
        if value.get("type") == "base64":
            data = str(value.get("base64") or "")
            if dialect == "anthropic":
                return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
            if dialect == "google":
                return {"inlineData": {"mimeType": mime, "data": data}}
            return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}", "detail": item.get("detail", "auto")}}
        url = str(value.get("url") or "")
        if dialect == "anthropic":
            return {"type": "image", "source": {"type": "url", "url": url}}
        if dialect == "google":
            return {"fileData": {"mimeType": mime, "fileUri": url}}
        return {"type": "image_url", "image_url": {"url": url, "detail": item.get("detail", "auto")}}
    return {"text": json.dumps(item)} if dialect == "google" else {"type": "text", "text": json.dumps(item)}


def gateway_output(output: Any) -> Any:
    """OpenAI-shaped tool calls as the gateway's content parts (text, then tool calls)."""
    message = output if isinstance(output, dict) and isinstance(output.get("tool_calls"), list) else None
    calls = message["tool_calls"] if message else output
    if not isinstance(calls, list) or not calls or not all(isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls):
        return output
    parts: list[dict[str, Any]] = [{"modality": "text", "value": message["content"]}] if message and message.get("content") else []
    for index, call in enumerate(calls):
        function = call["function"]
        parts.append({"modality": "tool-call", "index": index, "id": call.get("id"), "name": function.get("name"), "arguments": function.get("arguments")})
    return parts


class AdalineProvider(Provider):
    """An Adaline Gateway id, served by the family of the vendor it names (built on first use per format)."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.vendor, self.kind, self._model = parse(spec.id)
        self.route = ROUTES[self.vendor]
        self._max_concurrency = max_concurrency
        self._inner: dict[bool, Provider] = {}
        self.limiter = self.inner(False).limiter

    @property
    def model(self) -> str:
        return self._model

    def inner(self, gateway: bool) -> Provider:
        """The vendor family's provider, configured for the gateway format or as the config is."""
        provider = self._inner.get(gateway)
        if provider is None:
            from ci_grade.providers.registry import create_provider

            config = gateway_config(self.spec.config, self.route.dialect) if gateway else dict(self.spec.config)
            inner = ProviderSpec(id=inner_id(self.vendor, self.kind, self._model), config=config, label=self.spec.label)
            provider = self._inner[gateway] = create_provider(inner, self.env, self._max_concurrency, self.base_dir)
        provider.cache, provider.budget, provider.base_dir = self.cache, self.budget, self.base_dir
        return provider

    def supports(self, kind: Capability) -> bool:
        return self.inner(False).supports(kind)

    def price(self) -> tuple[float, float] | None:
        return self.inner(False).price()

    async def call(self, prompt: str, context: CallContext | None = None) -> ProviderResponse:
        if self.kind == "embedding":
            return await self.inner(False).call(prompt, context)
        gateway = is_gateway_format(prompt, self.spec.config)
        if not gateway:
            return await self.inner(False).call(prompt, context)
        try:
            messages = gateway_messages(prompt, self.route.dialect)
        except ProviderError as exc:  # a prompt that looks like a JSON message list but is not one
            return ProviderResponse(error=str(exc))
        response = await self.inner(True).call(messages, context)
        response.output = gateway_output(response.output)
        if self.spec.config.get("responseFormat") == "json_schema" and isinstance(response.output, str):
            try:
                response.output = json.loads(response.output)
            except ValueError:
                response = ProviderResponse(error=f"Failed to parse JSON output: {response.output[:200]}", token_usage=response.token_usage)
        return response

    async def embed(self, text: str) -> EmbeddingResponse:
        return await self.inner(False).embed(text)

    async def aclose(self) -> None:
        for provider in self._inner.values():
            await provider.aclose()


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> AdalineProvider:
    """`adaline:<vendor>:<chat|embedding>:<model>`."""
    return AdalineProvider(spec, env, max_concurrency)
