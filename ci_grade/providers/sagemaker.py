"""Amazon SageMaker endpoints through boto3's `sagemaker-runtime` InvokeEndpoint, with promptfoo's ids
and payload formats:

- `sagemaker:<modelType>:<endpoint>` or `sagemaker:<endpoint>` with `config.modelType`: one of
  `openai`, `llama`, `huggingface`, `jumpstart`, `custom` (an endpoint name containing
  `jumpstart` is `jumpstart`); `sagemaker:embedding:<endpoint>` for embeddings.
- Config: `region` (else AWS_REGION, AWS_DEFAULT_REGION, us-east-1), `endpoint` (the endpoint
  name, overriding the id's), `contentType`/`acceptType` (application/json), `maxTokens`
  (AWS_SAGEMAKER_MAX_TOKENS, 1024), `temperature` (AWS_SAGEMAKER_TEMPERATURE, 0.7), `topP`
  (AWS_SAGEMAKER_TOP_P, 1), `stopSequences`, `transform` (JavaScript of `prompt` and `context`,
  or a file function, applied to the prompt), `responseFormat.path` (JavaScript of `json`, or a
  file function, that picks the output), and the AWS credentials `aws_client` reads.

Token counts are promptfoo's estimate (4 characters a token); endpoints have no price table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, ScriptError, UnknownProviderError
from ci_grade.providers.aws_client import AwsProvider
from ci_grade.providers.base import CallContext, Capability, EmbeddingResponse, ProviderResponse
from ci_grade.results.usage import TokenUsage
from ci_grade.scripting import js
from ci_grade.workers import calls

MODEL_TYPES = ("openai", "llama", "huggingface", "jumpstart", "custom")
_FUNCTION = re.compile(r"^\s*(async\s+)?(function\b|\(?[\w\s,]*\)?\s*=>)")


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


class SageMakerProvider(AwsProvider):
    """One InvokeEndpoint call per prompt (or text to embed)."""

    service = "sagemaker-runtime"

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], endpoint: str, model_type: str, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.endpoint = str(spec.config.get("endpoint") or endpoint)
        self.model_type = model_type

    def describe(self) -> str:
        return self.id

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "endpointName": self.endpoint, "modelType": self.model_type}

    def payload(self, prompt: str) -> Any:
        """The request body for the model type, as promptfoo formats it."""
        config = self.spec.config
        max_tokens = config.get("maxTokens") or _number(self.env_value("AWS_SAGEMAKER_MAX_TOKENS"), int) or 1024
        temperature = config["temperature"] if isinstance(config.get("temperature"), int | float) else _number(self.env_value("AWS_SAGEMAKER_TEMPERATURE"), float, 0.7)
        top_p = config["topP"] if isinstance(config.get("topP"), int | float) else _number(self.env_value("AWS_SAGEMAKER_TOP_P"), float, 1.0)
        stop = list(config.get("stopSequences") or []) or None
        messages = _json_list(prompt)
        if self.model_type == "openai":
            body = {"messages": messages} if messages is not None else {"prompt": prompt}
            return {**body, "max_tokens": max_tokens, "temperature": temperature, "top_p": top_p, **({"stop": stop} if stop else {})}
        if self.model_type == "llama":
            parameters = {"max_new_tokens": max_tokens, "temperature": temperature, "top_p": top_p, **({"stop": stop} if stop else {})}
            return {"inputs": messages if messages is not None else prompt, "parameters": parameters}
        if self.model_type in ("jumpstart", "huggingface"):
            parameters = {"max_new_tokens": max_tokens, "temperature": temperature, "top_p": top_p, "do_sample": temperature > 0}
            return {"inputs": prompt, "parameters": parameters | ({"return_full_text": False} if self.model_type == "huggingface" else {})}
        try:
            return json.loads(prompt)
        except ValueError:
            return {"prompt": prompt}

    def read(self, data: Any) -> Any:
        """The output in a reply, as promptfoo finds it for the model type."""
        if isinstance(data, dict) and data.get("generated_text"):
            return data["generated_text"]
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        chat = (choice.get("message") or {}).get("content") or choice.get("text")
        if self.model_type == "openai":
            return chat or data.get("generation") or data
        if self.model_type == "llama":
            return data.get("generation") or chat or data
        if self.model_type == "huggingface":
            first = data[0] if isinstance(data, list) and data else data
            return (first.get("generated_text") if isinstance(first, dict) else None) or first
        if self.model_type == "jumpstart" or not isinstance(data, dict):
            return data
        return next((data[k] for k in ("output", "generation", "response", "text", "generated_text") if data.get(k)), None) or chat or data

    async def invoke(self, body: str) -> str:
        config = self.spec.config
        reply = await self.request(
            "invoke_endpoint",
            EndpointName=self.endpoint,
            Body=body.encode(),
            ContentType=str(config.get("contentType") or "application/json"),
            Accept=str(config.get("acceptType") or "application/json"),
        )
        return bytes(reply["Body"]).decode("utf-8", "replace")

    async def script(self, code: str, names: tuple[str, ...], args: list[Any]) -> Any:
        """A `transform` or `responseFormat.path`: inline JavaScript, or a JS/Python file's function."""
        if code.startswith("file://"):
            path_text, function = files.split_function(code)
            path = files.resolve(path_text, self.base_dir or Path.cwd())
            if path.suffix == ".py":
                return await calls.call_file(path, function or "get_transform", args, base_dir=self.base_dir)
            return await js.acall_js_file_function(path, function, args)
        if _FUNCTION.match(code):
            body = f"return ({code.strip().rstrip(';')})({', '.join(names)});"
        elif "\n" in code.strip() or re.search(r"\breturn\b", code):
            body = code
        else:
            body = f"return ({code.strip().rstrip(';')});"
        return (await js.arun_inline(body, names, args))[1]

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        try:
            if config.get("transform"):
                changed = await self.script(str(config["transform"]), ("prompt", "context"), [prompt, {"vars": context.vars, "prompt": {"raw": context.prompt_raw, "label": context.prompt_label}}])
                prompt = prompt if changed is None else changed if isinstance(changed, str) else json.dumps(changed)
            body = json.dumps(self.payload(prompt))
            text = await self.invoke(body)
        except (ProviderError, ScriptError, FileNotFoundError) as exc:
            return ProviderResponse(error=f"SageMaker API error: {exc}")
        try:
            data = json.loads(text)
        except ValueError:
            output: Any = text
        else:
            path = (config.get("responseFormat") or {}).get("path")
            try:
                output = await self.script(str(path), ("json",), [data]) if path else self.read(data)
            except (ScriptError, FileNotFoundError) as exc:
                return ProviderResponse(error=f"SageMaker responseFormat.path failed: {exc}")
            if output is None:
                output = data
        if isinstance(output, dict) and output.get("code") == 424:
            return ProviderResponse(error=f"API Error: 424 {output.get('message') or ''}\n{json.dumps(output)}".strip())
        completion = _tokens(output) if isinstance(output, str) else 0
        return ProviderResponse(output=output, token_usage=TokenUsage.of(_tokens(body), completion), metadata={"modelType": self.model_type})


class SageMakerEmbeddingProvider(SageMakerProvider):
    """`sagemaker:embedding:<endpoint>`: the vector from the reply (or `responseFormat.path`)."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"embedding"})

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        return ProviderResponse(error=f"{self.id} is an embedding endpoint: use it as an embedding grader (e.g. for `similar`)")

    async def _embed(self, text: str) -> EmbeddingResponse:
        kind = self.spec.config.get("modelType") or "custom"
        body = {"input": text, "model": "embedding"} if kind == "openai" else {"inputs": text} if kind == "huggingface" else {"input": text, "text": text, "inputs": text}
        try:
            data = json.loads(await self.invoke(json.dumps(body)))
            path = (self.spec.config.get("responseFormat") or {}).get("path")
            vector = await self.script(str(path), ("json",), [data]) if path else None
        except (ProviderError, ScriptError, FileNotFoundError, ValueError) as exc:
            return EmbeddingResponse(error=f"SageMaker embedding API error: {exc}")
        if not _is_vector(vector):
            first = ((data.get("data") or [{}])[0] or {}).get("embedding") if isinstance(data, dict) and isinstance(data.get("data"), list) else None
            vector = (data.get("embedding") or data.get("embeddings") or first) if isinstance(data, dict) else (data[0] if data else None)
        if isinstance(vector, list) and vector and isinstance(vector[0], list):
            vector = vector[0]
        if not isinstance(vector, list) or not _is_vector(vector):
            return EmbeddingResponse(error=f"Invalid embedding response format. Could not find embedding array in: {json.dumps(data)[:100]}")
        return EmbeddingResponse(embedding=[float(v) for v in vector], token_usage=TokenUsage.of(_tokens(text), 0))


def _is_vector(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)


def _number(text: str | None, cast: Any, default: Any = None) -> Any:
    try:
        return default if text in (None, "") else cast(text)
    except ValueError:
        return default


def _json_list(prompt: str) -> list[Any] | None:
    try:
        data = json.loads(prompt)
    except ValueError:
        return None
    return data if isinstance(data, list) else None


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: a model type promptfoo does not define, or no endpoint.
    `sagemaker:<endpoint>` takes its model type from the config, checked when the provider is made."""
    parts = provider_id.split(":")
    kind, endpoint = parts[1] if len(parts) > 1 else "", ":".join(parts[2:])
    if not kind:
        return "name the endpoint, e.g. sagemaker:openai:my-endpoint"
    if len(parts) == 2 or kind in ("embedding", "embeddings"):
        return None
    if "jumpstart" not in endpoint and kind not in MODEL_TYPES:
        return f"invalid model type {kind!r}; valid types are {', '.join(MODEL_TYPES)} (or embedding)"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> SageMakerProvider:
    """`sagemaker:<modelType>:<endpoint>`, `sagemaker:<endpoint>` (with config.modelType) or `sagemaker:embedding:<endpoint>`."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(f"{spec.id}: {problem}")
    parts = spec.id.split(":")
    kind, endpoint = parts[1], ":".join(parts[2:])
    if kind in ("embedding", "embeddings"):
        return SageMakerEmbeddingProvider(spec, env, endpoint or kind, "embedding", max_concurrency)
    if len(parts) == 2:
        model_type, endpoint = str(spec.config.get("modelType") or ""), kind
        if model_type not in MODEL_TYPES:
            raise UnknownProviderError(f"{spec.id}: set config.modelType ({', '.join(MODEL_TYPES)}) or use sagemaker:<modelType>:<endpoint>")
    else:
        model_type = "jumpstart" if "jumpstart" in endpoint or kind == "jumpstart" else kind
    if not endpoint and not spec.config.get("endpoint"):
        raise UnknownProviderError(f"{spec.id}: name the endpoint, e.g. sagemaker:{model_type}:my-endpoint")
    return SageMakerProvider(spec, env, endpoint, model_type, max_concurrency)
