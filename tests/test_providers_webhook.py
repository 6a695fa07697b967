"""`webhook:<url>` against a loopback webhook that checks the body promptfoo sends."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import Recorded, Response


def webhook(recorded: Recorded) -> Response:
    body = recorded.json
    if recorded.headers.get("content-type") != "application/json" or not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
        return Response(400, json={"error": "expected a JSON body with a prompt"})
    if body["prompt"] == "odd":
        return Response(200, json={"result": "no output field"})
    return Response(200, json={"output": f"hook: {body['prompt']} {body.get('config', {}).get('tone', '')}".strip()})


def test_the_prompt_and_config_are_posted_and_the_output_read() -> None:
    with CountingServer() as server:
        server.route("POST", "/hook", webhook)
        plain = call(f"webhook:{server.url}/hook", "hi")
        toned = call({"id": f"webhook:{server.url}/hook", "config": {"tone": "warm"}}, "hi")
        odd = call(f"webhook:{server.url}/hook", "odd")
        assert (plain.output, toned.output) == ("hook: hi", "hook: hi warm")
        assert [r.json for r in server.requests_to("/hook")][:2] == [{"prompt": "hi"}, {"prompt": "hi", "config": {"tone": "warm"}}]
        assert odd.error == "Webhook response error: Unexpected response format: {'result': 'no output field'}"


def test_a_failing_webhook_is_retried_then_an_error_row(tmp_path: Path) -> None:
    with CountingServer() as server:
        server.route("POST", "/hook", webhook)
        server.fail(503, path="/hook")
        code, rows = eval_rows(tmp_path, f"""
            prompts: ['hello {{{{name}}}}']
            providers: ['webhook:{server.url}/hook', 'webhook:{server.url}/missing']
            tests: [{{vars: {{name: ada}}, assert: [{{type: contains, value: 'hook: hello ada'}}]}}]
            """)
        assert code == 1
        assert rows[0]["success"] is True and len(server.requests_to("/hook")) == 2
        assert rows[1]["error"].startswith("Webhook call error:") and "404" in rows[1]["error"]


def test_a_webhook_without_an_http_url_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['hi']\nproviders: ['webhook:hooks.example.com/x']\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "webhook:<http(s) URL>" in result.err
