"""Reliability: small config mistakes are found at load, and hostile text cannot fool the terminal.

A grader whose `config` is not a mapping was found row by row with pydantic's raw text; a
negative weight and an unset `{{ env.X }}` passed without a word; a right-to-left override in a
description reached the terminal raw.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.safe_text import terminal
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

HEAD = "prompts: ['{{q}}']\nproviders: [openai:chat:gpt-4.1-mini]\n"


@pytest.fixture
def model(openai_env: LLMServer) -> LLMServer:
    openai_env.on_chat("", "hi")
    return openai_env


@pytest.mark.parametrize(("config", "expected"), [
    (HEAD + "defaultTest:\n  options:\n    provider:\n      id: openai:chat:gpt-4.1-mini\n      config: 5\n"
     "tests:\n  - vars: {q: hi}\n    assert: [{type: llm-rubric, value: polite}]\n",
     "promptfooconfig.yaml:7 defaultTest.options.provider.config: expected a mapping, got 5"),
    (HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - type: llm-rubric\n        value: polite\n"
     "        provider: {id: openai:chat:gpt-4.1-mini, config: [a]}\n",
     "promptfooconfig.yaml:8 tests[0].assert[0].provider.config: expected a mapping, got a list"),
    (HEAD + "tests:\n  - vars: {q: hi}\n    options:\n      provider: {embedding: {id: openai:embedding:text-embedding-3-small, config: oops}}\n"
     "    assert: [{type: similar, value: hi}]\n",
     "promptfooconfig.yaml:6 tests[0].options.provider.embedding.config: expected a mapping, got 'oops'"),
    (HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - {type: contains, value: hi, weight: -1}\n",
     "promptfooconfig.yaml:6 tests[0].assert[0].weight: must be at least 0, got -1"),
])
def test_a_mistake_in_a_grader_or_a_weight_is_exit_2_before_any_call(config: str, expected: str, tmp_path: Path, model: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", config)
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert (result.code, result.err) == (2, f"ci-grade: error: {expected}\n")
    assert "validation error" not in result.err and model.requests == []


def test_a_weight_of_zero_is_fine(tmp_path: Path, model: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - {type: contains, value: hi, weight: 0}\n      - {type: contains, value: hi}\n")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).code == 0


def test_an_unset_env_variable_is_a_warning_once_and_renders_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI_GRADE_TEST_UNSET", raising=False)
    monkeypatch.setenv("CI_GRADE_TEST_SET", "set")
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['[{{ env.CI_GRADE_TEST_UNSET }}] [{{ env.CI_GRADE_TEST_SET }}] [{{ env.CI_GRADE_TEST_UNSET2 | default("d") }}] {{q}}']
        providers: [echo]
        tests:
          - vars: {q: '{{ env.CI_GRADE_TEST_UNSET }}again'}
            assert: [{type: contains, value: again}]
        """)
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: promptfooconfig.yaml:1 prompts[0]: {{ env.CI_GRADE_TEST_UNSET }} reads CI_GRADE_TEST_UNSET, which is not set "
                        "(it renders as empty text, as in promptfoo)"]
    (row,) = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert row["response"]["output"] == "[] [set] [d] again"


def test_bidirectional_overrides_in_a_description_are_shown_escaped(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - description: "refund \\u202eusd 0001\\u202c ok"
            vars: {q: hi}
            assert: [{type: contains, value: bye}]
        """)
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 1
    assert "refund \\u202eusd 0001\\u202c ok" in result.out
    assert "\u202e" not in result.out + result.err and "\u202c" not in result.out + result.err


def test_terminal_text_escapes_formatting_but_keeps_emoji_and_scripts() -> None:
    assert terminal("a\u2066b\u2069\u200fc\ufeff") == "a\\u2066b\\u2069\\u200fc\\ufeff"
    family, persian = "\U0001f468\u200d\U0001f469\u200d\U0001f467", "می\u200cخواهم"
    assert terminal(family + " " + persian) == family + " " + persian
