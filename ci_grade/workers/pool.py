"""A bounded pool of reused worker processes, started as calls need them, replaced when they die.

At most `size` workers (CI_GRADE_PYTHON_WORKERS, default 4) run user code at once; a call waits
for a free one. Each worker runs one call at a time and keeps its imports between calls, so the
cost of a call is one round trip over a pipe. A call that takes longer than its time limit, or
whose caller gives up on it (a row's deadline, a stopped run), kills its worker: the code cannot
go on running unseen. A worker that dies costs only the call it was running; the next call
starts a fresh one. Before each call, a worker gets the parent's environment and working folder
if they changed since its last call (a run's `env:` values are set while it runs).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any

from ci_grade import settings
from ci_grade.errors import ScriptAborted, ScriptError
from ci_grade.workers.process import Program, WorkerGone, WorkerProcess, python_program

DEFAULT_WORKERS = 4


class WorkerPool:
    def __init__(self, size: int, memory_mb: int = 0, program: Program | None = None):
        self.size = size
        self.program = program or python_program(memory_mb)
        self._lock = threading.Lock()
        self._idle: list[WorkerProcess] = []
        self._slots = 0
        """Workers out or idle, and slots given to callers who start their own."""
        self._waiters: deque[Future[WorkerProcess | None]] = deque()
        self._all: set[WorkerProcess] = set()
        self.started = 0
        """Workers started so far (a dead one is replaced by a new one)."""

    # -- taking and giving back a worker -----------------------------------------------------------

    def _take(self) -> Future[WorkerProcess | None]:
        """A future for a worker: an idle one, or None (a free slot: start one), when there is."""
        future: Future[WorkerProcess | None] = Future()
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    future.set_result(worker)
                    return future
                self._slots -= 1
            if self._slots < self.size:
                self._slots += 1
                future.set_result(None)
                return future
            self._waiters.append(future)
        return future

    def _give_back(self, worker: WorkerProcess | None) -> None:
        """Return a slot: to the first caller still waiting, else to the idle list."""
        if worker is not None and not worker.alive:
            worker = None
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                if waiter.set_running_or_notify_cancel():
                    waiter.set_result(worker)
                    return
            if worker is None:
                self._slots -= 1
            else:
                self._idle.append(worker)

    def _start(self) -> WorkerProcess:
        worker = WorkerProcess(self.program)
        with self._lock:
            self._all.add(worker)
            self.started += 1
        return worker

    # -- calls ------------------------------------------------------------------------------------

    def _send(self, worker: WorkerProcess | None, request: dict[str, Any]) -> WorkerProcess:
        """Send `request` to `worker` (or a new one); a worker found dead before it got the
        request is replaced once, since nothing ran. On failure the slot is given back."""
        try:
            for _ in range(2):
                worker = worker if worker is not None and worker.alive else self._start()
                try:
                    worker.send(_with_context(worker, request))
                    return worker
                except WorkerGone:
                    self._forget(worker)
                    worker = None
            raise ScriptAborted(f"{self.program.name} could not be started")
        except BaseException:
            self._give_back(None)
            raise

    async def acall(self, request: dict[str, Any], timeout: float) -> Any:
        taken = self._take()
        try:
            worker = await asyncio.wrap_future(taken)
        except asyncio.CancelledError:
            taken.add_done_callback(lambda done: None if done.cancelled() else self._give_back(done.result()))
            raise
        worker = self._send(worker, request)
        try:
            async with asyncio.timeout(timeout):
                reply = await worker.areceive()
        except BaseException as exc:
            raise self._failed(worker, exc, timeout) from None
        return self._answered(worker, reply)

    def call(self, request: dict[str, Any], timeout: float) -> Any:
        """`acall` for a caller outside an event loop (loading a config)."""
        worker = self._send(self._take().result(), request)
        try:
            reply = worker.receive(timeout)
        except BaseException as exc:
            raise self._failed(worker, exc, timeout) from None
        return self._answered(worker, reply)

    def _answered(self, worker: WorkerProcess, reply: dict[str, Any]) -> Any:
        """The call's value (or its error); a worker that stopped its code from outside (sys.exit,
        out of memory) is replaced, as it may be left in any state."""
        if "abort" in reply:
            self._kill(worker, str(reply["abort"]))
        else:
            self._give_back(worker)
        return _value(reply)

    def _failed(self, worker: WorkerProcess, exc: BaseException, timeout: float) -> BaseException:
        """The error a call that did not answer ends with; its worker is killed (it may still be
        running the call) and its slot given back."""
        if isinstance(exc, TimeoutError):
            self._kill(worker, f"timed out after {timeout:g}s")
            return ScriptAborted(f"timed out after {timeout:g}s")
        self._kill(worker, "stopped: its caller gave up")
        return exc

    def _kill(self, worker: WorkerProcess, reason: str) -> None:
        worker.kill(reason)
        self._forget(worker)
        self._give_back(None)

    def _forget(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._all.discard(worker)

    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        with self._lock:
            return [worker.pid for worker in self._all if worker.alive]

    def close(self) -> None:
        """Kill every worker (at exit: idle workers would end on their own, busy ones might not)."""
        with self._lock:
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
            self._slots = 0
        for worker in workers:
            worker.kill("ci-grade is exiting")


def _with_context(worker: WorkerProcess, request: dict[str, Any]) -> dict[str, Any]:
    """`request` plus what of the parent's environment, working folder and import folders the
    worker does not have yet."""
    folders = [f for f in request.get("path", ()) if f not in worker.path]
    request = {key: value for key, value in request.items() if key != "path"}
    env = dict(os.environ)
    if env != worker.env:
        request["env"] = worker.env = env
    cwd = os.getcwd()
    if cwd != worker.cwd:
        request["cwd"] = worker.cwd = cwd
    if folders:
        worker.path.update(folders)
        request["path"] = folders
    return request


def _value(reply: dict[str, Any]) -> Any:
    if "value" in reply:
        return reply["value"]
    if "abort" in reply:
        raise ScriptAborted(str(reply["abort"]))
    raise ScriptError(str(reply.get("error")))


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def pool() -> WorkerPool:
    """The process's pool (made on first use, closed at exit)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool(
                int(settings.number("CI_GRADE_PYTHON_WORKERS", DEFAULT_WORKERS)),
                int(settings.number("CI_GRADE_PYTHON_MAX_MEMORY_MB", 0)),
            )
            atexit.register(_pool.close)
        return _pool
