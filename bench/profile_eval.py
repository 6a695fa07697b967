"""Where a `ci-grade eval` spends its time and memory, by phase, on the deterministic suite.

    python bench/profile_eval.py --tests 10000                       # phase timers (no profiler)
    python bench/profile_eval.py --tests 10000 --mode cprofile       # + top functions, eval.prof
    python bench/profile_eval.py --tests 10000 --mode memory         # tracemalloc + RSS by phase

Runs `ci-grade eval` in this process on the config `bench_compare.py deterministic` uses, with
timers wrapped around the pipeline's phase functions (import, config load, planning, run,
compare, results JSON, console summary); a phase whose function has moved is reported as such
rather than failing. The run phase is split further by cProfile; JavaScript runs on ci-grade's
V8 thread, whose CPU time is read from /proc. `memory` traces Python allocations (not V8's; the
RSS columns include it) and lists what the finished run keeps alive.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib
import io
import pstats
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner import idle_timer
from suites import write_deterministic

# (label, module, attribute): the sync functions that bound each phase, patched where looked up.
PHASES = [
    ("config load (YAML with source lines, validation)", "ci_grade.evaluate", "load_config"),
    ("planning", "ci_grade.evaluate", "build_plan"),
    ("run (rows, providers, assertions)", "ci_grade.evaluate", "_run_to_completion"),
    ("  of which: prompt rendering", "ci_grade.templating.nunjucks", "render_prompt"),
    ("  of which: TestResult building incl. test_case dump", "ci_grade.run.runner", "_base_result"),
    ("compare with baseline / gate", "ci_grade.gate.compare", "compare"),
    ("results JSON: to_promptfoo()", "ci_grade.report.outputs", "to_promptfoo"),
    ("results files total (build, encode, redact, write)", "ci_grade.report.formats", "write_files"),
    ("console summary", "ci_grade.report.console", "summary"),
]
# (label, file suffix, function): functions whose cProfile totals the phase map quotes.
SPOTS = [
    ("config: YAML parse + construct, with source lines", "config/yaml12.py", "load_with_sources"),
    ("config:   source-line registration", "config/yaml12.py", "_register"),
    ("config: pydantic validation of the merged config", "config/loader.py", "_validate"),
    ("config: $ref dereference walk", "config/loader.py", "dereference"),
    ("config: secret collection over the raw config", "ci_grade/redact.py", "collect"),
    ("plan: build_plan", "ci_grade/plan/build.py", "build_plan"),
    ("plan:   merge_default (per test)", "ci_grade/plan/cases.py", "merge_default"),
    ("run: prompt rendering (jinja2)", "templating/nunjucks.py", "render_prompt"),
    ("run: TestResult building (_base_result)", "ci_grade/run/runner.py", "_base_result"),
    ("all phases: pydantic model_dump", "pydantic/main.py", "model_dump"),
    ("all phases: pydantic BaseModel.__init__", "pydantic/main.py", "__init__"),
    ("all phases: pydantic __setattr__", "pydantic/main.py", "__setattr__"),
    ("run: assertion context building", "grading/engine.py", "build_context"),
    ("run: assertion value rendering", "grading/engine.py", "render_assertion_value"),
    ("run: JSON payload for V8 calls", "scripting/js.py", "_call_source"),
    ("run: asyncio task creation", "asyncio/base_events.py", "create_task"),
    ("run: main thread blocked in epoll (idle)", "", "<method 'poll' of 'select.epoll' objects>"),
    ("compare: compare()", "ci_grade/gate/compare.py", "compare"),
    ("compare:   baseline rows grouping", "ci_grade/gate/baseline.py", "group_rows"),
    ("compare:   per-case deltas", "ci_grade/gate/compare.py", "_case"),
    ("results: to_promptfoo", "results/promptfoo.py", "to_promptfoo"),
    ("results:   row_to_promptfoo", "results/promptfoo.py", "row_to_promptfoo"),
    ("results:   _components", "results/promptfoo.py", "_components"),
    ("results: redaction of the config (Redactor.data)", "ci_grade/redact.py", "data"),
    ("results: redaction of the JSON text (Redactor.text)", "ci_grade/redact.py", "text"),
    ("all phases: json encoding (iterencode)", "json/encoder.py", "iterencode"),
    ("results: atomic write", "report/outputs.py", "write_atomic"),
]
EAGER = ["ci_grade.cli", "ci_grade.commands.eval_cmd", *sorted({module for _, module, _ in PHASES})]


@dataclass
class Phase:
    label: str
    seconds: float = 0.0
    cpu: float = 0.0  # process CPU (all threads); top-level phases only
    calls: int = 0
    modules: int = 0
    rss_mb: float = 0.0
    traced_mb: float = 0.0
    traced_peak_mb: float = 0.0
    snapshot: tracemalloc.Snapshot | None = field(default=None, repr=False)


@dataclass
class Waits:
    """Where the run phase waits rather than computes."""

    idle: list[float]  # [seconds the main thread was blocked in the event loop's epoll]
    js_calls: int = 0
    js_seconds: float = 0.0  # summed round trips of awaited JavaScript calls (they overlap)

    @property
    def select_seconds(self) -> float:
        return self.idle[0]


_INSTRUMENTS = contextlib.ExitStack()


def instrument_waits() -> Waits:
    """Time the main thread's event-loop waits and every awaited call into V8."""
    waits = Waits(idle=_INSTRUMENTS.enter_context(idle_timer()))  # for the rest of the process
    js = importlib.import_module("ci_grade.scripting.js")
    runtime = getattr(js, "JsRuntime", None)
    acall = getattr(runtime, "acall", None)
    if runtime is not None and acall is not None:

        async def timed_acall(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await acall(self, *args, **kwargs)
            finally:
                waits.js_calls += 1
                waits.js_seconds += time.perf_counter() - started

        runtime.acall = timed_acall
    return waits


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    values = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(values["VmRSS"].split()[0]) / 1024, int(values["VmHWM"].split()[0]) / 1024


def js_thread_cpu() -> float | None:
    """CPU seconds of ci-grade's V8 thread, if it ran."""
    import os

    for thread in threading.enumerate():
        if thread.name == "ci-grade-js" and thread.native_id is not None:
            stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return None


def wrap(phase: Phase, function: Callable[..., Any], memory: bool) -> Callable[..., Any]:
    if phase.label.startswith(" "):  # per-row part of a phase: time only, nothing that costs

        def timed_per_row(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                phase.seconds += time.perf_counter() - started
                phase.calls += 1

        return timed_per_row

    def timed(*args: Any, **kwargs: Any) -> Any:
        modules = len(sys.modules)
        if memory:
            tracemalloc.reset_peak()
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            phase.seconds += time.perf_counter() - started
            phase.cpu += time.process_time() - cpu
            phase.calls += 1
            phase.modules += len(sys.modules) - modules
            phase.rss_mb = rss_mb()[0]
            if memory:
                current, peak = tracemalloc.get_traced_memory()
                phase.traced_mb, phase.traced_peak_mb = current / 2**20, peak / 2**20
                if phase.label.startswith("run"):
                    phase.snapshot = tracemalloc.take_snapshot()

    return timed


def instrument(memory: bool) -> tuple[list[Phase], list[str]]:
    phases, missing = [], []
    for label, module_name, attribute in PHASES:
        module = importlib.import_module(module_name)
        function = getattr(module, attribute, None)
        if function is None:
            missing.append(f"{module_name}.{attribute}")
            continue
        phase = Phase(label)
        setattr(module, attribute, wrap(phase, function, memory))
        phases.append(phase)
    return phases, missing


def report_phases(phases: list[Phase], imports: Phase, total: float, rows: int, memory: bool, waits: Waits) -> None:
    print(f"{'phase':<54} {'wall s':>8} {'calls':>7} {'µs/row':>8} {'CPU s':>7} {'new modules':>11} {'RSS after MB':>12}", end="")
    print(f" {'traced MB':>9} {'traced peak MB':>14}" if memory else "")
    for phase in [imports, *phases]:
        per_row = f"{phase.seconds / rows * 1e6:8.1f}" if phase.calls > 1 or phase.label.startswith("run") else " " * 8
        if phase.label.startswith(" "):
            print(f"{phase.label:<54} {phase.seconds:8.2f} {phase.calls:7d} {per_row}")
            continue
        print(f"{phase.label:<54} {phase.seconds:8.2f} {phase.calls:7d} {per_row} {phase.cpu:7.2f} {phase.modules:11d} {phase.rss_mb:12.0f}", end="")
        print(f" {phase.traced_mb:9.1f} {phase.traced_peak_mb:14.1f}" if memory else "")
    print(f"{'total (import to exit of cli.main)':<54} {total:8.2f} {'':7} {'':8} {time.process_time():7.2f}")
    run = next((p.seconds for p in phases if p.label.startswith("run")), 0.0) or 1.0
    print(f"main thread idle in the event loop (epoll), nearly all in the run phase: {waits.select_seconds:.2f} s ({waits.select_seconds / run:.0%} of the run phase)")
    if waits.js_calls:
        mean = waits.js_seconds / waits.js_calls * 1e6
        print(f"calls into V8 (javascript and regex assertions): {waits.js_calls}, mean round trip {mean:.0f} µs", end="")
        js_cpu = js_thread_cpu()
        print(f"; CPU of ci-grade's V8 thread {js_cpu:.2f} s ({js_cpu / waits.js_calls * 1e6:.0f} µs/call)" if js_cpu is not None else "")
    print(f"peak RSS: {rss_mb()[1]:.0f} MB")


def report_retained(snapshot: tracemalloc.Snapshot, rows: int, limit: int) -> None:
    """What the finished run keeps alive, charged to the innermost ci_grade line that allocated it."""
    charged: dict[str, list[int]] = {}
    total = 0
    for stat in snapshot.statistics("traceback"):
        total += stat.size
        frames = [f for f in stat.traceback if "/ci_grade/" in f.filename] or [stat.traceback[-1]]
        frame = frames[-1]  # tracebacks are oldest first: the last ci_grade frame is the innermost
        key = f"{_short(frame.filename)}:{frame.lineno}"
        entry = charged.setdefault(key, [0, 0])
        entry[0] += stat.size
        entry[1] += stat.count
    print(f"\nPython memory alive at the end of the run phase: {total / 2**20:.1f} MB ({total / rows / 1024:.1f} KB/row)")
    print(f"top {limit} ci_grade lines that allocated it (library allocations charged to their ci_grade caller):")
    for key, (size, count) in sorted(charged.items(), key=lambda item: -item[1][0])[:limit]:
        print(f"{size / 2**20:8.1f} MB {size / rows:8.0f} B/row {count:9d} blocks  {key}  {_source(key)}")


def _source(key: str) -> str:
    import linecache

    path, _, line = key.rpartition(":")
    for candidate in (Path(__file__).resolve().parent.parent / "ci_grade" / path, Path(path)):
        text = linecache.getline(str(candidate), int(line)).strip()
        if text:
            return text[:90]
    return ""


def report_spots(profile: cProfile.Profile) -> None:
    """Calls, own time and cumulative time of the SPOTS functions (0 calls: renamed or not run)."""
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    print(f"\n== named functions (cProfile; cumulative time of coroutines is unreliable) ==\n{'':<56} {'calls':>9} {'own s':>8} {'cum s':>8}")
    for label, suffix, function in SPOTS:
        calls, own, cumulative = 0, 0.0, 0.0
        for (filename, _, name), (_, ncalls, tottime, cumtime, _) in table.items():
            if name == function and filename.endswith(suffix):
                calls, own, cumulative = calls + ncalls, own + tottime, cumulative + cumtime
        print(f"{label:<56} {calls:9d} {own:8.2f} {cumulative:8.2f}")


def report_profile(profile: cProfile.Profile, limit: int) -> None:
    for order in ("tottime", "cumulative"):
        buffer = io.StringIO()
        stats = pstats.Stats(profile, stream=buffer)
        stats.strip_dirs().sort_stats(order).print_stats(limit)
        print(f"\n== top {limit} by {order} ==")
        print("\n".join(line for line in buffer.getvalue().splitlines() if line.strip()))


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename.split("/ci_grade/", 1)[-1] if "/ci_grade/" in filename else filename


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=10000)
    parser.add_argument("--mode", choices=("phases", "cprofile", "memory"), default="phases")
    parser.add_argument("--top", type=int, default=30, help="functions or lines listed (default 30)")
    parser.add_argument("--profile-out", default="eval.prof", help="where cprofile mode saves its stats (default eval.prof)")
    args = parser.parse_args()
    memory = args.mode == "memory"
    profile = cProfile.Profile() if args.mode == "cprofile" else None

    with tempfile.TemporaryDirectory(prefix="ci-grade-profile-") as tmp:
        suite = write_deterministic(Path(tmp), args.tests)
        argv = ["eval", "-c", str(suite.path), "-o", str(Path(tmp) / "results.json"), "--no-progress"]
        if memory:
            tracemalloc.start(40)
        if profile:
            profile.enable()
        started, cpu = time.perf_counter(), time.process_time()
        imports = Phase("import (cli and the eval pipeline's modules)", calls=1)
        modules = len(sys.modules)
        for name in EAGER:
            importlib.import_module(name)
        imports.seconds, imports.cpu = time.perf_counter() - started, time.process_time() - cpu
        imports.modules, imports.rss_mb = len(sys.modules) - modules, rss_mb()[0]
        if memory:
            current, peak = tracemalloc.get_traced_memory()
            imports.traced_mb, imports.traced_peak_mb = current / 2**20, peak / 2**20
        phases, missing = instrument(memory)
        waits = instrument_waits()
        from ci_grade.cli import main as cli_main

        stdout = sys.stdout
        sys.stdout = io.StringIO()
        try:
            code = cli_main(argv)
        finally:
            sys.stdout = stdout
        total = time.perf_counter() - started
        if profile:
            profile.disable()
    print(f"ci-grade eval, {args.tests} tests x 3 assertions ({args.mode}), exit code {code}")
    for name in missing:
        print(f"phase function {name} not found (moved?): its phase is not timed")
    report_phases(phases, imports, total, args.tests, memory, waits)
    run_phase = next((p for p in phases if p.snapshot is not None), None)
    if run_phase is not None and run_phase.snapshot is not None:
        report_retained(run_phase.snapshot, args.tests, args.top)
    if profile:
        profile.dump_stats(args.profile_out)
        report_spots(profile)
        report_profile(profile, args.top)
        print(f"\nfull profile: {args.profile_out} (python -m pstats {args.profile_out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
