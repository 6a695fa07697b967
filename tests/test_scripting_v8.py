"""The V8 runtime: calls queued together run as one batch, and one call's failure stays its own.

Batches are made deterministic by holding the isolate's thread while the calls are queued: they
then all wait in the queue and the next batch takes them together.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ci_grade.errors import ScriptError
from ci_grade.scripting.v8 import COLLECT_EVERY, JsRuntime


@pytest.fixture(scope="module")
def rt() -> Iterator[JsRuntime]:
    runtime = JsRuntime(timeout_ms=1000, max_memory=64 * 1024 * 1024)
    yield runtime
    runtime.close()


def held(rt: JsRuntime) -> threading.Event:
    """Block the isolate's thread until the returned event is set."""
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(30)

    rt._loop.call_soon_threadsafe(hold)
    assert holding.wait(30)
    return release


def batch(rt: JsRuntime, calls: list[tuple[str, list[Any]]]) -> list[Any]:
    """Queue `calls` while the isolate is held, then let them run; each call's value or error text."""

    async def main() -> list[Any]:
        release = held(rt)
        tasks = [asyncio.ensure_future(rt.acall(name, args)) for name, args in calls]
        await asyncio.sleep(0)  # every call is queued
        release.set()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        return [f"error: {o}" if isinstance(o, ScriptError) else o for o in outcomes]

    return asyncio.run(main())


def counts(rt: JsRuntime) -> tuple[int, int]:
    return rt.batches, rt.calls


def test_calls_queued_together_run_as_one_batch(rt: JsRuntime) -> None:
    double = rt.define(("x",), "return x * 2;")
    position = rt.define(("x",), "return [x, __cigrade_out.length];")  # its place in the running batch
    before = counts(rt)
    outcomes = batch(rt, [(double, [i]) if i % 2 else (position, [i]) for i in range(20)])
    assert outcomes == [(True, i * 2) if i % 2 else (True, [i, i]) for i in range(20)]
    assert counts(rt) == (before[0] + 1, before[1] + 20)


def test_a_throwing_call_fails_alone_with_v8s_message(rt: JsRuntime) -> None:
    double = rt.define(("x",), "return x * 2;")
    boom = rt.define(("x",), "throw new Error('boom ' + x);")
    before = counts(rt)
    outcomes = batch(rt, [(double, [1]), (boom, [2]), (double, [3]), (boom, [4]), (double, [5])])
    assert outcomes == [(True, 2), "error: <anonymous>:2: Error: boom 2", (True, 6), "error: <anonymous>:2: Error: boom 4", (True, 10)]
    # one batch, then what followed the first throw, then what followed the second: nothing ran twice
    assert counts(rt) == (before[0] + 3, before[1] + 5 + 3 + 1)


def test_a_runaway_call_times_out_alone(rt: JsRuntime) -> None:
    double = rt.define(("x",), "return x * 2;")
    spin = rt.define(("x",), "while (true) {}")
    before = counts(rt)
    outcomes = batch(rt, [(double, [1]), (spin, [0]), (double, [3])])
    assert outcomes == [(True, 2), "error: timed out after 1s", (True, 6)]
    # the batch; the runaway again alone, with the whole time limit (the batch's was shared); the rest
    assert counts(rt) == (before[0] + 3, before[1] + 3 + 1 + 1)


def test_a_runaway_first_call_is_not_run_twice(rt: JsRuntime) -> None:
    double = rt.define(("x",), "return x * 2;")
    spin = rt.define(("x",), "while (true) {}")
    before = counts(rt)
    assert batch(rt, [(spin, [0]), (double, [2])]) == ["error: timed out after 1s", (True, 4)]
    assert counts(rt) == (before[0] + 2, before[1] + 2 + 1)


def test_a_call_out_of_memory_fails_alone_and_the_isolate_goes_on(rt: JsRuntime) -> None:
    double = rt.define(("x",), "return x * 2;")
    hog = rt.define(("x",), "var a = []; while (true) a.push(new Array(100000).fill(x));")
    outcomes = batch(rt, [(double, [1]), (hog, [1]), (double, [3])])
    assert outcomes == [(True, 2), "error: ran out of memory", (True, 6)]
    assert rt.call(double, [21]) == (True, 42)
    boom = rt.define(("x",), "throw new Error('after ' + x);")
    with pytest.raises(ScriptError, match=r"^<anonymous>:2: Error: after 1$"):  # not read as another memory error
        rt.call(boom, [1])


def test_promises_settle_per_call_in_a_batch(rt: JsRuntime) -> None:
    resolve = rt.define(("x",), "return Promise.resolve(x + 1);")
    reject = rt.define(("x",), "return Promise.reject(new Error('nope ' + x));")
    never = rt.define(("x",), "return new Promise(function () {});")
    nothing = rt.define(("x",), "return undefined;")
    boom = rt.define(("x",), "throw new Error('boom');")
    outcomes = batch(rt, [(resolve, [1]), (reject, [2]), (never, [3]), (nothing, [4]), (resolve, [5]), (boom, [0]), (resolve, [7])])
    assert outcomes == [
        (True, 2),
        "error: promise rejected: nope 2",
        "error: returned a promise that never settled (no timers or I/O are available)",
        (False, None),
        (True, 6),
        "error: <anonymous>:2: Error: boom",
        (True, 8),
    ]


def test_blocking_calls_from_threads_share_the_queue(rt: JsRuntime) -> None:
    double = rt.define(("x",), "return x * 2;")
    results: dict[int, tuple[bool, Any]] = {}

    def worker(i: int) -> None:
        results[i] = rt.call(double, [i])

    release = held(rt)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(30)
    assert results == {i: (True, i * 2) for i in range(8)}


def test_a_function_defined_from_the_event_loop_is_compiled_once(rt: JsRuntime) -> None:
    async def main() -> tuple[str, str]:
        return await rt.adefine(("x",), "return x + 'a';"), await rt.adefine(("x",), "return x + 'a';")

    first, second = asyncio.run(main())
    assert first == second == rt.define(("x",), "return x + 'a';")
    assert rt.call(first, ["b"]) == (True, "ba")


def test_the_heap_is_collected_every_few_thousand_calls() -> None:
    """V8 would let each batch's garbage (its source, payloads and results) pile up towards its own
    limit of over a gigabyte; the runtime collects it every COLLECT_EVERY calls, between batches."""
    runtime = JsRuntime(timeout_ms=1000, max_memory=64 * 1024 * 1024)
    try:
        length = runtime.define(("x",), "return x.length;")
        padding = "x" * 1000

        async def main() -> list[Any]:
            outcomes: list[Any] = []
            for _ in range(2 * COLLECT_EVERY // 256 + 1):
                outcomes += await asyncio.gather(*(runtime.acall(length, [padding]) for _ in range(256)))
            return outcomes

        outcomes = asyncio.run(main())
        assert outcomes == [(True, 1000)] * len(outcomes) and runtime.calls == len(outcomes) > 2 * COLLECT_EVERY
        assert runtime.collections == 2
        assert runtime.call(length, ["after"]) == (True, 5)  # the isolate works on after its collections
    finally:
        runtime.close()


def test_nan_and_infinities_reach_javascript_as_numbers(rt: JsRuntime) -> None:
    kinds = rt.define(("x",), "return [Number.isNaN(x.n), x.big === Infinity, x.small === -Infinity, x.list[1] === Infinity, x.plain];")
    assert batch(rt, [(kinds, [{"n": float("nan"), "big": float("inf"), "small": float("-inf"), "list": [1, float("inf")], "plain": 1.5}])]) == [
        (True, [True, True, True, True, 1.5])
    ]
    # a batch mixing such a call with others: each gets its own answer (a payload JSON cannot carry
    # used to fail the whole batch and hand its calls the previous batch's results, or none)
    double = rt.define(("x",), "return x * 2;")
    assert batch(rt, [(double, [1]), (kinds, [{"n": float("nan"), "big": 1, "small": 1, "list": [0, 0], "plain": None}]), (double, [2])]) == [
        (True, 2), (True, [True, False, False, False, None]), (True, 4),
    ]


def test_a_batch_that_cannot_be_answered_call_by_call_fails_each_call_and_never_hangs(rt: JsRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    double = rt.define(("x",), "return x * 2;")

    async def short(calls: list[Any]) -> list[Any]:
        return [((True, 0), None)]  # one outcome for three calls

    monkeypatch.setattr(rt, "_run_batch", short)
    outcomes = batch(rt, [(double, [1]), (double, [2]), (double, [3])])
    assert outcomes == ["error: RuntimeError: 1 outcomes for 3 calls"] * 3
