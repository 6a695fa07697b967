"""IBM watsonx.ai over httpx: `watsonx:<model>` (text generation) and `watsonx:chat:<model>` (chat).

Requests are promptfoo 0.123.1's: `POST {serviceUrl}/ml/v1/text/generation?version=...` with
`{input, model_id, project_id, parameters}` (`max_new_tokens` 100 unless `maxNewTokens`, and the
sampling options promptfoo maps from camelCase), or `/ml/v1/text/chat` with the chat messages.
Auth as promptfoo chooses it: an IAM API key (`config.apiKey`, the variable `apiKeyEnvar` names,
WATSONX_AI_APIKEY) exchanged for a token at IBM Cloud IAM (WATSONX_AI_AUTH_URL overrides its
address, as IBM's SDKs read it), or a bearer token (`apiBearerToken`, `apiBearerTokenEnvar`,
WATSONX_AI_BEARER_TOKEN); WATSONX_AI_AUTH_TYPE (`iam`, `bearertoken`) picks one when both are
set. Project: `projectId`, the variable `projectIdEnvar` names, WATSONX_AI_PROJECT_ID. Cost, as
promptfoo: `cost`/`inputCost`/`outputCost`, else the model's pricing tiers from
`/ml/v1/foundation_model_specs` priced with promptfoo's tier table.

IBM's `ibm-watsonx-ai` SDK is not used: it is synchronous at heart and brings pandas and the IBM
COS SDK along for these two requests.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ModelProvider, ProviderResponse, parse_chat_messages
from ci_grade.providers.http_api import HttpApiProvider, excerpt, json_body
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    import httpx

DEFAULT_SERVICE_URL = "https://us-south.ml.cloud.ibm.com"
DEFAULT_IAM_URL = "https://iam.cloud.ibm.com"
DEFAULT_VERSION = "2023-05-29"
# promptfoo's watsonx.ts TIER_PRICING: USD per million tokens by the pricing tier a model's spec names.
TIER_PRICING = {
    "class_1": 0.636, "class_2": 1.908, "class_3": 5.3, "class_c1": 0.106, "class_5": 0.265, "class_7": 16.96,
    "class_8": 0.159, "class_9": 0.371, "class_10": 2.12, "class_11": 0.0053, "class_12": 0.212, "class_13": 0.7526,
    "class_16": 1.484, "class_17": 0.318, "class_18": 0.0636, "class_19": 1.272, "mistral_large_input": 3.37, "mistral_large": 10.07,
}
# Text generation parameters: (config key, API field).
PARAMETERS = (
    ("minNewTokens", "min_new_tokens"), ("decodingMethod", "decoding_method"), ("randomSeed", "random_seed"),
    ("temperature", "temperature"), ("timeLimit", "time_limit"), ("topK", "top_k"), ("topP", "top_p"),
    ("repetitionPenalty", "repetition_penalty"), ("truncateInputTokens", "truncate_input_tokens"),
    ("includeStopSequence", "include_stop_sequence"),
)
CHAT_PARAMETERS = (("temperature", "temperature"), ("maxNewTokens", "max_tokens"), ("topP", "top_p"), ("randomSeed", "seed"))


class WatsonxProvider(ModelProvider, HttpApiProvider):
    """`watsonx:<model>` (text generation), or with `chat` `watsonx:chat:<model>`."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None, chat: bool = False):
        super().__init__(spec, env, model, max_concurrency)
        self.chat = chat
        self._token: tuple[str, float] | None = None
        self._token_lock = asyncio.Lock()
        self._tier_prices: tuple[float | None, float | None] | None = None

    def describe(self) -> str:
        return f"watsonx:chat:{self._model}" if self.chat else f"watsonx:{self._model}"

    def model_id(self) -> str:
        return str(self.spec.config.get("modelId") or self._model) if ":" not in self._model else self._model.split(":")[1]

    def service_url(self) -> str:
        return str(self.spec.config.get("serviceUrl") or DEFAULT_SERVICE_URL).rstrip("/")

    def version(self) -> str:
        return str(self.spec.config.get("version") or DEFAULT_VERSION)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.service_url(), "chat": self.chat}

    def credentials(self) -> tuple[str, str] | None:
        """("iam", API key) or ("bearertoken", token), chosen as promptfoo chooses."""
        config = self.spec.config
        key = config.get("apiKey") or (self.env_value(str(config["apiKeyEnvar"])) if config.get("apiKeyEnvar") else None) or self.env_value("WATSONX_AI_APIKEY")
        bearer = config.get("apiBearerToken") or (self.env_value(str(config["apiBearerTokenEnvar"])) if config.get("apiBearerTokenEnvar") else None) or self.env_value("WATSONX_AI_BEARER_TOKEN")
        forced = self.env_value("WATSONX_AI_AUTH_TYPE")
        if forced == "bearertoken" and bearer:
            return "bearertoken", str(bearer)
        if key:
            return "iam", str(key)
        return ("bearertoken", str(bearer)) if bearer else None

    def project_id(self) -> str | None:
        config = self.spec.config
        named = self.env_value(str(config["projectIdEnvar"])) if config.get("projectIdEnvar") else None
        value = config.get("projectId") or named or self.env_value("WATSONX_AI_PROJECT_ID")
        return str(value).strip() or None if value else None

    async def access_token(self, kind: str, secret: str) -> str:
        """The bearer token, or an IAM token for the API key (exchanged once, renewed a minute before it expires)."""
        if kind == "bearertoken":
            return secret
        async with self._token_lock:
            if self._token is None or self._token[1] - 60 < time.time():
                url = f"{(self.env_value('WATSONX_AI_AUTH_URL') or DEFAULT_IAM_URL).rstrip('/').removesuffix('/identity/token')}/identity/token"
                form = {"grant_type": "urn:ibm:params:oauth:grant-type:apikey", "apikey": secret}
                data = await self.send("POST", url, read=_token_reply, data=form, headers={"Accept": "application/json"})
                self._token = (str(data["access_token"]), float(data.get("expiration") or time.time() + int(data.get("expires_in") or 3600)))
            return self._token[0]

    def error_message(self, response: httpx.Response) -> str:
        """watsonx.ai's errors (`{"errors": [{"code", "message"}]}`) or IAM's (`errorMessage`)."""
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("errors"), list) and data["errors"]:
            return f"API error {response.status_code}: " + "; ".join(str(e.get("message") or e.get("code")) for e in data["errors"] if isinstance(e, dict))
        if isinstance(data, dict) and data.get("errorMessage"):
            return f"API error {response.status_code}: {data['errorMessage']}"
        return super().error_message(response)

    def body(self, prompt: str, project: str) -> dict[str, Any]:
        config = self.spec.config
        if self.chat:
            body: dict[str, Any] = {"model_id": self.model_id(), "project_id": project, "messages": parse_chat_messages(prompt)}
            body.update({field: config[key] for key, field in CHAT_PARAMETERS if config.get(key) is not None})
            if config.get("stopSequences"):
                body["stop"] = config["stopSequences"]
            return body
        parameters: dict[str, Any] = {"max_new_tokens": config.get("maxNewTokens") or 100}
        parameters.update({field: config[key] for key, field in PARAMETERS if config.get(key) is not None})
        penalty = config.get("lengthPenalty")
        if isinstance(penalty, dict):
            parameters["length_penalty"] = {f: penalty[k] for k, f in (("decayFactor", "decay_factor"), ("startIndex", "start_index")) if k in penalty}
        if config.get("stopSequences"):
            parameters["stop_sequences"] = config["stopSequences"]
        return {"input": prompt, "model_id": self.model_id(), "project_id": project, "parameters": parameters}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        credentials = self.credentials()
        if credentials is None:
            return ProviderResponse(error="Authentication credentials not provided. Set WATSONX_AI_APIKEY for IAM authentication or WATSONX_AI_BEARER_TOKEN for a bearer token.")
        project = self.project_id()
        if project is None:
            return ProviderResponse(error="WatsonX project ID is not set. Set the WATSONX_AI_PROJECT_ID environment variable or add `projectId` to the provider config.")
        url = f"{self.service_url()}/ml/v1/text/{'chat' if self.chat else 'generation'}?version={self.version()}"
        try:
            token = await self.access_token(*credentials)
            data = await self.post_json(url, self.body(prompt, project), {"Authorization": f"Bearer {token}"}, check=_missing_choices if self.chat else _missing_results)
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        if self.chat:
            message = data["choices"][0].get("message") or {}
            output: Any = message.get("content") or ""
            if message.get("tool_calls"):
                output = json.dumps(message["tool_calls"])
            usage = data.get("usage") or {}
            prompt_tokens, completion_tokens = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            reason = data["choices"][0].get("finish_reason")
        else:
            result = data["results"][0]
            output = result.get("generated_text") or ""
            prompt_tokens, completion_tokens = int(result.get("input_token_count") or 0), int(result.get("generated_token_count") or 0)
            reason = {"eos_token": "stop", "stop_sequence": "stop", "max_tokens": "length"}.get(result.get("stop_reason") or "", result.get("stop_reason"))
        cost = await self.cost(prompt_tokens, completion_tokens, token)
        return ProviderResponse(output=output, token_usage=TokenUsage.of(prompt_tokens, completion_tokens), cost=cost, finish_reason=reason)

    async def cost(self, prompt_tokens: int, completion_tokens: int, token: str) -> float | None:
        """promptfoo's cost: `inputCost`/`outputCost`/`cost`, else the model's pricing tiers (read once)."""
        config = self.spec.config
        input_price = config.get("inputCost", config.get("cost"))
        output_price = config.get("outputCost", config.get("cost"))
        if (prompt_tokens and input_price is None) or (completion_tokens and output_price is None):
            tiers = await self.tier_prices(token)
            input_price = tiers[0] if input_price is None else input_price
            output_price = tiers[1] if output_price is None else output_price
        input_price = 0.0 if not prompt_tokens else input_price
        output_price = 0.0 if not completion_tokens else output_price
        if input_price is None or output_price is None:
            return None
        return float(input_price) * prompt_tokens + float(output_price) * completion_tokens

    async def tier_prices(self, token: str) -> tuple[float | None, float | None]:
        if self._tier_prices is None:
            url = f"{self.service_url()}/ml/v1/foundation_model_specs"
            params = {"version": self.version(), "filters": f"modelid_{self.model_id()}"}
            try:
                data = await self.send("GET", url, read=json_body, params=params, headers={"Authorization": f"Bearer {token}"})
            except ProviderError:
                return None, None  # pricing metadata is optional: the cost stays unknown
            resources = data.get("resources") if isinstance(data, dict) else None
            spec = next((r for r in resources or [] if isinstance(r, dict) and r.get("model_id") == self.model_id()), {})
            self._tier_prices = (_tier_price(spec.get("input_tier")), _tier_price(spec.get("output_tier")))
        return self._tier_prices


def _tier_price(tier: Any) -> float | None:
    if not isinstance(tier, str):
        return None
    price = TIER_PRICING.get("_".join(tier.strip().lower().split()))
    return None if price is None else price / 1e6


def _token_reply(response: httpx.Response) -> Any:
    data = json_body(response)
    if not isinstance(data, dict) or not data.get("access_token"):
        raise ProviderError(f"IBM Cloud IAM returned no access token: {excerpt(response.text, 120)!r}")
    return data


def _missing_results(data: Any) -> str | None:
    results = data.get("results") if isinstance(data, dict) else None
    return None if isinstance(results, list) and results and isinstance(results[0], dict) else "No results returned from text generation API"


def _missing_choices(data: Any) -> str | None:
    choices = data.get("choices") if isinstance(data, dict) else None
    return None if isinstance(choices, list) and choices and isinstance(choices[0], dict) else "No choices returned from the chat API"


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: it names no model."""
    rest = provider_id.split(":", 1)[1] if ":" in provider_id else ""
    kind, _, model = rest.partition(":")
    if not rest or (kind == "chat" and not model):
        return "name a model, e.g. watsonx:ibm/granite-3-8b-instruct or watsonx:chat:ibm/granite-3-8b-instruct"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> WatsonxProvider:
    """`watsonx:<model>`, `watsonx:chat:<model>` (as promptfoo splits them)."""
    rest = spec.id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if kind == "chat":
        return WatsonxProvider(spec, env, model, max_concurrency, chat=True)
    return WatsonxProvider(spec, env, rest, max_concurrency)
