"""Azure AI Foundry agents through the Azure AI Projects SDK (`azure-ai-projects`, the `azure` extra).

Ids: `azure:foundry-agent:<agent name or legacy id>` (or `azureopenai:`). The project is
`config.projectUrl`, else `AZURE_AI_PROJECT_URL` (`https://` is added to one without a scheme);
the SDK signs in with `DefaultAzureCredential` (the Azure CLI after `azure/login`, client
credentials in `AZURE_CLIENT_ID` / `AZURE_CLIENT_SECRET` / `AZURE_TENANT_ID`, workload or
managed identity; `AZURE_TOKEN_CREDENTIALS` picks one). The agent is looked up once per provider:
by name, else among the project's agents by id or name. Each call asks the Responses API of the
project's OpenAI client, with an `agent_reference` to that agent, for the prompt (a JSON array
of input items, else one user message) with `instructions`, `metadata`, `modelName`, the token
limit, `reasoning_effort`, `temperature`, `top_p`, `tool_choice`, `tools`, `response_format`,
`verbosity` and `passthrough` (`request_body`). When every function call of a reply has a
`config.functionToolCallbacks` entry, the callbacks answer them and the agent goes on, until no
such call is left or `maxPollTimeMs` (default 5 minutes) has passed. The reply is read as
`openai:responses` reads one; the cost comes from promptfoo's Azure prices for `modelName`, else
the agent name. Calls with callbacks are never answered from the response cache.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError, UnknownProviderError
from ci_grade.providers import tls
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.http_clients import sdk_http_client
from ci_grade.providers.openai import OpenAIResponsesProvider
from ci_grade.providers.openai_replies import rate_limit_wait, responses_reply, with_output
from ci_grade.providers.pricing import estimate_cost, price_of
from ci_grade.providers.retry import RETRYABLE_STATUS, retry_after_seconds, with_retries
from ci_grade.providers.tool_callbacks import callbacks_of, run_callback
from ci_grade.results.usage import TokenUsage

T = TypeVar("T")

DEFAULT_LOOP_MS = 300_000
IGNORED = ("frequency_penalty", "presence_penalty", "retryOptions", "seed", "stop", "timeoutMs", "tool_resources")
"""Settings promptfoo takes but the agent runtime does not (they belong to the agent itself)."""
_IGNORED_WHEN_EMPTY = frozenset({"retryOptions", "stop", "tool_resources"})
MISSING_SDK = "the Azure AI Projects SDK is not installed: pip install 'ci-grade[azure]' (the ci-grade Docker image has it)"


def sdk_installed() -> bool:
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("azure.ai.projects", "azure.identity"))
    except ModuleNotFoundError:  # no `azure` package at all
        return False


def project_url(config: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """The project endpoint: `config.projectUrl`, else `AZURE_AI_PROJECT_URL`, with `https://`
    added when it names no scheme (as promptfoo's example writes it)."""
    value = str(config.get("projectUrl") or env.get("AZURE_AI_PROJECT_URL") or "").strip()
    if not value:
        return None
    return value if value.startswith(("http://", "https://")) else f"https://{value}"


def check_id(provider_id: str) -> str | None:
    """An agent left out (`azure:foundry-agent:`), or None."""
    prefix, _, agent = provider_id.partition(":foundry-agent:")
    return None if agent else f"{provider_id}: name the agent, e.g. {prefix}:foundry-agent:my-agent"


def check_spec(spec: ProviderSpec, env: Mapping[str, str]) -> str | None:
    """No SDK, no project to call, or a `maxPollTimeMs` that is not a duration (asked before any call)."""
    if not sdk_installed():
        return MISSING_SDK
    if project_url(spec.config, env) is None:
        return "the Azure AI Foundry project is not set: set config.projectUrl or AZURE_AI_PROJECT_URL"
    limit = spec.config.get("maxPollTimeMs")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float) or not math.isfinite(limit) or limit < 0):
        return "config.maxPollTimeMs must be a finite, non-negative number of milliseconds"
    return None


def spec_warnings(spec: ProviderSpec) -> list[str]:
    """One line naming the per-request settings the agent runtime ignores, if any are set."""
    config = spec.config
    ignored = sorted(k for k in IGNORED if (config.get(k) if k in _IGNORED_WHEN_EMPTY else config.get(k) is not None))
    if not ignored:
        return []
    return [f"Azure AI Foundry agents ignore these per-request settings: {', '.join(ignored)}; set them on the agent itself"]


def prompt_input(prompt: str) -> list[Any]:
    """The prompt as Responses input items: a JSON array as it is, any other text as one user message."""
    try:
        parsed = json.loads(prompt)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, list) else [{"type": "message", "role": "user", "content": prompt}]


def text_options(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Responses `text` options: the format from `response_format`, and `verbosity`."""
    text: dict[str, Any] = {}
    response_format = config.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_object":
        text["format"] = {"type": "json_object"}
    elif kind == "json_schema" and isinstance(response_format, dict):
        inner = response_format.get("json_schema")
        nested: dict[str, Any] = inner if isinstance(inner, dict) else {}
        strict = nested.get("strict", response_format.get("strict"))
        text["format"] = {
            "type": "json_schema",
            "name": nested.get("name") or response_format.get("name") or "response_schema",
            "schema": response_format.get("schema") or nested.get("schema"),
            "strict": True if strict is None else strict,
        }
    if config.get("verbosity"):
        text["verbosity"] = config["verbosity"]
    return text or None


def request_body(prompt: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The first request's body, as promptfoo builds it (`passthrough` goes over it, in `extra_body`)."""
    limit = next((config[k] for k in ("max_output_tokens", "max_completion_tokens", "max_tokens") if config.get(k) is not None), None)
    body: dict[str, Any] = {
        "input": prompt_input(prompt),
        "instructions": config.get("instructions") or None,
        "metadata": config.get("metadata") or None,
        "model": config.get("modelName") or None,
        "max_output_tokens": limit,
        "reasoning": {"effort": config["reasoning_effort"]} if config.get("reasoning_effort") else None,
        "temperature": config.get("temperature"),
        "top_p": config.get("top_p"),
        "tool_choice": config.get("tool_choice") or None,
        "tools": config.get("tools") or None,
        "text": text_options(config),
    }
    return {k: v for k, v in body.items() if v is not None}


def function_calls(result: Any) -> list[Any]:
    """The function calls a reply asks for."""
    return [item for item in result.output if getattr(item, "type", None) == "function_call"]


class FoundryAgentProvider(OpenAIResponsesProvider):
    """`azure:foundry-agent:<agent>`: a Responses call to a Foundry project's agent."""

    price_family = "azure"

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, spec.id.split(":", 2)[2], max_concurrency)
        self._project: Any = None
        self._credential: Any = None
        self._session: Any = None
        self._agent: dict[str, str] | None = None
        self._resolving: asyncio.Lock | None = None

    def describe(self) -> str:
        return self.spec.id

    def project_url(self) -> str | None:
        return project_url(self.spec.config, self.env)

    def missing_key_error(self) -> str | None:
        """Signing in is the credential's: only the project can be missing."""
        return None if self.project_url() else f"the Azure AI Foundry project is not set: set config.projectUrl or AZURE_AI_PROJECT_URL for provider {self.id}"

    def cache_identity(self) -> dict[str, Any]:
        return {**Provider.cache_identity(self), "agent": self._model, "project": self.project_url()}

    def _cache_key(self, request: dict[str, Any]) -> str | None:
        """None (no caching) when callbacks answer the agent's calls: their code is not in the key."""
        return None if callbacks_of(self.spec.config) else super()._cache_key(request)

    def price(self) -> tuple[float, float] | None:
        return price_of(self.spec.config.get("modelName") or self._model, self.spec.config, "azure")

    def cost(self, usage: TokenUsage) -> float | None:
        model = self.spec.config.get("modelName") or self._model
        return estimate_cost(model, self.spec.config, usage.prompt, usage.completion, family="azure", cached_tokens=usage.cached)

    def project(self) -> Any:
        """The SDK's project client (made in the running event loop): ci-grade's trust store and
        proxy settings, no retries of its own (ci-grade's apply)."""
        if self._project is None:
            import aiohttp

            try:
                from azure.ai.projects.aio import AIProjectClient
                from azure.core.pipeline.transport import AioHttpTransport
                from azure.identity.aio import DefaultAzureCredential
            except ImportError:
                raise ProviderError(MISSING_SDK) from None

            try:
                trust = tls.context()
            except tls.TrustStoreError as exc:
                raise ProviderError(str(exc)) from None
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust), trust_env=True)
            self._credential = DefaultAzureCredential()
            transport = AioHttpTransport(session=self._session, session_owner=False)
            self._project = AIProjectClient(
                self.project_url() or "", self._credential, transport=transport, retry_total=0, connection_timeout=self._timeout, read_timeout=self._timeout
            )
        return self._project

    def client(self) -> Any:
        """The project's OpenAI client (Entra ID tokens from the same credential)."""
        if self._client is None:
            self._client = self.project().get_openai_client(
                max_retries=0, timeout=self._timeout, http_client=sdk_http_client(self._timeout), default_headers=self.extra_headers()
            )
        return self._client

    async def azure_request(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run an Azure SDK call with ci-grade's retry policy; its errors become ProviderError."""
        from azure.core import exceptions as azure

        async def attempt() -> T:
            try:
                result = await operation()
            except azure.ClientAuthenticationError as exc:  # no credential signed in, or the token was refused
                raise ProviderError(" ".join(str(exc.message).split())) from None
            except azure.HttpResponseError as exc:
                self.liveness.answered()
                status = exc.status_code or 0
                headers = dict(getattr(exc.response, "headers", None) or {})
                message = f"API error {status}: {_one_line(exc.message)}"
                if status in RETRYABLE_STATUS:
                    wait = rate_limit_wait(headers, message) if status == 429 else retry_after_seconds(headers)
                    raise TransientError(message, wait, status=status) from None
                raise ProviderError(message) from None
            except (azure.ServiceRequestError, azure.ServiceResponseError) as exc:
                if refused := tls.trust_failure(exc):
                    raise ProviderError(refused) from None
                raise TransientError(f"connection failed: {_one_line(exc.message)}") from None
            self.liveness.answered()
            return result

        try:
            return await with_retries(attempt, self._retries, timeout=self._timeout, liveness=self.liveness, limiter=self.limiter)
        except TransientError as exc:
            raise ProviderError(f"{exc} (after retries)") from None

    async def agent(self) -> dict[str, str]:
        """The agent's id and name, looked up once per provider."""
        if self._agent is None:
            self._resolving = self._resolving or asyncio.Lock()
            async with self._resolving:
                if self._agent is None:
                    self._agent = await self._find_agent()
        return self._agent

    async def _find_agent(self) -> dict[str, str]:
        from azure.core.exceptions import ClientAuthenticationError, HttpResponseError

        agents = self.project().agents
        wanted = str(self._model)

        async def by_name() -> Any:
            try:
                return await agents.get(wanted)
            except HttpResponseError as exc:
                if isinstance(exc, ClientAuthenticationError) or exc.status_code not in (400, 404):
                    raise
                return None  # not a name (a legacy `asst_...` id): look among the project's agents

        async def by_listing() -> Any:
            async for agent in agents.list():
                if wanted in (agent.id, agent.name):
                    return agent
            return None

        found = await self.azure_request(by_name) or await self.azure_request(by_listing)
        if found is None:
            raise ProviderError(
                f"Azure Foundry agent '{wanted}' was not found by name or legacy ID in project '{self.project_url()}'. The Azure AI "
                "Projects v2 SDK resolves agents by name. Update the provider to use azure:foundry-agent:<agent-name>, or keep using "
                "the legacy ID format and ensure the agent still exists in this project."
            )
        return {"id": str(found.id), "name": str(found.name)}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        try:
            from azure.core.exceptions import AzureError
        except ImportError:
            return ProviderResponse(error=MISSING_SDK)
        try:
            return await self._converse(prompt)
        except ProviderError as exc:
            return ProviderResponse(error=f"Error in Azure Foundry Agent API call: {exc}")
        except AzureError as exc:  # the OpenAI client's token could not be had
            return ProviderResponse(error=f"Error in Azure Foundry Agent API call: {' '.join(str(exc.message).split())}")

    async def _converse(self, prompt: str) -> ProviderResponse:
        """The agent's reply, after its function calls are answered by the callbacks (if any)."""
        config = self.spec.config
        agent = await self.agent()
        reference = {"agent_reference": {"name": agent["name"], "type": "agent_reference"}}
        extra = config.get("passthrough")
        passthrough: dict[str, Any] = extra if isinstance(extra, dict) else {}
        create = self.client().responses.create
        result = await self.request(create, with_output, **request_body(prompt, config), extra_body={**passthrough, **reference})
        callbacks = callbacks_of(config)
        configured = config.get("maxPollTimeMs")
        limit_ms = float(DEFAULT_LOOP_MS if configured is None else configured)
        timed_out = ProviderResponse(
            error=f"Azure Foundry agent tool-calling loop timed out after {limit_ms:g}ms. "
            "Increase maxPollTimeMs if this evaluation legitimately needs a longer tool-calling loop."
        )
        started = time.monotonic()

        def out_of_time() -> bool:
            return (time.monotonic() - started) * 1000 >= limit_ms

        calls = self.answerable(result, callbacks)
        answered = bool(calls)
        while calls and not out_of_time():
            outputs = await self.answers(calls, result, agent, callbacks)
            if out_of_time():
                return timed_out
            result = await self.request(create, with_output, input=outputs, previous_response_id=result.id, extra_body=reference)
            calls = self.answerable(result, callbacks)
        if answered and out_of_time() and function_calls(result):
            return timed_out
        response = responses_reply(result, config.get("response_format"))
        failure = getattr(result, "error", None)
        if failure is not None and not getattr(result, "output_text", None):
            return ProviderResponse(error=f"Error in Azure Foundry Agent API call: {getattr(failure, 'code', None)}: {getattr(failure, 'message', failure)}", token_usage=response.token_usage)
        response.cost = self.cost(response.token_usage)
        response.metadata = {**response.metadata, "agentId": agent["id"], "agentName": agent["name"], "responseId": result.id}
        return response

    def answerable(self, result: Any, callbacks: dict[str, str]) -> list[Any]:
        """The reply's function calls when a callback answers each of them, else none (they stay the output)."""
        calls = function_calls(result)
        return calls if callbacks and all(call.name in callbacks for call in calls) else []

    async def answers(self, calls: list[Any], result: Any, agent: dict[str, str], callbacks: dict[str, str]) -> list[dict[str, str]]:
        """What the callbacks answer, as `function_call_output` items (the arguments passed as JSON text)."""
        conversation = getattr(result, "conversation", None)
        context = {"threadId": getattr(conversation, "id", None) or result.id, "runId": result.id, "assistantId": agent["id"], "provider": "azure-foundry"}

        async def answer(call: Any) -> dict[str, str]:
            output = await run_callback(call.name, callbacks[call.name], call.arguments, context, self.base_dir)
            return {"type": "function_call_output", "call_id": call.call_id, "output": output}

        return list(await asyncio.gather(*(answer(call) for call in calls)))

    async def aclose(self) -> None:
        await super().aclose()
        for part in (self._project, self._credential, self._session):
            if part is not None:
                await part.close()
        self._project = self._credential = self._session = None


def _one_line(message: Any) -> str:
    """An Azure SDK error's message on one line (it adds `Code:` and `Message:` lines)."""
    return " ".join(str(message or "").split("\n", 1)[0].split())


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> FoundryAgentProvider:
    """The Foundry agent provider for an `azure:foundry-agent:` or `azureopenai:foundry-agent:` id."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    return FoundryAgentProvider(spec, env, max_concurrency)
