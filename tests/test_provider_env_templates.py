"""`{{ env.X }}` in a provider's id and config, and a provider's own `env:` block, as promptfoo 0.123.1 treats them.

promptfoo fills in env expressions of a provider's id and config when it makes the provider
(`renderEnvOnlyInObject`), from the config's `env:`, the process environment and the provider's
own `env:`, which also supplies its API key; an expression naming an unset variable stays as written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.config.env_templates import render_env
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer


def rows(folder: Path) -> list[dict]:
    return json.loads((folder / "out.json").read_text())["results"]["results"]


def test_a_provider_id_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_X", "blue")
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        env: {PROV: echo}
        prompts: ['Hi {{name}}']
        providers:
          - id: '{{ env.PROV }}'
        tests:
          - vars: {name: '{{ env.TEAM_X }}'}
            assert: [{type: equals, value: 'Hi blue'}]
        """,
    )
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    (row,) = rows(tmp_path)
    assert row["provider"]["id"] == "echo" and row["response"]["output"] == "Hi blue"


def test_provider_config_and_its_own_env_reach_the_api(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("MY_BASE", llm_server.openai_base_url)
    llm_server.on_chat(None, "hello back")
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['Hi']
        providers:
          - id: openai:chat:gpt-4.1-mini
            label: templated
            config: {apiBaseUrl: '{{ env.MY_BASE }}', apiKey: '{{ env.MY_KEY }}', temperature: 0}
            env: {MY_KEY: sk-from-the-provider-env-123}
          - id: openai:chat:gpt-4.1-mini
            label: own key
            config: {apiBaseUrl: '{{ env.MY_BASE }}'}
            env: {OPENAI_API_KEY: sk-own-provider-key-456}
        tests:
          - assert: [{type: equals, value: hello back}]
        """,
    )
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    keys = sorted(r.headers.get("authorization", r.headers.get("Authorization", "")) for r in llm_server.requests_to("/v1/chat/completions"))
    assert keys == ["Bearer sk-from-the-provider-env-123", "Bearer sk-own-provider-key-456"]
    text = (tmp_path / "out.json").read_text()
    assert "sk-from-the-provider-env-123" not in text and "sk-own-provider-key-456" not in text


def test_only_env_expressions_of_set_variables_are_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"HOST": "api.example", "EMPTY": ""}
    value = {
        "url": "https://{{ env.HOST }}/v1",
        "body": {"prompt": "{{ prompt }}", "who": "{{ env.UNSET }}", "fallback": "{{ env.UNSET | default('x') }}"},
        "list": ["{{env['HOST']}}", 3, None],
        "empty": "[{{ env.EMPTY }}]",
        "_conversation": "{{ env.HOST }}",
    }
    assert render_env(value, env) == {
        "url": "https://api.example/v1",
        "body": {"prompt": "{{ prompt }}", "who": "{{ env.UNSET }}", "fallback": "x"},
        "list": ["api.example", 3, None],
        "empty": "[]",
        "_conversation": "{{ env.HOST }}",
    }
