"""The run phase alone: rows, providers and assertions, without config load, planning or results.

    python bench/profile_run.py deterministic --tests 10000            # wall, CPU, idle, per row
    python bench/profile_run.py deterministic --tests 10000 --cprofile # + top functions (run phase only)
    python bench/profile_run.py grader --tests 1000 --latency-ms 100 -j 32

Loads and plans the `bench_compare.py` suite in this process, then times `run_plan` only (after
one warm-up run on a few rows, so V8 and the imports are ready): wall time, process CPU (all
threads), the main thread's own CPU and the time it sat idle in the event loop's `epoll`.
`grader` grades through the loopback server in its own process and adds CPU per grader call.
Checks the pass/fail counts, so a fast but wrong run is not reported as a result.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from runner import idle_timer, loopback_grader
from suites import Suite, write_deterministic, write_grader

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def run_once(suite: Suite, concurrency: int | None, profile: cProfile.Profile | None, first: int | None = None) -> dict[str, Any]:
    from ci_grade import redact
    from ci_grade.evaluate import DEFAULT_CONCURRENCY, EvalOptions, prepare
    from ci_grade.plan.build import PlanOptions, build_plan
    from ci_grade.plan.filters import EvalFilters
    from ci_grade.run.runner import RunOptions, run_plan

    loaded, env, _ = prepare(EvalOptions(configs=[str(suite.path)], progress=False))
    plan = build_plan(loaded, PlanOptions(filters=EvalFilters(first_n=first)))
    options = RunOptions(env=env, base_dir=loaded.base_dir, concurrency=concurrency or DEFAULT_CONCURRENCY)
    holder: list[Any] = []

    async def main() -> None:
        with redact.use(redact.Redactor.from_env()):  # as the command does: one redactor for the run
            holder.append(await run_plan(plan, options))

    with idle_timer() as idle:
        started, cpu, main_cpu = time.perf_counter(), time.process_time(), time.thread_time()
        with profile if profile else nullcontext():  # type: ignore[attr-defined]
            asyncio.run(main())
        wall, cpu, main_cpu = time.perf_counter() - started, time.process_time() - cpu, time.thread_time() - main_cpu
    stats = holder[0].stats
    return {"rows": len(plan.rows), "wall": wall, "cpu": cpu, "main_cpu": main_cpu, "idle": idle[0], "stats": stats, "v8": v8_counts()}


def v8_counts() -> tuple[int, int]:
    """(batches, calls) the V8 runtime has evaluated so far, if it reports them."""
    from ci_grade.scripting import js

    runtime = getattr(js, "_runtime", None)
    return (getattr(runtime, "batches", 0), getattr(runtime, "calls", 0)) if runtime is not None else (0, 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=("deterministic", "grader"))
    parser.add_argument("--tests", type=int, default=10000)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("-j", "--concurrency", type=int, default=None, help="default: ci-grade's default")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--profile-out", default=None, help="save the run phase's cProfile stats here")
    args = parser.parse_args()
    profile = cProfile.Profile(time.thread_time) if args.cprofile else None  # the main thread's CPU, not wall time
    with tempfile.TemporaryDirectory(prefix="ci-grade-run-") as tmp:
        write = write_deterministic if args.scenario == "deterministic" else write_grader
        suite = write(Path(tmp), args.tests)
        with loopback_grader(args.latency_ms) if args.scenario == "grader" else nullcontext({}) as extra:  # type: ignore[attr-defined]
            os.environ.update(extra or {})
            os.environ["PROMPTFOO_CACHE_ENABLED"] = "false"
            run_once(suite, args.concurrency, None, first=20)  # warm-up: imports, V8, first connections
            for _ in range(args.runs):
                before = v8_counts()
                result = run_once(suite, args.concurrency, profile)
                stats = result["stats"]
                if (stats.successes, stats.failures, stats.errors) != (suite.passes, suite.failures, 0):
                    print(f"WRONG COUNTS: {stats.successes} passed, {stats.failures} failed, {stats.errors} errors", file=sys.stderr)
                    return 1
                rows = result["rows"]
                print(
                    f"{args.scenario}: {rows} rows, -j {args.concurrency or 'default'}: run phase {result['wall']:.2f} s wall, "
                    f"{result['cpu']:.2f} s CPU ({result['cpu'] / rows * 1e3:.3f} ms/row), main thread {result['main_cpu']:.2f} s CPU, "
                    f"idle in epoll {result['idle']:.2f} s ({result['idle'] / result['wall']:.0%})"
                )
                batches, calls = (after - earlier for after, earlier in zip(result["v8"], before, strict=True))
                if calls:
                    print(f"  V8: {calls} calls in {batches} evaluations ({calls / batches:.1f} calls each)")
    if profile:
        if args.profile_out:
            profile.dump_stats(args.profile_out)
        for order in ("tottime", "cumulative"):
            buffer = io.StringIO()
            pstats.Stats(profile, stream=buffer).strip_dirs().sort_stats(order).print_stats(args.top)
            print(f"\n== top {args.top} by {order} ==")
            print("\n".join(line for line in buffer.getvalue().splitlines() if line.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
