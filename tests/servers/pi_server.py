"""A stand-in for the With Pi scoring API (`POST .../scoring_system/score`) on an LLMServer.

Point `WITHPI_API_BASE_URL` at `base_url(server)`. Requests without the expected `x-api-key`
get 401; a body without `llm_input`, `llm_output` and a `scoring_spec` list of `{question}` gets
422 (as a strict API would). Scores come from `scorer(llm_input, llm_output, question)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response

PREFIX = "/pi/v1"
PATH = f"{PREFIX}/scoring_system/score"
Scorer = Callable[[str, str, str], float]


def base_url(server: LLMServer) -> str:
    return f"{server.url}{PREFIX}"


def _valid(request: Any) -> bool:
    if not isinstance(request, dict):
        return False
    spec = request.get("scoring_spec")
    return (
        isinstance(request.get("llm_input"), str)
        and isinstance(request.get("llm_output"), str)
        and isinstance(spec, list)
        and bool(spec)
        and all(isinstance(item, dict) and isinstance(item.get("question"), str) for item in spec)
    )


def install(server: LLMServer, scorer: Scorer, api_key: str = "pi-test-key-123456", reply: Callable[[dict[str, Any]], Any] | None = None) -> LLMServer:
    """Serve the scoring endpoint; `reply(request)` replaces the normal body (for malformed replies)."""

    def handle(recorded: Recorded) -> Response:
        if recorded.headers.get("x-api-key") != api_key:
            return Response(401, json={"detail": "Invalid or missing API key"})
        request = recorded.json
        if not _valid(request):
            return Response(422, json={"detail": "llm_input, llm_output and scoring_spec[{question}] are required"})
        if reply is not None:
            return Response(200, json=reply(request))
        scores = {item["question"]: scorer(request["llm_input"], request["llm_output"], item["question"]) for item in request["scoring_spec"]}
        total = sum(scores.values()) / len(scores)
        return Response(200, json={"total_score": total, "question_scores": scores})

    return server.route("POST", PATH, handle)
