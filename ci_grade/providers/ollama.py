"""Ollama's REST API over httpx (non-streaming): chat, completion and embeddings.

Ids: `ollama:chat:<model>` (`/api/chat`), `ollama:completion:<model>` or `ollama:<model>`
(`/api/generate`), `ollama:embedding:<model>` or `ollama:embeddings:<model>` (`/api/embed`).
The server is `OLLAMA_BASE_URL` (or config `apiBaseUrl`), default `http://localhost:11434`;
`OLLAMA_API_KEY`, if set, is sent as a bearer token. Sampling settings in config (temperature,
num_predict, top_k, ...) go into the request's `options`. Local models cost nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    EmbeddingResponse,
    ModelProvider,
    ProviderResponse,
    parse_chat_messages,
)
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.results.usage import TokenUsage

DEFAULT_BASE_URL = "http://localhost:11434"
# Model parameters Ollama reads from a request's `options`.
OPTION_NAMES = frozenset(
    {
        "num_keep", "seed", "num_predict", "top_k", "top_p", "min_p", "typical_p", "repeat_last_n", "temperature",
        "repeat_penalty", "presence_penalty", "frequency_penalty", "mirostat", "mirostat_tau", "mirostat_eta",
        "penalize_newline", "stop", "numa", "num_ctx", "num_batch", "num_gpu", "main_gpu", "low_vram",
        "vocab_only", "use_mmap", "use_mlock", "num_thread",
    }
)
# Top-level request fields copied from config.
REQUEST_FIELDS = ("format", "keep_alive", "think", "tools", "system", "template", "raw")


class OllamaProvider(ModelProvider, HttpApiProvider):
    """Shared endpoint, authentication and option handling."""

    key_names = ("OLLAMA_API_KEY",)

    def sibling(self, kind: Capability) -> ProviderSpec | None:
        """Ollama chat/completion graders also serve embeddings (same server) with nomic-embed-text."""
        if kind != "embedding":
            return None
        return ProviderSpec(id="ollama:embedding:nomic-embed-text", config={k: v for k, v in self.spec.config.items() if k in ("apiBaseUrl", "baseUrl", "timeout")})

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "base_url": self.endpoint("")}

    def endpoint(self, path: str) -> str:
        base = str(self.spec.config.get("apiBaseUrl") or self.spec.config.get("baseUrl") or self.env_value("OLLAMA_BASE_URL") or DEFAULT_BASE_URL)
        return base.rstrip("/") + path

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request_body(self, **fields: Any) -> dict[str, Any]:
        config = self.spec.config
        options = {k: v for k, v in config.items() if k in OPTION_NAMES}
        if "num_predict" not in options and config.get("max_tokens") is not None:
            options["num_predict"] = config["max_tokens"]
        if isinstance(config.get("options"), dict):
            options.update(config["options"])
        body: dict[str, Any] = {"model": self._model, **fields, "stream": False}
        body.update({k: config[k] for k in REQUEST_FIELDS if config.get(k) is not None})
        if options:
            body["options"] = options
        if isinstance(config.get("passthrough"), dict):
            body.update(config["passthrough"])
        return body

    async def generate(self, path: str, body: dict[str, Any], output_of: Callable[[dict[str, Any]], Any]) -> ProviderResponse:
        """POST a generation request; `output_of` reads the output from the reply."""
        try:
            data = await self.post_json(self.endpoint(path), body, self.headers(), check=lambda reply: _missing_output(reply, output_of))
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        if data.get("error"):
            return ProviderResponse(error=f"API error: {data['error']}")
        output = output_of(data)
        message = data.get("message") if isinstance(data.get("message"), dict) else data
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking and isinstance(output, str) and "format" not in body and self.spec.config.get("showThinking", True):
            output = f"Thinking: {thinking}\n\n{output}" if output else f"Thinking: {thinking}"  # as promptfoo shows it (never into a verdict)
        usage = TokenUsage.of(data.get("prompt_eval_count"), data.get("eval_count"))
        reason = data.get("done_reason")
        finish = "length" if reason == "length" else "stop"  # as promptfoo: Ollama says nothing of tool calls
        return ProviderResponse(output=output, token_usage=usage, cost=0.0, finish_reason=finish)


class OllamaChatProvider(OllamaProvider):
    """`ollama:chat:<model>`: `/api/chat` with the prompt as chat messages."""

    def describe(self) -> str:
        return f"ollama:chat:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        body = self.request_body(messages=parse_chat_messages(prompt))
        if context.response_schema is not None and "format" not in body:
            body["format"] = context.response_schema
        return await self.generate("/api/chat", body, self.output_of)

    def output_of(self, data: dict[str, Any]) -> Any:
        """As promptfoo reads a chat reply: its text, or its tool calls (arguments as JSON text),
        with the text beside them when there is any."""
        message = data.get("message")
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        calls = [_tool_call(call) for call in message.get("tool_calls") or [] if isinstance(call, dict)]
        if calls:
            return {"content": content, "tool_calls": calls} if isinstance(content, str) and content.strip() else calls
        return content


class OllamaCompletionProvider(OllamaProvider):
    """`ollama:completion:<model>` and `ollama:<model>`: `/api/generate` with the raw prompt."""

    def describe(self) -> str:
        return f"ollama:completion:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        body = self.request_body(prompt=prompt)
        if context.response_schema is not None and "format" not in body:
            body["format"] = context.response_schema
        return await self.generate("/api/generate", body, self.output_of)

    def output_of(self, data: dict[str, Any]) -> Any:
        return data.get("response")


class OllamaEmbeddingProvider(OllamaProvider):
    """`ollama:embedding:<model>`: `/api/embed`."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"embedding"})

    def describe(self) -> str:
        return f"ollama:embedding:{self._model}"

    async def _embed(self, text: str) -> EmbeddingResponse:
        body = self.request_body(input=text)
        body.pop("stream", None)
        try:
            data = await self.post_json(self.endpoint("/api/embed"), body, self.headers(), check=_missing_embeddings)
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        try:
            vector = [float(v) for v in data["embeddings"][0]]
        except (TypeError, ValueError):
            return EmbeddingResponse(error="API reply has a non-numeric embedding")
        usage = TokenUsage.of(data.get("prompt_eval_count"), 0)
        return EmbeddingResponse(embedding=vector, token_usage=usage, cost=0.0)


def _missing_output(data: Any, output_of: Callable[[dict[str, Any]], Any]) -> str | None:
    """What a 200 generation reply lacks (retried): an object with an output, unless it is an error."""
    if not isinstance(data, dict):
        return "API reply is not an object"
    return None if data.get("error") or output_of(data) is not None else "API reply has no output"


def _missing_embeddings(data: Any) -> str | None:
    embeddings = data.get("embeddings") if isinstance(data, dict) else None
    return None if isinstance(embeddings, list) and embeddings and isinstance(embeddings[0], list) else "API reply has no embeddings"


def check_id(provider_id: str) -> str | None:
    """Why ci-grade cannot run this Ollama id (no model), or None."""
    rest = provider_id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if (kind in ("chat", "completion", "embedding", "embeddings") and not model) or not rest:
        return f"{provider_id}: name a model, e.g. ollama:{kind or 'chat'}:llama3.1"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> OllamaProvider:
    """Build the Ollama provider an `ollama:...` id names."""
    rest = spec.id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if kind == "chat" and model:
        return OllamaChatProvider(spec, env, model, max_concurrency)
    if kind == "completion" and model:
        return OllamaCompletionProvider(spec, env, model, max_concurrency)
    if kind in ("embedding", "embeddings") and model:
        return OllamaEmbeddingProvider(spec, env, model, max_concurrency)
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    return OllamaCompletionProvider(spec, env, rest, max_concurrency)


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("function")
    function: dict[str, Any] = raw if isinstance(raw, dict) else {}
    arguments = function.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return {"function": {"name": function.get("name"), "arguments": text}}
