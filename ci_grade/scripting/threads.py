"""User code off the event loop, on daemon threads.

asyncio's own worker threads are joined when the loop shuts down, so a user function that never
returns (a Python provider waiting on a dead service, say) would keep a stopped or timed-out run
from ever exiting. A daemon thread per call is abandoned instead: the row that waited for it is
already recorded, and the process exits without it.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ci_grade.errors import ScriptError

T = TypeVar("T")


async def run_in_thread(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on a daemon thread (with the caller's context variables), awaited."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # the caller was cancelled
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = context.run(function, *args)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # SystemExit from user code must not end the run
            error = ScriptError(f"{type(exc).__name__}: {exc}")
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop has closed: nobody waits for this call any more
            pass

    threading.Thread(target=work, name="ci-grade-user-code", daemon=True).start()
    return await future
