"""IBM watsonx.ai (`watsonx:`, `watsonx:chat:`) over httpx against loopback stand-ins of IAM and watsonx.ai."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.provider_helpers import call, eval_rows
from tests.servers import watsonx_server
from tests.servers.counting_server import CountingServer

KEY = "ibm-watsonx-apikey-31337"
PROJECT = "proj-1234"
GRANITE = "ibm/granite-3-8b-instruct"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("WATSONX_AI_APIKEY", KEY)
        monkeypatch.setenv("WATSONX_AI_PROJECT_ID", PROJECT)
        monkeypatch.setenv("WATSONX_AI_AUTH_URL", srv.url)
        yield srv


def test_text_generation_with_an_iam_token_tokens_and_tier_priced_cost(server: CountingServer) -> None:
    state = watsonx_server.install(server, KEY, PROJECT, lambda text: "Paris is the capital")
    config = {"serviceUrl": server.url, "maxNewTokens": 20, "temperature": 0.5, "decodingMethod": "greedy", "stopSequences": ["\n\n"]}
    response = call({"id": f"watsonx:{GRANITE}", "config": config}, "Capital of France?")
    assert response.error is None and response.output == "Paris is the capital"
    assert (response.token_usage.prompt, response.token_usage.completion) == (3, 4)
    assert response.cost == pytest.approx(3 * 0.636e-6 + 4 * 1.908e-6)
    assert response.finish_reason == "stop"
    (request,) = server.requests_to("/ml/v1/text/generation")
    assert "version=2023-05-29" in request.path
    assert request.json == {"input": "Capital of France?", "model_id": GRANITE, "project_id": PROJECT, "parameters": {
        "max_new_tokens": 20, "decoding_method": "greedy", "temperature": 0.5, "stop_sequences": ["\n\n"]}}
    assert state.exchanges == 1


@pytest.mark.parametrize(("tiers", "per_million"), [(("class_12", "class_12"), (0.212, 0.212)), (("mistral_large_input", "mistral_large"), (3.37, 10.07))])
def test_the_models_own_tiers_price_it_as_promptfoo_does(server: CountingServer, tiers: tuple[str, str], per_million: tuple[float, float]) -> None:
    watsonx_server.install(server, KEY, PROJECT, lambda text: "Paris is the capital", tiers=tiers)
    response = call({"id": f"watsonx:{GRANITE}", "config": {"serviceUrl": server.url}}, "Capital of France?")
    assert response.cost == pytest.approx(3 * per_million[0] / 1e6 + 4 * per_million[1] / 1e6)


def test_chat_with_a_bearer_token_and_config_cost(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WATSONX_AI_APIKEY")
    monkeypatch.setenv("WATSONX_AI_BEARER_TOKEN", "given-bearer-token-42")
    watsonx_server.install(server, KEY, PROJECT, lambda text: f"re: {text}", bearer="given-bearer-token-42")
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}])
    response = call({"id": f"watsonx:chat:{GRANITE}", "config": {"serviceUrl": server.url, "cost": 1e-6, "maxNewTokens": 9}}, prompt)
    assert response.error is None and response.output == "re: hello"
    assert response.cost == pytest.approx((7 + 2) * 1e-6)
    (request,) = server.requests_to("/ml/v1/text/chat")
    assert request.json["messages"][0] == {"role": "system", "content": "Be brief."} and request.json["max_tokens"] == 9
    assert not server.requests_to("/identity/token") and not server.requests_to("/ml/v1/foundation_model_specs")


def test_429_and_5xx_are_retried_and_errors_name_watsonx_messages(server: CountingServer) -> None:
    watsonx_server.install(server, KEY, PROJECT, lambda text: "ok")
    server.fail(429, path="/ml/v1/text/generation", retry_after="0", body={"errors": [{"code": "rate_limit", "message": "too many"}], "status_code": 429})
    server.fail(500, path="/ml/v1/text/generation")
    assert call({"id": f"watsonx:{GRANITE}", "config": {"serviceUrl": server.url, "cost": 0}}, "hi").output == "ok"
    assert len(server.requests_to("/ml/v1/text/generation")) == 3
    response = call({"id": f"watsonx:{GRANITE}", "config": {"serviceUrl": server.url, "projectId": "other"}}, "hi")
    assert response.error is not None and "model_id and a valid project_id are required" in response.error


def test_missing_credentials_and_a_bad_key_are_errors_without_the_key(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    watsonx_server.install(server, "some-other-key-000", PROJECT, lambda text: "ok")
    response = call({"id": f"watsonx:{GRANITE}", "config": {"serviceUrl": server.url}}, "hi")
    assert response.error is not None and "Provided API key could not be found" in response.error and KEY not in response.error
    monkeypatch.delenv("WATSONX_AI_APIKEY")
    assert "WATSONX_AI_APIKEY" in str(call({"id": f"watsonx:{GRANITE}", "config": {"serviceUrl": server.url}}, "hi").error)


def test_eval_watsonx_rows_and_secrets_masked(server: CountingServer, tmp_path: Path) -> None:
    watsonx_server.install(server, KEY, PROJECT, lambda text: f"{text} {KEY}" if "leak" in text else "granite says hi")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers: [{{id: "watsonx:{GRANITE}", config: {{serviceUrl: "{server.url}"}}}}]
        tests:
          - vars: {{q: greet}}
            assert: [{{type: contains, value: granite}}]
          - vars: {{q: leak}}
            assert: [{{type: contains, value: nothing}}]
        """,
    )
    assert code == 1 and [r["success"] for r in rows] == [True, False]
    assert rows[0]["cost"] > 0
    assert KEY not in (tmp_path / "out.json").read_text()
