"""Model-as-a-service models on Vertex AI (Llama, gpt-oss, DeepSeek, Qwen, ...) through Vertex's
OpenAI-compatible endpoint, `.../projects/<project>/locations/<region>/endpoints/openapi`.

The openai provider's Chat Completions call, with a google-auth bearer token in place of an API
key: the SDK asks `VertexAuth.token()` before each request, which refreshes it when it expires.
The model travels as `<publisher>/<model>` (`meta/llama-3.3-70b-instruct-maas`); a bare name takes
its publisher from `PUBLISHERS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.google.auth import VertexAuthed
from ci_grade.providers.http_clients import sdk, sdk_http_client
from ci_grade.providers.openai import OpenAIChatProvider

# Bare model name prefix -> the publisher Vertex files it under.
PUBLISHERS = {"llama": "meta", "gpt-oss": "openai", "deepseek": "deepseek-ai", "qwen": "qwen", "kimi": "moonshotai", "minimax": "minimax"}
# promptfoo's Vertex option names -> Chat Completions fields.
OPTION_NAMES = {"maxOutputTokens": "max_tokens", "topP": "top_p", "stopSequences": "stop"}


def publisher_model(name: str) -> str | None:
    """`meta/llama-x` as given; `llama-x` -> `meta/llama-x`; None when the publisher is unknown."""
    if "/" in name:
        return name
    publisher = next((p for prefix, p in PUBLISHERS.items() if name.startswith(prefix)), None)
    return f"{publisher}/{name}" if publisher else None


class VertexMaasProvider(VertexAuthed, OpenAIChatProvider):
    """`vertex:<llama or other MaaS model>`: Chat Completions on Vertex with Application Default Credentials."""

    key_names: ClassVar[tuple[str, ...]] = ()
    price_family: ClassVar[str | None] = None

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, publisher_model(model) or model, max_concurrency)

    def describe(self) -> str:
        return f"vertex:{self._model}"

    def base_url(self) -> str:
        auth = self.auth
        return f"{auth.base_url()}/{auth.api_version()}/projects/{auth.project()}/locations/{auth.region()}/endpoints/openapi"

    def cache_identity(self) -> dict[str, Any]:
        """The model and where it runs; without the project (which may need the credentials loaded)."""
        return {"class": type(self).__name__, "id": self.spec.id, "config": self.spec.config, "model": self._model, "region": self.auth.region()}

    def missing_key_error(self) -> str | None:
        return None  # the credentials are checked when the token is asked for

    def client(self) -> Any:
        if self._client is None:
            self._client = sdk().AsyncOpenAI(
                api_key=self.auth.token,
                base_url=self.base_url(),
                max_retries=0,
                timeout=self._timeout,
                http_client=sdk_http_client(self._timeout),
                default_headers=self.extra_headers(),
            )
        return self._client

    def chat_body(self, prompt: str, context: CallContext | None = None) -> dict[str, Any]:
        body = super().chat_body(prompt, context)
        config = self.spec.config
        body.update({field: config[name] for name, field in OPTION_NAMES.items() if config.get(name) is not None and config.get(field) is None})
        return body

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        try:
            self.client()  # an unreadable key file: one clear error (the token reads it), not retried
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return await super()._call(prompt, context)
