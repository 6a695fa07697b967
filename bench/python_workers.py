"""Cost of one user Python call: in a worker process (today) against in-process on a thread (before).

    .venv/bin/python bench/python_workers.py [--calls 3000] [--workers 4]

Three ways of calling the same trivial function (`def check(output, context): return len(output) > 3`)
from the event loop, each measured as wall time and ci-grade's own CPU time per call:
- `in-process thread`: the earlier way, the function imported into ci-grade and run on a daemon
  thread per call (what `scripting/threads.py` did);
- `worker, one at a time`: `workers.calls.call_file` awaited call after call (one round trip each);
- `worker, concurrent`: the same calls all started at once, spread over the pool's workers.
The workers' own CPU is reported too (read from /proc), and the time to start the first worker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import importlib.util
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_grade.workers import calls
from ci_grade.workers.pool import pool

SOURCE = "def check(output, context):\n    return len(output) > 3\n"
CONTEXT = {"vars": {"topic": "owls"}, "prompt": "Write about {{topic}}", "test": {"description": "owls"}}


async def in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """A daemon thread per call, its result handed back to the loop (the earlier in-process way)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        result = context.run(function, *args)
        loop.call_soon_threadsafe(future.set_result, result)

    threading.Thread(target=work, daemon=True).start()
    return await future


def workers_cpu() -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pool().pids():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


async def measure(name: str, n: int, run: Callable[[], Any]) -> None:
    cpu, worker_cpu, wall = time.process_time(), workers_cpu(), time.perf_counter()
    await run()
    wall, cpu, worker_cpu = time.perf_counter() - wall, time.process_time() - cpu, workers_cpu() - worker_cpu
    print(f"| {name} | {wall / n * 1e6:,.0f} | {cpu / n * 1e6:,.0f} | {worker_cpu / n * 1e6:,.0f} |")


async def main(n: int) -> None:
    folder = Path(tempfile.mkdtemp())
    path = folder / "check.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("bench_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    await calls.call_file(path, "check", ["x", CONTEXT])
    print(f"first call, starting a worker: {(time.perf_counter() - started) * 1000:.0f} ms\n")
    await asyncio.gather(*[calls.call_file(path, "check", ["x", CONTEXT]) for _ in range(pool().size * 4)])  # start them all
    print("| way | wall µs/call | ci-grade CPU µs/call | workers' CPU µs/call |\n| --- | ---: | ---: | ---: |")

    async def threads() -> None:
        for _ in range(n):
            await in_thread(module.check, "some output", CONTEXT)

    async def one_at_a_time() -> None:
        for _ in range(n):
            await calls.call_file(path, "check", ["some output", CONTEXT])

    async def concurrent() -> None:
        await asyncio.gather(*[calls.call_file(path, "check", ["some output", CONTEXT]) for _ in range(n)])

    await measure("in-process thread (before)", n, threads)
    await measure("worker, one at a time", n, one_at_a_time)
    await measure(f"worker, concurrent ({pool().size} workers)", n, concurrent)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=4)
    options = parser.parse_args()
    os.environ["CI_GRADE_PYTHON_WORKERS"] = str(options.workers)
    asyncio.run(main(options.calls))
