"""A stand-in for Replicate's predictions API on an LLMServer.

`POST /v1/models/<owner>/<name>/predictions` and `POST /v1/predictions` (with `version`) create
a prediction; `GET /v1/predictions/<id>` reads it. Each route checks a `Bearer` token and the
body (`input` an object; `version` a string where required). A prediction is answered
`starting` first and `succeeded` after `polls` reads (0: at once, as `Prefer: wait` allows);
errors are Replicate's problem details (`{"title", "detail", "status"}`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response


def problem(status: int, detail: str) -> Response:
    return Response(status, json={"title": {401: "Unauthenticated", 404: "Not found", 422: "Input validation failed"}.get(status, "Error"), "detail": detail, "status": status})


def install(server: LLMServer, key: str, model: str, reply: Callable[[dict[str, Any]], Any], *, polls: int = 0, version: str | None = None,
            metrics: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Serve `model` (and `version`, if given): `reply(input)` is the output (text, a list of
    chunks, or a Response to answer the create request with). Returns the predictions by id."""
    predictions: dict[str, dict[str, Any]] = {}
    reads: dict[str, int] = {}
    ids = itertools.count(1)

    def authorized(recorded: Recorded) -> Response | None:
        auth = next((v for k, v in recorded.headers.items() if k.lower() == "authorization"), None)
        return None if auth == f"Bearer {key}" else problem(401, "You did not pass a valid authentication token")

    def create(recorded: Recorded, needs_version: bool) -> Response:
        if refused := authorized(recorded):
            return refused
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("input"), dict):
            return problem(422, "input is required and must be an object")
        if needs_version and body.get("version") != version:
            return problem(422, f"Invalid version or not permitted: {body.get('version')!r}")
        output = reply(body["input"])
        if isinstance(output, Response):
            return output
        prediction_id = f"pred{next(ids)}"
        done = polls == 0
        prediction = {
            "id": prediction_id, "model": model, "version": version or "v-latest", "input": body["input"],
            "status": "succeeded" if done else "starting", "output": output if done else None, "error": None,
            "metrics": metrics or {}, "urls": {"get": f"{server.url}/v1/predictions/{prediction_id}"}, "created_at": "2026-01-01T00:00:00Z",
        }
        predictions[prediction_id] = {**prediction, "output": output}
        reads[prediction_id] = 0
        server.route("GET", f"/v1/predictions/{prediction_id}", get(prediction_id))
        return Response(201, json=prediction)

    def get(prediction_id: str) -> Callable[[Recorded], Response]:
        def read(recorded: Recorded) -> Response:
            if refused := authorized(recorded):
                return refused
            reads[prediction_id] += 1
            stored = predictions[prediction_id]
            if reads[prediction_id] < polls:
                return Response(200, json={**stored, "status": "processing", "output": None})
            return Response(200, json={**stored, "status": "succeeded"})

        return read

    server.route("POST", f"/v1/models/{model}/predictions", lambda r: create(r, needs_version=False))
    server.route("POST", "/v1/predictions", lambda r: create(r, needs_version=True))
    return predictions
