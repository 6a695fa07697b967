"""A stand-in for Cohere's API on an LLMServer: the v1 Chat API (`POST /v1/chat`) and the Embed
API (`POST /v1/embed`).

Each route checks what Cohere checks: a `Bearer` key, the body's required fields and their types
(`message` text and `model` for chat; `texts`, `model` and a valid `input_type` for embeddings),
and answers in Cohere's format, errors as `{"message": ...}`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response, bag_of_words_embedding

INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")


def header(recorded: Recorded, name: str) -> str | None:
    return next((v for k, v in recorded.headers.items() if k.lower() == name), None)


def install(server: LLMServer, key: str, reply: Callable[[dict[str, Any]], Any] | None = None) -> LLMServer:
    """Chat answers `reply(body)` (text, or a Response), else `echo: <message>`; embeddings are bag-of-words vectors."""

    def authorized(recorded: Recorded) -> Response | None:
        if header(recorded, "authorization") != f"Bearer {key}":
            return Response(401, json={"message": "invalid api token"})
        return None

    def chat(recorded: Recorded) -> Response:
        if refused := authorized(recorded):
            return refused
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("message"), str) or not body.get("model"):
            return Response(400, json={"message": "invalid request: message must be a string and model is required"})
        if not isinstance(body.get("chat_history", []), list):
            return Response(400, json={"message": "invalid request: chat_history must be a list"})
        text = reply(body) if reply else f"echo: {body['message']}"
        if isinstance(text, Response):
            return text
        words_in, words_out = len(body["message"].split()), len(str(text).split())
        return Response(200, json={
            "response_id": "resp-1", "generation_id": "gen-1", "text": text, "finish_reason": "COMPLETE",
            "chat_history": [{"role": "USER", "message": body["message"]}, {"role": "CHATBOT", "message": text}],
            "meta": {"api_version": {"version": "1"}, "billed_units": {"input_tokens": words_in, "output_tokens": words_out},
                     "tokens": {"input_tokens": words_in + 60, "output_tokens": words_out}},
        })

    def embed(recorded: Recorded) -> Response:
        if refused := authorized(recorded):
            return refused
        body = recorded.json
        texts = body.get("texts") if isinstance(body, dict) else None
        if not isinstance(texts, list) or not texts or not body.get("model"):
            return Response(400, json={"message": "invalid request: texts and model are required"})
        if body.get("input_type") not in INPUT_TYPES:
            return Response(400, json={"message": f"invalid request: input_type must be one of {', '.join(INPUT_TYPES)}"})
        tokens = sum(len(str(t).split()) for t in texts)
        return Response(200, json={
            "id": "emb-1", "response_type": "embeddings_floats", "texts": texts,
            "embeddings": [bag_of_words_embedding(str(t)) for t in texts],
            "meta": {"api_version": {"version": "1"}, "billed_units": {"input_tokens": tokens}},
        })

    server.route("POST", "/v1/chat", chat)
    return server.route("POST", "/v1/embed", embed)
