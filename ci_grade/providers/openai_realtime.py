"""`openai:realtime:<model>`: the OpenAI Realtime API over a websocket, through the official SDK's
`AsyncOpenAI().realtime.connect` (it needs the `websockets` package: `pip install 'ci-grade[websocket]'`).

As promptfoo 0.123.1 runs it: the socket opens at `<base URL>/realtime?model=<model>` with the API
key as a bearer token (the base URL, key, organization and `headers` are read as for `openai:`);
`session.update` carries `type: realtime`, the model, `output_modalities` (`["audio"]` when
`modalities` holds `audio`, the default, else `["text"]`), `instructions` (default "You are a
helpful assistant."), the audio formats (`input_audio_format`/`output_audio_format`: `pcm16`,
`g711_ulaw`, `g711_alaw`), `voice` (default `alloy`), `input_audio_transcription`,
`turn_detection`, `max_output_tokens` (`max_response_output_tokens` from 1 to 4096, else `inf`),
`parallel_tool_calls`, `reasoning`, `tools` and `tool_choice` (default `auto` with tools). The
prompt's last user message (a JSON chat array's; text, images and audio) goes as one
`conversation.item.create`; once the service has added it, `response.create` asks for the answer,
read until `response.done` (`openai_realtime_reply`). `temperature` is not sent (the API has none).

Function calls are answered by `functionCallHandler` (`file://handler.js:fn`, a `.py` file, or
inline JavaScript `(name, args) => ...`), called with the function's name and its arguments' JSON
text and returning a string, within `toolCallTimeout` (else `websocketTimeout`, else 30 s); a
handler that fails answers `{"error":"Tool execution failed"}`. After `maxToolIterations` rounds
(default 8, at most 64) the call is an error. Without a handler, a call is reported unanswered.

`websocketTimeout` (default 30 s) bounds the wait for the answer (a tool round starts it again).
Handshake failures that the service may not repeat (429, 5xx, a refused connection) are retried
under ci-grade's retry policy; once the session has started, a failure is the row's error.

With `maintainContext` (the default) and a test that names a `metadata.conversationId`, the turns
of that conversation share one session, one after another: each item is added after the last one,
so the model hears the conversation so far. Other calls open a session of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, ScriptError, TransientError, UnknownProviderError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.openai import OpenAIProvider
from ci_grade.providers.openai_realtime_reply import Reply
from ci_grade.providers.retry import RETRYABLE_STATUS, RetryPolicy, retry_after_seconds, with_retries
from ci_grade.providers.tls import trust_failure

DEFAULT_MODEL = "gpt-realtime-1.5"
DEFAULT_TIMEOUT_MS = 30_000
MAX_OUTPUT_TOKENS = 4096
NOT_CONVERSATIONAL = {
    "gpt-realtime-whisper": "Pass it as input_audio_transcription.model inside a conversational session instead.",
    "gpt-realtime-translate": "It uses a separate Realtime session endpoint not yet supported by promptfoo.",
}
AUDIO_FORMATS = {"g711_ulaw": {"type": "audio/pcmu"}, "g711_alaw": {"type": "audio/pcma"}}
TOOL_FAILED = json.dumps({"error": "Tool execution failed"}, separators=(",", ":"))
ITEM_EVENTS = frozenset({"conversation.item.created", "conversation.item.added", "conversation.item.done"})
MISSING_SDK = "openai:realtime needs the websockets package: pip install 'ci-grade[websocket]'"


def check_config(model: str, config: Mapping[str, Any]) -> str | None:
    """Why this realtime provider cannot run (promptfoo refuses the model at construction too), or None."""
    if importlib.util.find_spec("websockets") is None:
        return MISSING_SDK
    if model in NOT_CONVERSATIONAL:
        return (f"OpenAI {model} is not a conversational Realtime model and cannot be used as openai:realtime:{model}. "
                + NOT_CONVERSATIONAL[model])
    timeout = config.get("websocketTimeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        return f"config.websocketTimeout must be a positive number of milliseconds, got {timeout!r}"
    handler = config.get("functionCallHandler")
    if handler is not None and (not isinstance(handler, str) or not handler.strip()):
        return "config.functionCallHandler must be a file://path.js:function (or .py) reference or JavaScript code"
    return None


def user_content(prompt: str) -> list[dict[str, Any]]:
    """The content of the prompt's last user message (a JSON chat array's, or `{"prompt": ...}`'s),
    else the prompt as text, as promptfoo sends it."""
    try:
        parsed = json.loads(prompt)
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        for message in reversed(parsed):
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            if isinstance(message.get("content"), str):
                return [{"type": "input_text", "text": message["content"]}]
            if isinstance(message.get("content"), list):
                content = [part for part in map(_content_part, message["content"]) if part is not None]
                if content:
                    return content
    elif isinstance(parsed, dict) and isinstance(parsed.get("prompt"), str):
        return [{"type": "input_text", "text": parsed["prompt"]}]
    return [{"type": "input_text", "text": prompt}]


def _content_part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    if part.get("type") in ("text", "input_text") and isinstance(part.get("text"), str):
        return {"type": "input_text", "text": part["text"]}
    if part.get("type") == "input_audio" and isinstance(part.get("audio"), str):
        return {"type": "input_audio", "audio": part["audio"]}
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if part.get("type") in ("input_image", "image_url") and isinstance(url, str):
        return {"type": "input_image", "image_url": url}
    return None


@dataclass(eq=False)
class _Conversation:
    """A session kept open for one conversation's turns."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    connection: Any = None
    last_item: str | None = None


class OpenAIRealtimeProvider(OpenAIProvider):
    """The Realtime API: one websocket session per call, or per conversation."""

    default_model = DEFAULT_MODEL
    adaptive: ClassVar[bool] = False

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str | None, max_concurrency: int | None = None):
        super().__init__(spec, env, model, max_concurrency)
        self._conversations: dict[str, _Conversation] = {}

    def describe(self) -> str:
        return f"openai:realtime:{self._model}"

    def _keeps_context(self, context: CallContext) -> bool:
        return bool(context.conversation_id) and self.spec.config.get("maintainContext", True) is not False

    def reuses_replies(self, context: CallContext) -> bool:
        return not self._keeps_context(context)

    def timeout_seconds(self) -> float:
        return float(self.spec.config.get("websocketTimeout") or DEFAULT_TIMEOUT_MS) / 1000

    def tool_config(self) -> dict[str, Any]:
        config = self.spec.config
        tools = config.get("tools")
        if not tools:
            return {}
        if isinstance(tools, list):  # Chat Completions' shape ({type, function: {...}}) is flattened
            tools = [{**{k: v for k, v in t.items() if k != "function"}, **t["function"]} if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict) else t for t in tools]
        choice = config.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict) and choice["function"].get("name"):
            choice = {"type": "function", "name": choice["function"]["name"]}
        return {"tools": tools, "tool_choice": choice or "auto"}

    def _common(self) -> dict[str, Any]:
        config = self.spec.config
        modalities = config.get("modalities") or ["text", "audio"]
        limit = config.get("max_response_output_tokens")
        valid_limit = isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit <= MAX_OUTPUT_TOKENS
        common: dict[str, Any] = {
            "output_modalities": ["audio"] if "audio" in modalities else ["text"],
            "instructions": config.get("instructions") or "You are a helpful assistant.",
            "max_output_tokens": limit if valid_limit else "inf",
        }
        for key in ("parallel_tool_calls", "reasoning"):
            if config.get(key) is not None:
                common[key] = config[key]
        return {**common, **self.tool_config()}

    def _output_audio(self) -> dict[str, Any]:
        config = self.spec.config
        return {"format": _audio_format(config.get("output_audio_format")), "voice": config.get("voice") or "alloy"}

    def session_config(self) -> dict[str, Any]:
        """The `session.update` event's session."""
        config = self.spec.config
        audio_in: dict[str, Any] = {"format": _audio_format(config.get("input_audio_format"))}
        for key in ("input_audio_transcription", "turn_detection"):
            if key in config:
                audio_in[key.removeprefix("input_audio_")] = config[key]
        common = self._common()
        head = {"type": "realtime", "model": self._model, "output_modalities": common.pop("output_modalities"), "instructions": common.pop("instructions")}
        return {**head, "audio": {"input": audio_in, "output": self._output_audio()}, **common}

    def response_config(self) -> dict[str, Any]:
        """The first `response.create` event's response."""
        common = self._common()
        head = {"output_modalities": common.pop("output_modalities"), "instructions": common.pop("instructions")}
        return {**head, "audio": {"output": self._output_audio()}, **common}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        content = user_content(prompt)
        if context.conversation_id and self._keeps_context(context):
            state = self._conversations.setdefault(context.conversation_id, _Conversation())
            async with state.lock:
                return await self._request(content, state, keep=True)
        return await self._request(content, _Conversation(), keep=False)

    async def _request(self, content: list[dict[str, Any]], state: _Conversation, *, keep: bool) -> ProviderResponse:
        """One request on the session (opened first if it is not), retried while the handshake fails
        in a way the service may not repeat; the session stays open only if `keep` and it did not fail."""
        policy = RetryPolicy.from_env()
        reply = Reply()
        failed = True
        try:
            if state.connection is None:
                state.connection = await with_retries(self._connect, policy)
            async with asyncio.timeout(self.timeout_seconds()) as scope:
                await self._exchange(state, content, reply, scope)
            failed = False
        except TransientError as exc:
            return ProviderResponse(error=f"{exc} (gave up after {policy.attempts} attempts)")
        except TimeoutError:
            return ProviderResponse(error=f"WebSocket error: WebSocket connection timed out after {self.timeout_seconds() * 1000:g}ms", metadata=_partial(reply))
        except ProviderError as exc:
            return ProviderResponse(error=str(exc), metadata=_partial(reply))
        finally:
            if failed or not keep:
                await _close(state)
        return reply.response(self._model or DEFAULT_MODEL, self.spec.config)

    async def _connect(self) -> Any:
        """An open session (TransientError for a handshake failure worth another attempt)."""
        try:
            import websockets
        except ImportError:
            raise ProviderError(MISSING_SDK) from None
        try:
            return await self.client().realtime.connect(model=self._model).enter()
        except websockets.exceptions.InvalidStatus as exc:
            status = exc.response.status_code
            message = f"WebSocket error: Unexpected server response: {status}"
            if status in RETRYABLE_STATUS:
                raise TransientError(message, retry_after_seconds(dict(exc.response.headers.raw_items()))) from None
            raise ProviderError(message) from None
        except (OSError, websockets.exceptions.WebSocketException, TimeoutError) as exc:
            if refused := trust_failure(exc):
                raise ProviderError(refused) from None
            message = f"WebSocket error: {type(exc).__name__}: {exc}"
            if isinstance(exc, OSError | TimeoutError):
                raise TransientError(message) from None
            raise ProviderError(message) from None

    async def _exchange(self, state: _Conversation, content: list[dict[str, Any]], reply: Reply, scope: asyncio.Timeout) -> None:
        """Send the session's settings and the user's item, ask for the answer once the item is
        added, answer function calls, and read until the last `response.done`."""
        from websockets.exceptions import ConnectionClosed

        connection = state.connection
        rounds, most = 0, _tool_iterations(self.spec.config.get("maxToolIterations"))
        handler = self.spec.config.get("functionCallHandler")
        try:
            await connection.send({"type": "session.update", "session": self.session_config()})
            item = {"type": "message", "role": "user", "content": content}
            await connection.send({"type": "conversation.item.create", "previous_item_id": state.last_item, "item": item})
            while True:
                event = json.loads(await connection.recv_bytes())
                kind = event.get("type")
                if kind == "error":
                    error = event.get("error") or {}
                    raise ProviderError(f"WebSocket error: {error.get('type') or 'error'}: {error.get('message') or event.get('message') or 'Unknown WebSocket error'}")
                if kind in ITEM_EVENTS:
                    added = event.get("item") or {}
                    if added.get("role") == "user" and added.get("id") != reply.message_id:
                        reply.message_id = state.last_item = str(added.get("id") or "")
                        await connection.send({"type": "response.create", "response": self.response_config()})
                    elif added.get("role") == "assistant" and added.get("id"):
                        state.last_item = str(added["id"])
                reply.read(event)
                if kind != "response.done":
                    continue
                if not (reply.pending and handler):
                    return
                if rounds >= most:
                    raise ProviderError(f"WebSocket error: Realtime tool-call loop exceeded maxToolIterations={most}; "
                                        "increase config.maxToolIterations if your evaluation legitimately requires deeper chains.")
                rounds += 1
                scope.reschedule(None)  # the handlers' time is theirs (toolCallTimeout)
                results = [await self._answer(str(handler), call.name, call.arguments) for call in reply.pending]
                for call, result in zip(reply.pending, results, strict=True):
                    await connection.send({"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": call.call_id, "output": result}})
                await connection.send({"type": "response.create"})
                reply.next_round(results)
                scope.reschedule(asyncio.get_running_loop().time() + self.timeout_seconds())
        except ConnectionClosed as exc:
            code, reason = (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (1006, "")
            raise ProviderError(f"WebSocket error: WebSocket closed unexpectedly with code {code}: {reason}. "
                                "This may indicate a networking issue, firewall restriction, or API access limitation.") from None
        except ValueError as exc:  # not JSON
            raise ProviderError(f"WebSocket error: Error processing WebSocket message: {exc}") from None

    async def _answer(self, handler: str, name: str, arguments: str) -> str:
        """The handler's answer to one function call, or promptfoo's redacted failure."""
        config = self.spec.config
        explicit = config.get("toolCallTimeout")
        limit = float(explicit) / 1000 if isinstance(explicit, int | float) and not isinstance(explicit, bool) and explicit > 0 else self.timeout_seconds()
        try:
            if handler.startswith("file://"):
                from ci_grade.workers import dispatch

                path_text, function = files.split_function(handler)
                path = files.resolve(path_text, self.base_dir or Path.cwd())
                result = await asyncio.wait_for(dispatch.call_file(path, function, [name, arguments], python_default="functionCallHandler", base_dir=self.base_dir), limit)
            else:
                from ci_grade.scripting import js

                code = handler.strip().rstrip(";")
                _, result = await asyncio.wait_for(js.arun_inline(f"return ({code})(name, args);", ("name", "args"), [name, arguments]), limit)
        except (ScriptError, ProviderError, OSError, TimeoutError, ValueError):
            return TOOL_FAILED
        return result if isinstance(result, str) else TOOL_FAILED

    async def aclose(self) -> None:
        for state in self._conversations.values():
            await _close(state)
        self._conversations.clear()
        await super().aclose()


def _audio_format(name: Any) -> dict[str, Any]:
    return AUDIO_FORMATS.get(str(name), {"type": "audio/pcm", "rate": 24_000})


def _tool_iterations(value: Any) -> int:
    """promptfoo's cap on tool rounds: 1 to 64, else 8."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and 1 <= value <= 64 else 8


def _partial(reply: Reply) -> dict[str, Any]:
    """What a failed request still reports: whether functions were called, and their results."""
    metadata: dict[str, Any] = {"functionCallOccurred": reply.called} if reply.called else {}
    if reply.results:
        metadata["functionCallResults"] = reply.results
    return metadata


async def _close(state: _Conversation) -> None:
    connection, state.connection, state.last_item = state.connection, None, None
    if connection is not None:
        with contextlib.suppress(Exception):
            await connection.close()


def create(spec: ProviderSpec, env: Mapping[str, str], model: str | None, max_concurrency: int | None) -> OpenAIRealtimeProvider:
    """The provider for `openai:realtime[:<model>]` (UnknownProviderError where promptfoo refuses it)."""
    model = model_of(model, spec.config)
    if problem := check_config(model, spec.config):
        raise UnknownProviderError(f"{spec.id}: {problem}")
    return OpenAIRealtimeProvider(spec, env, model, max_concurrency)


def model_of(named: str | None, config: Mapping[str, Any]) -> str:
    """The model an id names, else `config.model`, else promptfoo's default."""
    return named or str(config.get("model") or "") or DEFAULT_MODEL
