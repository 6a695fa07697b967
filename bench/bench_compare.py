"""ci-grade side by side with promptfoo on one machine, as whole `eval` processes.

    python bench/bench_compare.py deterministic --tests 10000 --runs 3
    python bench/bench_compare.py grader --tests 1000 --latency-ms 100 -j 32
    python bench/bench_compare.py grader --tests 1000 --latency-ms 100 -j default
    python bench/bench_compare.py scaling --tests 10000 50000 100000
    python bench/bench_compare.py startup

`deterministic`: N tests x (contains, regex, javascript) on the echo provider, the same config for
both tools. `grader`: N tests x one llm-rubric, graded by the project's loopback OpenAI-compatible
server (its own process) with a fixed latency; adds CPU time per grader call. `scaling`: ci-grade
alone (both tools with --with-promptfoo) at growing sizes, to show whether memory per row stays
flat.
`startup`: `--version`, cold. promptfoo comes from `bash bench/setup_promptfoo.sh`.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from runner import (
    TOOLS,
    Quiet,
    Summary,
    bare_client,
    loopback_grader,
    make_tool,
    measure,
    run_alternating,
    run_eval,
    wait_for_quiet,
)
from suites import Suite, write_deterministic, write_grader

DETERMINISTIC_GOALS = "goals at 10,000 tests: ci-grade <= 0.30x promptfoo's wall time, <= 250 MB peak RSS"
GRADER_GOALS = "goals at 1000 calls, 100 ms: -j 32 <= 0.45x promptfoo's wall time and <= 1.5x the latency floor (4.7 s), <= 150 MB peak RSS; default settings <= 5 s"
BEFORE = "ci-grade@before"


def table(summaries: list[Summary], calls: int | None = None) -> str:
    head = "| tool | wall min | wall median | peak RSS | CPU (user+sys) median | others' CPU, max |"
    rule = "| --- | ---: | ---: | ---: | ---: | ---: |"
    if calls:
        head += " CPU per call |"
        rule += " ---: |"
    lines = [head, rule]
    for s in summaries:
        line = f"| {s.tool} | {s.wall_min:.2f} s | {s.wall_median:.2f} s | {s.rss_max:.0f} MB | {s.cpu_median:.2f} s | {s.others_max:.0%} |"
        if calls:
            line += f" {s.cpu_median / calls * 1000:.2f} ms |"
        lines.append(line)
    return "\n".join(lines)


def ratio_line(summaries: list[Summary]) -> str:
    by_name = {s.tool: s for s in summaries}
    if not set(TOOLS) <= set(by_name):
        return "" if BEFORE not in by_name else f"ci-grade / ci-grade@before: wall {by_name['ci-grade'].wall_median / by_name[BEFORE].wall_median:.2f}x (median); CPU {by_name['ci-grade'].cpu_median / by_name[BEFORE].cpu_median:.2f}x"
    ours, theirs = by_name["ci-grade"], by_name["promptfoo"]
    if BEFORE in by_name:
        before = by_name[BEFORE]
        return (
            f"ci-grade / ci-grade@before: wall {ours.wall_median / before.wall_median:.2f}x (median); CPU {ours.cpu_median / before.cpu_median:.2f}x; "
            f"peak RSS {ours.rss_max / before.rss_max:.2f}x\n" + ratio_line([s for s in summaries if s.tool != BEFORE])
        )
    return (
        f"ci-grade / promptfoo: wall {ours.wall_median / theirs.wall_median:.2f}x (median), "
        f"{ours.wall_min / theirs.wall_min:.2f}x (min); CPU {ours.cpu_median / theirs.cpu_median:.2f}x; "
        f"peak RSS {ours.rss_max / theirs.rss_max:.2f}x"
    )


def compare(args: argparse.Namespace, write: Callable[[Path, int], Suite], extra_env: dict[str, str]) -> list[Summary]:
    with tempfile.TemporaryDirectory(prefix="ci-grade-bench-") as tmp:
        workdir = Path(tmp)
        suite = write(workdir, args.tests)
        tools = [make_tool(name, workdir, extra_env) for name in (args.only or TOOLS)]
        if getattr(args, "compare", None):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(args.compare) / "ci_grade")], check=True, stdout=subprocess.DEVNULL)
            before = make_tool("ci-grade", workdir, {**extra_env, "PYTHONPATH": str(Path(args.compare).resolve())})
            tools.append(dataclasses.replace(before, name=BEFORE))
        return run_alternating(tools, suite, workdir, args.runs, args.concurrency, quiet(args))


def deterministic(args: argparse.Namespace) -> None:
    summaries = compare(args, write_deterministic, {})
    jobs = args.concurrency if args.concurrency is not None else "tool defaults"
    print(f"deterministic: {args.tests} tests x 3 assertions (contains, regex, javascript), echo provider, -j {jobs}, {args.runs} runs each")
    print(table(summaries))
    print(ratio_line(summaries))
    print(DETERMINISTIC_GOALS)


def grader(args: argparse.Namespace) -> None:
    with loopback_grader(args.latency_ms) as env:
        summaries = compare(args, write_grader, env)
        yardstick = statistics.median(cpu for _, cpu in (bare_client(env["OPENAI_BASE_URL"], args.tests, args.concurrency or 32) for _ in range(3))) / args.tests
    jobs = args.concurrency if args.concurrency is not None else "tool defaults"
    print(f"grader: {args.tests} tests x 1 llm-rubric, {args.latency_ms:g} ms grader latency, -j {jobs}, {args.runs} runs each")
    print(table(summaries, calls=args.tests))
    print(ratio_line(summaries))
    multiples = ", ".join(f"{s.tool} {s.cpu_median / args.tests / yardstick:.1f}x" for s in summaries)
    print(f"yardstick: a bare client (no SDK, no grading, no start-up) needs {yardstick * 1e6:.0f} µs of CPU per call here; CPU per call against it: {multiples}")
    if args.concurrency is not None:
        floor = args.tests * args.latency_ms / 1000 / args.concurrency
        print(f"latency floor {floor:.2f} s; 1.25x floor = {1.25 * floor:.2f} s")
    print(GRADER_GOALS)


def scaling(args: argparse.Namespace) -> None:
    names = args.only or (list(TOOLS) if args.with_promptfoo else ["ci-grade"])
    problems = []
    rows = ["| tool | tests | wall | CPU | peak RSS | RSS per 1000 tests | added RSS per 1000 tests | others' CPU |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    with tempfile.TemporaryDirectory(prefix="ci-grade-bench-") as tmp:
        workdir = Path(tmp)
        for name in names:
            tool = make_tool(name, workdir, {})
            previous: tuple[int, float] | None = None
            for tests in args.tests:
                suite = write_deterministic(workdir, tests)
                runs = [run_eval(tool, suite, workdir, args.concurrency, quiet(args), strict=False) for _ in range(args.runs)]
                problems += [f"{name} at {tests} tests (exit {r.returncode}): {r.problem}; {first_error(r.log)}" for r in runs if r.problem]
                s = Summary(name, runs)
                added = f"{(s.rss_max - previous[1]) / (tests - previous[0]) * 1000:.1f} MB" if previous else ""
                rows.append(f"| {name} | {tests} | {s.wall_min:.1f} s | {s.cpu_median:.1f} s | {s.rss_max:.0f} MB | {s.rss_max / tests * 1000:.1f} MB | {added} | {s.others_max:.0%} |")
                print(rows[-1], file=sys.stderr)
                previous = (tests, s.rss_max)
    print("scaling: N tests x 3 deterministic assertions, echo provider (wall: min of runs, RSS: max)")
    print("\n".join(rows))
    for problem in problems:  # still measured, but say so: a wrong run is not a clean figure
        print(f"miscounted run: {problem}")
    print("goal: memory per row flat as tests grow; 100,000 tests under 1 GB")


def first_error(log: str) -> str:
    """The first line of a run's output that names an error, else how the output ends."""
    match = re.search(r"^.*\b\w*(Error|Exception)\b.*$", log, re.M)
    return f"first error: {match.group(0).strip()[:300]!r}" if match else f"output ends: {log.strip()[-300:]!r}"


def startup(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="ci-grade-bench-") as tmp:
        workdir = Path(tmp)
        for name in args.only or TOOLS:
            tool = make_tool(name, workdir, {})
            runs = []
            for _ in range(args.runs):
                wait_for_quiet(args.quiet_below, args.quiet_wait)
                runs.append(measure([*tool.base, "--version"], tool.env, workdir))
            s = Summary(name, runs)
            print(f"{name} --version: min {s.wall_min:.3f} s, median {s.wall_median:.3f} s, peak RSS {s.rss_max:.0f} MB")


def quiet(args: argparse.Namespace) -> Quiet:
    return Quiet(args.quiet_below, args.quiet_wait)


def concurrency(text: str) -> int | None:
    if text == "default":
        return None
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("concurrency must be at least 1 (or 'default')")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="scenario", required=True)

    def scenario(name: str, handler: Callable[[argparse.Namespace], None], runs: int, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help)
        sub.add_argument("--runs", type=int, default=runs, help=f"measured runs per tool (default {runs})")
        sub.add_argument(
            "--quiet-below", type=float, default=0.15, metavar="SHARE",
            help="before each run, wait until other processes use at most this share of the machine's CPU (default 0.15; 1 = never wait)",
        )
        sub.add_argument("--quiet-wait", type=float, default=300, metavar="SECONDS", help="longest wait for that before each run (default 300)")
        sub.set_defaults(handler=handler)
        return sub

    def jobs(sub: argparse.ArgumentParser, default: int | None) -> None:
        sub.add_argument("-j", "--concurrency", type=concurrency, default=default, help="-j given to the tools, or 'default' for none (default %(default)s)")

    def only(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--only", choices=TOOLS, action="append", help="run only this tool (repeatable)")

    def compare_with(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--compare", metavar="PATH",
            help="also run the ci_grade package under PATH (an export of another commit: git archive <commit> ci_grade | tar -x -C PATH), interleaved, as ci-grade@before",
        )

    sub = scenario("deterministic", deterministic, 3, "N tests x 3 deterministic assertions, both tools")
    sub.add_argument("--tests", type=int, default=10000, help="tests in the config (default 10000)")
    jobs(sub, None)
    only(sub)
    compare_with(sub)
    sub = scenario("grader", grader, 3, "N tests x 1 llm-rubric against the loopback grader, both tools")
    sub.add_argument("--tests", type=int, default=1000, help="tests (= grader calls) in the config (default 1000)")
    sub.add_argument("--latency-ms", type=float, default=100, help="grader latency (default 100)")
    jobs(sub, 32)
    only(sub)
    compare_with(sub)
    sub = scenario("scaling", scaling, 1, "ci-grade at growing sizes: peak RSS and wall")
    sub.add_argument("--tests", type=int, nargs="+", default=[10000, 50000, 100000], help="sizes (default 10000 50000 100000)")
    sub.add_argument("--with-promptfoo", action="store_true", help="also run promptfoo at each size")
    jobs(sub, None)
    only(sub)
    sub = scenario("startup", startup, 5, "`--version`, cold, for each tool")
    only(sub)

    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # tables after the progress lines
    args.handler(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
