"""Anthropic Messages API (`POST /v1/messages`) on an LLMServer, answering in Anthropic's shape.

`reply(request)` returns text, a list of content blocks, a full message dict (with `content`), or
a `Response` (for errors); by default the last user message is echoed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response, last_user_text

Reply = Callable[[dict[str, Any]], Any]


def anthropic_error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    return Response(status, json={"type": "error", "error": {"type": kind, "message": message}})


def message(content: Any, request: dict[str, Any], usage: dict[str, int] | None = None, stop_reason: str | None = None) -> dict[str, Any]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if stop_reason is None:
        stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    text = " ".join(str(b.get("text", "")) for b in blocks)
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude-test"),
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": max(1, len(str(request.get("messages"))) // 4), "output_tokens": max(1, len(text) // 4)},
    }


def install(server: LLMServer, reply: Reply | None = None) -> LLMServer:
    """Serve `/v1/messages` on `server` with `reply` (default: echo the last user message)."""

    def handle(recorded: Recorded) -> Response:
        request = recorded.json if isinstance(recorded.json, dict) else {}
        result = reply(request) if reply else f"echo: {last_user_text(request)}"
        if isinstance(result, Response):
            return result
        if isinstance(result, dict) and "content" in result:
            extra = {k: v for k, v in result.items() if k not in ("content", "usage", "stop_reason")}
            return Response(200, json={**message(result["content"], request, result.get("usage"), result.get("stop_reason")), **extra})
        return Response(200, json=message(result, request))

    return server.route("POST", "/v1/messages", handle)
