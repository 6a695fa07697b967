"""Where the start-up of a grader eval goes: when each phase of `ci-grade eval` ends.

    python bench/startup_phases.py --tests 1000 -j 32 --runs 5

Runs the `grader` suite (N tests x one llm-rubric) against the loopback grader, each run a fresh
process that is `ci-grade eval` with timers around its phases. The timers wrap functions by name
(`evaluate.prepare`, `evaluate.build_plan`, the OpenAI provider's `request`, ...), so a renamed one
stops this script with a clear message. Times are seconds since the process's `main` began; the
interpreter's own start comes before that. The table gives the median of each mark.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runner import REPO, check_results, loopback_grader, make_tool
from suites import write_grader

MARKS = "imports done", "config loaded", "plan built", "SDK imported", "first request sent", "run done", "results written", "exit"


def child(argv: list[str]) -> None:
    """In the measured process: wrap the phases, run `ci-grade eval`, print the marks as JSON."""
    started = time.perf_counter()
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks.setdefault(name, time.perf_counter() - started)

    def after(module: Any, name: str, label: str) -> None:
        if not hasattr(module, name):
            raise SystemExit(f"{module.__name__}.{name} is gone: update bench/startup_phases.py")
        function = getattr(module, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            mark(label)
            return result

        setattr(module, name, timed)

    from ci_grade import cli, evaluate
    from ci_grade.commands import eval_cmd  # noqa: F401 (imported by `eval` itself; counted here)
    from ci_grade.providers import openai as openai_provider
    from ci_grade.report import outputs

    mark("imports done")
    after(evaluate, "prepare", "config loaded")
    after(evaluate, "build_plan", "plan built")
    after(evaluate, "_run_to_completion", "run done")
    after(openai_provider, "sdk", "SDK imported")
    after(outputs, "write_outputs", "results written")
    request = openai_provider.OpenAIProvider.request

    async def first_request(self: Any, *args: Any, **kwargs: Any) -> Any:
        mark("first request sent")
        return await request(self, *args, **kwargs)

    openai_provider.OpenAIProvider.request = first_request  # type: ignore[method-assign]
    sys.argv = ["ci-grade", *argv]
    try:
        cli.main()
    except SystemExit:
        pass
    mark("exit")
    sys.stderr.write("PHASES " + json.dumps(marks) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("-j", "--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return 0
    runs: list[dict[str, float]] = []
    with loopback_grader(args.latency_ms) as server_env, tempfile.TemporaryDirectory(prefix="ci-grade-phases-") as tmp:
        workdir = Path(tmp)
        suite = write_grader(workdir, args.tests)
        tool = make_tool("ci-grade", workdir, server_env)  # compiles ci_grade/ as an install would have
        env = {**tool.env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), tool.env.get("PYTHONPATH")]))}
        output = workdir / "results.json"
        command = tool.eval_command(suite, output, args.concurrency)[len(tool.base):]
        for _ in range(args.runs):
            done = subprocess.run([sys.executable, __file__, "--child", *command], env=env, cwd=workdir, capture_output=True, text=True, check=False)
            problem = check_results(suite, output)
            line = next((x for x in done.stderr.splitlines() if x.startswith("PHASES ")), None)
            if problem or line is None:
                raise SystemExit(f"exit {done.returncode}: {problem or 'no phases reported'}\n{done.stderr[-2000:]}")
            runs.append(json.loads(line.removeprefix("PHASES ")))
    print(f"{args.tests} grader calls, {args.latency_ms:g} ms latency, -j {args.concurrency}: medians of {args.runs} runs")
    print("| phase | ends at | phase alone |")
    print("| --- | ---: | ---: |")
    previous = 0.0
    for name in MARKS:
        at = statistics.median(run[name] for run in runs)
        print(f"| {name} | {at:.3f} s | {at - previous:.3f} s |")
        previous = at
    return 0


if __name__ == "__main__":
    sys.exit(main())
