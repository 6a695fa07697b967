"""Benchmark: the grader suite under injected faults, compared with a fault-free run.

Runs `ci-grade eval` on N echo tests, each with one `llm-rubric` graded by the loopback server
(`tests/servers/llm_server.py`, started here in its own thread) whose verdicts are fixed per test
(every third test fails). Each run draws a seeded share of grader calls that fail in one of the
ways a real outage shows: 429, 500, 503, a request never answered (timeout), a reset connection,
malformed JSON, an empty body. It reports, per fault rate and seed: wall time, the faults
injected, errored rows, rows whose verdict differs from the fault-free run, false passes (a
failing test reported as passing) and lost rows.

    python bench/bench_faults.py --tests 1000 --rates 0.1,0.5 --seeds 1,2,3

Retries use ci-grade's defaults (4 attempts, backoff from 0.5 s); a call not answered times out
after `--call-timeout` seconds (the grader's `timeout`; 120 s by default in production).
`--ci-grade` runs another checkout's package instead (e.g. an older commit, to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.servers.llm_server import FAULT_KINDS, LLMServer, request_text  # noqa: E402


def verdict(request: dict[str, Any]) -> dict[str, Any]:
    match = re.search(r"rubric number (\d+)", request_text(request))
    number = int(match.group(1)) if match else 0
    passed = number % 3 != 0
    return {"reason": f"case {number}", "pass": passed, "score": 1.0 if passed else 0.2}


def write_config(folder: Path, tests: int, call_timeout: float) -> None:
    """N tests with one rubric each; the grader's per-call timeout is in the config, which every version reads."""
    lines = [
        "description: fault benchmark",
        "prompts: ['Answer: {{q}}']",
        "providers: [echo]",
        f"defaultTest: {{options: {{provider: {{id: 'openai:chat:gpt-4.1', config: {{timeout: {call_timeout:g}}}}}}}}}",
        "tests:",
    ]
    for i in range(tests):
        lines += [f"  - description: case {i}", f"    vars: {{q: 'question {i}'}}", "    assert:", f"      - {{type: llm-rubric, value: 'rubric number {i}'}}"]
    (folder / "promptfooconfig.yaml").write_text("\n".join(lines) + "\n")


def run(folder: Path, rate: float, seed: int, args: argparse.Namespace) -> tuple[float, dict[str, int], dict[str, str]]:
    """One eval against a fresh server: wall seconds, faults injected, {test: status}
    (with `--show-errors`, the errored rows' reasons are printed)."""
    with LLMServer(latency=args.latency_ms / 1000) as server:
        server.on_chat("rubric number", verdict)
        if rate:
            server.fault_rate(rate, FAULT_KINDS, seed=seed)
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": server.openai_base_url}
        if args.ci_grade:
            env["PYTHONPATH"] = args.ci_grade
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ci_grade", "eval", "-j", str(args.concurrency), "--no-progress", "-o", "out.json"],
            cwd=folder, env=env, capture_output=True, text=True,
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        injected = dict(server.injected)
    if proc.returncode not in (0, 1) or not (folder / "out.json").exists():
        print(f"rate {rate} seed {seed}: exit {proc.returncode}\n{proc.stderr[-2000:]}", file=sys.stderr)
        return elapsed, injected, {}
    rows = json.loads((folder / "out.json").read_text())["results"]["results"]
    statuses = {row["description"]: row["metadata"]["ciGrade"]["status"] for row in rows}
    if args.show_errors:
        for row in rows:
            if row["error"]:
                print(f"  {row['description']}: {row['error']}", file=sys.stderr)
    (folder / "out.json").unlink()
    return elapsed, injected, statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--rates", default="0.1,0.5", help="comma-separated fault rates")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--call-timeout", type=float, default=2.0, help="seconds before an unanswered call times out")
    parser.add_argument("--show-errors", action="store_true", help="print the reason of every errored row")
    parser.add_argument("--ci-grade", metavar="DIR", help="run the ci_grade package found in DIR (PYTHONPATH) instead of this checkout's")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_config(folder, args.tests, args.call_timeout)
        clean_time, _, clean = run(folder, 0.0, 0, args)
        expected_failures = sum(1 for i in range(args.tests) if i % 3 == 0)
        print(f"fault-free: {clean_time:.1f}s, {sum(s == 'error' for s in clean.values())} errored, {sum(s == 'fail' for s in clean.values())} failed (expected {expected_failures})")
        print("| fault rate | seed | wall time | faults injected | errored rows | verdicts differing (not errors) | false passes | lost rows |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for rate in (float(r) for r in args.rates.split(",")):
            for seed in (int(s) for s in args.seeds.split(",")):
                elapsed, injected, got = run(folder, rate, seed, args)
                errored = sum(1 for s in got.values() if s == "error")
                differing = sum(1 for name, s in got.items() if s != "error" and s != clean.get(name))
                false_passes = sum(1 for name, s in got.items() if s == "pass" and clean.get(name) != "pass")
                lost = len(clean) - len(got)
                print(f"| {rate:.0%} | {seed} | {elapsed:.1f}s | {sum(injected.values())} | {errored} | {differing} | {false_passes} | {lost} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
