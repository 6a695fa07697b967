"""A stand-in for llama.cpp's server on an LLMServer: `POST /completion`.

It checks what the server checks (a JSON body whose `prompt` is a string, a whole `n_predict`)
and answers in its format: `content`, `tokens_evaluated`, `tokens_predicted`, `stopped_limit`;
errors as `{"error": {"code", "message", "type"}}`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response


def install(server: LLMServer, reply: Callable[[dict[str, Any]], str] | None = None) -> LLMServer:
    """Answer `reply(body)`, else `echo: <prompt>`."""

    def completion(recorded: Recorded) -> Response:
        body = recorded.json
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return Response(400, json={"error": {"code": 400, "message": '"prompt" must be provided', "type": "invalid_request_error"}})
        if not isinstance(body.get("n_predict", -1), int):
            return Response(400, json={"error": {"code": 400, "message": "n_predict must be an integer", "type": "invalid_request_error"}})
        text = reply(body) if reply else f"echo: {body['prompt']}"
        return Response(200, json={
            "content": text, "stop": True, "stopped_limit": False, "model": "model.gguf",
            "tokens_evaluated": len(body["prompt"].split()), "tokens_predicted": len(text.split()),
        })

    return server.route("POST", "/completion", completion)
