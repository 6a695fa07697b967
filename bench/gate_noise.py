"""How often the default gate fails on noise (A/A) and how often it catches a real drop.

A 200-test suite is answered by a *sampling* model: each test passes with its own chance (flaky
tests between 0.5 and 1, tests that always pass, tests that always fail), drawn anew on every
request. Each trial judges a head run against a baseline (one run, or several folded) at default
settings:

- A/A: both sides sample the same model; a failing gate is a false alarm.
- regression: the head samples a model whose every pass chance is 0.1 lower; a failing gate is a catch.

By default every trial runs the real `ci-grade eval` on the project's loopback server (cache off),
`baseline save` for a baseline of several runs, and `ci-grade compare`. `--in-process` draws the
same pass/fail outcomes and judges them with the gate's suite-level measures directly (no commands:
seconds instead of an hour; the test suite runs it too).

    .venv/bin/python bench/gate_noise.py --in-process --flaky 200 --always-pass 0 --always-fail 0 --baseline-runs 3
    .venv/bin/python bench/gate_noise.py --trials 80 --baseline-runs 3   # through the commands

Prints the false-alarm and catch rates with 95% Wilson intervals.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ci_grade.gate.baseline import BaselineTest  # noqa: E402
from ci_grade.gate.models import GatePolicy  # noqa: E402
from ci_grade.gate.statistics import wilson  # noqa: E402
from ci_grade.gate.suite import Pair, measures  # noqa: E402
from tests.servers.llm_server import LLMServer, request_text  # noqa: E402

DROP = 0.1


def chances(seed: int, flaky: int, always_pass: int, always_fail: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.uniform(0.5, 1.0) for _ in range(flaky)] + [1.0] * always_pass + [0.0] * always_fail


class Model:
    """Answers "yes" for case i with chance[i] minus the current drop (per eval run, by its key)."""

    def __init__(self, chance: list[float], seed: int):
        self.chance = chance
        self.rng = random.Random(seed)
        self.drop: dict[str, float] = {}

    def reply(self, request: dict[str, Any]) -> str:
        text = request_text(request)
        case = int(re.search(r"case (\d+)", text).group(1))  # type: ignore[union-attr]
        run = re.search(r"run (\w+)", text).group(1)  # type: ignore[union-attr]
        return "yes" if self.rng.random() < max(0.0, self.chance[case] - self.drop.get(run, 0.0)) else "no"


def write_config(folder: Path, cases: int) -> None:
    tests = "".join(f"- vars: {{n: {i}}}\n" for i in range(cases))
    (folder / "tests.yaml").write_text(tests)
    # The run key goes into the prompt through an env var, so every run's requests differ from the
    # others' (no provider could answer one run from another's replies).
    (folder / "promptfooconfig.yaml").write_text(
        'prompts: ["Answer case {{n}} (run {{env.BENCH_RUN}}) with yes or no."]\n'
        "providers: [openai:chat:gpt-4o-mini]\n"
        "tests: file://tests.yaml\n"
        'defaultTest:\n  assert: [{type: icontains, value: "yes"}]\n'
    )


def ci_grade(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ci_grade", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def eval_run(folder: Path, env: dict[str, str], key: str) -> Path:
    out = folder / f"{key}.json"
    result = ci_grade("eval", "--no-progress", "--no-cache", "-o", str(out), cwd=folder, env={**env, "BENCH_RUN": key})
    if result.returncode not in (0, 1):
        raise SystemExit(f"eval {key} failed ({result.returncode}): {result.stderr[-2000:]}")
    rows = json.loads(out.read_text())["results"]["results"]
    if any(row["response"].get("cached") for row in rows):
        raise SystemExit("a reply came from a cache: the benchmark needs fresh samples")
    return out


def baseline(folder: Path, env: dict[str, str], runs: list[Path], key: str) -> Path:
    if len(runs) == 1:
        return runs[0]
    out = folder / f"{key}.baseline.json"
    result = ci_grade("baseline", "save", *map(str, runs), "-o", str(out), cwd=folder, env=env)
    if result.returncode != 0:
        raise SystemExit(f"baseline save failed: {result.stderr[-2000:]}")
    return out


def gate_fails(folder: Path, env: dict[str, str], base: Path, head: Path) -> bool:
    result = ci_grade("compare", "--baseline", str(base), str(head), cwd=folder, env=env)
    if result.returncode not in (0, 1):
        raise SystemExit(f"compare failed ({result.returncode}): {result.stderr[-2000:]}")
    return result.returncode == 1


def trial(folder: Path, env: dict[str, str], model: Model, index: int, kind: str, baseline_runs: int) -> bool:
    base_runs = [eval_run(folder, env, f"t{index}{kind}b{i}") for i in range(baseline_runs)]
    head_key = f"t{index}{kind}h"
    if kind == "reg":
        model.drop[head_key] = DROP
    head = eval_run(folder, env, head_key)
    failed = gate_fails(folder, env, baseline(folder, env, base_runs, f"t{index}{kind}"), head)
    for path in [*base_runs, head]:
        path.unlink()
    return failed


def _side(index: int, passes: int, runs: int) -> BaselineTest:
    passed = passes * 2 > runs
    return BaselineTest(test_id=f"t{index}", score=passes / runs, repeats=runs, passes=passes, passed=passed, status="pass" if passed else "fail")


def measured_trial(rng: random.Random, chance: list[float], drop: float, baseline_runs: int) -> bool:
    """One trial in process: a baseline of `baseline_runs` runs and a head run sampled with every
    pass chance lowered by `drop`, judged by the suite-level measures at the default policy (with
    one pass/fail assertion per test no single test's flip can fail the gate: a flip needs repeats
    on both sides to be evidence)."""
    pairs = []
    for i, c in enumerate(chance):
        base = sum(rng.random() < c for _ in range(baseline_runs))
        head = int(rng.random() < max(0.0, c - drop))
        pairs.append(Pair(_side(i, base, baseline_runs), _side(i, head, 1), reproducible=False, cluster=f"test:t{i}"))
    mean, rate, _, metrics = measures(pairs, GatePolicy())
    return any(m.regressed for m in (mean, rate, *metrics))


def rate(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{hits}/{n} = {hits / n:.1%} (95% CI {low:.1%}-{high:.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=80, help="trials per scenario (default 80)")
    parser.add_argument("--in-process", action="store_true", help="judge sampled outcomes with the gate's measures directly, no commands run")
    parser.add_argument("--flaky", type=int, default=100, help="tests with a pass chance between 0.5 and 1")
    parser.add_argument("--always-pass", type=int, default=80)
    parser.add_argument("--always-fail", type=int, default=20)
    parser.add_argument("--baseline-runs", type=int, default=1, help="runs of the model folded into each baseline")
    parser.add_argument("--workers", type=int, default=2, help="trials run at once")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    chance = chances(args.seed, args.flaky, args.always_pass, args.always_fail)
    model = Model(chance, args.seed + 1)
    started = time.perf_counter()
    if args.in_process:
        rng = random.Random(0)
        aa = [measured_trial(rng, chance, 0.0, args.baseline_runs) for _ in range(args.trials)]
        reg = [measured_trial(rng, chance, DROP, args.baseline_runs) for _ in range(args.trials)]
        report(args, chance, aa, reg, started, "in process (the gate's suite-level measures)")
        return
    with LLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.on_chat(None, model.reply)
        folder = Path(tmp)
        write_config(folder, len(chance))
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench-0123456789", "OPENAI_BASE_URL": server.openai_base_url, "PYTHONPATH": str(REPO)}
        env.pop("CI_GRADE_CACHE_DIR", None)
        with ThreadPoolExecutor(args.workers) as pool:
            aa = list(pool.map(lambda i: trial(folder, env, model, i, "aa", args.baseline_runs), range(args.trials)))
            reg = list(pool.map(lambda i: trial(folder, env, model, i, "reg", args.baseline_runs), range(args.trials)))
    report(args, chance, aa, reg, started, "through eval, baseline save and compare")


def report(args: argparse.Namespace, chance: list[float], aa: list[bool], reg: list[bool], started: float, how: str) -> None:
    print(f"suite: {len(chance)} tests ({args.flaky} flaky 0.5-1, {args.always_pass} always pass, {args.always_fail} always fail), "
          f"mean pass chance {sum(chance) / len(chance):.3f}; baseline of {args.baseline_runs} run(s); default gate; {how}")
    print(f"A/A false alarms:         {rate(sum(aa), len(aa))}")
    print(f"drop of {DROP} caught:      {rate(sum(reg), len(reg))}")
    print(f"elapsed {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
