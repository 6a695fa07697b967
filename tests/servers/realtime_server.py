"""A stand-in for the OpenAI Realtime API: a websocket on loopback at `/v1/realtime?model=<model>`.

It checks what the service checks: the path (else HTTP 404 at the handshake), `Authorization:
Bearer <key>` (else HTTP 401, OpenAI's `invalid_api_key` body), the model in the query (else an
`error` event and a close), and each client event's type and fields: `session.update` must carry
`type: realtime`, one output modality, an `instructions` text, audio formats and a voice the API
knows and no field the API does not take (`temperature` is the beta API's); a
`conversation.item.create` must add a user `message` (with `input_text`, `input_audio` or
`input_image` parts) or a `function_call_output` for a call the model made. A wrong one is answered
with an `error` event (`invalid_request_error`), as the service does, and the session goes on.

It answers OpenAI's sequence: `session.created` on connect, `session.updated`, then for each user
item `conversation.item.added` and `conversation.item.done`; each `response.create` runs `reply`, a
script returning the response's events (see `text_response`, `call_response`), which the server
wraps in `response.created` and `response.done` with usage. Everything received is recorded.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from tests.servers.threaded_ws import ThreadedWsServer

SESSION_FIELDS = {"type", "model", "output_modalities", "instructions", "audio", "max_output_tokens", "tools", "tool_choice",
                  "parallel_tool_calls", "reasoning", "tracing", "truncation", "prompt", "include"}
RESPONSE_FIELDS = {"output_modalities", "instructions", "audio", "max_output_tokens", "tools", "tool_choice", "parallel_tool_calls",
                   "reasoning", "conversation", "metadata", "input", "prompt"}
VOICES = {"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"}
FORMATS = ({"type": "audio/pcm", "rate": 24000}, {"type": "audio/pcmu"}, {"type": "audio/pcma"})
PARTS = {"input_text", "input_audio", "input_image"}
SILENT = "silent"
"""A script's event `{"silent": True}`: send nothing more (a server that never answers)."""
CLOSE = "close"
"""A script's event `{"close": (code, reason)}` closes the socket."""


@dataclass
class Session:
    """One websocket session: its settings, the client events and the user turns so far."""

    model: str
    settings: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    """The text of each user item, in order."""
    outputs: list[str] = field(default_factory=list)
    """The output of each function call the client answered."""
    items: list[str] = field(default_factory=list)
    """Every item id in the conversation, in order."""
    calls: set[str] = field(default_factory=set)
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def audio(self) -> bool:
        return self.settings.get("output_modalities") == ["audio"]


Script = Callable[[Session, dict[str, Any]], list[dict[str, Any]]]
"""(session, the response.create event) -> the response's events."""

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


def text_response(text: str, session: Session, chunks: int = 2) -> list[dict[str, Any]]:
    """The answer `text` in `chunks` deltas: text events, or (audio sessions) PCM16 audio with its
    transcript, as the GA API names them."""
    item = new_id("item")
    size = max(1, -(-len(text) // chunks))
    pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    added = {"type": "response.output_item.added", "output_index": 0, "item": {"id": item, "type": "message", "role": "assistant", "content": []}}
    events: list[dict[str, Any]] = [added]
    for piece in pieces:
        if session.audio:
            events.append({"type": "response.output_audio.delta", "item_id": item, "delta": base64.b64encode(piece.encode() * 2).decode()})
            events.append({"type": "response.output_audio_transcript.delta", "item_id": item, "delta": piece})
        else:
            events.append({"type": "response.output_text.delta", "item_id": item, "delta": piece})
    if session.audio:
        events += [{"type": "response.output_audio.done", "item_id": item}, {"type": "response.output_audio_transcript.done", "item_id": item, "transcript": text}]
    else:
        events.append({"type": "response.output_text.done", "item_id": item, "text": text})
    return [*events, {"type": "conversation.item.done", "item": {"id": item, "type": "message", "role": "assistant"}}]


def call_response(name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """A function call, its arguments streamed in, as the API sends it."""
    call_id = new_id("call")
    item = {"id": new_id("item"), "type": "function_call", "call_id": call_id, "name": name, "arguments": ""}
    text = json.dumps(arguments)
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.function_call_arguments.delta", "call_id": call_id, "delta": text},
        {"type": "response.function_call_arguments.done", "call_id": call_id, "arguments": text},
    ]


def echo(session: Session, event: dict[str, Any]) -> list[dict[str, Any]]:
    if session.outputs and event.get("response") is None:
        return text_response(f"tool said: {session.outputs[-1]}", session)
    return text_response(f"echo: {session.turns[-1]}", session)


class RealtimeServer(ThreadedWsServer):
    """Serve on 127.0.0.1 from a background thread: `with RealtimeServer(key, model): ...`."""

    def __init__(self, key: str, model: str, reply: Script = echo):
        super().__init__()
        self.key = key
        self.model = model
        self.reply = reply
        self.sessions: list[Session] = []

    @property
    def url(self) -> str:
        """The base URL to configure (`http://`: the SDK connects with `ws://`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        json_headers = Headers([("Content-Type", "application/json")])
        if refusal := self.refuse_if_overloaded(b"Slow down."):
            return refusal
        if urlsplit(request.path).path != "/v1/realtime":
            self.refused.append(f"path {urlsplit(request.path).path}")
            return Response(404, "Not Found", json_headers, b'{"error": {"message": "Invalid URL", "type": "invalid_request_error"}}')
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            self.refused.append("key")
            body = {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}
            return Response(401, "Unauthorized", json_headers, json.dumps(body).encode())
        return None

    async def _session(self, ws: ServerConnection) -> None:
        request = ws.request
        assert request is not None
        model = next(iter(parse_qs(urlsplit(request.path).query).get("model") or []), "")
        if model != self.model:
            await ws.send(json.dumps(_error(f"Model {model!r} not found or not a realtime model.", "model_not_found")))
            await ws.close(1008, "model_not_found")
            return
        session = Session(model, headers={k.lower(): v for k, v in request.headers.raw_items()})
        self.sessions.append(session)
        await ws.send(json.dumps({"type": "session.created", "event_id": new_id("event"), "session": {"id": new_id("sess"), "type": "realtime", "model": model}}))
        async for raw in ws:
            event = json.loads(raw)
            session.events.append(event)
            for reply in self._answer(session, event):
                if CLOSE in reply:
                    await ws.close(*reply[CLOSE])
                    return
                if SILENT in reply:
                    break
                await ws.send(json.dumps({"event_id": new_id("event"), **reply}))

    def _answer(self, session: Session, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("type")
        if kind == "session.update":
            problem = _bad_session(event.get("session"), session.model)
            if problem:
                return [_error(problem, param="session")]
            session.settings = event["session"]
            return [{"type": "session.updated", "session": session.settings}]
        if kind == "conversation.item.create":
            return self._item(session, event)
        if kind == "response.create":
            response = event.get("response")
            if response is not None and (problem := _bad_response(response)):
                return [_error(problem, param="response")]
            events = self.reply(session, event)
            if any(SILENT in e or CLOSE in e for e in events) or (events and all(e.get("type") == "error" for e in events)):
                return events
            return [{"type": "response.created", "response": {"id": (rid := new_id("resp")), "status": "in_progress"}}, *events, _done(rid, session, events)]
        return [_error(f"Invalid value: {kind!r}. Supported values are: 'session.update', 'conversation.item.create', 'response.create', ...", param="type")]

    def _item(self, session: Session, event: dict[str, Any]) -> list[dict[str, Any]]:
        item = event.get("item") or {}
        previous = event.get("previous_item_id")
        if previous is not None and previous not in session.items:
            return [_error(f"Item with id {previous!r} not found.", param="previous_item_id")]
        if item.get("type") == "function_call_output":
            if item.get("call_id") not in session.calls or not isinstance(item.get("output"), str):
                return [_error("function_call_output needs the call_id of a function call and a string output", param="item")]
            session.outputs.append(item["output"])
            created = {"id": new_id("item"), **item}
        elif item.get("type") == "message" and item.get("role") == "user":
            parts = item.get("content")
            if not isinstance(parts, list) or not parts or any(not isinstance(p, dict) or p.get("type") not in PARTS for p in parts):
                return [_error("Invalid 'item.content': a user message takes input_text, input_audio and input_image parts.", param="item.content")]
            session.turns.append("".join(str(p.get("text", "")) for p in parts))
            created = {"id": new_id("item"), **item}
        else:
            return [_error(f"Invalid item type {item.get('type')!r} or role {item.get('role')!r}.", param="item")]
        session.items.append(created["id"])
        return [{"type": "conversation.item.added", "previous_item_id": previous, "item": created}, {"type": "conversation.item.done", "item": created}]


def _error(message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": message, "param": param}}


def _done(response_id: str, session: Session, events: list[dict[str, Any]]) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for event in events:
        item = event.get("item")
        if event.get("type") == "response.output_item.added" and isinstance(item, dict):
            output.append(item)
            session.items.append(item["id"])
            if item.get("type") == "function_call":
                session.calls.add(item["call_id"])
    text = sum(len(str(e.get("delta", ""))) for e in events if e.get("type", "").endswith("text.delta") or e.get("type", "").endswith("transcript.delta"))
    audio = sum(1 for e in events if e.get("type") == "response.output_audio.delta") * 10
    prompt = 10 * len(session.turns) + 5 * len(session.outputs)
    completion = max(1, text // 4) + audio
    usage = {
        "total_tokens": prompt + completion, "input_tokens": prompt, "output_tokens": completion,
        "input_token_details": {"text_tokens": prompt, "audio_tokens": 0, "image_tokens": 0, "cached_tokens": 0},
        "output_token_details": {"text_tokens": completion - audio, "audio_tokens": audio},
    }
    return {"type": "response.done", "response": {"id": response_id, "status": "completed", "output": output, "usage": usage}}


def _bad_session(settings: Any, model: str) -> str | None:
    if not isinstance(settings, dict):
        return "Missing required parameter: 'session'."
    unknown = sorted(set(settings) - SESSION_FIELDS)
    if unknown:
        return f"Unknown parameter: 'session.{unknown[0]}'."
    if settings.get("type") != "realtime":
        return "Missing required parameter: 'session.type'."
    if settings.get("model") not in (None, model):
        return f"Invalid 'session.model': {settings.get('model')!r} is not this session's model."
    return _bad_common(settings, "session") or _bad_audio(settings.get("audio"), "session", input_too=True)


def _bad_response(response: Any) -> str | None:
    if not isinstance(response, dict):
        return "Invalid type for 'response'."
    unknown = sorted(set(response) - RESPONSE_FIELDS)
    if unknown:
        return f"Unknown parameter: 'response.{unknown[0]}'."
    return _bad_common(response, "response") or _bad_audio(response.get("audio"), "response", input_too=False)


def _bad_common(settings: dict[str, Any], where: str) -> str | None:
    if settings.get("output_modalities") not in (None, ["text"], ["audio"]):
        return f"Invalid '{where}.output_modalities': one of ['text'] or ['audio']."
    limit = settings.get("max_output_tokens")
    if limit is not None and limit != "inf" and not (isinstance(limit, int) and 1 <= limit <= 4096):
        return f"Invalid '{where}.max_output_tokens'."
    if "instructions" in settings and not isinstance(settings["instructions"], str):
        return f"Invalid type for '{where}.instructions'."
    for tool in settings.get("tools") or []:
        if not isinstance(tool, dict) or tool.get("type") != "function" or not tool.get("name") or "function" in tool:
            return f"Invalid '{where}.tools': each tool is {{type: function, name, description, parameters}}."
    return None


def _bad_audio(audio: Any, where: str, *, input_too: bool) -> str | None:
    if audio is None:
        return None
    output = audio.get("output") or {}
    if output.get("format") not in (None, *FORMATS) or output.get("voice") not in (None, *VOICES):
        return f"Invalid '{where}.audio.output'."
    if input_too and (audio.get("input") or {}).get("format") not in (None, *FORMATS):
        return f"Invalid '{where}.audio.input.format'."
    return None
