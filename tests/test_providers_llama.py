"""llama.cpp's server (`llama`, `llama:<model>`) over httpx against a loopback stand-in of `/completion`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.provider_helpers import call, eval_rows
from tests.servers import llama_server
from tests.servers.counting_server import CountingServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("LLAMA_BASE_URL", srv.url)
        yield srv


def test_completion_sends_promptfoos_body_and_reads_content_and_tokens(server: CountingServer) -> None:
    llama_server.install(server, lambda body: "A witty tweet.")
    config = {"temperature": 0.3, "top_k": 20, "stop": ["\n"], "seed": 4, "unknown_key": 1}
    response = call({"id": "llama:llama3-8b", "config": config}, "Tweet about SF")
    assert response.error is None and response.output == "A witty tweet."
    assert (response.token_usage.prompt, response.token_usage.completion) == (3, 3)
    (request,) = server.requests_to("/completion")
    assert request.json == {"prompt": "Tweet about SF", "n_predict": 512, "temperature": 0.3, "top_k": 20, "stop": ["\n"], "seed": 4}


def test_config_base_url_wins_and_a_server_error_is_an_error_row(server: CountingServer, tmp_path: Path) -> None:
    """promptfoo's llama-cpp example (`id: llama`, `config.baseUrl`), end to end."""
    llama_server.install(server)
    server.fail(400, path="/completion", body={"error": {"code": 400, "message": "context window exceeded", "type": "invalid_request_error"}}, times=1)
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['Write a funny tweet about {{{{topic}}}}']
        providers:
          - id: llama
            label: llama3-8b
            config: {{baseUrl: '{server.url}', n_predict: 64}}
        evaluateOptions: {{maxConcurrency: 1}}
        tests:
          - vars: {{topic: San Francisco}}
            assert: [{{type: icontains, value: san francisco}}]
          - vars: {{topic: Paris}}
            assert: [{{type: icontains, value: paris}}]
        """,
    )
    assert code == 1
    assert rows[0]["error"] == "API error 400: context window exceeded"
    assert rows[1]["success"] is True and rows[1]["response"]["output"] == "echo: Write a funny tweet about Paris"
    assert rows[1]["provider"] == {"id": "llama", "label": "llama3-8b"}
    assert [r.json["n_predict"] for r in server.requests_to("/completion")] == [64, 64]
