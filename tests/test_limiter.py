"""Adaptive concurrency per provider (AIMD): cut on 429 / Retry-After, grow back, explicit caps hold.

The first tests drive the limiter with a simulated provider that allows K calls at once: no
sockets and no clock (retries back off by zero seconds), so every run takes the same steps and
the assertions are on counts and states. The last ones run whole evals against the loopback
server with a concurrency limit.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from ci_grade.errors import TransientError
from ci_grade.providers.limiter import ADAPTIVE_CEILING, ADAPTIVE_START, Limiter
from ci_grade.providers.retry import RetryPolicy, with_retries
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

NO_WAIT = RetryPolicy(attempts=4, base_delay=0.0, max_delay=0.0)


class Provider:
    """Allows `allowed` calls at once; more get a 429. Each call takes `turns` event-loop turns."""

    def __init__(self, allowed: int, turns: int = 3):
        self.allowed, self.turns = allowed, turns
        self.active = self.peak = self.rejected = self.served = 0

    async def call(self) -> str:
        if self.active >= self.allowed:
            self.rejected += 1
            raise TransientError("API error 429: too many requests", status=429)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            for _ in range(self.turns):
                await asyncio.sleep(0)
        finally:
            self.active -= 1
        self.served += 1
        return "ok"


def run_calls(limiter: Limiter, provider: Provider, calls: int, policy: RetryPolicy = NO_WAIT) -> list[str | Exception]:
    async def main() -> list[str | Exception]:
        return await asyncio.gather(*(with_retries(provider.call, policy, limiter=limiter) for _ in range(calls)), return_exceptions=True)

    return asyncio.run(main())


@pytest.mark.parametrize("allowed", [1, 3, 6, 10, 20])
def test_the_limit_settles_near_what_the_provider_allows_and_every_call_succeeds(allowed: int) -> None:
    limiter, provider = Limiter(ADAPTIVE_CEILING, ADAPTIVE_START), Provider(allowed)
    outcomes = run_calls(limiter, provider, 600)
    assert outcomes == ["ok"] * 600
    assert provider.served == 600 and provider.rejected > 0 and provider.peak <= allowed
    assert limiter.cuts >= 1 and limiter.in_flight == 0
    # each cut starts from more than `allowed` in flight, and the limit grows by about one per window
    assert max(1, allowed / 2) <= limiter.lowest and max(1, allowed / 2) <= limiter.limit <= allowed + 2
    assert provider.rejected < 600  # a handful per cut, not one per call


def test_without_overload_the_limit_grows_to_the_ceiling_and_never_beyond() -> None:
    limiter, provider = Limiter(40, 8), Provider(1000)
    assert run_calls(limiter, provider, 2000) == ["ok"] * 2000  # about one more slot per window of replies
    assert limiter.cuts == 0 and limiter.limit == 40 and provider.peak == 40


def test_an_explicit_cap_is_never_exceeded_and_cut_limits_grow_back_to_it() -> None:
    limiter, provider = Limiter(5, 5), Provider(4)
    assert run_calls(limiter, provider, 300) == ["ok"] * 300
    assert provider.peak <= 4 and limiter.cuts >= 1 and 2 <= limiter.limit <= 5
    steady, roomy = Limiter(5, 5), Provider(100)
    assert run_calls(steady, roomy, 300) == ["ok"] * 300
    assert roomy.peak == 5 and steady.limit == 5 and steady.cuts == 0


def test_one_window_of_429s_cuts_once() -> None:
    async def main() -> Limiter:
        limiter = Limiter(64, 32)
        tickets = [await limiter.acquire() for _ in range(32)]
        for ticket in tickets:  # the whole window comes back overloaded
            assert limiter.release(ticket, overloaded=True) is True
        return limiter

    limiter = asyncio.run(main())
    assert (limiter.cuts, limiter.limit, limiter.in_flight) == (1, 16, 0)


def test_a_cut_halves_the_calls_that_met_the_429_not_those_left_when_it_came() -> None:
    async def main() -> Limiter:
        limiter = Limiter(64, 8)
        tickets = [await limiter.acquire() for _ in range(8)]
        for ticket in tickets[:4]:  # half the window is answered first (a Retry-After pause drains it)
            limiter.release(ticket, succeeded=True)
        limiter.release(tickets[-1], overloaded=True)  # sent with 8 in flight, answered with 4
        return limiter

    limiter = asyncio.run(main())
    assert (limiter.cuts, limiter.limit, limiter.lowest, limiter.in_flight) == (1, 4, 4, 3)


def test_a_slot_granted_before_a_cut_belongs_to_the_window_that_cut() -> None:
    async def main() -> Limiter:
        limiter = Limiter(64, 8)
        tickets = [await limiter.acquire() for _ in range(8)]
        waiting = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        limiter.release(tickets[0], succeeded=True)  # the waiter gets this slot ...
        limiter.release(tickets[1], overloaded=True)  # ... and a 429 cuts before it resumes
        late = await waiting
        limiter.release(late, overloaded=True)  # its own 429 comes from the same overload
        return limiter

    limiter = asyncio.run(main())
    halved = (8 + 1 / 8) / 2  # the success grew the limit by 1/8 (a call was waiting), the 429 halved it
    assert (limiter.cuts, limiter.limit, limiter.lowest, limiter.in_flight) == (1, halved, halved, 6)


def test_a_429_to_a_call_sent_alone_uses_up_its_attempts() -> None:
    limiter, provider = Limiter(64, 32), Provider(0)
    outcomes = run_calls(limiter, provider, 1)
    assert isinstance(outcomes[0], TransientError) and provider.rejected == NO_WAIT.attempts
    assert limiter.limit == 1 and limiter.cuts == 1  # a 429 with one call in flight: one at a time


def test_retry_after_holds_new_calls_back() -> None:
    async def main() -> tuple[bool, int]:
        limiter = Limiter(8, 8)
        first, second = await limiter.acquire(), await limiter.acquire()
        limiter.release(first, overloaded=True, retry_after=60)
        limiter.release(second, succeeded=True)
        try:
            await asyncio.wait_for(limiter.acquire(), 0.2)
        except TimeoutError:
            return True, limiter.in_flight
        return False, limiter.in_flight

    held, in_flight = asyncio.run(main())
    assert held and in_flight == 0


def test_waiters_are_served_in_order_and_a_cancelled_one_gives_its_slot_back() -> None:
    async def main() -> tuple[list[int], int]:
        limiter = Limiter(1, 1)
        order: list[int] = []
        first = await limiter.acquire()

        async def wait(i: int) -> None:
            ticket = await limiter.acquire()
            order.append(i)
            limiter.release(ticket, succeeded=True)

        waiters = [asyncio.ensure_future(wait(i)) for i in range(4)]
        await asyncio.sleep(0)
        waiters[1].cancel()
        limiter.release(first, succeeded=True)
        await asyncio.gather(*waiters, return_exceptions=True)
        return order, limiter.in_flight

    assert asyncio.run(main()) == ([0, 2, 3], 0)


# -- whole evals against the loopback server -------------------------------------------------------


def eval_rows(tmp_path: Path, tests: int, *flags: str) -> tuple[int, list[dict[str, object]], str]:
    questions = json.dumps([f"question {i}" for i in range(tests)])
    write(tmp_path / "promptfooconfig.yaml", f"""
        prompts: ['{{{{q}}}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {{q: {questions}}}
            assert: [{{type: contains, value: question}}]
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", *flags, cwd=tmp_path)
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    return result.code, rows, result.err


def test_default_concurrency_finds_a_providers_concurrency_limit(tmp_path: Path, openai_env: LLMServer) -> None:
    allowed = 6
    openai_env.latency = 0.02
    openai_env.limit_concurrency(allowed, retry_after="0.02")
    code, rows, err = eval_rows(tmp_path, 150)
    assert code == 0, err
    assert len(rows) == 150 and all(row["success"] for row in rows) and not any(row.get("error") for row in rows)
    assert openai_env.over_limit > 0 and openai_env.peak_active <= allowed
    found = re.search(r"openai:gpt-4o-mini asked to slow down \(HTTP 429 or Retry-After\): concurrent calls cut (\d+) time\(s\), to (\d+) at the lowest; (\d+) at the end of the run", err)
    assert found, err
    cuts, lowest, last = map(int, found.groups())
    assert cuts >= 1 and allowed // 2 <= lowest and allowed // 2 <= last <= allowed + 2


def test_an_explicit_cap_below_the_limit_never_meets_a_429(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.latency = 0.01
    openai_env.limit_concurrency(6)
    code, rows, err = eval_rows(tmp_path, 60, "-j", "4")
    assert code == 0, err
    assert len(rows) == 60 and all(row["success"] for row in rows)
    assert openai_env.over_limit == 0 and openai_env.peak_active <= 4
    assert "asked to slow down" not in err
