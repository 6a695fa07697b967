"""Amazon Bedrock through boto3's `bedrock-runtime` client, with promptfoo's ids:

- `bedrock:converse:<model>`: the Converse API (`bedrock_converse`), for any chat model;
- `bedrock:<model>` and `bedrock:completion:<model>`: InvokeModel with the model family's own
  body (`bedrock_invoke`);
- `bedrock:embeddings:<model>` (or `embedding:`): InvokeModel on Titan (`inputText`) or Cohere
  (`texts`) embedding models, for `similar`;
- `bedrock:agents:<agent id>` and `bedrock:kb:<model>` (or `knowledge-base:`): Bedrock Agents and
  knowledge bases (`bedrock_agents`).

The region is `config.region`, else AWS_BEDROCK_REGION, else us-east-1 (promptfoo's order);
`config.endpoint` (else AWS_ENDPOINT_URL_BEDROCK_RUNTIME) replaces the endpoint. Credentials:
see `aws_client`. Bedrock's other APIs that promptfoo reaches through `bedrock:` (the
OpenAI-compatible Mantle endpoint, Nova Sonic, video) are refused before any call (`check_id`,
asked by the preflight).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.aws_client import AwsProvider
from ci_grade.providers.base import (
    CallContext,
    Capability,
    EmbeddingResponse,
    ModelProvider,
    ProviderResponse,
)
from ci_grade.providers.bedrock_converse import FINISH_REASONS, MALFORMED, converse_output, converse_request
from ci_grade.providers.bedrock_invoke import Family, family_for
from ci_grade.providers.pricing import estimate_cost
from ci_grade.results.usage import TokenUsage

UNSUPPORTED = {
    "mantle": "Bedrock's OpenAI-compatible (Mantle) endpoint",
    "responses": "Bedrock's OpenAI-compatible Responses API",
    "messages": "Bedrock's Anthropic Messages endpoint",
    "nova-sonic": "Nova Sonic (bidirectional audio)",
    "video": "Bedrock video generation",
}


class BedrockProvider(ModelProvider, AwsProvider):
    """What every `bedrock:` provider shares: the client, region, endpoint and pricing."""

    service = "bedrock-runtime"
    bearer_auth = True

    def region(self) -> str:
        return str(self.spec.config.get("region") or self.env_value("AWS_BEDROCK_REGION") or "us-east-1")

    def endpoint_url(self) -> str | None:
        return str(self.spec.config.get("endpoint") or "") or super().endpoint_url()

    def usage_and_cost(self, usage: TokenUsage, cache_write: int = 0) -> tuple[TokenUsage, float | None]:
        cost = estimate_cost(self._model, self.spec.config, usage.prompt, usage.completion, family="bedrock", cached_tokens=usage.cached, cache_write_tokens=cache_write, region=self.region())
        return usage, cost

    async def invoke(self, params: dict[str, Any]) -> Any:
        """InvokeModel; the reply body read as JSON."""
        reply = await self.request("invoke_model", **params)
        text = bytes(reply["body"]).decode("utf-8", "replace")
        try:
            return json.loads(text)
        except ValueError:
            raise ProviderError(f"the reply is not JSON: {text[:200]!r}") from None


class BedrockConverseProvider(BedrockProvider):
    """`bedrock:converse:<model>`: one Converse call per prompt."""

    def describe(self) -> str:
        return f"bedrock:converse:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        try:
            request, forced = converse_request(self._model, prompt, config, self.env_value, context)
            reply = await self.request("converse", **request)
        except (ProviderError, ValueError) as exc:
            return ProviderResponse(error=f"Bedrock Converse API error: {exc}")
        blocks = [b for b in ((reply.get("output") or {}).get("message") or {}).get("content") or [] if isinstance(b, dict)]
        stop = reply.get("stopReason")
        raw = reply.get("usage") or {}
        read, written = int(raw.get("cacheReadInputTokens") or 0), int(raw.get("cacheWriteInputTokens") or 0)
        usage, cost = self.usage_and_cost(TokenUsage.of(raw.get("inputTokens"), raw.get("outputTokens"), raw.get("totalTokens"), cached=read), written)
        metadata: dict[str, Any] = {"stopReason": stop} if stop else {}
        if stop == "guardrail_intervened":
            metadata["guardrails"] = {"flagged": True, "reason": "guardrail_intervened"}
        for key in ("additionalModelResponseFields", "trace", "performanceConfig", "serviceTier"):
            if reply.get(key):
                metadata[key] = reply[key]
        return ProviderResponse(
            output=converse_output(blocks, config.get("showThinking", True) is not False, forced),
            error=MALFORMED.get(stop or ""),
            token_usage=usage,
            cost=cost,
            finish_reason=FINISH_REASONS.get(stop or "", stop),
            is_refusal=stop in ("guardrail_intervened", "content_filtered"),
            metadata=metadata,
        )


class BedrockInvokeProvider(BedrockProvider):
    """`bedrock:<model>`: one InvokeModel call with the model family's JSON body."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, model, max_concurrency)
        self.family: Family = family_for(model, spec.config)

    def describe(self) -> str:
        return f"bedrock:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        try:
            body = self.family.body(prompt, config, self.env_value, self._model)
            params: dict[str, Any] = {"modelId": self._model, "body": json.dumps(body), "accept": "application/json", "contentType": "application/json"}
            if config.get("guardrailIdentifier"):
                params["guardrailIdentifier"] = str(config["guardrailIdentifier"])
                params["guardrailVersion"] = str(config.get("guardrailVersion") or "DRAFT")
            if config.get("trace"):
                params["trace"] = str(config["trace"])
            data = await self.invoke(params)
            output = self.family.output(config, data)
        except (ProviderError, ValueError) as exc:
            return ProviderResponse(error=f"Bedrock API invoke model error: {exc}")
        if output is None:
            return ProviderResponse(error=f"API response error: no output in the reply: {json.dumps(data)[:300]}")
        usage, cost = self.usage_and_cost(self.family.usage(data))
        flagged = data.get("amazon-bedrock-guardrailAction")
        metadata = {"guardrails": {"flagged": flagged == "INTERVENED"}} if flagged else {}
        stop = data.get("stop_reason") or data.get("stopReason")
        return ProviderResponse(output=output, token_usage=usage, cost=cost, finish_reason=str(stop) if stop else None, metadata=metadata)


class BedrockEmbeddingProvider(BedrockProvider):
    """`bedrock:embeddings:<model>`: Titan (`inputText` -> `embedding`) or Cohere (`texts` -> `embeddings`)."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"embedding"})

    def describe(self) -> str:
        return f"bedrock:embeddings:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        return ProviderResponse(error=f"{self.id} is an embedding model: use it as an embedding grader (e.g. for `similar`)")

    async def _embed(self, text: str) -> EmbeddingResponse:
        cohere = "cohere.embed" in self._model
        body: dict[str, Any] = {"texts": [text], "input_type": self.spec.config.get("input_type", "search_document")} if cohere else {"inputText": text}
        try:
            data = await self.invoke({"modelId": self._model, "body": json.dumps(body), "accept": "application/json", "contentType": "application/json"})
        except ProviderError as exc:
            return EmbeddingResponse(error=f"API call error: {exc}")
        vector = data.get("embedding") if not cohere else data.get("embeddings")
        if cohere and isinstance(vector, dict):  # embedding_types given: {"float": [[...]]}
            vector = vector.get("float")
        if cohere and isinstance(vector, list) and vector and isinstance(vector[0], list):
            vector = vector[0]
        if not isinstance(vector, list) or not vector:
            return EmbeddingResponse(error=f"No embedding found in AWS Bedrock API response: {json.dumps(data)[:200]}")
        tokens = int(data.get("inputTextTokenCount") or 0)
        usage = TokenUsage.of(tokens, 0) if tokens else TokenUsage(num_requests=1)
        return EmbeddingResponse(embedding=[float(v) for v in vector], token_usage=usage)


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: a Bedrock API ci-grade does not call, or no model."""
    rest = provider_id.removeprefix("bedrock:")
    kind, _, model = rest.partition(":")
    if kind in UNSUPPORTED:
        return f"ci-grade does not support {UNSUPPORTED[kind]}; Bedrock chat models run as bedrock:converse:<model> or bedrock:<model>"
    name = model if kind in ("converse", "completion", "embeddings", "embedding") else rest
    if not name:
        return "name a model, e.g. bedrock:converse:anthropic.claude-sonnet-4-5-20250929-v1:0"
    if kind in ("embeddings", "embedding"):
        return None
    if (name.startswith("openai.") and "gpt-oss" not in name) or name.startswith("xai.") or ".xai." in name:
        return f"{name} is served by Bedrock's OpenAI-compatible Responses API, which ci-grade does not support"
    if name.removeprefix("anthropic.") in ("claude-mythos-5", "claude-mythos-preview"):
        return f"{name} is served by Bedrock's Anthropic Messages endpoint, which ci-grade does not support"
    if kind != "converse" and not (name.startswith("arn:") and "inference-profile" in name):  # profiles: config picks the body
        try:
            family_for(name, {})
        except UnknownProviderError as exc:
            return str(exc).split(": ", 1)[1] if str(exc).startswith("bedrock:") else str(exc)
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> BedrockProvider:
    """A Bedrock provider for promptfoo's `bedrock:` ids (UnknownProviderError for the APIs not served)."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(f"{spec.id}: {problem}")
    rest = spec.id.removeprefix("bedrock:")
    kind, _, model = rest.partition(":")
    if kind in ("embeddings", "embedding"):
        return BedrockEmbeddingProvider(spec, env, model, max_concurrency)
    if kind == "converse":
        return BedrockConverseProvider(spec, env, model, max_concurrency)
    return BedrockInvokeProvider(spec, env, model if kind == "completion" else rest, max_concurrency)
