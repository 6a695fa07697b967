"""Rows start through a bounded window: a run of many rows never holds a task per row, rows that
wait for earlier ones (conversations, storeOutputAs) neither block others nor deadlock, a stop
still records every row, and an eval lets each planned row go once it is stored."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ci_grade.config.loader import load_config
from ci_grade.grading import registry
from ci_grade.plan.build import Plan, PlannedRow, PlanOptions, build_plan
from ci_grade.results import models
from ci_grade.run.runner import RunOptions, run_plan
from ci_grade.run.stop import Stop
from ci_grade.run.window import MIN_WINDOW, RowWindow, window_size
from tests.conftest import run_cli, write


def plan_of(folder: Path, text: str) -> Plan:
    path = write(folder / "promptfooconfig.yaml", text)
    return build_plan(load_config([path], registry.vocabulary(), cwd=folder), PlanOptions())


def many_tests(count: int, extra: str = "") -> str:
    lines = ["prompts: ['Say {{n}}']", "providers: [echo]", extra, "tests:"]
    lines += [f"  - {{description: row {n}, vars: {{n: {n}}}, assert: [{{type: contains, value: 'Say {n}'}}]}}" for n in range(count)]
    return "\n".join(lines) + "\n"


# -- the window alone ---------------------------------------------------------------------------------


def test_the_window_never_holds_more_tasks_than_its_size_and_runs_every_row_in_order() -> None:
    started: list[int] = []

    async def row(position: int, value: str) -> str | None:
        started.append(position)
        await asyncio.sleep(0)
        return value if position % 100 == 0 else None  # only what is something is kept

    async def main() -> RowWindow[str, str | None]:
        window: RowWindow[str, str | None] = RowWindow([f"row {n}" for n in range(1000)], row, 8)
        await window.run()
        return window

    window = asyncio.run(main())
    assert started == list(range(1000))
    assert window.most_alive == 8 and window.started == 1000
    assert [window.outcome(n) for n in (0, 1, 100, 999)] == ["row 0", None, "row 100", None]


def test_rows_waiting_for_an_earlier_row_leave_room_for_rows_that_can_run() -> None:
    """Row 0 ends only after row 50 ran; rows 1..49 wait for row 0. With a window of 4, rows that
    wait must not count, else row 50 never starts and the run deadlocks."""
    order: list[int] = []

    async def main() -> None:
        done = asyncio.Event()
        later_ran = asyncio.Event()

        @contextlib.asynccontextmanager
        async def turn() -> AsyncIterator[None]:
            await done.wait()
            yield

        async def row(position: int, _: int) -> None:
            if position == 0:
                await asyncio.wait_for(later_ran.wait(), 10)
                order.append(0)
                done.set()
            elif position < 50:
                async with window.waiting(turn()):
                    order.append(position)
            else:
                order.append(position)
                later_ran.set()

        window: RowWindow[int, None] = RowWindow(list(range(60)), row, 4)
        await asyncio.wait_for(window.run(), 20)

    asyncio.run(main())
    assert order.index(50) < order.index(0) < order.index(1)
    assert sorted(order) == list(range(60))


def test_a_cancelled_window_starts_no_more_rows_and_says_what_each_row_ended_with() -> None:
    async def row(position: int, _: int) -> int:
        if position == 2:
            raise ValueError("broken row")
        if position >= 3:
            await asyncio.sleep(30)
        return position

    async def main() -> RowWindow[int, int]:
        window: RowWindow[int, int] = RowWindow(list(range(100)), row, 5)
        task = asyncio.create_task(window.run())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return window

    window = asyncio.run(main())
    assert window.started < 100
    assert window.outcome(0) == 0 and window.outcome(1) == 1
    failure = window.outcome(2)
    assert isinstance(failure, ValueError) and str(failure) == "broken row"
    assert window.outcome(3) is None  # cancelled while it ran
    assert window.outcome(99) is None  # never started


def test_the_window_size_follows_the_rows_in_flight() -> None:
    assert window_size(None) == MIN_WINDOW
    assert window_size(1) == MIN_WINDOW
    assert window_size(500) == 2000


# -- through the runner ---------------------------------------------------------------------------------


def test_a_run_of_many_rows_does_not_create_them_all_at_once(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, many_tests(1200))
    alive: list[int] = []

    def progress(result: models.TestResult, done: int, total: int) -> None:
        if done % 50 == 0:
            alive.append(len(asyncio.all_tasks()))

    run = asyncio.run(run_plan(plan, RunOptions(env={}, base_dir=tmp_path, concurrency=2, progress=progress)))
    assert [r.status for r in run.results] == ["pass"] * 1200
    assert [r.description for r in run.results] == [f"row {n}" for n in range(1200)]
    assert alive and max(alive) <= window_size(2) + 5  # the rows' tasks, plus the run's own


def test_an_eval_lets_each_planned_row_go_once_it_is_stored(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, many_tests(900))
    counted: dict[str, int] = {}

    prompt = plan.prompts[0]

    def planned_rows_alive() -> int:
        """This plan's planned rows still alive (other tests' may be too). `type()`, not `isinstance`:
        the heap also holds other libraries' lazy proxies, whose `__class__` may raise when asked."""
        return sum(type(o) is PlannedRow and o.prompt is prompt for o in gc.get_objects())

    def progress(result: models.TestResult, done: int, total: int) -> None:
        if done == total - 10:
            counted["late in the run"] = planned_rows_alive()

    run = asyncio.run(run_plan(plan, RunOptions(env={}, base_dir=tmp_path, concurrency=2, progress=progress, release_rows=True)))
    assert plan.rows == []
    assert 0 < counted["late in the run"] <= window_size(2) + 10  # the rows not yet stored, at most a window of them
    assert [r.status for r in run.results] == ["pass"] * 900
    kept = plan_of(tmp_path, many_tests(900))
    asyncio.run(run_plan(kept, RunOptions(env={}, base_dir=tmp_path, concurrency=2)))
    assert len(kept.rows) == 900  # without release_rows the caller's plan is left as it was


def test_a_stop_records_rows_that_never_started_as_errors(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, many_tests(1000))
    stop = Stop()

    def progress(result: models.TestResult, done: int, total: int) -> None:
        if done == 20:
            stop.request("cancelled: stopped for the test")

    run = asyncio.run(run_plan(plan, RunOptions(env={}, base_dir=tmp_path, concurrency=1, progress=progress, stop=stop)))
    rows = list(run.results)
    assert len(rows) == 1000 and [r.description for r in rows] == [f"row {n}" for n in range(1000)]
    passed = [r for r in rows if r.status == "pass"]
    stopped = [r for r in rows if r.status == "error"]
    assert 20 <= len(passed) < 1000 - MIN_WINDOW  # most rows were never started
    assert len(passed) + len(stopped) == 1000
    assert {r.error for r in stopped} == {"cancelled: stopped for the test before this row finished"}
    assert rows[-1].status == "error"
    assert f"cancelled: stopped for the test: {len(stopped)} of 1000 rows did not finish and are recorded as errors" in run.warnings


# -- rows that wait for earlier rows, over more rows than the window holds ------------------------------

CONVERSATION = """
prompts:
  - label: chat
    raw: '{{ _conversation | length }} turns before: {{ question }}'
providers: [echo]
tests:
"""


def test_a_conversation_longer_than_the_window_sees_every_earlier_turn(tmp_path: Path) -> None:
    turns = MIN_WINDOW + 100
    write(tmp_path / "promptfooconfig.yaml", CONVERSATION + "".join(f"  - vars: {{question: q{n}}}\n" for n in range(turns)))
    result = run_cli("eval", "--no-progress", "-j", "4", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert [row["response"]["output"] for row in rows] == [f"{n} turns before: q{n}" for n in range(turns)]


def test_stored_outputs_reach_every_later_row_beyond_the_window(tmp_path: Path) -> None:
    later = MIN_WINDOW + 50
    tests = "  - {vars: {n: first}, options: {storeOutputAs: first}}\n" + "".join(f"  - vars: {{n: r{n}}}\n" for n in range(later))
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{ n }} after {{ first }}']\nproviders: [echo]\ndefaultTest: {vars: {first: none}}\ntests:\n" + tests)
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    outputs = [row["response"]["output"] for row in json.loads((tmp_path / "out.json").read_text())["results"]["results"]]
    assert outputs == ["first after none", *(f"r{n} after first after none" for n in range(later))]
