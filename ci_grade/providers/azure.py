"""Azure OpenAI through the official SDK's `AsyncAzureOpenAI`: chat and embeddings by deployment.

Ids: `azureopenai:chat:<deployment>`, `azureopenai:embedding:<deployment>` (or `embeddings`),
`azureopenai:responses:<deployment>` (the v1 Responses API, `/openai/v1/responses`, API version
`config.apiVersion` else `preview`), `azureopenai:assistant:<assistant id>` (`assistants`),
`azureopenai:foundry-agent:<agent>` (`azure_foundry`), and the same with the `azure:` prefix. The
endpoint is `config.apiBaseUrl` or `config.apiHost`
(a host or a full URL), else `AZURE_OPENAI_API_BASE_URL`/`AZURE_API_BASE_URL`,
`AZURE_OPENAI_API_HOST`/`AZURE_API_HOST` or `AZURE_OPENAI_ENDPOINT`; the key is `config.apiKey`,
the variable `config.apiKeyEnvar` names, `AZURE_OPENAI_API_KEY` or `AZURE_API_KEY`; the API
version is `config.apiVersion`, `AZURE_OPENAI_API_VERSION` or a recent GA version. Chat takes the
same options as OpenAI chat. Cost comes from promptfoo's Azure table for `config.modelName` or the
deployment name, else for the model the reply reports, unless `config.cost` sets it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.http_clients import sdk, sdk_http_client
from ci_grade.providers.openai import (
    OpenAIChatProvider,
    OpenAIEmbeddingProvider,
    OpenAIProvider,
    OpenAIResponsesProvider,
)
from ci_grade.providers.pricing import estimate_cost, price_of
from ci_grade.results.usage import TokenUsage

DEFAULT_API_VERSION = "2024-10-21"
RESPONSES_API_VERSION = "preview"


class AzureClientMixin:
    """Endpoint, key and client handling shared by the Azure providers (mixed into OpenAI ones)."""

    key_names: ClassVar[tuple[str, ...]] = ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY")

    def price(self: Any) -> tuple[float, float] | None:
        """Priced by `config.modelName`, else the deployment name, as `cost` does."""
        return price_of(self.spec.config.get("modelName") or self._model, self.spec.config, "azure")

    @property
    def family(self: Any) -> str:
        """`azureopenai` or `azure`, as the id spells it."""
        return str(self.spec.id.split(":", 1)[0])

    def endpoint(self: Any) -> str | None:
        config = self.spec.config
        value = (
            config.get("apiBaseUrl")
            or config.get("apiHost")
            or self.env_value("AZURE_OPENAI_API_BASE_URL", "AZURE_API_BASE_URL", "AZURE_OPENAI_API_HOST", "AZURE_API_HOST", "AZURE_OPENAI_ENDPOINT")
        )
        if not value:
            return None
        url = str(value).rstrip("/")
        if not url.startswith(("http://", "https://")):
            url = f"https://{url}"
        return url.removesuffix("/openai")

    def cache_identity(self: Any) -> dict[str, Any]:
        identity = Provider.cache_identity(self)
        return {**identity, "model": self._model, "endpoint": self.endpoint(), "api_version": self.api_version()}

    def cost(self: Any, usage: TokenUsage) -> float | None:
        model = self.spec.config.get("modelName") or self._model
        return estimate_cost(model, self.spec.config, usage.prompt, usage.completion, family="azure", cached_tokens=usage.cached)

    def api_version(self: Any) -> str:
        return str(self.spec.config.get("apiVersion") or self.env_value("AZURE_OPENAI_API_VERSION", "AZURE_API_VERSION") or DEFAULT_API_VERSION)

    def location(self: Any) -> dict[str, Any]:
        """Where the client sends its calls: the resource, whose deployment routes the SDK builds."""
        return {"azure_endpoint": self.endpoint()}

    def client(self: Any) -> Any:
        if self._client is None:
            self._client = sdk().AsyncAzureOpenAI(
                api_key=self.api_key(),
                **self.location(),
                api_version=self.api_version(),
                max_retries=0,
                timeout=self._timeout,
                http_client=sdk_http_client(self._timeout),
                default_headers=self.extra_headers(),
            )
        return self._client

    def missing_key_error(self: Any) -> str | None:
        """What is missing to call Azure (the key or the endpoint), or None."""
        if not self.endpoint():
            return (
                "Azure OpenAI endpoint is not set: set AZURE_OPENAI_API_HOST (or AZURE_OPENAI_ENDPOINT) "
                f"or config.apiHost for provider {self.id}"
            )
        return OpenAIProvider.missing_key_error(self)


class AzureChatProvider(AzureClientMixin, OpenAIChatProvider):
    """`azureopenai:chat:<deployment>`: Chat Completions on a deployment."""

    def describe(self) -> str:
        return f"{self.family}:chat:{self._model}"

    def to_response(self, completion: dict[str, Any], *, show_thinking: bool = False) -> ProviderResponse:
        response = super().to_response(completion, show_thinking=show_thinking)
        reply_model = completion.get("model")
        if response.cost is None and reply_model:
            usage = response.token_usage
            response.cost = estimate_cost(reply_model, self.spec.config, usage.prompt, usage.completion, family="azure", cached_tokens=usage.cached)
        return response


class AzureResponsesProvider(AzureClientMixin, OpenAIResponsesProvider):
    """`azureopenai:responses:<deployment>`: the Responses API of Azure's v1 routes, with
    promptfoo's Azure body (text input as a string, function tools flattened, a text format always named)."""

    default_model = "gpt-4.1-2025-04-14"

    def describe(self) -> str:
        return f"{self.family}:responses:{self._model}"

    def api_version(self) -> str:
        return str(self.spec.config.get("apiVersion") or RESPONSES_API_VERSION)

    def location(self) -> dict[str, Any]:
        return {"base_url": f"{self.endpoint()}/openai/v1"}

    def request_body(self, prompt: str, context: CallContext) -> dict[str, Any]:
        body = super().request_body(prompt, context)
        try:
            parsed = json.loads(prompt)
        except ValueError:
            parsed = None
        body["input"] = parsed if isinstance(parsed, list) else prompt  # a JSON array as it is, other text as a string
        if isinstance(body.get("tools"), list):
            body["tools"] = [{**{k: v for k, v in t.items() if k != "function"}, **t["function"]} if _function_tool(t) else t for t in body["tools"]]
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict) and choice["function"].get("name"):
            body["tool_choice"] = {"type": "function", "name": choice["function"]["name"]}
        body.setdefault("text", {"format": {"type": "text"}})
        return body


def _function_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict)


class AzureEmbeddingProvider(AzureClientMixin, OpenAIEmbeddingProvider):
    """`azureopenai:embedding:<deployment>`: embeddings from a deployment."""

    def describe(self) -> str:
        return f"{self.family}:embedding:{self._model}"


def check_id(provider_id: str) -> str | None:
    """Why ci-grade cannot run this Azure id (responses, ... or no deployment), or None."""
    parts = provider_id.split(":", 2)
    kind = parts[1] if len(parts) > 1 else ""
    if kind == "foundry-agent":  # with an agent, `azure_foundry` serves it
        return f"{provider_id}: name the agent, e.g. {parts[0]}:foundry-agent:my-agent"
    if kind not in ("chat", "embedding", "embeddings", "assistant", "responses"):
        return (
            f"{provider_id}: {parts[0]}:{kind} is not supported by ci-grade; it runs {parts[0]}:chat:<deployment>, "
            f"{parts[0]}:responses:<deployment>, {parts[0]}:embedding:<deployment>, {parts[0]}:assistant:<assistant id> "
            f"and {parts[0]}:foundry-agent:<agent>"
        )
    if (len(parts) < 3 or not parts[2]) and kind != "responses":
        return f"{provider_id}: name the deployment, e.g. {parts[0]}:{kind}:my-gpt-4o"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> OpenAIProvider:
    """Build the Azure provider an `azureopenai:...` or `azure:...` id names."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    _, kind, deployment = [*spec.id.split(":", 2), ""][:3]
    if kind == "chat":
        return AzureChatProvider(spec, env, deployment, max_concurrency)
    if kind == "responses":
        return AzureResponsesProvider(spec, env, deployment or None, max_concurrency)
    return AzureEmbeddingProvider(spec, env, deployment, max_concurrency)
