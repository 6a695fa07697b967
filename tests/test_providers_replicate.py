"""Replicate (`replicate:`, `replicate:moderation:`) over httpx against a loopback stand-in of its API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.provider_helpers import call, eval_rows, use
from tests.servers import replicate_server
from tests.servers.counting_server import CountingServer

KEY = "r8_replicate_secret_7777"
LLAMA = "meta/meta-llama-3-8b-instruct"
GUARD = "meta/llama-guard-3-8b"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("REPLICATE_API_TOKEN", KEY)
        monkeypatch.setenv("REPLICATE_BASE_URL", srv.url)
        monkeypatch.setenv("REPLICATE_POLL_INTERVAL", "0.01")
        yield srv


def test_prediction_is_created_as_promptfoo_creates_it_and_polled_until_done(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLICATE_TEMPERATURE", "0.25")
    replicate_server.install(server, KEY, LLAMA, lambda inp: ["Par", "is."], polls=2, metrics={"input_token_count": 12, "output_token_count": 3})
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}])
    response = call({"id": f"replicate:{LLAMA}", "config": {"max_new_tokens": 50, "apiKeyEnvar": "REPLICATE_API_TOKEN"}}, prompt)
    assert response.error is None and response.output == "Paris."
    assert (response.token_usage.prompt, response.token_usage.completion) == (12, 3)
    (create,) = server.requests_to(f"/v1/models/{LLAMA}/predictions")
    assert create.headers.get("Authorization") == f"Bearer {KEY}" and create.headers.get("Prefer") == "wait=60"
    assert create.json == {"input": {"max_new_tokens": 50, "temperature": 0.25, "system_prompt": "Be brief.", "prompt": "Capital of France?"}}
    assert len(server.requests_to("/v1/predictions/pred1")) == 2


def test_a_version_goes_to_v1_predictions_and_a_failed_prediction_is_an_error(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    replicate_server.install(server, KEY, LLAMA, lambda inp: replicate_server.problem(422, "prompt is too long") if "long" in inp["prompt"] else "ok", version="abc123")
    monkeypatch.setenv("REPLICATE_BASE_URL", "http://127.0.0.1:9")  # config.apiBaseUrl wins over it
    assert call({"id": f"replicate:{LLAMA}:abc123", "config": {"apiBaseUrl": server.url}}, "hi").output == "ok"
    monkeypatch.setenv("REPLICATE_BASE_URL", server.url)
    (create,) = server.requests_to("/v1/predictions")
    assert create.json["version"] == "abc123"
    response = call(f"replicate:{LLAMA}:abc123", "too long")
    assert response.error is not None and "422" in response.error and "prompt is too long" in response.error


def test_429_with_retry_after_and_5xx_are_retried_on_create_and_poll(server: CountingServer) -> None:
    replicate_server.install(server, KEY, LLAMA, lambda inp: "done", polls=1)
    server.fail(429, path=f"/v1/models/{LLAMA}/predictions", retry_after="0", body={"title": "Too Many Requests", "detail": "throttled", "status": 429})
    server.fail(503, path="/v1/predictions/pred1")
    assert call(f"replicate:{LLAMA}", "hi").output == "done"
    assert len(server.requests_to(f"/v1/models/{LLAMA}/predictions")) == 2
    assert len(server.requests_to("/v1/predictions/pred1")) == 2


def test_llamaguard_verdicts_are_moderation_flags_as_promptfoo_maps_them(server: CountingServer) -> None:
    replicate_server.install(server, KEY, GUARD, lambda inp: "unsafe\nS1,S3,S10" if "attack" in inp["prompt"] else "safe")
    flagged = use(f"replicate:moderation:{GUARD}", lambda p: p.moderate("how do I", "attack them"))
    assert flagged.error is None and [(f.code, f.description) for f in flagged.flags or []] == [("S1", "Violent Crimes"), ("S3", "Sex Crimes"), ("S10", "Hate")]
    assert server.requests_to(f"/v1/models/{GUARD}/predictions")[0].json["input"]["prompt"] == "Human: how do I\n\nAssistant: attack them"
    assert use(f"replicate:moderation:{GUARD}", lambda p: p.moderate("hi", "hello")).flags == []


def test_eval_replicate_target_and_moderation_grader_with_an_error_row(server: CountingServer, tmp_path: Path) -> None:
    replicate_server.install(server, KEY, LLAMA, lambda inp: f"reply to {inp['prompt']}")
    replicate_server.install(server, KEY, GUARD, lambda inp: "unsafe\nS11" if "hurt" in inp["prompt"] else "safe")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers: [replicate:{LLAMA}]
        defaultTest:
          options: {{provider: {{moderation: replicate:moderation:{GUARD}}}}}
          assert: [{{type: moderation}}]
        tests:
          - vars: {{q: say hello}}
          - vars: {{q: hurt myself}}
        """,
    )
    assert code == 1
    assert [r["success"] for r in rows] == [True, False]
    assert rows[0]["response"]["output"] == "reply to say hello"
    assert "Self-Harm" in rows[1]["gradingResult"]["reason"]
    assert KEY not in (tmp_path / "out.json").read_text()
