"""The baseline store: folding repeats, save/load round trips, every source kind, bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ci_grade.errors import ConfigError, ExitCode, InfrastructureError, UsageError
from ci_grade.gate.baseline import Baseline, baseline_from_run
from ci_grade.gate.store import baseline_from_sources, load_baseline, load_baselines, save_baseline
from ci_grade.results import models
from ci_grade.results.models import AssertionResult
from ci_grade.results.promptfoo import to_promptfoo
from tests.results_factory import row, run_of


def sample_run():
    assertions = [
        AssertionResult(type="contains", metric="accuracy", status="pass", score=1.0),
        AssertionResult(type="assert-set", status="fail", score=0.5, children=[
            AssertionResult(type="regex", metric="format", status="fail", score=0.0, reason="no match"),
            AssertionResult(type="regex", metric="format", status="pass", score=1.0),
        ]),
    ]
    return run_of(
        row("rubric", 0.75, "fail", metrics={"accuracy": 1.0, "format": 0.5}, assertions=assertions),
        row("plain", 1.0),
        row("broken", 0.0, "error", error="provider timed out"),
        commit="abc123", config_hash="cfg1", graders=["openai:gpt-4.1-mini"], grader_templates={"llm-rubric": "t1"},
        ci_grade_version="0.1.0", created_at="2026-11-20T10:00:00+00:00",
    )


def test_baseline_keeps_scores_provenance_and_outputs_but_no_errors() -> None:
    baseline = baseline_from_run(sample_run())
    rubric = next(t for t in baseline.tests.values() if t.name == "rubric")
    assert (rubric.score, rubric.passed, rubric.status, rubric.repeats, rubric.score_spread) == (0.75, False, "fail", 1, 0.0)
    assert rubric.named_scores == {"accuracy": 1.0, "format": 0.5}
    assert [(a.type, a.metric, a.score, a.passed) for a in rubric.assertions] == [
        ("contains", "accuracy", 1.0, True), ("assert-set", None, 0.5, False), ("regex", "format", 0.0, False), ("regex", "format", 1.0, True),
    ]
    assert rubric.prompt_label == "prompt" and rubric.provider == "bot" and rubric.fingerprint
    broken = next(t for t in baseline.tests.values() if t.name == "broken")
    assert (broken.status, broken.errors, broken.scored) == ("error", 1, 0)
    assert (baseline.info.commit, baseline.info.config_hash, baseline.info.graders) == ("abc123", "cfg1", ["openai:gpt-4.1-mini"])
    assert baseline.info.grader_templates == {"llm-rubric": "t1"} and baseline.info.ci_grade_version == "0.1.0"
    assert baseline.totals.rows == 3
    text = baseline.model_dump_json()
    assert '"rubric"' in text and '"accuracy"' in text and '"abc123"' in text  # the names and scores are kept
    assert "provider timed out" not in text  # an error's text is not the test's output
    assert rubric.output == "ok" and broken.output == "ok"


def test_repeats_fold_into_mean_spread_and_majority() -> None:
    run = run_of(*[row("a", s, "pass" if s > 0.5 else "fail", repeat=i, metrics={"m": s}) for i, s in enumerate([1.0, 0.6, 0.2])], repeat=3)
    (test,) = baseline_from_run(run).tests.values()
    assert test.repeats == 3 and test.passes == 2 and test.passed and test.status == "pass"
    assert test.score == pytest.approx(0.6) and test.score_spread == pytest.approx(0.4)
    assert test.named_scores["m"] == pytest.approx(0.6) and test.named_spreads["m"] == pytest.approx(0.4)
    assert test.assertions[0].score == pytest.approx(0.6) and test.assertions[0].passed


@pytest.mark.parametrize(("outcomes", "passed"), [("PFF", False), ("PPFF", False), ("FPP", True), ("F", False), ("P", True)])
def test_a_test_passes_over_repeats_only_when_most_of_them_pass(outcomes: str, passed: bool) -> None:
    run = run_of(*[row("a", 1.0 if o == "P" else 0.0, "pass" if o == "P" else "fail", repeat=i) for i, o in enumerate(outcomes)], repeat=len(outcomes))
    (test,) = baseline_from_run(run).tests.values()
    assert (test.passed, test.status, test.passes, test.repeats) == (passed, "pass" if passed else "fail", outcomes.count("P"), len(outcomes))
    assert test.assertions[0].passed is passed
    assert test.pass_rate == pytest.approx(outcomes.count("P") / len(outcomes))


def test_errored_repeats_are_counted_never_scored() -> None:
    rows = [row("a", 1.0, "pass", repeat=0), row("a", 0.0, "error", repeat=1, error="timeout"), row("a", 0.0, "fail", repeat=2)]
    (test,) = baseline_from_run(run_of(*rows, repeat=3)).tests.values()
    assert (test.repeats, test.errors, test.scored, test.passes) == (3, 1, 2, 1)
    assert test.passed is False and test.score == pytest.approx(0.5) and test.pass_rate == pytest.approx(0.5)
    everything_errored = baseline_from_run(run_of(row("b", 0.0, "error", error="x"))).tests
    (broken,) = everything_errored.values()
    assert (broken.status, broken.passed, broken.pass_rate, broken.assertions) == ("error", False, None, [])


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    baseline = baseline_from_run(sample_run())
    path = tmp_path / ".ci-grade" / "baseline.json"
    save_baseline(baseline, path)
    assert [p.name for p in path.parent.iterdir()] == ["baseline.json"]  # atomic: no temp file left
    assert json.loads(path.read_text())["version"] == 1
    loaded = load_baseline(".ci-grade/baseline.json", tmp_path)
    assert loaded == baseline


def test_secrets_in_the_environment_are_not_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-live-supersecret")
    baseline = baseline_from_run(run_of(row("uses sk-live-supersecret in its name", 1.0)))
    save_baseline(baseline, tmp_path / "b.json")
    text = (tmp_path / "b.json").read_text()
    assert "sk-live-supersecret" not in text and "uses *** in its name" in text


def test_load_from_a_ci_grade_results_json(tmp_path: Path) -> None:
    run = sample_run()
    (tmp_path / "results.json").write_text(json.dumps(to_promptfoo(run)))
    loaded = load_baseline(str(tmp_path / "results.json"), Path("/"))
    assert loaded is not None
    assert loaded.tests == baseline_from_run(run).tests
    assert loaded.info.commit == "abc123"


def promptfoo_row(idx: int, description: str, success: bool, score: float, named: dict[str, float]) -> dict:
    """A row as promptfoo itself writes it (no ci-grade keys)."""
    return {
        "id": f"row-{idx}", "promptIdx": 0, "testIdx": idx, "description": description,
        "testCase": {"description": description, "vars": {"q": f"question {idx}"}, "assert": [{"type": "contains", "value": "x"}]},
        "promptId": "abc", "prompt": {"raw": "Answer: question", "label": "prompt.txt: Answer: {{q}}"},
        "provider": {"id": "openai:gpt-4.1-mini", "label": ""}, "vars": {"q": f"question {idx}"},
        "response": {"output": "x", "tokenUsage": {"total": 10, "prompt": 6, "completion": 4}},
        "success": success, "score": score, "failureReason": 0 if success else 1, "latencyMs": 12, "namedScores": named,
        "gradingResult": {"pass": success, "score": score, "reason": "ok", "componentResults": [
            {"pass": success, "score": score, "reason": "ok", "assertion": {"type": "contains", "value": "x", "metric": "acc"}},
        ]},
    }


def test_load_from_promptfoos_own_results_json(tmp_path: Path) -> None:
    data = {
        "evalId": "eval-xyz",
        "results": {
            "version": 3, "timestamp": "2026-11-01T00:00:00Z",
            "results": [promptfoo_row(0, "first", True, 1.0, {"acc": 1.0}), promptfoo_row(1, "second", False, 0.0, {"acc": 0.0})],
            "stats": {"successes": 1, "failures": 1, "errors": 0},
        },
        "config": {}, "shareableUrl": None,
    }
    (tmp_path / "pf.json").write_text(json.dumps(data))
    loaded = load_baseline("pf.json", tmp_path)
    assert loaded is not None and loaded.info.source == "promptfoo"
    tests = sorted(loaded.tests.values(), key=lambda t: t.name)
    assert [(t.name, t.status, t.score, t.named_scores) for t in tests] == [("first", "pass", 1.0, {"acc": 1.0}), ("second", "fail", 0.0, {"acc": 0.0})]
    assert tests[0].assertions[0].type == "contains" and tests[0].assertions[0].metric == "acc"
    assert len({t.test_id for t in tests}) == 2 and all(t.fingerprint for t in tests)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    baseline = baseline_from_run(sample_run())
    save_baseline(baseline, tmp_path / ".ci-grade" / "baseline.json")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "baseline")
    (tmp_path / ".ci-grade" / "baseline.json").write_text("{}")  # the work tree differs from main
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_load_from_git_ref(repo: Path) -> None:
    loaded = load_baseline("git:main:.ci-grade/baseline.json", repo / "sub")
    assert loaded == baseline_from_run(sample_run())
    head = git(repo, "rev-parse", "HEAD").strip()
    assert load_baseline(f"git:{head}:.ci-grade/baseline.json", repo) == loaded


def test_git_source_missing_ref_or_path_is_no_baseline(repo: Path) -> None:
    assert load_baseline("git:origin/main:.ci-grade/baseline.json", repo) is None
    assert load_baseline("git:main:missing/baseline.json", repo) is None


def test_git_source_errors(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    with pytest.raises(UsageError, match="expected git:REF:PATH"):
        load_baseline("git:main", repo)
    outside = tmp_path_factory.mktemp("not-a-repo")
    with pytest.raises(InfrastructureError, match="not in a git repository") as info:
        load_baseline("git:main:baseline.json", outside)
    assert info.value.exit_code == ExitCode.INFRASTRUCTURE
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "break it")
    with pytest.raises(ConfigError, match="neither a ci-grade baseline"):
        load_baseline("git:main:.ci-grade/baseline.json", repo)


def test_missing_file_is_no_baseline(tmp_path: Path) -> None:
    assert load_baseline("nothing/here.json", tmp_path) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version": 1,\n "tests": [', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"hello": "world"}', "neither a ci-grade baseline"),
        ('{"version": 9, "tests": {}}', "written by a newer ci-grade"),
        ('{"version": 2, "tests": {}}', "baseline version 2 was written by a newer ci-grade"),
        ('{"version": 0, "tests": {}}', "invalid baseline version 0"),
        ('{"version": 1, "tests": {"x": {"score": "high"}}}', "invalid baseline"),
        ('{"results": {"results": 3}}', "unreadable results file"),
        ('{"results": {"results": [{"latencyMs": 1' + "0" * 400 + "}]}}", "unreadable results file"),
        ('{"results": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
    ],
)
def test_invalid_files_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "b.json").write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_baseline("b.json", tmp_path)
    assert info.value.exit_code == ExitCode.USAGE
    assert str(info.value).startswith("b.json")


def test_json_error_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('{"version": 1,\n "tests": [')
    with pytest.raises(ConfigError) as info:
        load_baseline("b.json", tmp_path)
    assert info.value.line == 2


def test_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        load_baseline(str(tmp_path), tmp_path)


def test_baseline_model_validates_its_own_dump() -> None:
    baseline = baseline_from_run(sample_run())
    assert Baseline.model_validate_json(baseline.model_dump_json()) == baseline


def _results_file(path: Path, *rows: models.TestResult, config_hash: str = "cfg1") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_promptfoo(run_of(*rows, config_hash=config_hash))))


def test_several_results_files_fold_into_one_baseline(tmp_path: Path) -> None:
    for i, outcome in enumerate(["pass", "fail", "pass"]):
        _results_file(tmp_path / "runs" / f"r{i}.json", row("a", 1.0 if outcome == "pass" else 0.0, outcome), row("b", 1.0))
    folded = baseline_from_sources(["runs/r0.json", "runs/r1.json", "runs/r2.json"], tmp_path)
    assert folded.runs == 3
    a = next(t for t in folded.tests.values() if t.name == "a")
    assert (a.repeats, a.passes, a.passed) == (3, 2, True)
    for pattern in ("runs/r*.json", str(tmp_path / "runs" / "*.json")):
        globbed = load_baselines(pattern, tmp_path)
        assert globbed is not None and globbed.runs == 3 and globbed.tests == folded.tests
    single = load_baselines("runs/r1.*", tmp_path)
    assert single is not None and single.runs == 1 and next(t for t in single.tests.values() if t.name == "a").passed is False
    assert load_baselines("runs/none-*.json", tmp_path) is None
    assert baseline_from_sources(["runs/r1.json"], tmp_path).tests == single.tests
    with pytest.raises(UsageError, match=r"nowhere\.json does not exist"):
        baseline_from_sources(["nowhere.json"], tmp_path)


def test_results_files_that_cannot_fold_together_are_refused(tmp_path: Path) -> None:
    _results_file(tmp_path / "one.json", row("a", 1.0))
    _results_file(tmp_path / "other.json", row("a", 1.0), config_hash="cfg2")
    _results_file(tmp_path / "anon.json", row("a", 1.0), config_hash="")
    save_baseline(baseline_from_run(run_of(row("a", 1.0))), tmp_path / "baseline.json")
    (tmp_path / "broken.json").write_text('{"results": {"results": 3}}')
    with pytest.raises(UsageError) as mixed:
        baseline_from_sources(["one.json", "other.json", "anon.json"], tmp_path)
    assert str(mixed.value) == ("these results come from different configs and cannot form one baseline: "
                                "one.json (cfg1), other.json (cfg2), anon.json (unknown)")
    with pytest.raises(ConfigError) as not_results:
        baseline_from_sources(["one.json", "baseline.json"], tmp_path)
    assert (not_results.value.file, not_results.value.message) == ("baseline.json", "expected a results file (results.results[]): only results files combine into one baseline")
    with pytest.raises(ConfigError) as unreadable:
        baseline_from_sources(["one.json", "broken.json"], tmp_path)
    assert unreadable.value.file == "broken.json" and unreadable.value.message.startswith("unreadable results file: ")
    with pytest.raises(UsageError, match=r"missing\.json does not exist"):
        baseline_from_sources(["one.json", "missing.json"], tmp_path)


def test_an_invalid_baseline_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('{"version": 1, "tests": {"x": {"test_id": "x", "score": "high"}}}')
    with pytest.raises(ConfigError) as info:
        load_baseline("b.json", tmp_path)
    assert (info.value.file, info.value.path) == ("b.json", "tests.x.score")
    assert info.value.message.startswith("invalid baseline: ")


def test_sub_millisecond_latencies_count_in_the_stored_percentiles() -> None:
    # what a dry run later estimates a provider's time from: a fast local provider's calls count too
    rows = [row(f"t{i}", provider="local") for i in range(3)]
    for r, latency in zip(rows, (0.4, 0.6, 0.8), strict=True):
        r.latency_ms = latency
    totals = baseline_from_run(run_of(*rows)).totals.providers["local"]
    assert totals.calls == 3 and totals.latency_p50_ms == pytest.approx(0.6)
