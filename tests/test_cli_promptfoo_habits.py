"""promptfoo's CLI habits: several values after one flag, the flags its users and promptfoo-action
pass (`--no-cache`, `--no-table`, `--no-progress-bar`, `--no-share`, `--filter-providers`,
`--env-path`), `--share` refused, and the response cache on by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_cli_process, write
from tests.servers.llm_server import LLMServer

KEY = "sk-test-0123456789"

TWO_PROVIDERS = """
prompts: ['Question: {{q}}']
providers:
  - openai:chat:gpt-4.1-mini
  - {id: openai:chat:gpt-4o, label: big-model}
tests:
  - description: france
    vars: {q: capital of France}
    assert: [{type: contains, value: Paris}]
  - description: only the small model
    vars: {q: capital of Spain}
    providers: [openai:chat:gpt-4.1-mini]
    assert: [{type: contains, value: Madrid}]
"""

ONE_PROVIDER = """
prompts: ['Question: {{q}}']
providers: [openai:chat:gpt-4.1-mini]
tests:
  - vars: {q: capital of France}
    assert: [{type: contains, value: Paris}]
"""


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text())["results"]["results"]


def _chats(server: LLMServer) -> int:
    return len(server.requests_to("/v1/chat/completions"))


@pytest.fixture
def answers(openai_env: LLMServer) -> LLMServer:
    return openai_env.on_chat("France", "Paris").on_chat("Spain", "Madrid")


def test_several_values_after_one_flag(tmp_path: Path, answers: LLMServer) -> None:
    write(tmp_path / "a.yaml", ONE_PROVIDER)
    write(tmp_path / "b.yaml", "tests:\n  - vars: {q: capital of Spain}\n    assert: [{type: contains, value: Madrid}]\n")
    result = run_cli("eval", "-c", "a.yaml", "b.yaml", "-o", "out/r.json", "out/r.junit.xml", "out/r.md", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.json", "r.junit.xml", "r.md"]
    assert len(_rows(tmp_path / "out" / "r.json")) == 2  # the two configs were merged
    result = run_cli("eval", "-c", "a.yaml", "-o", "x.json", "-o", "y.md", "--no-progress", cwd=tmp_path)
    assert result.code == 0 and (tmp_path / "x.json").exists() and (tmp_path / "y.md").exists()


def test_promptfoo_actions_flags_are_accepted(tmp_path: Path, answers: LLMServer) -> None:
    """The command line promptfoo-action builds, with `npx promptfoo@latest` replaced."""
    write(tmp_path / "promptfooconfig.yaml", ONE_PROVIDER)
    flags = ["--no-share", "--max-concurrency", "4", "--no-table", "--no-progress-bar", "--no-cache", "--no-write", "--table"]
    result = run_cli_process("eval", "-c", "promptfooconfig.yaml", "-o", "output.json", *flags, cwd=tmp_path)
    assert result.code == 0, result.err
    assert "rows done" not in result.err and "running" not in result.err  # no progress
    assert "1 passed, 0 failed, 0 errors" in result.out
    assert _rows(tmp_path / "output.json")[0]["response"]["output"] == "Paris"


def test_share_is_refused_before_anything_runs(tmp_path: Path, answers: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", ONE_PROVIDER)
    result = run_cli("eval", "--share", "-o", "out.json", cwd=tmp_path)
    assert result.code == 2
    assert "--share is not supported: ci-grade never uploads results, nothing leaves this machine" in result.err
    assert "-o" in result.err
    assert _chats(answers) == 0 and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("flag", ["--filter-providers", "--filter-targets"])
def test_filter_providers_matches_ids_and_labels(tmp_path: Path, answers: LLMServer, flag: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", TWO_PROVIDERS)
    assert run_cli("eval", "-o", "all.json", "--no-progress", cwd=tmp_path).code == 0
    everything = {(r["provider"]["id"], r["testCase"]["description"]): r["testId"] for r in _rows(tmp_path / "all.json")}
    assert len(everything) == 3

    assert run_cli("eval", "-o", "big.json", "--no-progress", flag, "^big", cwd=tmp_path).code == 0
    big = _rows(tmp_path / "big.json")
    assert [(r["provider"]["id"], r["testCase"]["description"]) for r in big] == [("openai:chat:gpt-4o", "france")]
    assert big[0]["testId"] == everything[("openai:chat:gpt-4o", "france")], "ids do not depend on the filter"

    assert run_cli("eval", "-o", "mini.json", "--no-progress", flag, "gpt-4\\.1", cwd=tmp_path).code == 0
    assert {r["testCase"]["description"] for r in _rows(tmp_path / "mini.json")} == {"france", "only the small model"}


def test_filter_providers_problems_exit_2(tmp_path: Path, answers: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", TWO_PROVIDERS)
    nothing = run_cli("eval", "--no-progress", "--filter-providers", "anthropic", cwd=tmp_path)
    assert nothing.code == 2 and "--filter-providers 'anthropic' matches no provider" in nothing.err
    assert "big-model" in nothing.err
    broken = run_cli("eval", "--no-progress", "--filter-providers", "(", cwd=tmp_path)
    assert broken.code == 2 and "not a valid regular expression" in broken.err
    assert _chats(answers) == 0


def test_env_path_takes_commas_and_repeats(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['{{ env.FIRST }}-{{ env.SECOND }}-{{ env.THIRD }}']
        providers: [echo]
        tests:
          - assert: [{type: equals, value: one-two-three}]
        """)
    write(tmp_path / "a.env", "FIRST=one\n")
    write(tmp_path / "b.env", "SECOND=two\n")
    write(tmp_path / "c.env", "THIRD=three\n")
    result = run_cli("eval", "--no-progress", "--env-path", "a.env,b.env", "--env-file", "c.env", cwd=tmp_path)
    assert result.code == 0, result.out + result.err
    missing = run_cli("eval", "--no-progress", "--env-path", "a.env,nowhere.env", cwd=tmp_path)
    assert missing.code == 2 and "nowhere.env" in missing.err


@pytest.fixture
def cache_on(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> Path:
    """The cache as users get it: on by default, in the XDG cache folder; returns that folder."""
    monkeypatch.delenv("PROMPTFOO_CACHE_ENABLED")
    return isolated_cache / "ci-grade"


def _eval(folder: Path, *extra: str) -> int:
    return run_cli("eval", "-o", "out.json", "--no-progress", *extra, cwd=folder).code


def test_cache_is_on_by_default_and_never_keeps_keys_or_errors(tmp_path: Path, answers: LLMServer, cache_on: Path) -> None:
    answers.fail(500, times=4, path="/v1/chat/completions")
    write(tmp_path / "promptfooconfig.yaml", TWO_PROVIDERS)
    assert _eval(tmp_path, "-j", "1") == 1  # the first call errors after its four attempts
    assert sum(r["failureReason"] == 2 for r in _rows(tmp_path / "out.json")) == 1
    stored = [json.loads(p.read_text()) for p in cache_on.rglob("*.json")]
    assert len(stored) == 2 and all(entry["output"] in ("Paris", "Madrid") for entry in stored), "the error was not stored"
    assert KEY not in "".join(p.read_text() for p in cache_on.rglob("*.json"))

    before = _chats(answers)
    assert _eval(tmp_path) == 0
    assert _chats(answers) == before + 1, "only the errored row is called again"
    assert sum(r["response"]["cached"] for r in _rows(tmp_path / "out.json")) == 2


def test_what_turns_the_cache_off(tmp_path: Path, answers: LLMServer, cache_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "promptfooconfig.yaml", ONE_PROVIDER)
    assert _eval(tmp_path) == 0 and _chats(answers) == 1
    assert _eval(tmp_path) == 0 and _chats(answers) == 1  # cached

    assert _eval(tmp_path, "--no-cache") == 0 and _chats(answers) == 2
    assert _eval(tmp_path, "--no-cache", "--cache-dir", str(tmp_path / "elsewhere")) == 0 and _chats(answers) == 3
    assert not (tmp_path / "elsewhere").exists(), "--no-cache neither reads nor writes"
    assert _eval(tmp_path, "--repeat", "2") == 0 and _chats(answers) == 5, "repeats sample again"
    monkeypatch.setenv("PROMPTFOO_CACHE_ENABLED", "false")
    assert _eval(tmp_path) == 0 and _chats(answers) == 6
    monkeypatch.setenv("PROMPTFOO_CACHE_ENABLED", "true")
    write(tmp_path / "promptfooconfig.yaml", ONE_PROVIDER + "evaluateOptions: {cache: false}\n")
    assert _eval(tmp_path) == 0 and _chats(answers) == 7
    write(tmp_path / "promptfooconfig.yaml", ONE_PROVIDER + "commandLineOptions: {cache: false}\n")
    assert _eval(tmp_path) == 0 and _chats(answers) == 8
    assert _eval(tmp_path, "--cache-dir", str(cache_on)) == 0 and _chats(answers) == 8, "an explicit --cache-dir wins over the config"


def test_where_the_cache_lives(tmp_path: Path, answers: LLMServer, cache_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "promptfooconfig.yaml", ONE_PROVIDER)
    monkeypatch.setenv("CI_GRADE_CACHE_DIR", str(tmp_path / "from-env"))
    assert _eval(tmp_path) == 0
    assert _eval(tmp_path, "--cache-dir", "from-flag") == 0
    assert list((tmp_path / "from-env").rglob("*.json")) and list((tmp_path / "from-flag").rglob("*.json"))
    assert not cache_on.exists()
    monkeypatch.delenv("CI_GRADE_CACHE_DIR")
    assert _eval(tmp_path) == 0
    assert list(cache_on.rglob("*.json"))
    assert _chats(answers) == 3  # each folder started empty


# Every option of `promptfoo eval` in promptfoo 0.123.1 (src/commands/eval.ts, plus the
# --env-file/--env-path every command gets).
PROMPTFOO_EVAL_OPTIONS = (
    "-c", "--config", "-a", "--assertions", "-p", "--prompts", "-r", "--providers", "-t", "--tests", "-v",
    "--vars", "--model-outputs", "--prompt-prefix", "--prompt-suffix", "--var", "--tag", "-j",
    "--max-concurrency", "--repeat", "--delay", "--no-cache", "--remote", "-n", "--filter-first-n",
    "--filter-pattern", "--filter-range", "--filter-prompts", "--filter-providers", "--filter-targets",
    "--filter-sample", "--filter-sample-seed", "--filter-failing", "--filter-failing-only",
    "--filter-errors-only", "--filter-metadata", "-o", "--output", "--table", "--no-table",
    "--table-cell-max-length", "--share", "--no-share", "--resume", "--retry-errors", "--no-write",
    "--grader", "--suggest-prompts", "-w", "--watch", "-x", "--extension", "--description",
    "--no-progress-bar", "--env-file", "--env-path",
)


def test_every_promptfoo_eval_option_is_accepted_or_listed_as_a_difference() -> None:
    import argparse
    import re

    from ci_grade.cli import build_parser
    from tests.conftest import REPO

    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    ours = set(subparsers.choices["eval"]._option_string_actions)
    compatibility = (REPO / "docs" / "compatibility.md").read_text(encoding="utf-8")
    section = compatibility.split("## Command line", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(-{1,2}[a-z][a-z0-9-]*)", section))
    missing = [option for option in PROMPTFOO_EVAL_OPTIONS if option not in ours and option not in listed]
    assert not missing, f"neither accepted nor listed in docs/compatibility.md's Command line section: {missing}"
    assert ours & set(PROMPTFOO_EVAL_OPTIONS) >= {"--no-cache", "--no-table", "--no-progress-bar", "--filter-providers", "--env-path", "--share"}


def test_delay_and_description(tmp_path: Path, answers: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", "description: from the config\n" + TWO_PROVIDERS)
    result = run_cli("eval", "--no-progress", "--delay", "20", "--description", "nightly run", "-o", "r.md", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == "ci-grade: nightly run"
    assert "nightly run" in (tmp_path / "r.md").read_text()
    assert _chats(answers) == 3
    assert run_cli("eval", "--no-progress", "--delay", "-5", cwd=tmp_path).code == 2
