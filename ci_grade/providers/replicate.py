"""Replicate predictions over httpx: `replicate:<owner>/<model>[:<version>]`, and
`replicate:moderation:<model>` (LlamaGuard) for the `moderation` assertion (`replicate:image:<model>`
is `replicate_image`).

A prediction is created as promptfoo 0.123.1 creates it: `POST /v1/models/<owner>/<model>/predictions`
(or `POST /v1/predictions` with the `version` an id names) with `Prefer: wait=60` and `input` =
the provider's config plus the prompt (`prompt`, `system_prompt` from a chat prompt's system
message, `config.system_prompt` or REPLICATE_SYSTEM_PROMPT) and the sampling options promptfoo
reads from REPLICATE_* variables; a prediction still running is polled at
`/v1/predictions/<id>` (every REPLICATE_POLL_INTERVAL seconds, default 1) until it ends or the
call's time limit passes. The output is the text, or the list of text chunks joined. The key is
`config.apiKey`, the variable `config.apiKeyEnvar` names, REPLICATE_API_TOKEN or
REPLICATE_API_KEY; the endpoint `config.apiBaseUrl` or REPLICATE_BASE_URL, else Replicate's.

The `replicate` SDK is not used: its client retries inside its transport, and its errors drop
the reply's headers, so ci-grade's retry policy and adaptive limit could not honour `Retry-After`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    ModelProvider,
    ModerationFlag,
    ModerationResponse,
    ProviderResponse,
    parse_chat_messages,
)
from ci_grade.providers.http_api import HttpApiProvider, json_body
from ci_grade.results.usage import TokenUsage

DEFAULT_BASE_URL = "https://api.replicate.com"
# Input fields promptfoo fills from the environment when the config does not set them: (field, variable, type).
ENV_INPUTS: tuple[tuple[str, str, type], ...] = (
    ("max_length", "REPLICATE_MAX_LENGTH", int),
    ("max_new_tokens", "REPLICATE_MAX_NEW_TOKENS", int),
    ("temperature", "REPLICATE_TEMPERATURE", float),
    ("top_p", "REPLICATE_TOP_P", float),
    ("top_k", "REPLICATE_TOP_K", int),
    ("repetition_penalty", "REPLICATE_REPETITION_PENALTY", float),
    ("stop_sequences", "REPLICATE_STOP_SEQUENCES", str),
    ("seed", "REPLICATE_SEED", int),
)
# Provider settings that are not model input.
NOT_INPUT = frozenset({"apiKey", "apiKeyEnvar", "apiBaseUrl", "timeout", "maxConcurrency", "delay", "cost", "inputCost", "outputCost", "transform", "headers"})
DONE = ("succeeded", "failed", "canceled")
# LlamaGuard 3 (S1-S13) and 4 (S14) hazard categories, as promptfoo names them.
LLAMAGUARD_CATEGORIES = {
    "S1": "Violent Crimes", "S2": "Non-Violent Crimes", "S3": "Sex Crimes", "S4": "Child Exploitation",
    "S5": "Defamation", "S6": "Specialized Advice", "S7": "Privacy", "S8": "Intellectual Property",
    "S9": "Indiscriminate Weapons", "S10": "Hate", "S11": "Self-Harm", "S12": "Sexual Content",
    "S13": "Elections", "S14": "Code Interpreter Abuse",
}


class ReplicateProvider(ModelProvider, HttpApiProvider):
    """One prediction per call, polled until it ends."""

    key_names = ("REPLICATE_API_TOKEN", "REPLICATE_API_KEY")

    def base_url(self) -> str:
        return str(self.spec.config.get("apiBaseUrl") or self.env_value("REPLICATE_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.base_url()}

    def request(self, prompt: str) -> tuple[str, dict[str, Any]]:
        """The URL and body that create the prediction."""
        config = self.spec.config
        affixes: dict[str, Any] = config["prompt"] if isinstance(config.get("prompt"), dict) else {}
        prompt = f"{affixes.get('prefix') or ''}{prompt}{affixes.get('suffix') or ''}"
        messages = parse_chat_messages(prompt)
        system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
        user = next((m.get("content") for m in messages if m.get("role") == "user"), None) or prompt
        options: dict[str, Any] = {}
        for field, variable, kind in ENV_INPUTS:
            value = config.get(field, self.env_value(variable))
            if value is not None:
                options[field] = kind(value) if isinstance(value, str) and kind is not str else value
        system = system or config.get("system_prompt") or self.env_value("REPLICATE_SYSTEM_PROMPT")
        if system:
            options["system_prompt"] = system
        options["prompt"] = user
        return self.target({"input": {**{k: v for k, v in config.items() if k not in NOT_INPUT}, **options}})

    def target(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Where a prediction of this model goes, and `body` with the version the id names."""
        name, _, version = self._model.partition(":")
        if version:
            return f"{self.base_url()}/v1/predictions", {**body, "version": version}
        return f"{self.base_url()}/v1/models/{name}/predictions", body

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        url, body = self.request(prompt)
        try:
            prediction = await self.predict(url, body)
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        if prediction["status"] != "succeeded":
            return ProviderResponse(error=f"API call error: {prediction.get('error') or 'Prediction ' + prediction['status']}")
        output = prediction.get("output")
        if isinstance(output, list) and all(isinstance(item, str) for item in output):
            output = "".join(output)
        if not isinstance(output, str):
            return ProviderResponse(error=f"Unsupported response from Replicate: {output!r}"[:500])
        metrics = prediction.get("metrics") or {}
        usage = TokenUsage.of(int(metrics.get("input_token_count") or 0), int(metrics.get("output_token_count") or 0))
        return ProviderResponse(output=output, token_usage=usage, metadata={"predictionId": prediction.get("id")})

    async def predict(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create a prediction and poll it until it ends (ProviderError when that fails)."""
        headers = {"Authorization": f"Bearer {self.api_key()}", "Prefer": "wait=60"}
        prediction = await self.post_json(url, body, headers, check=_not_a_prediction)
        return await self._until_done(prediction)

    async def _until_done(self, prediction: dict[str, Any]) -> dict[str, Any]:
        """Poll a prediction that is still starting or processing until it ends (or time runs out)."""
        try:
            interval = max(0.0, float(self.env_value("REPLICATE_POLL_INTERVAL") or 1.0))
        except ValueError:
            interval = 1.0
        deadline = time.monotonic() + self._timeout
        headers = {"Authorization": f"Bearer {self.api_key()}"}
        while prediction["status"] not in DONE:
            if time.monotonic() >= deadline:
                raise ProviderError(f"Prediction {prediction.get('id')} timed out: still {prediction['status']} after {self._timeout:g}s")
            await asyncio.sleep(interval)
            url = f"{self.base_url()}/v1/predictions/{prediction['id']}"
            prediction = await self.send("GET", url, read=_prediction, headers=headers)
        return prediction


class ReplicateModerationProvider(ReplicateProvider):
    """`replicate:moderation:<model>`: a LlamaGuard model's verdict (`safe`, or `unsafe` and its
    categories on the next line) as moderation flags, read as promptfoo reads it."""

    capabilities = frozenset({"text", "moderation"})

    def describe(self) -> str:
        return f"replicate:moderation:{self._model}"

    def supports(self, kind: Capability) -> bool:
        return kind in self.capabilities

    async def _moderate(self, prompt: str, output: str) -> ModerationResponse:
        response = await self._call(f"Human: {prompt}\n\nAssistant: {output}", CallContext())
        if response.error:
            return ModerationResponse(error=response.error, token_usage=response.token_usage)
        if not isinstance(response.output, str) or not response.output.strip():
            return ModerationResponse(error=f"Invalid moderation response: {response.output!r}", token_usage=response.token_usage)
        lines = response.output.strip().split("\n")
        if lines[0].strip() == "safe":
            return ModerationResponse(flags=[], token_usage=response.token_usage)
        codes = [code.strip() for code in lines[1].split(",")] if len(lines) > 1 else []
        flags = [ModerationFlag(code=code, description=LLAMAGUARD_CATEGORIES[code]) for code in codes if code in LLAMAGUARD_CATEGORIES]
        return ModerationResponse(flags=flags, token_usage=response.token_usage)


def _prediction(response: Any) -> Any:
    data = json_body(response)
    if problem := _not_a_prediction(data):
        raise TransientError(problem)
    return data


def _not_a_prediction(data: Any) -> str | None:
    """What a 2xx reply lacks (retried): a prediction's id and status."""
    if isinstance(data, dict) and isinstance(data.get("id"), str) and isinstance(data.get("status"), str):
        return None
    return "Replicate reply is not a prediction"


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: no model."""
    rest = provider_id.split(":", 1)[1] if ":" in provider_id else ""
    kind, _, model = rest.partition(":")
    if not rest or (kind == "moderation" and not model):
        return "name a model, e.g. replicate:meta/meta-llama-3-8b-instruct or replicate:moderation:meta/llama-guard-3-8b"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> ReplicateProvider:
    """`replicate:<model>`, `replicate:moderation:<model>` (as promptfoo splits them)."""
    rest = spec.id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if kind == "moderation":
        return ReplicateModerationProvider(spec, env, model, max_concurrency)
    return ReplicateProvider(spec, env, rest, max_concurrency)
