"""llama.cpp's server (`llama`, `llama:<model>`): `POST /completion` with the prompt as text.

The server is `config.baseUrl`, else `LLAMA_BASE_URL`, else `http://localhost:8080` (promptfoo
0.123.1 reads only the variable). The body is promptfoo's: the prompt, `n_predict` (default 512)
and the sampling options the config sets (`OPTIONS`); the output is the reply's `content`. The
server counts tokens in `tokens_evaluated` / `tokens_predicted`, which become the usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.results.usage import TokenUsage

DEFAULT_BASE_URL = "http://localhost:8080"
OPTIONS = (
    "temperature", "top_k", "top_p", "n_keep", "stop", "repeat_penalty", "repeat_last_n", "penalize_nl", "presence_penalty",
    "frequency_penalty", "mirostat", "mirostat_tau", "mirostat_eta", "seed", "ignore_eos", "logit_bias",
)


class LlamaCppProvider(HttpApiProvider):
    """A llama.cpp server's completion endpoint."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._model = spec.id.split(":", 1)[1] if ":" in spec.id else None

    @property
    def model(self) -> str | None:
        return self._model

    def url(self) -> str:
        base = self.spec.config.get("baseUrl") or self.env_value("LLAMA_BASE_URL") or DEFAULT_BASE_URL
        return f"{str(base).rstrip('/')}/completion"

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "url": self.url()}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        body: dict[str, Any] = {"prompt": prompt, "n_predict": config.get("n_predict", 512)}
        body.update({key: config[key] for key in OPTIONS if config.get(key) is not None})
        try:
            data = await self.post_json(self.url(), body, check=lambda reply: None if isinstance(reply, dict) and "content" in reply else "reply has no content")
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        usage = TokenUsage.of(int(data.get("tokens_evaluated") or 0), int(data.get("tokens_predicted") or 0))
        return ProviderResponse(output=data["content"], token_usage=usage, finish_reason="length" if data.get("stopped_limit") else "stop")


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> LlamaCppProvider:
    """`llama` or `llama:<model>` (the model only names the provider: the server runs one)."""
    return LlamaCppProvider(spec, env, max_concurrency)
