"""Ollama's REST API (`/api/chat`, `/api/generate`, `/api/embed`) on an LLMServer.

`reply(request)` returns the text (or a `Response`, or a dict merged into the reply, e.g. a
`message` with `tool_calls`); by default the last user message or the prompt is echoed.
Embeddings are the LLMServer's deterministic bag-of-words vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response, bag_of_words_embedding, last_user_text

Reply = Callable[[dict[str, Any]], Any]


def _text_of(request: dict[str, Any]) -> str:
    return last_user_text(request) if "messages" in request else str(request.get("prompt", ""))


def install(server: LLMServer, reply: Reply | None = None) -> LLMServer:
    def answer(recorded: Recorded, chat: bool) -> Response:
        request = recorded.json if isinstance(recorded.json, dict) else {}
        result = reply(request) if reply else f"echo: {_text_of(request)}"
        if isinstance(result, Response):
            return result
        extra = result if isinstance(result, dict) else {}
        text = "" if isinstance(result, dict) else str(result)
        body: dict[str, Any] = {
            "model": request.get("model"),
            "created_at": "2026-11-21T00:00:00Z",
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": max(1, len(_text_of(request)) // 4),
            "eval_count": max(1, len(text) // 4),
            "total_duration": 1000,
        }
        body.update({"message": {"role": "assistant", "content": text}} if chat else {"response": text})
        body.update(extra)
        return Response(200, json=body)

    def embed(recorded: Recorded) -> Response:
        request = recorded.json if isinstance(recorded.json, dict) else {}
        inputs = request.get("input")
        texts = inputs if isinstance(inputs, list) else [inputs]
        vectors = [bag_of_words_embedding(str(t)) for t in texts]
        return Response(200, json={"model": request.get("model"), "embeddings": vectors, "prompt_eval_count": 7})

    server.route("POST", "/api/chat", lambda rec: answer(rec, chat=True))
    server.route("POST", "/api/generate", lambda rec: answer(rec, chat=False))
    server.route("POST", "/api/embed", embed)
    return server


def ollama_error(status: int, message: str) -> Response:
    return Response(status, json={"error": message})
