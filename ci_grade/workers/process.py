"""One worker process as ci-grade sees it: started, sent one call at a time, watched, killed.

The caller reads the answer itself, with no thread in between: an event loop watches the
worker's pipe (`add_reader`) while a call is out, a caller outside a loop waits on it with
`select`. When the pipe closes, the worker is gone: the call fails with why (its exit status,
the signal that ended it, or the reason ci-grade killed it), and the pool starts another.
A `Program` says what a worker runs: the Python worker (`worker.py`) by default, or another
program speaking the same protocol (the Node.js worker, `node.py`).
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from ci_grade.errors import ScriptAborted
from ci_grade.workers import protocol

_BOOT = "from ci_grade.workers.worker import main; main()"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Program:
    """What a worker runs: its command line and its name in messages. With `reply_pipe`, the
    answers come on a pipe of their own, whose descriptor number ends the command line (the
    program's stdout then goes to ci-grade's stderr, with what the user's code prints)."""

    argv: tuple[str, ...]
    name: str
    reply_pipe: bool = False
    exit_note: str = ""
    """What an exit status means when the worker did not say why it stopped."""


def python_program(memory_mb: int = 0) -> Program:
    return Program((sys.executable, "-c", _BOOT, str(memory_mb)), "the Python worker", exit_note=" (os._exit, or an exit from native code)")


class WorkerGone(Exception):
    """The worker had died before the request was sent: nothing ran, the call may go elsewhere."""


class WorkerProcess:
    """A running worker: `send` a request, then `areceive` or `receive` its answer."""

    def __init__(self, program: Program | None = None):
        self.program = program or python_program()
        replies = os.pipe() if self.program.reply_pipe else None
        try:
            self._proc = subprocess.Popen(
                [*self.program.argv, *([str(replies[1])] if replies else [])],
                stdin=subprocess.PIPE,
                stdout=2 if replies else subprocess.PIPE,
                pass_fds=(replies[1],) if replies else (),
                start_new_session=True,  # the terminal's Ctrl-C is for ci-grade, which stops its workers
            )
        except BaseException:
            for fd in replies or ():
                os.close(fd)
            raise
        assert self._proc.stdin is not None
        self._stdin = self._proc.stdin
        if replies:
            os.close(replies[1])
            self._replies: int | None = replies[0]
            self._fd = replies[0]
        else:
            assert self._proc.stdout is not None
            self._replies = None
            self._fd = self._proc.stdout.fileno()
        self._buffer = bytearray()
        self._killed: str | None = None
        self.env = dict(os.environ)
        """The environment it has: the parent's when it started, or the one last sent."""
        self.cwd = os.getcwd()
        self.path: set[str] = set()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._killed is None and self._proc.poll() is None

    def send(self, request: dict[str, Any]) -> None:
        """Send one request (WorkerGone if the worker is already dead)."""
        frame = protocol.encode(request)
        if not self.alive:
            raise WorkerGone()
        try:
            self._stdin.write(frame)
            self._stdin.flush()
        except OSError:  # a broken pipe: it died while idle
            raise WorkerGone() from None

    async def areceive(self) -> dict[str, Any]:
        """The answer to the request sent, read as the event loop sees it arrive."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[dict[str, Any]] = loop.create_future()

        def readable() -> None:
            try:
                message = self._read_some()
            except ScriptAborted as exc:
                loop.remove_reader(self._fd)
                answer.set_exception(exc)
                return
            if message is not None:
                answer.set_result(message)
                loop.remove_reader(self._fd)

        loop.add_reader(self._fd, readable)
        try:
            return await answer
        finally:
            loop.remove_reader(self._fd)  # also when the wait was cancelled (the answer with it)

    def receive(self, timeout: float) -> dict[str, Any]:
        """The answer to the request sent, waiting at most `timeout` seconds (TimeoutError)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                raise TimeoutError()
            message = self._read_some()
            if message is not None:
                return message

    def _read_some(self) -> dict[str, Any] | None:
        """Read what the pipe holds; the message once it is complete (ScriptAborted at its end)."""
        try:
            chunk = os.read(self._fd, _CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            raise ScriptAborted(self._why_gone())
        self._buffer += chunk
        head = protocol.HEADER.size
        if len(self._buffer) < head:
            return None
        end = head + protocol.HEADER.unpack_from(self._buffer)[0]
        if len(self._buffer) < end:
            return None
        message = protocol.decode(bytes(self._buffer[head:end]))
        del self._buffer[:end]
        return message  # type: ignore[no-any-return]

    def _why_gone(self) -> str:
        try:
            status = self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:  # it closed its end of the pipe but runs on
            self.kill(f"{self.program.name} closed its pipe to ci-grade")
            status = self._proc.wait()
        self._close_pipes()
        return self._killed or ended(status, self.program)

    def kill(self, reason: str) -> None:
        """End the worker now (with whatever it started); the reason is what its call reports."""
        if self._killed is None:
            self._killed = reason
        if self._proc.returncode is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except OSError:
                self._proc.kill()
            self._proc.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self._replies is not None:
            os.close(self._replies)
            self._replies = None


def ended(status: int, program: Program) -> str:
    """How a worker ended, from its exit status: `exited with status 0`, `was killed by SIGSEGV (Segmentation fault)`."""
    if status < 0:
        number = -status
        try:
            signal_name = signal.Signals(number).name
        except ValueError:
            signal_name = f"signal {number}"
        description = signal.strsignal(number)
        return f"{program.name} was killed by {signal_name}" + (f" ({description})" if description else "")
    return f"{program.name} exited with status {status}{program.exit_note}"
