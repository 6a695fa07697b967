"""A model-graded assertion that no grader can serve exits 2 before any model is called, naming the
assertion (file, key path, line) and the keys that would serve it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer


def _project(folder: Path, server: LLMServer, assertion: str, *, options: str = "") -> None:
    write(
        folder / "promptfooconfig.yaml",
        f"""
        prompts: ["Answer {{{{q}}}}"]
        providers:
          - id: openai:chat:gpt-4o-mini
            config: {{apiKey: sk-provider-own-key-0123, apiBaseUrl: '{server.openai_base_url}'}}
        tests:
          - vars: {{q: one}}
            assert:
              - type: contains
                value: o
          - vars: {{q: two}}
            {options}
            assert:
              - type: icontains
                value: t
              - {assertion}
        """,
    )


def test_a_rubric_without_a_grader_exits_2_before_any_call(tmp_path: Path, llm_server: LLMServer) -> None:
    _project(tmp_path, llm_server, "{type: llm-rubric, value: is polite}")
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 2, result.out + result.err
    assert "promptfooconfig.yaml:15 tests[1].assert[1].type: " in result.err
    assert "no text grader available for llm-rubric: set OPENAI_API_KEY (or ANTHROPIC_API_KEY" in result.err
    assert "pass --grader, or set defaultTest.options.provider" in result.err
    assert "Traceback" not in result.err
    assert llm_server.requests == []  # nothing was spent
    assert not (tmp_path / "out.json").exists()


def test_a_similarity_check_names_the_embedding_keys(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")  # a text grader, but no embeddings
    _project(tmp_path, llm_server, "{type: similar, value: two}")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "tests[1].assert[1].type: no embedding grader available for similar: set OPENAI_API_KEY (or, for Azure OpenAI, " in result.err
    assert llm_server.requests == []


def test_answer_relevance_needs_embeddings_too(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    _project(tmp_path, llm_server, "{type: answer-relevance}")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "no embedding grader available for answer-relevance" in result.err


def test_a_grader_named_anywhere_serves(tmp_path: Path, llm_server: LLMServer) -> None:
    """The assertion's provider, the test's options.provider and --grader each serve (the run
    proceeds to call the model); a kind map without the kind needed does not."""
    grader = f"{{id: openai:chat:gpt-4o-mini, config: {{apiKey: sk-grader-0123, apiBaseUrl: '{llm_server.openai_base_url}'}}}}"
    llm_server.on_chat(None, lambda request: '{"reason": "ok", "pass": true, "score": 1}')
    _project(tmp_path, llm_server, f"{{type: llm-rubric, value: is polite, provider: {grader}}}")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).code == 0
    _project(tmp_path, llm_server, "{type: llm-rubric, value: is polite}", options=f"options: {{provider: {grader}}}")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).code == 0
    _project(tmp_path, llm_server, "{type: llm-rubric, value: is polite}")
    assert run_cli("eval", "--no-progress", "--grader", "openai:chat:gpt-4o-mini", cwd=tmp_path).code != 2
    llm_server.requests.clear()
    _project(tmp_path, llm_server, f"{{type: similar, value: two, provider: {{text: {grader}}}}}")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "no embedding grader available for similar" in result.err
    assert llm_server.requests == []


def test_a_classifier_without_a_provider_and_a_default_tests_rubric(tmp_path: Path, llm_server: LLMServer) -> None:
    _project(tmp_path, llm_server, "{type: classifier, value: nothate}")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "tests[1].assert[1].type: classifier needs a classification provider" in result.err
    text = (tmp_path / "promptfooconfig.yaml").read_text().replace("- {type: classifier, value: nothate}", "- {type: contains, value: t}")
    write(tmp_path / "promptfooconfig.yaml", text + "defaultTest:\n  assert:\n    - type: g-eval\n      value: is clear\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "defaultTest.assert[0].type: no text grader available for g-eval" in result.err
