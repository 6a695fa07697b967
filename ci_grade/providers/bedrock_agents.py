"""Bedrock Agents and knowledge bases through boto3's `bedrock-agent-runtime` client.

- `bedrock-agent:<agent id>` (or `bedrock:agents:<agent id>`): InvokeAgent with `config.agentId`
  (else the id's) and `config.agentAliasId`; `sessionId` (else a new session per call),
  `sessionState`, `memoryId`, `enableTrace`, `endSession`, `bedrockModelConfigurations`,
  `streamingConfigurations`, `promptCreationConfigurations`, `sourceArn` and
  `knowledgeBaseConfigurations` (those with a `retrievalConfiguration`) are sent as promptfoo
  sends them. The reply is an AWS event stream: the output is its text chunks joined (else the
  return-control requests or files as JSON); `metadata` holds `sessionId`, `memoryId`,
  `citations`, `trace` (with `enableTrace`), `returnControl` and `files`; a guardrail that
  intervened sets `guardrails`. Calls with a session or memory are never answered from the cache.
- `bedrock:kb:<model>` (or `knowledge-base:`): RetrieveAndGenerate on `config.knowledgeBaseId`
  with the model (`config.modelArn`, an ARN or inference-profile id, else the foundation model's
  ARN in the region), `temperature`/`max_tokens`/`top_p`/`top_k` as its generation configuration
  (or `generationConfiguration`), `numberOfResults`/`retrievalConfiguration`,
  `orchestrationConfiguration`, or a whole `retrieveAndGenerateConfiguration`; `streaming: true`
  uses the streaming API; `operation: retrieve` only retrieves (the output is the results as
  JSON). `metadata.citations` holds the retrieved references, for `contextTransform`.

Region, endpoint (AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME), credentials and retries are Bedrock's.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.anthropic import refuses_sampling
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.bedrock import BedrockProvider
from ci_grade.results.usage import TokenUsage

AGENT_OPTIONS = ("enableTrace", "endSession", "memoryId", "bedrockModelConfigurations", "streamingConfigurations", "promptCreationConfigurations", "sourceArn")
"""InvokeAgent's request members that promptfoo passes from the config as they are."""
_PROFILE = re.compile(r"^(us|eu|apac|global|us-gov|jp|au|ca)\.")
_AGENT_ERRORS = {
    "ResourceNotFoundException": "Agent or alias not found. Verify agentId: {agent} and agentAliasId: {alias}",
    "AccessDeniedException": "Access denied. Check IAM permissions for bedrock:InvokeAgent",
}


def _plain(value: Any) -> Any:
    """A reply part as JSON data (bytes as base64, other values as text)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


class BedrockAgentProvider(BedrockProvider):
    """`bedrock-agent:<agent id>`: one InvokeAgent call per prompt."""

    service = "bedrock-agent-runtime"
    bearer_auth = False

    @property
    def agent_id(self) -> str:
        return str(self.spec.config.get("agentId") or self._model)

    def describe(self) -> str:
        return f"bedrock-agent:{self.agent_id}"

    def _cache_key(self, request: dict[str, Any]) -> str | None:
        config = self.spec.config
        state = config.get("sessionState") or {}
        if config.get("sessionId") or config.get("memoryId") or config.get("endSession") or (isinstance(state, dict) and state.get("returnControlInvocationResults")):
            return None  # the agent's state moves on: ask it every time
        return super()._cache_key(request)

    def session_state(self) -> dict[str, Any] | None:
        config = self.spec.config
        state = dict(config["sessionState"]) if isinstance(config.get("sessionState"), dict) else {}
        bases = [kb for kb in config.get("knowledgeBaseConfigurations") or [] if isinstance(kb, dict) and kb.get("retrievalConfiguration") is not None]
        if bases:
            state["knowledgeBaseConfigurations"] = bases
        for file in state.get("files") or []:
            data = ((file.get("source") or {}).get("byteContent") or {}).get("data") if isinstance(file, dict) else None
            if isinstance(data, str):
                file["source"]["byteContent"]["data"] = base64.b64decode(data)
        return state or None

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        alias = config.get("agentAliasId")
        if not alias:
            return ProviderResponse(error="Agent Alias ID is required. Set agentAliasId in the provider config.")
        params: dict[str, Any] = {"agentId": self.agent_id, "agentAliasId": str(alias), "sessionId": str(config.get("sessionId") or f"session-{uuid.uuid4()}"), "inputText": prompt}
        params.update({k: config[k] for k in AGENT_OPTIONS if config.get(k) is not None})
        if state := self.session_state():
            params["sessionState"] = state
        try:
            reply = await self.request("invoke_agent", consume=self._read_stream, **params)
        except ProviderError as exc:
            code = str(exc).split(" ", 1)[0]
            known = _AGENT_ERRORS.get(code)
            return ProviderResponse(error=known.format(agent=self.agent_id, alias=alias) if known else f"Failed to invoke agent: {exc}")
        metadata = {k: reply[k] for k in ("contentType", "sessionId", "memoryId") if reply.get(k)}
        if not metadata.get("memoryId") and config.get("memoryId"):
            metadata["memoryId"] = config["memoryId"]
        metadata.update({k: reply[k] for k in ("trace", "citations", "returnControl", "files") if reply[k]})
        output = reply["text"] or (json.dumps(reply["returnControl"]) if reply["returnControl"] else json.dumps(reply["files"]) if reply["files"] else "")
        guardrails = {"flagged": True, "reason": "INTERVENED"} if reply["intervened"] else None
        return ProviderResponse(output=output, metadata=metadata, guardrails=guardrails, token_usage=TokenUsage(num_requests=1))

    def _read_stream(self, reply: dict[str, Any]) -> dict[str, Any]:
        """The event stream read to its end (on the SDK's thread): text, citations, traces, ..."""
        text: list[bytes] = []
        out: dict[str, Any] = {"trace": [], "citations": [], "returnControl": [], "files": [], "intervened": False}
        for event in reply["completion"]:
            chunk = event.get("chunk") or {}
            text.append(chunk.get("bytes") or b"")
            out["citations"] += _plain((chunk.get("attribution") or {}).get("citations") or [])
            if "trace" in event:
                if self.spec.config.get("enableTrace"):
                    out["trace"].append(_plain(event["trace"]))
                guardrail = ((event["trace"].get("trace") or {}).get("guardrailTrace") or {})
                out["intervened"] = out["intervened"] or guardrail.get("action") == "INTERVENED"
            if "returnControl" in event:
                out["returnControl"].append(_plain(event["returnControl"]))
            out["files"] += _plain((event.get("files") or {}).get("files") or [])
        out["text"] = b"".join(text).decode("utf-8", "replace")
        out.update({k: reply.get(k) for k in ("contentType", "sessionId", "memoryId")})
        return out


class BedrockKnowledgeBaseProvider(BedrockProvider):
    """`bedrock:kb:<model>`: RetrieveAndGenerate (or Retrieve) on a knowledge base."""

    service = "bedrock-agent-runtime"

    def describe(self) -> str:
        config = self.spec.config
        native = config.get("retrieveAndGenerateConfiguration") or {}
        kb = config.get("knowledgeBaseId") or (native.get("knowledgeBaseConfiguration") or {}).get("knowledgeBaseId")
        return f"bedrock:kb:{kb}" if kb else f"bedrock:kb:{self._model}"

    def model_arn(self) -> str:
        config, region = self.spec.config, self.region()
        if config.get("modelArn"):
            return str(config["modelArn"])
        if self._model.startswith("arn:") or _PROFILE.match(self._model):
            return self._model
        partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
        return f"arn:{partition}:bedrock:{region}::foundation-model/{self._model}"

    def generation(self, model_arn: str) -> dict[str, Any] | None:
        config = self.spec.config
        if isinstance(config.get("generationConfiguration"), dict):
            return dict(config["generationConfiguration"])
        sampling = not refuses_sampling(model_arn)
        omit_temperature = config.get("top_p") is not None and re.search(r"(^|[^a-z0-9])claude-(?:sonnet-4-[56]|haiku-4-5)(?![0-9])", model_arn, re.I)
        text = {
            "temperature": config.get("temperature") if sampling and not omit_temperature else None,
            "maxTokens": config.get("max_tokens"),
            "topP": config.get("top_p") if sampling else None,
        }
        text = {k: v for k, v in text.items() if v is not None}
        top_k = config.get("top_k") if sampling else None
        generation: dict[str, Any] = {"inferenceConfig": {"textInferenceConfig": text}} if text else {}
        if top_k is not None:
            if re.search(r"(^|[/.])amazon\.nova-", model_arn):
                generation["additionalModelRequestFields"] = {"inferenceConfig": {"topK": top_k}}
            elif re.search(r"(^|[/.])cohere\.command-r(?:-plus)?-v\d+(?::\d+)?$", model_arn):
                generation["additionalModelRequestFields"] = {"k": top_k}
            else:
                generation["additionalModelRequestFields"] = {"top_k": top_k}
        return generation or None

    def retrieval(self) -> dict[str, Any] | None:
        config = self.spec.config
        native = dict(config["retrievalConfiguration"]) if isinstance(config.get("retrievalConfiguration"), dict) else None
        if config.get("numberOfResults") is None:
            return native
        vector = {**((native or {}).get("vectorSearchConfiguration") or {}), "numberOfResults": int(config["numberOfResults"])}
        return {**(native or {}), "vectorSearchConfiguration": vector}

    def _cache_key(self, request: dict[str, Any]) -> str | None:
        config = self.spec.config
        return None if config.get("sessionId") or config.get("streaming") else super()._cache_key(request)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        if not config.get("knowledgeBaseId") and not config.get("retrieveAndGenerateConfiguration"):
            return ProviderResponse(error="Knowledge Base ID is required. Please provide a knowledgeBaseId in the provider config.")
        try:
            if config.get("operation") == "retrieve":
                return await self._retrieve(prompt)
            if not config.get("retrieveAndGenerateConfiguration") and not config.get("modelArn") and self._model in ("", "default"):
                return ProviderResponse(error="A generation model is required for Bedrock Knowledge Bases. Set bedrock:kb:<model-id> or provide config.modelArn.")
            params = self.rag_params(prompt)
            if config.get("streaming"):
                reply = await self.request("retrieve_and_generate_stream", consume=_collect_rag_stream, **params)
            else:
                reply = await self.request("retrieve_and_generate", **params)
        except ProviderError as exc:
            return ProviderResponse(error=f"Bedrock Knowledge Base API error: {exc}")
        metadata: dict[str, Any] = {"citations": _plain(reply.get("citations") or [])}
        metadata.update({k: reply[k] for k in ("sessionId", "guardrailAction") if reply.get(k)})
        flagged = {"flagged": True, "reason": "INTERVENED"} if reply.get("guardrailAction") == "INTERVENED" else None
        return ProviderResponse(output=(reply.get("output") or {}).get("text") or "", metadata=metadata, guardrails=flagged, token_usage=TokenUsage(num_requests=1))

    def rag_params(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        native = config.get("retrieveAndGenerateConfiguration")
        if isinstance(native, dict):
            setup = dict(native)
        else:
            arn = self.model_arn()
            kb: dict[str, Any] = {"knowledgeBaseId": config.get("knowledgeBaseId"), "modelArn": arn}
            if generation := self.generation(arn):
                kb["generationConfiguration"] = generation
            if retrieval := self.retrieval():
                kb["retrievalConfiguration"] = retrieval
            if config.get("orchestrationConfiguration"):
                kb["orchestrationConfiguration"] = config["orchestrationConfiguration"]
            setup = {"type": "KNOWLEDGE_BASE", "knowledgeBaseConfiguration": kb}
        params: dict[str, Any] = {"input": {"text": prompt}, "retrieveAndGenerateConfiguration": setup}
        params.update({k: config[k] for k in ("sessionId", "sessionConfiguration", "userContext") if config.get(k)})
        return params

    async def _retrieve(self, prompt: str) -> ProviderResponse:
        config = self.spec.config
        if not config.get("knowledgeBaseId"):
            return ProviderResponse(error="Retrieve requires config.knowledgeBaseId.")
        params: dict[str, Any] = {"knowledgeBaseId": str(config["knowledgeBaseId"]), "retrievalQuery": {"text": prompt}}
        if retrieval := self.retrieval():
            params["retrievalConfiguration"] = retrieval
        params.update({k: config[k] for k in ("guardrailConfiguration", "nextToken", "userContext") if config.get(k)})
        reply = await self.request("retrieve", **params)
        results = _plain(reply.get("retrievalResults") or [])
        metadata: dict[str, Any] = {"retrievalResults": results, **{k: reply[k] for k in ("nextToken", "guardrailAction") if reply.get(k)}}
        flagged = {"flagged": True, "reason": "INTERVENED"} if reply.get("guardrailAction") == "INTERVENED" else None
        return ProviderResponse(output=json.dumps(results), metadata=metadata, guardrails=flagged, token_usage=TokenUsage(num_requests=1))


def _collect_rag_stream(reply: dict[str, Any]) -> dict[str, Any]:
    """RetrieveAndGenerateStream's events as RetrieveAndGenerate's reply."""
    text: list[str] = []
    out: dict[str, Any] = {"sessionId": reply.get("sessionId"), "citations": []}
    for event in reply["stream"]:
        text.append((event.get("output") or {}).get("text") or "")
        if "citation" in event:
            cited = event["citation"]
            out["citations"].append(cited.get("citation") or {k: cited.get(k) for k in ("generatedResponsePart", "retrievedReferences")})
        if (event.get("guardrail") or {}).get("action"):
            out["guardrailAction"] = event["guardrail"]["action"]
    out["output"] = {"text": "".join(text)}
    return out


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> BedrockProvider:
    """The provider for `bedrock-agent:<id>`, `bedrock:agents:<id>` or `bedrock:kb:<model>`."""
    if spec.id.startswith("bedrock-agent:"):
        return BedrockAgentProvider(spec, env, spec.id.removeprefix("bedrock-agent:"), max_concurrency)
    kind, _, rest = spec.id.removeprefix("bedrock:").partition(":")
    if kind == "agents":
        return BedrockAgentProvider(spec, env, rest, max_concurrency)
    return BedrockKnowledgeBaseProvider(spec, env, rest, max_concurrency)

