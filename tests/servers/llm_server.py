"""A scripted OpenAI-compatible HTTP server on loopback, for tests and benchmarks.

Serves `/v1/chat/completions`, `/v1/responses`, `/v1/embeddings` and `/v1/moderations` with
scripted answers, per-rule latency and injected faults, and records every request. Extra routes
(an HTTP target, other vendors' APIs) can be registered with `route()`.

Faults (`fail` for the next requests, `fault_rate` for a seeded random share of them):
error statuses with Retry-After, `timeout` (the request is never answered), `reset` (the
connection is reset), `drop` (closed without a reply), `malformed` (a 200 with truncated JSON),
`empty` (a 200 with no body), `no_choices` (a 200 completion without choices), `empty_content`
(a 200 completion whose message content is ""). A chat reply given
as bytes is sent raw inside the JSON body (e.g. invalid UTF-8).

A concurrency limit (`limit_concurrency`) answers 429 with Retry-After to any request that would
make more than K in flight, as a rate-limited API does.

Run standalone for benchmarks: `python -m tests.servers.llm_server --port 8765 --latency-ms 100`
(add `--fault-rate 0.1 --fault-seed 1` for faults, `--max-concurrent 8` for a concurrency limit).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import math
import re
import signal
import socket
import ssl
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

Matcher = str | re.Pattern[str] | Callable[[dict[str, Any]], bool] | None
Reply = str | bytes | dict[str, Any] | Callable[[dict[str, Any]], "str | bytes | dict[str, Any]"]

# The fault kinds a transient outage shows (what `fault_rate` draws from by default).
FAULT_KINDS = ("429", "500", "503", "timeout", "reset", "malformed", "empty")
_RAW = "\u0000raw-reply\u0000"  # stands for a bytes reply in the JSON body until it is encoded


class Headers(dict[str, str]):
    """A request's headers, read by name in any case (HTTP names are case-insensitive, and
    clients differ: httpx on aiohttp sends them lowercased, as node's fetch does)."""

    def __init__(self, pairs: Any = ()):
        super().__init__((str(name).lower(), value) for name, value in dict(pairs).items())

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


@dataclass
class Recorded:
    method: str
    path: str
    headers: Headers
    body: bytes
    json: Any


@dataclass
class Response:
    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Rule:
    matcher: Matcher
    reply: Reply | None
    status: int
    headers: dict[str, str]
    latency: float | None
    times: int | None
    usage: dict[str, int] | None
    finish_reason: str
    tool_calls: list[dict[str, Any]] | None
    hang: bool = False
    logprobs: list[float] | None = None

    def matches(self, request: dict[str, Any], text: str) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.matcher is None:
            return True
        if isinstance(self.matcher, str):
            return self.matcher in text
        if isinstance(self.matcher, re.Pattern):
            return bool(self.matcher.search(text))
        return bool(self.matcher(request))


@dataclass
class _Fault:
    path: str | None
    status: int
    times: int
    retry_after: str | None
    body: Any
    kind: str = "status"


@dataclass
class _FaultRate:
    rate: float
    kinds: tuple[str, ...]
    seed: int
    path: str | None


class _Hang:
    """Never answer: hold the connection until the client gives up."""


class _Reset:
    """Reset the connection (TCP RST) instead of answering."""


HANG = _Hang()
RESET = _Reset()


def request_text(request: dict[str, Any]) -> str:
    """All message text of a chat or responses request, joined (what rules match against)."""
    parts: list[str] = []
    for message in request.get("messages") or (request.get("input") if isinstance(request.get("input"), list) else []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if isinstance(request.get("input"), str):
        parts.append(request["input"])
    if isinstance(request.get("system"), str):
        parts.append(request["system"])
    if isinstance(request.get("prompt"), str):
        parts.append(request["prompt"])
    return "\n".join(parts)


def last_user_text(request: dict[str, Any]) -> str:
    messages = request.get("messages") or (request.get("input") if isinstance(request.get("input"), list) else [])
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content)
    return request_text(request)


def bag_of_words_embedding(text: str, dims: int = 64) -> list[float]:
    """A deterministic embedding: texts sharing words are close, identical texts are identical."""
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.md5(word.encode()).digest()
        vector[digest[0] % dims] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class LLMServer:
    """Start with `start()` (or as a context manager); script with `on_chat`, `fail`, `route`..."""

    def __init__(self, latency: float = 0.0):
        self.latency = latency
        self.requests: list[Recorded] = []
        self._rules: list[_Rule] = []
        self._faults: list[_Fault] = []
        self._fault_rate: _FaultRate | None = None
        self._seen: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        self._routes: dict[tuple[str, str], Callable[[Recorded], Response]] = {}
        self._embeddings: dict[str, list[float]] = {}
        self._flags: list[tuple[str, str, float]] = []
        self._lock = threading.Lock()
        self._server: asyncio.Server | None = None
        self._scheme = "http"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._accepted = 0
        self._max_concurrent: int | None = None
        self._limit_reply = Response(429)
        self.active = 0
        """Requests being answered now (a concurrency limit counts these)."""
        self.peak_active = 0
        self.over_limit = 0
        """Requests refused with 429 by the concurrency limit."""
        self.default_reply: Callable[[dict[str, Any]], str] = lambda req: f"echo: {last_user_text(req)}"

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, port: int = 0, tls: ssl.SSLContext | None = None) -> LLMServer:
        """Serve on 127.0.0.1 from a background thread running its own event loop (HTTPS with a
        server-side `tls` context)."""
        self._scheme = "https" if tls is not None else "http"
        self._loop = asyncio.new_event_loop()
        self._executor = ThreadPoolExecutor(max_workers=128, thread_name_prefix="llm-server-handler")
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", port, backlog=1024, ssl=tls))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="llm-server", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        if self._server is None or self._loop is None:
            return
        loop, server = self._loop, self._server

        async def shutdown() -> None:
            server.close()
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await server.wait_closed()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        loop.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._server = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{self._scheme}://{host}:{port}"

    @property
    def connections(self) -> int:
        """How many TCP connections clients have opened so far (to observe client reuse)."""
        return self._accepted

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One keep-alive connection: parse HTTP/1.1 requests and answer them in order."""
        self._accepted += 1
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, target, _version = request_line.split(" ", 2)
                headers = dict(line.split(":", 1) for line in header_lines if ":" in line)
                headers = Headers({k.strip(): v.strip() for k, v in headers.items()})
                lowered = headers
                if lowered.get("transfer-encoding", "").lower() == "chunked":
                    body = await _read_chunked(reader)
                else:
                    body = await reader.readexactly(int(lowered.get("content-length") or 0))
                try:
                    parsed = json.loads(body) if body else None
                except ValueError:
                    parsed = None
                recorded = Recorded(method, target, headers, body, parsed)
                with self._lock:
                    self.requests.append(recorded)
                if self._max_concurrent is not None and self.active >= self._max_concurrent:
                    self.over_limit += 1
                    writer.write(_encode(self._limit_reply))
                    await writer.drain()
                    continue
                self.active += 1
                self.peak_active = max(self.peak_active, self.active)
                try:
                    response = await loop.run_in_executor(self._executor, self.handle, recorded)
                finally:
                    self.active -= 1  # before the reply goes out: a client that reads it may send again at once
                if response is None:
                    return  # an injected dropped connection
                if isinstance(response, _Hang):
                    while await reader.read(65536):
                        pass
                    return
                if isinstance(response, _Reset):
                    sock = writer.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                writer.write(_encode(response))
                await writer.drain()
                if lowered.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    # -- scripting -------------------------------------------------------------------------------

    def on_chat(
        self,
        match: Matcher = None,
        reply: Reply | None = None,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        latency: float | None = None,
        times: int | None = None,
        usage: dict[str, int] | None = None,
        finish_reason: str = "stop",
        tool_calls: list[dict[str, Any]] | None = None,
        hang: bool = False,
        logprobs: list[float] | None = None,
    ) -> LLMServer:
        """Answer chat/responses requests whose text matches `match` (substring, regex or predicate);
        with `hang`, never answer them (the connection is held until the client gives up);
        `logprobs`: the tokens' log probabilities, sent (as the API does) only when asked for."""
        with self._lock:
            self._rules.append(_Rule(match, reply, status, headers or {}, latency, times, usage, finish_reason, tool_calls, hang, logprobs))
        return self

    def fail(
        self,
        status: int = 500,
        *,
        times: int = 1,
        path: str | None = None,
        retry_after: str | None = None,
        body: Any = None,
        drop: bool = False,
        kind: str | None = None,
    ) -> LLMServer:
        """Make the next `times` requests (to `path`, if given) fail: with `status`, a dropped
        connection, or another fault `kind` (timeout, reset, malformed, empty, no_choices)."""
        with self._lock:
            self._faults.append(_Fault(path, status, times, retry_after, body, kind or ("drop" if drop else "status")))
        return self

    def limit_concurrency(self, limit: int | None, *, retry_after: str = "0.05") -> LLMServer:
        """Answer 429 with `Retry-After: retry_after` (seconds) to requests beyond `limit` in flight."""
        self._max_concurrent = limit
        self._limit_reply = Response(429, json={"error": {"message": "Rate limit reached: too many concurrent requests", "type": "rate_limit_error"}}, headers={"Retry-After": retry_after})
        return self

    def clear_faults(self) -> LLMServer:
        """Forget the faults not yet served and any fault rate."""
        with self._lock:
            self._faults.clear()
            self._fault_rate = None
        return self

    def fault_rate(self, rate: float, kinds: Sequence[str] = FAULT_KINDS, *, seed: int = 0, path: str | None = None) -> LLMServer:
        """Fail a share `rate` of requests (to `path`, if given), each in one of `kinds`.

        The draw is seeded and depends only on the request's body and how many times that body
        was sent before, not on the order concurrent requests arrive in: with the same seed, the
        same requests fail the same way on every run. `injected` counts the faults by kind.
        """
        unknown = set(kinds) - {*FAULT_KINDS, "no_choices", "empty_content", "drop"}
        if unknown or not kinds:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}")
        with self._lock:
            self._fault_rate = _FaultRate(rate, tuple(kinds), seed, path)
        return self

    def set_embedding(self, text: str, vector: list[float]) -> LLMServer:
        with self._lock:
            self._embeddings[text] = vector
        return self

    def flag(self, word: str, category: str, score: float = 0.9) -> LLMServer:
        """Moderation flags `category` for any input containing `word`."""
        with self._lock:
            self._flags.append((word, category, score))
        return self

    def route(self, method: str, path: str, handler: Callable[[Recorded], Response]) -> LLMServer:
        with self._lock:
            self._routes[(method.upper(), path)] = handler
        return self

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.split("?")[0] == path]

    # -- dispatch --------------------------------------------------------------------------------

    def _take_fault(self, recorded: Recorded, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.times > 0 and (fault.path is None or fault.path == path):
                    fault.times -= 1
                    return fault
            chance = self._fault_rate
            if chance is None or (chance.path is not None and chance.path != path):
                return None
            key = hashlib.sha256(f"{chance.seed}|{recorded.method} {path}|".encode() + recorded.body).hexdigest()
            seen = self._seen[key]
            self._seen[key] += 1
        draw = hashlib.sha256(f"{key}|{seen}".encode()).digest()
        if int.from_bytes(draw[:8], "big") / 2**64 >= chance.rate:
            return None
        kind = chance.kinds[int.from_bytes(draw[8:16], "big") % len(chance.kinds)]
        return _Fault(path, int(kind) if kind.isdigit() else 200, 1, None, None, "status" if kind.isdigit() else kind)

    def _pick_rule(self, request: dict[str, Any]) -> _Rule | None:
        text = request_text(request)
        with self._lock:
            for rule in self._rules:
                if rule.matches(request, text):
                    if rule.times is not None:
                        rule.times -= 1
                    return rule
        return None

    def handle(self, recorded: Recorded) -> Response | _Hang | _Reset | None:
        """Returns None to drop the connection, HANG to never answer, RESET to reset it."""
        path = recorded.path.split("?")[0]
        fault = self._take_fault(recorded, path)
        if fault is not None:
            with self._lock:
                self.injected[str(fault.status) if fault.kind == "status" else fault.kind] += 1
            return _faulty(fault)
        custom = self._routes.get((recorded.method, path))
        if custom is not None:
            if self.latency:
                time.sleep(self.latency)
            return custom(recorded)
        request = recorded.json if isinstance(recorded.json, dict) else {}
        if path.endswith("/chat/completions"):
            return self._chat(request)
        if path.endswith("/responses"):
            return self._responses(request)
        if path.endswith("/completions"):
            return self._completions(request)
        if path.endswith("/embeddings"):
            return self._embed(request)
        if path.endswith("/moderations"):
            return self._moderate(request)
        return Response(404, json={"error": {"message": f"no route for {recorded.method} {path}"}})

    def _reply_for(self, request: dict[str, Any]) -> tuple[_Rule | None, Any]:
        rule = self._pick_rule(request)
        delay = rule.latency if rule and rule.latency is not None else self.latency
        if delay:
            time.sleep(delay)
        reply = rule.reply if rule and rule.reply is not None else self.default_reply
        if callable(reply):
            reply = reply(request)
        return rule, reply

    def _chat(self, request: dict[str, Any]) -> Response | _Hang:
        rule, reply = self._reply_for(request)
        if rule and rule.hang:
            return HANG
        if rule and rule.status != 200:
            return Response(rule.status, json=reply if isinstance(reply, dict) else {"error": {"message": str(reply)}}, headers=rule.headers)
        if isinstance(reply, dict) and "choices" in reply:
            return Response(200, json=reply, headers=rule.headers if rule else {})
        raw = reply if isinstance(reply, bytes) else None
        content = json.dumps(reply) if isinstance(reply, dict) else _RAW if raw is not None else reply
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if rule and rule.tool_calls is not None:
            message["tool_calls"] = rule.tool_calls
            if not content:
                message["content"] = None
        usage = (rule.usage if rule else None) or _usage(request_text(request), content or "")
        body = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "test-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": rule.finish_reason if rule else "stop"}],
            "usage": usage,
        }
        if request.get("logprobs") is True and rule and rule.logprobs is not None:
            content_logprobs = [{"token": f"t{i}", "logprob": p, "bytes": None, "top_logprobs": []} for i, p in enumerate(rule.logprobs)]
            body["choices"][0]["logprobs"] = {"content": content_logprobs, "refusal": None}
        if raw is not None:
            encoded = json.dumps(body).encode().replace(json.dumps(_RAW).encode(), b'"' + raw + b'"')
            return Response(200, body=encoded, headers={**(rule.headers if rule else {}), "Content-Type": "application/json"})
        return Response(200, json=body, headers=rule.headers if rule else {})

    def _completions(self, request: dict[str, Any]) -> Response:
        """The legacy Completions API: a `prompt` string and a `model` are required, as OpenAI checks."""
        if not isinstance(request.get("prompt"), str) or not request.get("model"):
            return Response(400, json={"error": {"message": "you must provide a model and a prompt string", "type": "invalid_request_error"}})
        rule, reply = self._reply_for(request)
        if rule and rule.status != 200:
            return Response(rule.status, json=reply if isinstance(reply, dict) else {"error": {"message": str(reply)}}, headers=rule.headers)
        text = json.dumps(reply) if isinstance(reply, dict) else str(reply)
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": rule.finish_reason if rule else "stop"}
        body = {"id": "cmpl-test", "object": "text_completion", "created": int(time.time()), "model": request["model"], "choices": [choice], "usage": _usage(request["prompt"], text)}
        return Response(200, json=body, headers=rule.headers if rule else {})

    def _responses(self, request: dict[str, Any]) -> Response:
        rule, reply = self._reply_for(request)
        if rule and rule.status != 200:
            return Response(rule.status, json=reply if isinstance(reply, dict) else {"error": {"message": str(reply)}}, headers=rule.headers)
        text = json.dumps(reply) if isinstance(reply, dict) else reply
        usage = _usage(request_text(request), text)
        body = {
            "id": "resp-test",
            "object": "response",
            "created_at": int(time.time()),
            "model": request.get("model", "test-model"),
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": "msg-test",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
                "total_tokens": usage["total_tokens"],
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
        return Response(200, json=body)

    def _embed(self, request: dict[str, Any]) -> Response:
        if self.latency:
            time.sleep(self.latency)
        inputs = request.get("input")
        texts = inputs if isinstance(inputs, list) else [inputs]
        data = []
        for i, text in enumerate(texts):
            vector = self._embeddings.get(str(text)) or bag_of_words_embedding(str(text))
            encoded: Any = vector
            if request.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(max(1, len(str(t)) // 4) for t in texts)
        body = {"object": "list", "data": data, "model": request.get("model", "test-embedding"), "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        return Response(200, json=body)

    def _moderate(self, request: dict[str, Any]) -> Response:
        if self.latency:
            time.sleep(self.latency)
        inputs = request.get("input")
        texts = inputs if isinstance(inputs, list) else [inputs]
        text = " ".join(t if isinstance(t, str) else str(t.get("text", "")) for t in texts)
        names = [
            "harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
            "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic",
        ]
        categories = dict.fromkeys(names, False)
        scores = dict.fromkeys(names, 0.001)
        for word, category, score in self._flags:
            if word.lower() in text.lower():
                categories[category] = True
                scores[category] = score
        result = {"flagged": any(categories.values()), "categories": categories, "category_scores": scores, "category_applied_input_types": {n: ["text"] for n in names}}
        return Response(200, json={"id": "modr-test", "model": request.get("model", "omni-moderation-latest"), "results": [result]})


def _faulty(fault: _Fault) -> Response | _Hang | _Reset | None:
    """The reply a fault calls for."""
    json_type = {"Content-Type": "application/json"}
    if fault.kind == "drop":
        return None
    if fault.kind == "timeout":
        return HANG
    if fault.kind == "reset":
        return RESET
    if fault.kind == "malformed":
        return Response(200, body=b'{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assis', headers=json_type)
    if fault.kind == "empty":
        return Response(200, body=b"", headers=json_type)
    if fault.kind == "empty_content":
        choice = {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
        return Response(200, json={"id": "chatcmpl-empty", "object": "chat.completion", "created": int(time.time()), "model": "test-model", "choices": [choice]})
    if fault.kind == "no_choices":
        return Response(200, json={"id": "chatcmpl-none", "object": "chat.completion", "created": int(time.time()), "model": "test-model", "choices": []})
    headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
    body = fault.body if fault.body is not None else {"error": {"message": f"injected fault {fault.status}", "type": "server_error"}}
    return Response(fault.status, json=body if not isinstance(body, bytes) else None, body=body if isinstance(body, bytes) else None, headers=headers)


def _usage(prompt: str, completion: str) -> dict[str, int]:
    prompt_tokens = max(1, len(prompt) // 4)
    completion_tokens = max(1, len(completion) // 4)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return body
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def _encode(response: Response) -> bytes:
    payload = response.body if response.body is not None else json.dumps(response.json).encode()
    content_type = "application/json" if response.body is None else response.headers.get("Content-Type", "application/octet-stream")
    reason = HTTPStatus(response.status).phrase if response.status in HTTPStatus._value2member_map_ else "Status"
    lines = [f"HTTP/1.1 {response.status} {reason}", f"Content-Type: {content_type}", f"Content-Length: {len(payload)}"]
    lines += [f"{k}: {v}" for k, v in response.headers.items() if k.lower() not in ("content-type", "content-length")]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--reply", default=None, help="fixed chat reply (default: echo the last user message)")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of requests that fail (seeded, see fault_rate)")
    parser.add_argument("--fault-kinds", default=",".join(FAULT_KINDS), help="comma-separated fault kinds to draw from")
    parser.add_argument("--fault-seed", type=int, default=0)
    parser.add_argument("--max-concurrent", type=int, default=None, help="answer 429 (Retry-After) beyond this many requests in flight")
    args = parser.parse_args()
    server = LLMServer(latency=args.latency_ms / 1000)
    server.limit_concurrency(args.max_concurrent)
    if args.reply is not None:
        server.on_chat(None, args.reply)
    if args.fault_rate:
        server.fault_rate(args.fault_rate, args.fault_kinds.split(","), seed=args.fault_seed)
    server.start(args.port)
    print(f"listening on {server.url}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    print(f"served {len(server.requests)} requests, {server.over_limit} refused over the concurrency limit, at most {server.peak_active} at once", flush=True)


if __name__ == "__main__":
    main()
