"""Action inputs (both spellings, defaults, validation) and the event context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ci_grade.errors import UsageError
from ci_grade.github.event import ActionEvent
from ci_grade.github.inputs import DEFAULTS, read_inputs, split_list
from tests.conftest import REPO, run_cli
from tests.github_helpers import commands_in


def test_defaults_when_nothing_is_set() -> None:
    inputs = read_inputs({})
    assert inputs.config == ["promptfooconfig.yaml"]
    assert inputs.baseline is None and inputs.fail_on == "regressions"
    assert (inputs.max_score_drop, inputs.max_metric_drop) == (0.1, 0.02)
    assert inputs.min_pass_rate is None and inputs.max_errors is None
    assert inputs.comment is True and inputs.comment_title == "ci-grade"
    assert inputs.results_path == "ci-grade-results/results.json"
    assert inputs.junit_path == "ci-grade-results/results.junit.xml"
    assert inputs.github_token is None
    assert inputs.cache is True and inputs.cache_dir is None


def test_hyphen_and_underscore_spellings_are_both_read() -> None:
    hyphen = read_inputs({"INPUT_FAIL-ON": "failures", "INPUT_MAX-SCORE-DROP": "0.25", "INPUT_COMMENT-TITLE": "Evals  (gpt)"})
    underscore = read_inputs({"INPUT_FAIL_ON": "failures", "INPUT_MAX_SCORE_DROP": "0.25", "INPUT_COMMENT_TITLE": "Evals  (gpt)"})
    assert hyphen == underscore
    assert hyphen.fail_on == "failures" and hyphen.max_score_drop == 0.25 and hyphen.comment_title == "Evals (gpt)"


def test_hyphen_form_wins_and_empty_values_mean_default() -> None:
    inputs = read_inputs({"INPUT_FAIL-ON": "never", "INPUT_FAIL_ON": "failures", "INPUT_MAX-SCORE-DROP": "  ", "INPUT_MAX_SCORE_DROP": "0.3"})
    assert inputs.fail_on == "never"
    assert inputs.max_score_drop == 0.3  # the hyphen form is blank, so the underscore form counts
    assert read_inputs({"INPUT_FAIL-ON": ""}).fail_on == "regressions"


def test_values_are_parsed() -> None:
    inputs = read_inputs({
        "INPUT_CONFIG": "evals/a.yaml\n evals/b.yaml, evals/c.yaml\n\n",
        "INPUT_BASELINE": "git:origin/main:.ci-grade/baseline.json",
        "INPUT_MIN-PASS-RATE": "80%",
        "INPUT_MAX-ERRORS": "0",
        "INPUT_MAX-CONCURRENCY": "4",
        "INPUT_REPEAT": "3",
        "INPUT_COMMENT": "OFF",
        "INPUT_GRADER": "openai:gpt-4.1-mini",
        "INPUT_CACHE-DIR": ".cache/ci-grade",
        "INPUT_GITHUB-TOKEN": "ghp_fromInput123",
        "GITHUB_TOKEN": "ghs_fromEnv456",
    })
    assert inputs.config == ["evals/a.yaml", "evals/b.yaml", "evals/c.yaml"]
    assert inputs.baseline == "git:origin/main:.ci-grade/baseline.json"
    assert inputs.min_pass_rate == pytest.approx(0.8) and inputs.max_errors == 0
    assert (inputs.max_concurrency, inputs.repeat, inputs.comment) == (4, 3, False)
    assert inputs.grader == "openai:gpt-4.1-mini" and inputs.cache_dir == ".cache/ci-grade"
    assert inputs.github_token == "ghp_fromInput123"
    assert "ghp_fromInput123" not in repr(inputs) and "evals/a.yaml" in repr(inputs)
    assert read_inputs({"GITHUB_TOKEN": "ghs_fromEnv456"}).github_token == "ghs_fromEnv456"
    assert read_inputs({"INPUT_MIN_PASS_RATE": "0.5"}).min_pass_rate == 0.5
    assert read_inputs({"INPUT_PULL-REQUEST-NUMBER": "12"}).pull_request_number == 12
    assert read_inputs({}).pull_request_number is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("FAIL-ON", "sometimes", "input `fail-on` must be one of failures, regressions, never"),
        ("MAX-SCORE-DROP", "abc", "input `max-score-drop` must be a number"),
        ("MAX-SCORE-DROP", "nan", "input `max-score-drop` must be between 0 and 1"),
        ("MAX-SCORE-DROP", "2", "input `max-score-drop` must be between 0 and 1"),
        ("MAX-METRIC-DROP", "-0.1", "input `max-metric-drop` must be between 0 and 1"),
        ("MIN-PASS-RATE", "1.5", "input `min-pass-rate` must be between 0 and 1"),
        ("MIN-PASS-RATE", "120%", "input `min-pass-rate` must be between 0 and 100"),
        ("MAX-ERRORS", "1.5", "input `max-errors` must be a whole number"),
        ("MAX-CONCURRENCY", "0", "input `max-concurrency` must be at least 1"),
        ("REPEAT", "-2", "input `repeat` must be a whole number"),
        ("COMMENT", "maybe", "input `comment` must be on or off"),
        ("CACHE", "sometimes", "input `cache` must be on or off"),
        ("RESULTS-PATH", "out/results.xml", "input `results-path` must end with .json"),
        ("JUNIT-PATH", "out/junit.json", "input `junit-path` must end with .xml"),
        ("CONFIG", " , \n", "input `config` names no config file"),
        ("PULL-REQUEST-NUMBER", "#12", "input `pull-request-number` must be a whole number"),
        ("PULL-REQUEST-NUMBER", "0", "input `pull-request-number` must be at least 1"),
    ],
)
def test_invalid_values_are_usage_errors(name: str, value: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        read_inputs({f"INPUT_{name}": value})
    assert message in str(caught.value)


def test_invalid_input_exits_2_with_an_annotation_and_no_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("INPUT_FAIL_ON", "always")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run_cli("action", cwd=tmp_path)
    assert result.code == 2
    assert "Traceback" not in result.err and "input `fail-on` must be one of" in result.err
    (error,) = [c for c in commands_in(result.out) if c[0] == "error"]
    assert error[1]["title"] == "ci-grade could not run" and "input `fail-on`" in error[2]
    assert "could not run" in summary.read_text(encoding="utf-8")


def test_split_list() -> None:
    assert split_list("a.yaml,\n b.yaml ,,c.yaml") == ["a.yaml", "b.yaml", "c.yaml"]


def test_action_yml_documents_every_input_with_the_same_defaults() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    inputs = action["inputs"]
    assert set(inputs) == set(DEFAULTS)
    for name, spec in inputs.items():
        assert spec.get("description"), name
        expected = "${{ github.token }}" if name == "github-token" else DEFAULTS[name]
        assert str(spec.get("default", "")) == expected, name
    assert set(action["outputs"]) == {
        "passed", "verdict", "pass-rate", "score", "score-delta", "p-value", "regressions", "failures", "known-failures",
        "not-significant", "errors", "baseline",
        "results-path", "junit-path", "comment-url",
    }
    assert all(spec.get("description") for spec in action["outputs"].values())
    assert action["runs"] ["using"] == "docker" and action["runs"]["image"] == "Dockerfile"
    mapped = action["runs"]["env"]  # the underscore spelling is passed explicitly, whatever the runner does
    assert mapped == {f"INPUT_{name.upper().replace('-', '_')}": f"${{{{ inputs.{name} }}}}" for name in inputs}


def _event(tmp_path: Path, name: str, payload: dict, **env: str) -> ActionEvent:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return ActionEvent.from_env({"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(path), **env})


def test_pull_request_event(tmp_path: Path) -> None:
    event = _event(tmp_path, "pull_request", {"number": 7, "pull_request": {"number": 7, "head": {"repo": {"full_name": "someone/demo"}}}, "repository": {"full_name": "octo/demo"}}, GITHUB_API_URL="https://ghe.example/api/v3/")
    assert event.pull_request_number == 7
    assert event.repository == "octo/demo"  # from the payload when GITHUB_REPOSITORY is missing
    assert event.from_fork is True
    assert event.api_url == "https://ghe.example/api/v3"


def test_other_events(tmp_path: Path) -> None:
    push = _event(tmp_path, "push", {"before": "a", "after": "b"}, GITHUB_REPOSITORY="octo/demo")
    assert push.pull_request_number is None and push.from_fork is False and push.api_url == "https://api.github.com"
    comment = _event(tmp_path, "issue_comment", {"issue": {"number": 12, "pull_request": {"url": "x"}}})
    assert comment.pull_request_number == 12
    plain_issue = _event(tmp_path, "issue_comment", {"issue": {"number": 12}})
    assert plain_issue.pull_request_number is None


def test_unreadable_payload_is_reported_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text("{not json", encoding="utf-8")
    event = ActionEvent.from_env({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)})
    assert event.pull_request_number is None
    assert event.problem and "cannot read the event payload" in event.problem


def test_review_events_belong_to_their_pull_request(tmp_path: Path) -> None:
    for name in ("pull_request_review", "pull_request_review_comment"):
        event = _event(tmp_path, name, {"review": {"id": 1}, "pull_request": {"number": 9, "head": {"repo": {"full_name": "octo/demo"}}}}, GITHUB_REPOSITORY="octo/demo")
        assert event.pull_request_number == 9 and event.run_head is None and event.from_fork is False


def workflow_run(pulls: list[dict], head_repo: str = "octo/demo", sha: str = "c0ffee" * 6 + "beef") -> dict:
    owner = head_repo.split("/")[0]
    return {"workflow_run": {"head_branch": "fix-typo", "head_sha": sha, "head_repository": {"full_name": head_repo, "owner": {"login": owner}}, "pull_requests": pulls}}


def test_a_workflow_run_names_its_pull_request_or_its_head(tmp_path: Path) -> None:
    """Same repository: the payload lists the pull request (the one at the run's commit). A fork:
    it lists none; the run's head (`owner:branch`, commit) is what finds it (`github.pulls`)."""
    sha = "c0ffee" * 6 + "beef"
    listed = [{"number": 4, "head": {"sha": "0" * 40}}, {"number": 5, "head": {"sha": sha}}]
    same_repo = _event(tmp_path, "workflow_run", workflow_run(listed), GITHUB_REPOSITORY="octo/demo")
    assert same_repo.pull_request_number == 5 and same_repo.run_head == ("octo:fix-typo", sha) and same_repo.from_fork is False
    fork = _event(tmp_path, "workflow_run", workflow_run([], head_repo="stranger/demo"), GITHUB_REPOSITORY="octo/demo")
    assert fork.pull_request_number is None and fork.run_head == ("stranger:fix-typo", sha) and fork.from_fork is True
    moved_on = _event(tmp_path, "workflow_run", workflow_run([{"number": 4, "head": {"sha": "0" * 40}}]), GITHUB_REPOSITORY="octo/demo")
    assert moved_on.pull_request_number is None
    assert _event(tmp_path, "workflow_run", {"workflow_run": {"head_branch": "x"}}).run_head is None
