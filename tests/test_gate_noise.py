"""The gate against a sampling model on the loopback server, through the real `eval`, `compare` and
`baseline save` commands: two runs of the same model pass, a real drop fails, confirmation reruns
and several-run baselines give a flip evidence, clusters are honoured; and the A/A and power check
of the suite-level measures, in process (`bench/gate_noise.py` runs it through the commands)."""

from __future__ import annotations

import hashlib
import importlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO, run_cli, write
from tests.servers.llm_server import LLMServer, request_text

CASES = 80


class SamplingModel:
    """Answers "yes" (pass) for case i with probability chance(i); each request draws anew, from a
    seeded hash of (seed, case, how many times this case was asked), so runs are reproducible."""

    def __init__(self, server: LLMServer, chance: Callable[[int], float]):
        self.chance = chance
        self.seed = "a"
        self.asked: Counter[int] = Counter()
        self.forced: dict[tuple[int, int], str] = {}
        """(case, draw) -> a fixed answer for that draw."""
        server.on_chat(None, self.reply)

    def reply(self, request: dict[str, Any]) -> str:
        case = int(re.search(r"case (\d+)", request_text(request)).group(1))  # type: ignore[union-attr]
        draw = self.asked[case]
        self.asked[case] += 1
        if (case, draw) in self.forced:
            return self.forced[(case, draw)]
        digest = hashlib.sha256(f"{self.seed}:{case}:{draw}".encode()).hexdigest()
        return "yes" if int(digest[:8], 16) / 2**32 < self.chance(case) else "no"

    def run(self, seed: str, chance: Callable[[int], float] | None = None) -> None:
        self.seed, self.asked = seed, Counter()
        if chance is not None:
            self.chance = chance


def mixed(case: int) -> float:
    """A noisy suite: flaky tests between 0.5 and 1, some that always pass, some that always fail."""
    if case % 8 == 0:
        return 0.0
    if case % 4 == 1:
        return 1.0
    return 0.5 + 0.5 * ((case * 37) % 100) / 100


def project(folder: Path, cases: int = CASES) -> Path:
    tests = "\n".join(f"- vars: {{n: {i}}}\n  metadata: {{doc: d{i % 4}}}" for i in range(cases))
    write(folder / "tests.yaml", tests + "\n")
    write(
        folder / "promptfooconfig.yaml",
        """
        prompts: ["Answer case {{n}} with yes or no."]
        providers: [openai:chat:gpt-4o-mini]
        tests: file://tests.yaml
        defaultTest:
          assert: [{type: icontains, value: "yes"}]
        """,
    )
    return folder


def evaluate(folder: Path, model: SamplingModel, seed: str, out: str, *args: str) -> tuple[int, str]:
    model.run(seed)
    result = run_cli("eval", "--no-progress", "-o", out, *args, cwd=folder)
    return result.code, result.out + result.err


def comparison(folder: Path, head: str, *args: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli("compare", head, "-o", "cmp.json", *args, cwd=folder)
    return result.code, json.loads((folder / "cmp.json").read_text()), result.out


@pytest.fixture
def suite(tmp_path: Path, openai_env: LLMServer) -> tuple[Path, SamplingModel]:
    return project(tmp_path), SamplingModel(openai_env, mixed)


def test_two_runs_of_the_same_model_show_no_significant_change(suite: tuple[Path, SamplingModel]) -> None:
    folder, model = suite
    assert evaluate(folder, model, "base", "a.json")[0] in (0, 1)
    evaluate(folder, model, "head", "b.json")
    code, data, out = comparison(folder, "b.json", "--baseline", "a.json")
    assert code == 0, out
    assert data["same_measure"] is True  # 0/1 scores: mean score and pass rate are one measure
    mean = data["mean_score"]
    assert mean["method"] == "McNemar mid-p" and mean["tests"] == CASES
    flips_down, flips_up = mean["discordant"]
    assert flips_down + flips_up > 5  # the runs differ...
    assert not mean["significant"] and not mean["regressed"]  # ...but not significantly
    flaky = [t for t in data["tests"] if t["flip"] == "newly failing"]
    assert len(flaky) == flips_down > 0 and all(not t["evident"] and not t["reproducible"] for t in flaky)
    assert data["verdict"] == "passed" and "no significant change" in data["reason"]
    assert f"{flips_down} sampled tests newly failing, not significant" in data["reason"]
    assert "verdict: PASSED (gate passed)" in out
    junit = run_cli("compare", "b.json", "--baseline", "a.json", "-o", "b.junit.xml", cwd=folder)
    assert junit.code == 0
    xml = (folder / "b.junit.xml").read_text()  # the JUnit file says the same: these failures do not gate
    assert xml.count('type="not-significant"') == flips_down and 'type="regression"' not in xml
    assert xml.count('type="known-failure"') == sum(1 for t in data["tests"] if t["base_status"] == t["head_status"] == "fail")


def test_a_real_drop_fails_the_gate(suite: tuple[Path, SamplingModel]) -> None:
    folder, model = suite
    evaluate(folder, model, "base", "a.json")
    model.run("head", lambda case: max(0.0, mixed(case) - 0.4))
    run_cli("eval", "--no-progress", "-o", "b.json", cwd=folder)
    code, data, out = comparison(folder, "b.json", "--baseline", "a.json")
    assert code == 1
    mean = data["mean_score"]
    assert mean["significant"] and mean["regressed"] and mean["p_value"] < 0.001
    assert mean["ci_high"] < 0  # the whole interval is a drop
    assert data["verdict"] == "regressed" and data["reason"].startswith("pass rate dropped ")
    assert "pass rate" in out and "regressed (McNemar mid-p, p=" in out


def test_alpha_and_margin_decide_together(suite: tuple[Path, SamplingModel]) -> None:
    folder, model = suite
    evaluate(folder, model, "base", "a.json")
    model.run("head", lambda case: max(0.0, mixed(case) - 0.4))
    run_cli("eval", "--no-progress", "-o", "b.json", cwd=folder)
    code, data, _ = comparison(folder, "b.json", "--baseline", "a.json", "--max-metric-drop", "0.9")
    assert code == 0  # significant, but within a practical margin of 0.9
    assert data["mean_score"]["significant"] and not data["mean_score"]["regressed"]
    code, data, _ = comparison(folder, "b.json", "--baseline", "a.json", "--alpha", "1e-12")
    assert code == 0 and data["mean_score"]["inconclusive"] and data["mean_score"]["mde"] > 0


def test_confirmation_reruns_against_a_baseline_of_several_runs(tmp_path: Path, openai_env: LLMServer) -> None:
    folder = project(tmp_path, cases=6)
    always = SamplingModel(openai_env, lambda case: 1.0)
    for seed in ("r1", "r2", "r3"):
        evaluate(folder, always, seed, f"{seed}.json")
    saved = run_cli("baseline", "save", "r1.json", "r2.json", "r3.json", "-o", "base.json", cwd=folder)
    assert saved.code == 0 and "from 3 runs" in saved.out
    baseline = json.loads((folder / "base.json").read_text())
    assert baseline["runs"] == 3 and len(baseline["tests"]) == 6
    assert all(t["repeats"] == 3 and t["passes"] == 3 for t in baseline["tests"].values())
    # case 0 now always fails (a real regression); case 1 fails its first draw by bad luck, then passes
    always.run("head", lambda case: 0.0 if case == 0 else 1.0)
    always.forced[(1, 0)] = "no"
    result = run_cli("eval", "--no-progress", "--baseline", "base.json", "--confirm", "3", "-o", "head.json", "-o", "report.md", cwd=folder)
    assert result.code == 1, result.out + result.err
    report = (folder / "report.md").read_text()
    assert "confirmed: passed 0 of 3 reruns" in report and "flaky: passed 3 of 3 reruns" in report
    results = json.loads((folder / "head.json").read_text())
    assert len(results["ciGrade"]["confirmations"]) == 6  # 2 tests x 3 reruns, kept apart
    assert len(results["results"]["results"]) == 6  # the run itself: one row per test
    assert "verdict: REGRESSED (gate failed): 1 test regressed beyond tolerance" in result.out  # case 0: 3/3 -> 0/3 reruns, Fisher p = 0.05
    assert "newly failing, not significant (sampled)" in result.out  # case 1 is listed, not gating


def test_clusters_widen_the_interval(suite: tuple[Path, SamplingModel]) -> None:
    folder, model = suite
    evaluate(folder, model, "base", "a.json")
    evaluate(folder, model, "head", "b.json")
    _, plain, _ = comparison(folder, "b.json", "--baseline", "a.json")
    _, clustered, _ = comparison(folder, "b.json", "--baseline", "a.json", "--cluster-key", "doc")
    assert clustered["mean_score"]["method"] == "paired t" and clustered["mean_score"]["clusters"] == 4
    assert plain["mean_score"]["clusters"] is None
    assert clustered["policy"]["cluster_key"] == "doc"


def test_a_glob_of_results_is_a_baseline_of_several_runs(suite: tuple[Path, SamplingModel]) -> None:
    folder, model = suite
    (folder / "runs").mkdir()
    for seed in ("m1", "m2", "m3"):
        evaluate(folder, model, seed, f"runs/{seed}.json")
    evaluate(folder, model, "head", "b.json")
    code, data, _ = comparison(folder, "b.json", "--baseline", "runs/*.json")
    assert data["base_runs"] == 3 and code == 0
    assert data["mean_score"]["method"] == "paired t"  # base means over 3 runs are not 0/1
    missing = run_cli("compare", "b.json", "--baseline", "nothing/*.json", cwd=folder)
    assert "no baseline at nothing/*.json" in missing.err


def test_a_three_run_baseline_and_a_significant_15_point_drop_fail_the_gate(tmp_path: Path, openai_env: LLMServer) -> None:
    """40 tests with one pass/fail assertion each (metric `accuracy`). Baseline: three runs of main,
    tests 0-29 pass every time, 30-38 in two runs of three, 39 never: 90% of runs pass (97.5% of
    tests by majority). Head: tests 0-19 and 30-39 pass, 75%. The mean score, the pass rate and the
    metric are one quantity, tested once: p = 0.042 (three tests under Holm would make it 0.13)."""
    folder = project(tmp_path, cases=40)
    config = (folder / "promptfooconfig.yaml").read_text().replace('{type: icontains, value: "yes"}', '{type: icontains, value: "yes", metric: accuracy}')
    (folder / "promptfooconfig.yaml").write_text(config)
    model = SamplingModel(openai_env, mixed)
    for k in range(3):
        model.run(f"main{k}", lambda case, k=k: 1.0 if case < 30 or (case < 39 and (case - 30 + k) % 3) else 0.0)
        assert run_cli("eval", "--no-progress", "-o", f"main{k}.json", cwd=folder).code in (0, 1)
    assert run_cli("baseline", "save", "main0.json", "main1.json", "main2.json", "-o", "base.json", cwd=folder).code == 0
    model.run("head", lambda case: 1.0 if case < 20 or case >= 30 else 0.0)
    result = run_cli("eval", "--no-progress", "--baseline", "base.json", "-o", "head.json", "-o", "report.md", cwd=folder)
    assert result.code == 1, result.out + result.err
    code, data, _ = comparison(folder, "head.json", "--baseline", "base.json")
    assert code == 1
    mean = data["mean_score"]
    assert data["same_measure"] and data["pass_rate"]["same_as"] == "mean score" and data["metrics"][0]["same_as"] == "pass rate"
    assert mean["method"] == "paired t" and mean["p_adjusted"] == mean["p_value"] and 0.04 < mean["p_value"] < 0.05
    assert (round(mean["base"], 3), round(mean["head"], 3)) == (0.9, 0.75) and mean["regressed"]
    assert data["verdict"] == "regressed" and data["reason"].startswith("pass rate dropped 0.90 → 0.75 (-0.15, max drop 0.02, p=0.042")
    report = (folder / "report.md").read_text()
    assert "| Pass rate | 90.0% | 75.0% | ▼ −15.0 pts | [" in report  # the share of passing runs the test measured
    assert "paired t p=0.042 · **regression**" in report
    assert "verdict: REGRESSED (gate failed): pass rate dropped" in result.out


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """`bench/gate_noise.py` as a module."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    return importlib.import_module("gate_noise")


@pytest.mark.parametrize(
    ("flaky", "always_pass", "always_fail", "baseline_runs"),
    [(200, 0, 0, 3), (100, 80, 20, 1)],
    ids=["200 flaky tests, 3-run baseline", "bench suite, 1-run baseline"],
)
def test_a_and_a_runs_rarely_fail_and_ten_point_drops_are_caught(bench: ModuleType, flaky: int, always_pass: int, always_fail: int, baseline_runs: int) -> None:
    """200 sampled tests (flaky ones pass with a chance between 0.5 and 1), 80 trials per scenario,
    seeded, as `bench/gate_noise.py --in-process` runs them: at most 7 A/A comparisons fail, at
    least 64 drops of 0.1 are caught."""
    chances = bench.chances(2026, flaky, always_pass, always_fail)
    rng = random.Random(0)
    false_alarms = sum(bench.measured_trial(rng, chances, 0.0, baseline_runs) for _ in range(80))
    caught = sum(bench.measured_trial(rng, chances, 0.1, baseline_runs) for _ in range(80))
    assert false_alarms <= 7 and caught >= 64, (false_alarms, caught)
