"""A stand-in for the Gemini Live API: `BidiGenerateContent` over a TLS websocket on loopback.

It speaks the protocol as far as the `google-genai` SDK uses it, and checks what the service
checks: the path (`/ws/google.ai.generativelanguage.<version>.GenerativeService.BidiGenerateContent`,
else HTTP 404 at the handshake), the API key (`x-goog-api-key` or `?key=`; a wrong one closes the
socket with 1007 and Google's message), and that the first message is a `setup` naming
`models/<model>` with known response modalities (else 1007). As Vertex AI (`vertex=`), the path is
`/ws/google.cloud.aiplatform.<version>.LlmBidiService/BidiGenerateContent`, a bearer token the
service account was issued is required (else HTTP 401) and the model is named in full. It answers `setupComplete`, then for
each client turn (`clientContent` with `turnComplete`, or `realtimeInput.text`) runs `reply`, a
script returning the server messages to send (or a close); `toolResponse` messages go to the script too.
Everything received is recorded.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from tests.servers.threaded_ws import ThreadedWsServer

PATH = "/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent"
VERTEX_PATH = "/ws/google.cloud.aiplatform.{version}.LlmBidiService/BidiGenerateContent"
BAD_KEY = "API key not valid. Please pass a valid API key."
MODALITIES = {"TEXT", "AUDIO", "IMAGE"}
CLOSE = "close"
"""A script's message `{"close": (code, reason)}` closes the socket as the service does on a failure."""


@dataclass
class Session:
    """One websocket session: the setup, every client message, and the turns so far."""

    setup: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    """The text of each user turn, in order."""

    @property
    def modalities(self) -> list[str]:
        return list((self.setup.get("generationConfig") or {}).get("responseModalities") or ["TEXT"])


@dataclass
class Vertex:
    """Vertex AI's Live endpoint instead of the Gemini API's: its path, the model's full name in
    the project and region, and a bearer token from `tokens` (those a service account was issued)."""

    project: str
    region: str
    tokens: list[str]


Script = Callable[[Session, dict[str, Any]], list[dict[str, Any]]]
"""(session, the client message) -> server messages to send."""


def camel(value: Any) -> Any:
    """A message with its field names in camelCase: the service parses proto JSON, which takes
    both spellings (the SDK sends some in snake_case); payloads (`response`, `args`) are left as sent."""
    if isinstance(value, list):
        return [camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = head + "".join(word.title() for word in rest)
        out[name] = item if name in ("response", "args") else camel(item)
    return out


def text_turn(text: str, session: Session, chunks: int = 2) -> list[dict[str, Any]]:
    """A model turn: `text` in `chunks` pieces (as PCM audio when the session asked for audio,
    with a transcript when it asked for one), then generationComplete and turnComplete with usage."""
    size = max(1, -(-len(text) // chunks))
    pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    messages: list[dict[str, Any]] = []
    for piece in pieces:
        if "AUDIO" in session.modalities:
            pcm = base64.b64encode(piece.encode() * 4).decode()
            messages.append({"serverContent": {"modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": pcm}}]}}})
            if "outputAudioTranscription" in session.setup:
                messages.append({"serverContent": {"outputTranscription": {"text": piece}}})
        else:
            messages.append({"serverContent": {"modelTurn": {"parts": [{"text": piece}]}}})
    prompt = max(1, sum(len(t) for t in session.turns) // 4)
    completion = max(1, len(text) // 4)
    usage = {"promptTokenCount": prompt, "responseTokenCount": completion, "totalTokenCount": prompt + completion}
    return [*messages, {"serverContent": {"generationComplete": True}}, {"serverContent": {"turnComplete": True}, "usageMetadata": usage}]


def echo(session: Session, message: dict[str, Any]) -> list[dict[str, Any]]:
    if "toolResponse" in message:
        return text_turn(f"tool said: {json.dumps(message['toolResponse'])}", session)
    return text_turn(f"echo: {session.turns[-1]}", session)


class LiveServer(ThreadedWsServer):
    """Serve on 127.0.0.1 over TLS from a background thread: `with LiveServer(key, model, tls): ...`."""

    def __init__(self, key: str, model: str, tls: ssl.SSLContext, reply: Script = echo, vertex: Vertex | None = None):
        super().__init__(tls)
        self.key = key
        self.model = model
        self.vertex = vertex
        self.reply = reply
        self.sessions: list[Session] = []

    @property
    def url(self) -> str:
        """The base URL to configure (`https://`: the SDK connects with `wss://`)."""
        return f"https://127.0.0.1:{self.port}"

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        if refusal := self.refuse_if_overloaded(b"Resource has been exhausted."):
            return refusal
        path = urlsplit(request.path).path
        paths = [VERTEX_PATH.format(version=v) for v in ("v1", "v1beta1")] if self.vertex else [PATH.format(version=v) for v in ("v1alpha", "v1beta")]
        if path not in paths:
            self.refused.append(f"path {path}")
            return Response(404, "Not Found", Headers([("Content-Type", "text/plain")]), b"Not Found")
        if self.vertex is not None and request.headers.get("Authorization", "").removeprefix("Bearer ") not in self.vertex.tokens:
            self.refused.append("token")
            return Response(401, "Unauthorized", Headers([("Content-Type", "text/plain")]), b"Request had invalid authentication credentials.")
        return None

    async def _session(self, ws: ServerConnection) -> None:
        query = parse_qs(urlsplit(ws.request.path if ws.request else "").query)
        key = (ws.request.headers.get("x-goog-api-key") if ws.request else None) or next(iter(query.get("key") or []), None)
        if self.vertex is None and key != self.key:
            self.refused.append("key")
            await ws.close(1007, BAD_KEY)
            return
        first = camel(json.loads(await ws.recv()))
        setup = first.get("setup") if isinstance(first, dict) else None
        problem = self._bad_setup(setup)
        if problem:
            self.refused.append(problem)
            await ws.close(1007, f"Request contains an invalid argument. {problem}")
            return
        assert isinstance(setup, dict)
        session = Session(setup)
        self.sessions.append(session)
        await ws.send(json.dumps({"setupComplete": {}}))
        async for raw in ws:
            message = camel(json.loads(raw))
            session.messages.append(message)
            content = message.get("clientContent") or {}
            text = "".join(p.get("text", "") for turn in content.get("turns") or [] for p in turn.get("parts") or [])
            if content.get("turnComplete"):
                session.turns.append(text)
            elif "text" in (message.get("realtimeInput") or {}):
                session.turns.append(message["realtimeInput"]["text"])
            elif "toolResponse" not in message:
                continue
            for reply in self.reply(session, message):
                if CLOSE in reply:
                    await ws.close(*reply[CLOSE])
                    return
                await ws.send(json.dumps(reply))

    def _bad_setup(self, setup: Any) -> str | None:
        if not isinstance(setup, dict):
            return "the first message must be a setup"
        model = f"projects/{self.vertex.project}/locations/{self.vertex.region}/publishers/google/models/{self.model}" if self.vertex else f"models/{self.model}"
        if setup.get("model") != model:
            return f"{model} expected, got {setup.get('model')!r}"
        modalities = (setup.get("generationConfig") or {}).get("responseModalities") or []
        if not set(modalities) <= MODALITIES:
            return f"unknown response modalities {modalities}"
        return None
