"""Hugging Face Inference API text classification (`POST /models/<model>`) on an LLMServer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response

Scorer = Callable[[str], dict[str, float]]


def _injection_scores(text: str) -> dict[str, float]:
    score = 0.97 if "ignore previous instructions" in text.lower() else 0.02
    return {"INJECTION": score, "SAFE": round(1 - score, 6)}


def install(server: LLMServer, model: str, scorer: Scorer | None = None, loading: int = 0, estimated_time: float = 0.05) -> LLMServer:
    """Serve `model`: the first `loading` requests get 503 "model is loading", then `[[{label, score}]]`."""
    remaining = {"loading": loading}

    def handle(recorded: Recorded) -> Response:
        if remaining["loading"] > 0:
            remaining["loading"] -= 1
            return Response(503, json={"error": f"Model {model} is currently loading", "estimated_time": estimated_time})
        request: Any = recorded.json if isinstance(recorded.json, dict) else {}
        if not isinstance(request.get("inputs"), str):
            return Response(400, json={"error": "inputs must be a string"})
        scores = (scorer or _injection_scores)(request["inputs"])
        ranked = sorted(({"label": k, "score": v} for k, v in scores.items()), key=lambda item: -item["score"])
        return Response(200, json=[ranked])

    return server.route("POST", f"/models/{model}", handle)


def _authorized(recorded: Recorded, token: str) -> Response | None:
    given = next((v for k, v in recorded.headers.items() if k.lower() == "authorization"), None)
    return None if given == f"Bearer {token}" else Response(401, json={"error": "Invalid credentials in Authorization header"})


def install_task(server: LLMServer, path: str, task: str, token: str, answer: Callable[[Any], Any]) -> LLMServer:
    """Serve one Inference API task at `path`, checking the bearer token and the task's request
    body as the API does; `answer(inputs)` is the reply's data.

    Tasks: `text-generation` (`inputs` text, `parameters` an object), `token-classification`
    (`inputs` text, `parameters.aggregation_strategy`), `feature-extraction` (`inputs` text),
    `sentence-similarity` (`inputs` `{source_sentence, sentences: [...]}`)."""

    def handle(recorded: Recorded) -> Response:
        if refused := _authorized(recorded, token):
            return refused
        body: Any = recorded.json if isinstance(recorded.json, dict) else {}
        inputs = body.get("inputs")
        if task == "sentence-similarity":
            valid = isinstance(inputs, dict) and isinstance(inputs.get("source_sentence"), str) and isinstance(inputs.get("sentences"), list)
        else:
            valid = isinstance(inputs, str)
        if task == "text-generation":
            valid = valid and isinstance(body.get("parameters"), dict)
        if task == "token-classification":
            valid = valid and isinstance((body.get("parameters") or {}).get("aggregation_strategy"), str)
        if not isinstance(body.get("options", {}), dict) or not valid:
            return Response(400, json={"error": f"invalid {task} request body"})
        return Response(200, json=answer(inputs))

    return server.route("POST", path, handle)
