"""Helpers for tracing tests: a free loopback port, the scripted model behind the weather agent,
and configs that run the agent as a Python or HTTP provider."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import yaml

from tests.servers.llm_server import LLMServer

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _has_tool_result(request: dict[str, Any]) -> bool:
    return any(m.get("role") == "tool" for m in request.get("messages", []))


def script_model(server: LLMServer) -> LLMServer:
    """The agent's model: for a city in the question, call get_weather (and send_email when the
    question asks to mail it); once a tool answered, reply with the forecast."""
    for city in ("Paris", "Atlantis", "Oslo"):
        calls = [{"id": f"call_{city}", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": city, "unit": "c"})}}]
        if city == "Oslo":
            calls.append({"id": "call_mail", "type": "function", "function": {"name": "send_email", "arguments": json.dumps({"to": "ops@example.com"})}})

        def first(request: dict[str, Any], city: str = city) -> bool:
            return not _has_tool_result(request) and city in json.dumps(request.get("messages"))

        server.on_chat(first, "", tool_calls=calls, finish_reason="tool_calls")
    server.on_chat(_has_tool_result, "It is sunny, 21 degrees.")
    return server


def agent_provider_file(folder: Path) -> Path:
    """A Python provider file that runs the weather agent."""
    path = folder / "agent_provider.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(REPO)!r})\nfrom tests.agents.weather_agent import call_api  # noqa: E402,F401\n")
    return path


def tracing_config(port: int) -> dict[str, Any]:
    return {"enabled": True, "otlp": {"http": {"enabled": True, "port": port, "host": "127.0.0.1"}}}


def write_config(folder: Path, config: dict[str, Any], port: int | None = None) -> Path:
    """`promptfooconfig.yaml` in `folder`, with `tracing:` on a receiver at `port` when given."""
    if port is not None:
        config = {**config, "tracing": tracing_config(port)}
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def agent_provider(model_url: str, port: int, export: str = "flush") -> dict[str, Any]:
    """The weather agent as a Python provider exporting to the receiver on `port`."""
    return {"id": "file://agent_provider.py", "config": {"model_url": model_url, "otlp_endpoint": f"http://127.0.0.1:{port}/v1/traces", "export": export}}
