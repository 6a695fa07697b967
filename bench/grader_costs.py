"""ci-grade's CPU per grader call without its start-up, and how its adaptive concurrency behaves.

    python bench/grader_costs.py calls --sizes 100 1000 --runs 3            # start-up vs per call
    python bench/grader_costs.py limited --tests 1000 --allowed 8 16 --runs 1  # a rate-limited grader
    python bench/grader_costs.py bare --tests 1000 -j 32 --runs 3            # the harness's own floor
    python bench/grader_costs.py timeline -j 32 --runs 8 [--compare /tmp/before]  # where the wall time goes

`calls`: the `grader` suite (N tests x one llm-rubric, the loopback grader answering after
`--latency-ms`) at two or more sizes, each a fresh `ci-grade eval` process measured like
`bench_compare.py` does. A least-squares line through (calls, CPU) splits the process's CPU into
start-up (the intercept: imports, config, writing results of an empty run) and CPU per call
(the slope). `limited`: the same suite at default settings against a grader that allows only
K requests at once and answers 429 with `Retry-After` beyond that: wall time, how many 429s,
and the limiter's own report (the run's "asked to slow down" warning). `bare`: the same number of
chat calls to the same loopback grader from a bare asyncio client (httpx on ci-grade's lean
transport, `-j` workers, nothing else): what the harness itself needs, the floor any eval of the
suite stands on, so that the rest of an eval's wall time is start-up and ci-grade's own work;
its CPU per call is the machine's price for a call at that latency, without ci-grade.
`timeline`: whole evals of the suite against the loopback grader run in this process, which notes
when each request arrives: the time until the first request is sent (start-up: interpreter,
imports, config, plan, the SDK's import), from it to the last reply (the calls), and from the
last reply to the exit (results, reports), with wall and CPU. `--compare PATH` interleaves runs
of the `ci_grade` package under PATH (`git archive <commit> ci_grade | tar -x -C PATH`).
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from runner import REPO, Quiet, bare_client, check_results, free_port, make_tool, run_eval, wait_for_quiet
from suites import GRADER_VERDICT, write_grader


@contextmanager
def grader(latency_ms: float, allowed: int | None = None, report: list[str] | None = None) -> Iterator[dict[str, str]]:
    """The loopback grader in its own process (optionally limited to `allowed` requests at once);
    what it served is appended to `report` when it stops."""
    port = free_port()
    command = [sys.executable, "-m", "tests.servers.llm_server", "--port", str(port), "--latency-ms", str(latency_ms), "--reply", GRADER_VERDICT]
    if allowed is not None:
        command += ["--max-concurrent", str(allowed)]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        server.stdout.readline()
        base_url = f"http://127.0.0.1:{port}/v1"
        yield {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base_url, "OPENAI_API_BASE_URL": base_url}
    finally:
        server.terminate()
        remaining, _ = server.communicate(timeout=10)
        if report is not None:
            report.append(remaining.strip())


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through `points`."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return mean_y - slope * mean_x, slope


def calls(args: argparse.Namespace) -> None:
    quiet = Quiet(args.quiet_below, args.quiet_wait)
    points: list[tuple[int, float]] = []
    print(f"grader suite, {args.latency_ms:g} ms latency, -j {args.concurrency or 'default'}: CPU of whole `ci-grade eval` processes")
    print("| calls | wall median | CPU median | others' CPU, max |\n| ---: | ---: | ---: | ---: |")
    with grader(args.latency_ms) as env:
        for size in args.sizes:
            with tempfile.TemporaryDirectory(prefix="ci-grade-costs-") as tmp:
                workdir = Path(tmp)
                suite = write_grader(workdir, size)
                tool = make_tool("ci-grade", workdir, env)
                runs = [run_eval(tool, suite, workdir, args.concurrency, quiet) for _ in range(args.runs)]
            points += [(size, r.cpu) for r in runs]
            print(f"| {size} | {statistics.median(r.wall for r in runs):.2f} s | {statistics.median(r.cpu for r in runs):.2f} s | {max(r.others for r in runs):.0%} |")
    start, per_call = fit(points)
    print(f"start-up (intercept): {start:.2f} s CPU; per grader call (slope): {per_call * 1000:.2f} ms CPU")


def limited(args: argparse.Namespace) -> None:
    quiet = Quiet(args.quiet_below, args.quiet_wait)
    print(f"grader suite, {args.tests} tests, {args.latency_ms:g} ms latency, default settings, grader allowing K requests at once")
    print("| K | floor | wall median | the grader, over all runs | the limiter (last run) |\n| ---: | ---: | ---: | --- | --- |")
    for allowed in args.allowed:
        served: list[str] = []
        with grader(args.latency_ms, allowed, served) as env, tempfile.TemporaryDirectory(prefix="ci-grade-limited-") as tmp:
            workdir = Path(tmp)
            suite = write_grader(workdir, args.tests)
            tool = make_tool("ci-grade", workdir, env)
            runs = [run_eval(tool, suite, workdir, None, quiet) for _ in range(args.runs)]
        found = re.search(r"concurrent calls cut (\d+) time\(s\), to (\d+) at the lowest; (\d+) at the end", runs[-1].log)
        report = f"cut {found[1]}x, lowest {found[2]}, ended at {found[3]}" if found else "never cut"
        floor = args.tests * args.latency_ms / 1000 / allowed
        print(f"| {allowed} | {floor:.2f} s | {statistics.median(r.wall for r in runs):.2f} s | {served[0]} | {report} |")


def bare(args: argparse.Namespace) -> None:
    with grader(args.latency_ms) as env:
        measured = [bare_client(env["OPENAI_BASE_URL"], args.tests, args.concurrency or 32) for _ in range(args.runs)]
    walls = [wall for wall, _ in measured]
    per_call = statistics.median(cpu for _, cpu in measured) / args.tests
    floor = -(-args.tests // (args.concurrency or 32)) * args.latency_ms / 1000
    print(f"bare client: {args.tests} calls, {args.concurrency or 32} at once, {args.latency_ms:g} ms latency: "
          f"wall {min(walls):.3f} s min, {statistics.median(walls):.3f} s median (rounds x latency: {floor:.2f} s); "
          f"CPU {per_call * 1e6:.0f} µs per call (median)")


def timeline(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(REPO))
    from tests.servers.llm_server import LLMServer

    arrivals: list[float] = []
    server = LLMServer(latency=args.latency_ms / 1000).on_chat(None, GRADER_VERDICT)
    answer = server.handle

    def timed(recorded: Any) -> Any:
        arrivals.append(time.monotonic())
        return answer(recorded)

    server.handle = timed  # type: ignore[method-assign]
    checkouts = {"this checkout": "", **({args.compare: args.compare} if args.compare else {})}
    figures: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in checkouts}
    with server, tempfile.TemporaryDirectory(prefix="ci-grade-timeline-") as tmp:
        workdir = Path(tmp)
        suite = write_grader(workdir, args.tests)
        env = {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": server.openai_base_url}
        tools = {name: make_tool("ci-grade", workdir, {**env, "PYTHONPATH": path} if path else env) for name, path in checkouts.items()}
        for path in filter(None, checkouts.values()):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(path) / "ci_grade")], check=True, stdout=subprocess.DEVNULL)
        for _ in range(args.runs):
            for name, tool in tools.items():  # interleaved, so a change of the machine's pace hits both
                arrivals.clear()
                wait_for_quiet(args.quiet_below, args.quiet_wait)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.monotonic()
                command = tool.eval_command(suite, workdir / "results.json", args.concurrency)
                result = subprocess.run(command, env=tool.env, cwd=workdir, capture_output=True, text=True, check=False)
                ended = time.monotonic()
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                problem = check_results(suite, workdir / "results.json")
                if result.returncode != 0 or problem or len(arrivals) != args.tests:
                    raise SystemExit(f"{name}: exit {result.returncode}, {problem or f'{len(arrivals)} requests'}\n{result.stderr[-2000:]}")
                last_reply = arrivals[-1] + args.latency_ms / 1000
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                figures[name].append((arrivals[0] - started, last_reply - arrivals[0], ended - last_reply, ended - started, cpu))
    print(f"{args.tests} grader calls, {args.latency_ms:g} ms latency, -j {args.concurrency or 'default'}: medians of {args.runs} runs")
    print("| checkout | first request sent | first request to last reply | last reply to exit | wall (min) | CPU |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, rows in figures.items():
        first, span, tail, wall, cpu = (statistics.median(column) for column in zip(*rows, strict=True))
        print(f"| {name} | {first:.3f} s | {span:.3f} s | {tail:.3f} s | {wall:.3f} s ({min(r[3] for r in rows):.3f} s) | {cpu:.3f} s |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=("calls", "limited", "bare", "timeline"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--allowed", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("-j", "--concurrency", type=int, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quiet-below", type=float, default=0.15)
    parser.add_argument("--quiet-wait", type=float, default=300)
    parser.add_argument("--compare", metavar="PATH", help="timeline: also run the ci_grade package under PATH (an export of another commit), interleaved")
    args = parser.parse_args()
    {"calls": calls, "limited": limited, "bare": bare, "timeline": timeline}[args.scenario](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
