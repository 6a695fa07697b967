"""The run's spending limit (`--max-cost USD`): a call is made only when it fits.

Every call a provider makes (targets and graders, repeats and `--confirm` reruns alike; cache
hits are free and never ask) first reserves what it may cost: its prompt's tokens (estimated as
a token per 4 characters) and its reply's most tokens (the config's `max_tokens` and kin, else
`DEFAULT_REPLY_TOKENS`), at the provider's prices (`Provider.price`). It is admitted while what
has been spent plus every reservation in flight plus its own stays within the limit; otherwise
it waits for calls in flight to settle, and when none is left to wait for, the budget is
exhausted: that call and every later one is refused (`BudgetExhausted`). A call settles with
its real cost (the provider's, else its token usage at its prices; a failed call without usage
costs nothing; a call cut off midway is charged its whole reservation).

A row with a refused call is recorded as not run because of the budget (`row_scope` tells the
runner). The budget spans one process: each shard has its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from ci_grade.errors import BudgetExhausted
from ci_grade.results.usage import TokenUsage


class Provider(Protocol):
    """What the budget reads of a provider (`providers.base.Provider` has it)."""

    @property
    def id(self) -> str: ...

    @property
    def budget(self) -> Budget | None: ...

    def price(self) -> tuple[float, float] | None: ...

    def max_output_tokens(self) -> int | None: ...

DEFAULT_REPLY_TOKENS = 4096
"""Reply tokens reserved for a call whose provider sets no `max_tokens` (or kin)."""
CHARS_PER_TOKEN = 4
EPS = 1e-12

Bill = Callable[[float | None, TokenUsage | None, str | None, Any], None]
"""Settles a call: (the provider's cost, token usage, error, output)."""


def usd(amount: float) -> str:
    """`$0.000025`, `$0.42`, `$12.50`: enough digits for the small sums a call costs."""
    if amount >= 1:
        return f"${amount:,.2f}"
    return "$" + (f"{amount:.8f}".rstrip("0").rstrip(".") or "0")


def prompt_tokens(text: str) -> int:
    """Tokens of a prompt, estimated from its length (a token per 4 characters, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def reply_tokens(provider: Provider) -> int:
    """The reply tokens a call may cost: its configured maximum, else `DEFAULT_REPLY_TOKENS`."""
    return provider.max_output_tokens() or DEFAULT_REPLY_TOKENS


@dataclass
class RowMark:
    """Whether the budget refused a call made for one row, and why."""

    refused: str | None = None


_ROW: ContextVar[RowMark | None] = ContextVar("ci_grade_budget_row", default=None)


@contextlib.contextmanager
def row_scope() -> Iterator[RowMark]:
    """Calls made inside (and in tasks started inside) are marked on the mark this yields."""
    mark = RowMark()
    token = _ROW.set(mark)
    try:
        yield mark
    finally:
        _ROW.reset(token)


class Budget:
    """What a run may spend, what it has spent and what the calls in flight may still cost."""

    def __init__(self, limit: float):
        self.limit = limit
        self.spent = 0.0
        self.reserved = 0.0
        self.calls = 0
        self.refused = 0
        self.exhausted = False
        self._waiters: list[asyncio.Future[None]] = []

    def reason(self) -> str:
        return f"not run: the run's budget of {usd(self.limit)} (--max-cost) is reached ({usd(self.spent)} spent)"

    def _refuse(self, message: str) -> BudgetExhausted:
        self.refused += 1
        mark = _ROW.get()
        if mark is not None and mark.refused is None:
            mark.refused = message
        return BudgetExhausted(message)

    def estimate(self, provider: Provider, text: str) -> float:
        """The most this call may cost; refuses a provider whose price is unknown."""
        price = provider.price()
        if price is None:
            raise self._refuse(f"not run: {provider.id} has no known price, so --max-cost cannot bound it; set its config.cost (or inputCost and outputCost, USD per token)")
        return prompt_tokens(text) * price[0] + reply_tokens(provider) * price[1]

    async def reserve(self, amount: float) -> None:
        """Hold `amount` for a call, waiting for calls in flight to settle while it does not fit."""
        while True:
            if not self.exhausted and self.spent + self.reserved + amount <= self.limit + EPS:
                self.reserved += amount
                self.calls += 1
                return
            if self.exhausted or self.reserved <= EPS:
                self.exhausted = True
                raise self._refuse(self.reason())
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def settle(self, reserved: float, cost: float) -> None:
        """A call ended: its reservation is released and its real cost spent."""
        self.reserved = max(0.0, self.reserved - reserved)
        self.spent += max(0.0, cost)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


def _real_cost(provider: Provider, text: str, cost: float | None, usage: TokenUsage | None, error: str | None, output: Any) -> float:
    """A call's cost: the provider's, else its usage (or, without usage, its text) at its prices."""
    if cost is not None:
        return cost
    price = provider.price() or (0.0, 0.0)
    if usage is not None and (usage.prompt or usage.completion):
        return usage.prompt * price[0] + usage.completion * price[1]
    if error or output is None:
        return 0.0
    reply = output if isinstance(output, str) else str(output)
    return prompt_tokens(text) * price[0] + prompt_tokens(reply) * price[1]


def _no_bill(cost: float | None, usage: TokenUsage | None, error: str | None, output: Any) -> None:
    """Without a budget there is nothing to settle."""


@contextlib.asynccontextmanager
async def admitted(provider: Provider, text: str) -> AsyncIterator[Bill]:
    """Hold the call's reservation while the block makes it; the block bills the reply it got.
    Without a budget, a no-op. A block left without a bill is charged its whole reservation."""
    budget = provider.budget
    if budget is None:
        yield _no_bill
        return
    amount = budget.estimate(provider, text)
    await budget.reserve(amount)
    charged = [amount]

    def bill(cost: float | None, usage: TokenUsage | None, error: str | None, output: Any) -> None:
        charged[0] = _real_cost(provider, text, cost, usage, error, output)

    try:
        yield bill
    finally:
        budget.settle(amount, charged[0])
