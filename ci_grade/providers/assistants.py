"""OpenAI and Azure OpenAI Assistants through the official SDK's `beta.threads` API.

Ids: `openai:assistant:<assistant id>` and `azure:assistant:<assistant id>` (or `azureopenai:`).
Each call starts a thread with the prompt and a run of the assistant (`threads.create_and_run`:
`config.tools`, `tool_resources` (file search's vector stores), `tool_choice` (`toolChoice` for
OpenAI), `instructions`, `modelName`, `temperature`, `top_p` (Azure), `metadata` and
`attachments` (OpenAI)), then reads the run until it ends. A run that asks for function calls is
answered by `config.functionToolCallbacks` (`tool_callbacks`) and goes on; one that fails is an
ERROR (Azure's content filter: a flagged output, as promptfoo). The output is the run's steps as
promptfoo writes them: `[User] ...`, `[Call function get_weather with arguments {...}]`,
`[Function output: ...]`, `[Ran file search]`, `[Assistant] ...`. Polling gives up after
`config.maxPollTimeMs` (default 5 minutes). Endpoints, keys and API versions are the chat
providers' (`openai`, `azure`); Azure's default API version here is 2024-05-01-preview (the
first with the Assistants v2 API that the SDK speaks).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.azure import AzureClientMixin
from ci_grade.providers.base import CallContext, ProviderResponse, parse_chat_messages
from ci_grade.providers.openai import OpenAIProvider
from ci_grade.providers.pricing import estimate_cost
from ci_grade.providers.tool_callbacks import callbacks_of, run_callback
from ci_grade.results.usage import TokenUsage

RUNNING = frozenset({"queued", "in_progress", "cancelling"})
FILTERED = "The generated content was filtered due to triggering Azure OpenAI Service's content filtering system."
_FILTER_WORDS = ("content_filter", "content filter", "filtered due to", "content filtering", "inappropriate content", "safety guidelines", "guardrail")


def _dump(value: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = value.model_dump(mode="json", exclude_unset=True)
    return dumped


def _page(value: Any) -> list[dict[str, Any]]:
    return [_dump(item) for item in value.data]


def _text(message: dict[str, Any]) -> str:
    parts = message.get("content") or []
    return "\n".join(p["text"]["value"] if p.get("type") == "text" and p.get("text") else f"<{p.get('type')} output>" for p in parts)


def _role(message: dict[str, Any]) -> str:
    return str(message.get("role") or "").title()


class OpenAIAssistantProvider(OpenAIProvider):
    """`openai:assistant:<id>`: a thread and a run of the assistant per call."""

    flavor: ClassVar[str] = "openai"
    _model: str

    def describe(self) -> str:
        return f"{self.spec.id.split(':', 1)[0]}:assistant:{self._model}"

    def run_body(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        messages = parse_chat_messages(prompt)
        if config.get("attachments") and messages:
            messages[-1] = {**messages[-1], "attachments": config["attachments"]}
        body: dict[str, Any] = {
            "assistant_id": self._model,
            "thread": {"messages": messages},
            "model": config.get("modelName"),
            "instructions": config.get("instructions"),
            "tools": config.get("tools") if isinstance(config.get("tools"), list) else None,
            "metadata": config.get("metadata"),
            "temperature": config.get("temperature"),
            "tool_choice": config.get("toolChoice"),
            "tool_resources": config.get("tool_resources"),
        }
        return {k: v for k, v in body.items() if v is not None}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        threads = self.client().beta.threads
        try:
            started = await self.request(threads.create_and_run, _dump, **self.run_body(prompt))
            run = await self._follow(threads, started)
            if isinstance(run, ProviderResponse):
                return run
            if problem := self.failed(run):
                return problem
            steps = await self.request(threads.runs.steps.list, _page, run_id=run["id"], thread_id=run["thread_id"], order="asc", limit=100)
            messages = await self.request(threads.messages.list, _page, thread_id=run["thread_id"], order="asc", limit=100)
        except ProviderError as exc:
            return ProviderResponse(error=f"API error: {exc}")
        usage = run.get("usage") or {}
        tokens = TokenUsage.of(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")) if usage else TokenUsage(num_requests=1)
        model = self.spec.config.get("modelName") or run.get("model")
        cost = estimate_cost(model, self.spec.config, tokens.prompt, tokens.completion, family=self.price_family or "openai") if usage else None
        return ProviderResponse(output=self.output(steps, messages), token_usage=tokens, cost=cost, metadata={"threadId": run["thread_id"], "runId": run["id"]})

    async def _follow(self, threads: Any, run: dict[str, Any]) -> dict[str, Any] | ProviderResponse:
        """Read the run until it ends, answering its function calls; the last state read."""
        limit = float(self.spec.config.get("maxPollTimeMs") or 300_000) / 1000
        started, wait, reads = time.monotonic(), 0.25, 0
        while True:
            if run["status"] in RUNNING:
                if time.monotonic() - started > limit:
                    return ProviderResponse(error=f"Run polling timed out after {limit * 1000:g}ms. Last status: {run['status']}")
                if reads:
                    await asyncio.sleep(wait)
                    wait = min(wait * 1.5, 2.0)
                reads += 1
                run = await self.request(threads.runs.retrieve, _dump, run_id=run["id"], thread_id=run["thread_id"])
                continue
            if run["status"] != "requires_action":
                return run
            outputs = await self.tool_outputs(run)
            if outputs is None:
                return run
            run = await self.request(threads.runs.submit_tool_outputs, _dump, run_id=run["id"], thread_id=run["thread_id"], tool_outputs=outputs)

    async def tool_outputs(self, run: dict[str, Any]) -> list[dict[str, str]] | None:
        """The answers to the run's function calls, or None to stop (no callback answers any)."""
        action = run.get("required_action") or {}
        calls = [c for c in (action.get("submit_tool_outputs") or {}).get("tool_calls") or [] if isinstance(c, dict)]
        callbacks = callbacks_of(self.spec.config)
        if action.get("type") != "submit_tool_outputs" or not self.answers(calls, callbacks):
            return None
        context = {"threadId": run["thread_id"], "runId": run["id"], "assistantId": self._model, "provider": self.flavor}

        async def answer(call: dict[str, Any]) -> dict[str, str]:
            function = call.get("function") or {}
            name, arguments = str(function.get("name") or call.get("type")), str(function.get("arguments") or "{}")
            if call.get("type") != "function" or name not in callbacks:
                return {"tool_call_id": call["id"], "output": json.dumps({"message": f"No callback registered for function {name}"})}
            return {"tool_call_id": call["id"], "output": await run_callback(name, callbacks[name], self.callback_args(arguments), context, self.base_dir)}

        return list(await asyncio.gather(*(answer(call) for call in calls)))

    def answers(self, calls: list[dict[str, Any]], callbacks: dict[str, str]) -> bool:
        """Whether to answer these calls: OpenAI's assistant does when a callback takes one of them."""
        return any(c.get("type") == "function" and (c.get("function") or {}).get("name") in callbacks for c in calls)

    def callback_args(self, arguments: str) -> Any:
        """OpenAI's assistant passes a callback the parsed arguments ({} when they are not JSON)."""
        try:
            return json.loads(arguments)
        except ValueError:
            return {}

    def failed(self, run: dict[str, Any]) -> ProviderResponse | None:
        if run["status"] in ("completed", "requires_action"):
            return None
        error = run.get("last_error") or {}
        return ProviderResponse(error=f"Thread run failed: {error.get('message') or run['status']}")

    def output(self, steps: list[dict[str, Any]], messages: list[dict[str, Any]]) -> str:
        """The steps in order, a message as `[Role] text` and each tool call as promptfoo shows it."""
        by_id = {m.get("id"): m for m in messages}
        blocks: list[str] = []
        for step in steps:
            details = step.get("step_details") or {}
            if details.get("type") == "message_creation":
                message = by_id.get((details.get("message_creation") or {}).get("message_id")) or {}
                blocks.append(f"[{_role(message)}] {_text(message)}")
            elif details.get("type") == "tool_calls":
                blocks.extend(self.tool_blocks(details.get("tool_calls") or []))
            else:
                blocks.append(f"[Unknown step type: {details.get('type')}]")
        return "\n\n".join(blocks).strip()

    def tool_blocks(self, calls: list[dict[str, Any]]) -> list[str]:
        blocks: list[str] = []
        for call in calls:
            kind = call.get("type")
            if kind == "function":
                function = call.get("function") or {}
                blocks.append(f"[Call function {function.get('name')} with arguments {function.get('arguments')}]")
                if function.get("output") or self.flavor == "openai":
                    output = function.get("output")
                    blocks.append(f"[Function output: {'null' if output is None else output}]")
            elif kind == "file_search":
                blocks.append("[Ran file search]")
                if self.flavor == "azure":
                    blocks.append(f"[File search details: {json.dumps(call.get('file_search') or {}, separators=(',', ':'))}]")
            elif kind == "code_interpreter":
                interpreter = call.get("code_interpreter") or {}
                logs = "\n".join(o.get("logs") or "" if o.get("type") == "logs" else f"<{o.get('type')} output>" for o in interpreter.get("outputs") or [])
                blocks += ["[Code interpreter input]", interpreter.get("input") or "[No input]", "[Code interpreter output]", logs or "[No output]"]
            else:
                blocks.append(f"[Unknown tool call type: {kind}]")
        return blocks


class AzureAssistantProvider(AzureClientMixin, OpenAIAssistantProvider):
    """`azure:assistant:<id>`: as OpenAI's, with Azure's endpoint, key, callback arguments (the
    JSON text) and output (the user's message, the tool calls, then the assistant's messages)."""

    flavor = "azure"
    price_family = "azure"

    def api_version(self) -> str:
        return str(self.spec.config.get("apiVersion") or self.env_value("AZURE_OPENAI_API_VERSION", "AZURE_API_VERSION") or "2024-05-01-preview")

    def run_body(self, prompt: str) -> dict[str, Any]:
        config = self.spec.config
        body: dict[str, Any] = {
            "assistant_id": self._model,
            "thread": {"messages": [{"role": "user", "content": prompt}]},
            "temperature": config.get("temperature"),
            "top_p": config.get("top_p"),
            "tool_resources": config.get("tool_resources"),
            "tool_choice": config.get("tool_choice"),
            "tools": config.get("tools") if isinstance(config.get("tools"), list) else None,
            "model": config.get("modelName"),
            "instructions": config.get("instructions"),
        }
        return {k: v for k, v in body.items() if v is not None}

    def answers(self, calls: list[dict[str, Any]], callbacks: dict[str, str]) -> bool:
        """Azure's assistant answers every call once any callback is configured."""
        return bool(callbacks)

    def callback_args(self, arguments: str) -> Any:
        return arguments

    def failed(self, run: dict[str, Any]) -> ProviderResponse | None:
        if run["status"] == "completed":
            return None
        error = run.get("last_error") or {}
        code, message = str(error.get("code") or ""), str(error.get("message") or "")
        if code == "content_filter" or any(word in message.lower() for word in _FILTER_WORDS):
            flagged_input = "prompt" in message.lower() or "input" in message.lower()
            return ProviderResponse(output=FILTERED, guardrails={"flagged": True, "flaggedInput": flagged_input, "flaggedOutput": not flagged_input})
        if error:
            return ProviderResponse(error=f"Thread run failed: {code} - {message}")
        return ProviderResponse(error=f"Thread run failed with status: {run['status']}")

    def output(self, steps: list[dict[str, Any]], messages: list[dict[str, Any]]) -> str:
        ordered = sorted(messages, key=lambda m: m.get("created_at") or 0)
        user = next((m for m in ordered if m.get("role") == "user"), None)
        blocks = [f"[User] {_text(user)}"] if user else []
        tools = [b for step in steps if step.get("type") == "tool_calls" for b in self.tool_blocks((step.get("step_details") or {}).get("tool_calls") or [])]
        blocks += [f"[Assistant] {_text(m)}" for m in ordered if m.get("role") == "assistant"]
        first = next((i for i, b in enumerate(blocks) if b.startswith("[Assistant]")), -1)
        blocks[first if first > 0 else len(blocks) : first if first > 0 else len(blocks)] = tools
        return "\n\n".join(blocks).strip()


def check_id(provider_id: str) -> str | None:
    """An assistant id left out (`openai:assistant:`), or None."""
    prefix, _, assistant_id = provider_id.partition(":assistant:")
    return None if assistant_id else f"{provider_id}: name the assistant, e.g. {prefix}:assistant:asst_abc123"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> OpenAIAssistantProvider:
    """The assistant provider for an `openai:assistant:`, `azure:assistant:` or `azureopenai:assistant:` id."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    kind = AzureAssistantProvider if spec.id.startswith(("azure:", "azureopenai:")) else OpenAIAssistantProvider
    return kind(spec, env, spec.id.partition(":assistant:")[2], max_concurrency)
