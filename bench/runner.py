"""Running the tools under test as whole processes and measuring them.

Each run is one child process, started and reaped with `os.wait4` by the small `peak_rss.py`
wrapper, whose resource usage gives that process's peak RSS (including any children it waited
for) and its user and system CPU time. Both tools read the same config and write a
promptfoo-format results JSON, whose pass/fail counts are checked against what the suite
expects, so a fast but wrong run cannot pass for a result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suites import GRADER_VERDICT, Suite

REPO = Path(__file__).resolve().parent.parent
PROMPTFOO = REPO / "bench" / ".tools" / "bin" / "promptfoo"
PEAK_RSS = REPO / "bench" / "peak_rss.py"
TOOLS = ("ci-grade", "promptfoo")


@dataclass(frozen=True)
class Measurement:
    wall: float
    peak_rss_mb: float
    cpu: float  # user + system seconds
    returncode: int
    log: str
    others: float = 0.0  # share of the machine's CPU that other processes used meanwhile
    problem: str | None = None  # set when the run's results were not what the suite expects


def machine_busy() -> float:
    """CPU seconds all processes on this machine have used since boot (all cores, /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait


@dataclass(frozen=True)
class Quiet:
    """Before each run, wait up to `wait` seconds until other processes use at most `below` of
    the machine's CPU."""

    below: float = 0.15
    wait: float = 300


def wait_for_quiet(threshold: float, timeout: float) -> None:
    """Wait until other processes use at most `threshold` of the machine's CPU (sampled over 1 s)."""
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + timeout
    while True:
        before = machine_busy()
        time.sleep(1)
        share = (machine_busy() - before) / cores
        if share <= threshold:
            return
        if time.monotonic() > deadline:
            print(f"  machine still {share:.0%} busy after {timeout:.0f} s: measuring anyway", file=sys.stderr)
            return


def measure(command: list[str], env: dict[str, str], cwd: Path) -> Measurement:
    """Run `command` to completion through `peak_rss.py`: its wall time, peak RSS and CPU
    (with its children's), unaffected by how large this measuring process has grown."""
    with tempfile.TemporaryDirectory(prefix="bench-measure-") as tmp:
        report = Path(tmp) / "report.json"
        log = Path(tmp) / "log.txt"
        busy, started = machine_busy(), time.perf_counter()
        with log.open("wb") as sink:
            subprocess.run([sys.executable, "-S", str(PEAK_RSS), str(report), *command], env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, check=False)
        busy, elapsed = machine_busy() - busy, time.perf_counter() - started
        figures = json.loads(report.read_text())
        text = log.read_text(errors="replace")
    others = max(0.0, busy - figures["cpu"]) / (elapsed * (os.cpu_count() or 1))
    return Measurement(figures["wall"], figures["peak_rss_mb"], figures["cpu"], figures["returncode"], text, others)


@dataclass
class Tool:
    """How to run one tool's `eval` on a config, writing a results JSON."""

    name: str
    base: list[str]
    env: dict[str, str]

    def eval_command(self, suite: Suite, output: Path, concurrency: int | None) -> list[str]:
        jobs = ["-j", str(concurrency)] if concurrency is not None else []
        if self.name.startswith("ci-grade"):
            return [*self.base, "eval", "-c", str(suite.path), "-o", str(output), "--no-progress", "--no-cache", *jobs]
        flags = ["--no-write", "--no-cache", "--no-table", "--no-progress-bar", "--no-share"]
        return [*self.base, "eval", "-c", str(suite.path), "-o", str(output), *flags, *jobs]


def make_tool(name: str, workdir: Path, extra_env: dict[str, str]) -> Tool:
    env = {**os.environ, **extra_env}
    if name == "ci-grade":
        # As installed: pip compiles an installed package's bytecode, so runs never compile it.
        # An editable checkout gets it on its first import, unless PYTHONDONTWRITEBYTECODE is set
        # (as on some CI machines): compile it here and let the runs read it.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "ci_grade")], check=True, stdout=subprocess.DEVNULL)
        return Tool(name, [sys.executable, "-m", "ci_grade"], env)
    if not PROMPTFOO.exists():
        raise SystemExit(f"{PROMPTFOO} is missing: run `bash bench/setup_promptfoo.sh` first")
    home = workdir / "promptfoo-home"
    home.mkdir(exist_ok=True)
    env |= {"PROMPTFOO_CONFIG_DIR": str(home), "PROMPTFOO_CACHE_ENABLED": "false"}
    return Tool(name, [str(PROMPTFOO)], env)


def run_eval(tool: Tool, suite: Suite, workdir: Path, concurrency: int | None, quiet: Quiet, strict: bool = True) -> Measurement:
    """One measured `eval` of `suite` (after waiting for a `quiet` machine). A run that failed or
    miscounted exits with its log when `strict`, else comes back with `problem` set."""
    output = workdir / f"{tool.name}-results.json"
    output.unlink(missing_ok=True)
    wait_for_quiet(quiet.below, quiet.wait)
    result = measure(tool.eval_command(suite, output, concurrency), tool.env, workdir)
    problem = check_results(suite, output)
    output.unlink(missing_ok=True)
    if problem and strict:
        tail = "\n".join(result.log.splitlines()[-30:])
        raise SystemExit(f"{tool.name} (exit {result.returncode}): {problem}\n{tail}")
    return dataclasses.replace(result, problem=problem)


def check_results(suite: Suite, output: Path) -> str | None:
    """What is wrong with a run's results file (None: the counts the suite expects)."""
    if not output.exists():
        return "no results file written"
    stats = json.loads(output.read_text())["results"]["stats"]
    counts = (stats.get("successes"), stats.get("failures"), stats.get("errors"))
    if counts != (suite.passes, suite.failures, 0):
        return f"expected {suite.passes} passes, {suite.failures} failures, 0 errors; got {counts}"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def idle_timer() -> Iterator[list[float]]:
    """Seconds the main thread spends blocked in epoll while the block runs."""
    spent = [0.0]
    main = threading.main_thread()
    select = selectors.EpollSelector.select

    def timed(self: selectors.EpollSelector, timeout: float | None = None) -> Any:
        if threading.current_thread() is not main:
            return select(self, timeout)
        started = time.perf_counter()
        try:
            return select(self, timeout)
        finally:
            spent[0] += time.perf_counter() - started

    selectors.EpollSelector.select = timed  # type: ignore[assignment, method-assign]
    try:
        yield spent
    finally:
        selectors.EpollSelector.select = select  # type: ignore[method-assign]


@contextmanager
def loopback_grader(latency_ms: float) -> Iterator[dict[str, str]]:
    """The project's OpenAI-compatible test server in its own process, answering every chat with a
    passing verdict after `latency_ms`; yields the environment that points both tools at it."""
    port = free_port()
    command = [sys.executable, "-m", "tests.servers.llm_server", "--port", str(port), "--latency-ms", str(latency_ms), "--reply", GRADER_VERDICT]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "listening on ..."
        base_url = f"http://127.0.0.1:{port}/v1"
        yield {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base_url, "OPENAI_API_BASE_URL": base_url}
    finally:
        server.terminate()
        server.wait(timeout=10)


def bare_client(base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """`calls` chat requests to the loopback grader at `base_url`, `concurrency` at once, from a
    bare asyncio client in this process (the HTTP API providers' client, httpx on aiohttp: no SDK,
    no grading, no start-up): (wall seconds, CPU seconds). The machine's own floor for a grader
    call, and a yardstick for comparing figures taken on machines of different speed."""
    import asyncio

    from ci_grade.providers.http_clients import api_http_client

    async def once() -> tuple[float, float]:
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "grade this"}]}
        left = calls
        async with api_http_client(30, concurrency) as client:

            async def worker() -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    reply = await client.post(f"{base_url}/chat/completions", json=body)
                    reply.raise_for_status()
                    reply.json()

            started, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return time.perf_counter() - started, time.process_time() - cpu

    measured = asyncio.run(once())
    time.sleep(0.5)  # the server sees the connections end before anything else runs
    return measured


@dataclass(frozen=True)
class Summary:
    tool: str
    runs: list[Measurement]

    @property
    def wall_min(self) -> float:
        return min(r.wall for r in self.runs)

    @property
    def wall_median(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def rss_max(self) -> float:
        return max(r.peak_rss_mb for r in self.runs)

    @property
    def cpu_median(self) -> float:
        return statistics.median(r.cpu for r in self.runs)

    @property
    def others_max(self) -> float:
        return max(r.others for r in self.runs)


def run_alternating(tools: list[Tool], suite: Suite, workdir: Path, runs: int, concurrency: int | None, quiet: Quiet) -> list[Summary]:
    """`runs` measured evals per tool, interleaved (A B, B A, A B, ...) so drift hits both alike."""
    for tool in tools:  # warm the file cache (interpreter, node_modules) before measuring
        measure([*tool.base, "--version"], tool.env, workdir)
    results: dict[str, list[Measurement]] = {tool.name: [] for tool in tools}
    for index in range(runs):
        for tool in tools if index % 2 == 0 else tools[::-1]:
            result = run_eval(tool, suite, workdir, concurrency, quiet)
            results[tool.name].append(result)
            print(f"  run {index + 1}/{runs} {tool.name}: {result.wall:.2f} s, {result.peak_rss_mb:.0f} MB, {result.cpu:.2f} s CPU, others {result.others:.0%}", file=sys.stderr)
    return [Summary(name, measured) for name, measured in results.items()]
