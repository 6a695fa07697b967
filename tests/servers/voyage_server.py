"""A stand-in for Voyage AI's embeddings API on an LLMServer: `POST /v1/embeddings`.

It checks a `Bearer` key and the body (`input` a non-empty list of strings, `model` set), and
answers in Voyage's format (`{object: list, data: [{embedding, index}], model, usage}`), errors as
`{"detail": ...}`.
"""

from __future__ import annotations

from tests.servers.llm_server import LLMServer, Recorded, Response, bag_of_words_embedding


def install(server: LLMServer, key: str) -> LLMServer:
    def embeddings(recorded: Recorded) -> Response:
        auth = next((v for k, v in recorded.headers.items() if k.lower() == "authorization"), None)
        if auth != f"Bearer {key}":
            return Response(401, json={"detail": "Provided API key is invalid."})
        body = recorded.json
        texts = body.get("input") if isinstance(body, dict) else None
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts) or not body.get("model"):
            return Response(400, json={"detail": "Request body is invalid: input must be a list of strings and model is required"})
        data = [{"object": "embedding", "embedding": bag_of_words_embedding(t), "index": i} for i, t in enumerate(texts)]
        tokens = sum(len(t.split()) for t in texts)
        return Response(200, json={"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": tokens}})

    return server.route("POST", "/v1/embeddings", embeddings)
