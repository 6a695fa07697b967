"""The response cache: reused across runs, keyed by what determines a reply, never storing errors or keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

CONFIG = """
prompts: ['Question: {{q}}']
providers: [openai:chat:gpt-4.1-mini]
tests:
  - vars: {q: capital of France}
    assert: [{type: contains, value: Paris}]
  - vars: {q: capital of Spain}
    assert: [{type: contains, value: Madrid}]
"""


def _rows(folder: Path) -> list[dict]:
    return json.loads((folder / "out.json").read_text())["results"]["results"]


def _eval(folder: Path, *extra: str) -> int:
    return run_cli("eval", "-o", "out.json", "--no-progress", "--cache-dir", str(folder / "cache"), *extra, cwd=folder).code


def test_second_run_is_served_from_the_cache(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert _eval(tmp_path) == 0
    first = _rows(tmp_path)
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2
    assert len(first) == 2 and all(row["response"]["cached"] is False for row in first)

    assert _eval(tmp_path) == 0
    second = _rows(tmp_path)
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2, "no new requests on a warm cache"
    assert [row["response"]["output"] for row in second] == ["Paris", "Madrid"]
    assert all(row["response"]["cached"] is True for row in second)
    assert all(row["response"]["cost"] == 0 for row in second)
    assert second[0]["response"]["tokenUsage"]["cached"] == first[0]["response"]["tokenUsage"]["total"]


def test_a_changed_prompt_misses_and_errors_are_not_cached(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(500, times=4, path="/v1/chat/completions")
    openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert _eval(tmp_path, "-j", "1") == 1  # the first row errors after its four attempts
    errored = [row for row in _rows(tmp_path) if row["failureReason"] == 2]
    assert len(errored) == 1
    before = len(openai_env.requests)
    assert _eval(tmp_path) == 0, "the failed call was not cached, so it is retried and now succeeds"
    assert len(openai_env.requests) == before + 1

    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("Question:", "Q:"))
    assert _eval(tmp_path) == 0
    assert len(openai_env.requests) == before + 3


def test_repeat_bypasses_the_cache_and_keys_are_never_stored(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert _eval(tmp_path) == 0
    assert _eval(tmp_path, "--repeat", "2") == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2 + 4
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert stored and "sk-test-0123456789" not in stored


def test_expired_entries_are_refetched(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert _eval(tmp_path) == 0
    monkeypatch.setenv("CI_GRADE_CACHE_TTL", "0")
    assert _eval(tmp_path) == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 4


def test_entries_another_version_wrote_with_other_fields_are_misses(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert _eval(tmp_path) == 0
    entries = sorted((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 2
    entries[0].write_text(json.dumps({"output": 5, "error": "x", "token_usage": "no", "cost": "free", "latency_ms": None}))
    assert _eval(tmp_path) == 0, "a miss, not an ERROR row"
    assert len(openai_env.requests_to("/v1/chat/completions")) == 3
    assert [row["response"]["output"] for row in _rows(tmp_path)] == ["Paris", "Madrid"]
    assert not list((tmp_path / "cache").rglob(".tmp-*"))


@pytest.mark.parametrize(("name", "value"), [("CI_GRADE_CACHE_TTL", "abc"), ("CI_GRADE_MAX_RETRIES", "many"), ("CI_GRADE_CALL_TIMEOUT_SECONDS", "0"), ("CI_GRADE_JS_TIMEOUT_MS", "nan"), ("CI_GRADE_ENDPOINT_DOWN_AFTER", "-1")])
def test_a_bad_tuning_variable_exits_2_before_any_call(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    monkeypatch.setenv(name, value)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and name in result.err and repr(value) in result.err, result.err
    assert openai_env.requests == [] and not (tmp_path / "out.json").exists()


def test_settings_are_part_of_the_key_and_credentials_are_not(tmp_path: Path, openai_env: LLMServer) -> None:
    """`max_tokens` only looks secret: changing it misses the cache; a rotated key still hits."""
    openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")
    config = CONFIG.replace("providers: [openai:chat:gpt-4.1-mini]", "providers: [{id: openai:chat:gpt-4.1-mini, config: {max_tokens: 50, apiKey: sk-first-key-000}}]")
    write(tmp_path / "promptfooconfig.yaml", config)
    assert _eval(tmp_path) == 0
    write(tmp_path / "promptfooconfig.yaml", config.replace("sk-first-key-000", "sk-second-key-11"))
    assert _eval(tmp_path) == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2
    write(tmp_path / "promptfooconfig.yaml", config.replace("max_tokens: 50", "max_tokens: 60"))
    assert _eval(tmp_path) == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 4
