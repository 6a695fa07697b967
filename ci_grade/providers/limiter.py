"""How many calls one provider has in flight: a limit that finds the provider's rate limit (AIMD).

Each provider has one `Limiter`. A call (for HTTP APIs: each attempt of it) holds a slot while it
is sent and answered. The limit starts at `start` and never exceeds `ceiling`:

- **Multiplicative decrease.** A reply saying the provider is overloaded (429, 529, or any
  retryable status with `Retry-After`) halves the concurrency that met it: the limit, or, if
  fewer, the most calls that can have been in flight beside the refused one (those in flight when
  it was sent and every call sent since). Once per window: replies to requests sent before the
  last cut do not cut again, so a burst of 429s from one window halves it once, not to 1. New
  requests wait until the `Retry-After` time has passed.

A provider that allows K calls at once answers 429 only while more than K are in flight, so the
limit settles between about K/2 and K + 1 (each cut starts from at least K + 1 in flight).
- **Additive increase.** Each successful reply while the limit is in use (calls waiting, or all
  slots taken) adds 1/limit: about one more slot per window of replies, up to the ceiling.

Without `-j` or `maxConcurrency`, API providers start at 32 and may grow to 64; an explicit value
is both where they start and a hard cap (the limit may still drop below it on 429s and grow back
to it). Local providers (echo, scripts) never report overload, so they stay at their ceiling.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

Ticket = tuple[int, int]
"""(sequence number, calls in flight when it was sent, itself included)."""

ADAPTIVE_START = 32
"""Where an API provider's limit starts when neither `-j` nor `maxConcurrency` sets one."""
ADAPTIVE_CEILING = 64
"""How far it may grow then."""
DECREASE = 0.5


class Limiter:
    """At most `limit` slots taken at once, with waiters served in order."""

    def __init__(self, ceiling: int, start: int | None = None):
        self.ceiling = max(1, ceiling)
        self.limit = float(max(1, min(self.ceiling, start or self.ceiling)))
        self.in_flight = 0
        self.cuts = 0
        """How many times an overloaded reply halved the limit."""
        self.lowest = self.limit
        """The lowest the limit went."""
        self._issued = 0  # tickets handed out so far; a ticket is its number
        self._cut_at = 0  # tickets up to this one were sent before the last cut
        self._resume_at = 0.0  # no new sends before this time (Retry-After)
        self._waiters: deque[asyncio.Future[Ticket]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    async def acquire(self) -> Ticket:
        """Wait for a slot; returns the ticket to hand back to `release`."""
        if not self._waiters and self.in_flight < int(self.limit) and time.monotonic() >= self._resume_at:
            return self._grant()
        waiter: asyncio.Future[Ticket] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._free()  # a slot was handed over as the waiter was cancelled: give it back
            raise

    def release(self, ticket: Ticket, *, succeeded: bool = False, overloaded: bool = False, retry_after: float | None = None) -> bool:
        """Give the slot back with what the attempt found. Returns True when an overloaded reply may
        be down to concurrency (the request went out with others in flight, and the limit has
        been cut since), so trying again is not the same attempt over."""
        number, flight = ticket
        explained = False
        if overloaded:
            if retry_after:
                self._resume_at = max(self._resume_at, time.monotonic() + retry_after)
            if number > self._cut_at:  # the first overloaded reply from this window
                met = flight + self._issued - number  # in flight when it was sent, and every call sent since
                cut = max(1.0, min(self.limit, met) * DECREASE)
                if cut < self.limit:
                    self.limit = cut
                    self.lowest = min(self.lowest, cut)
                    self.cuts += 1
                self._cut_at = self._issued
            explained = max(flight, self.in_flight) > 1  # it was not alone: with fewer in flight it may pass
        elif succeeded and self.limit < self.ceiling and (self._waiters or self.in_flight >= int(self.limit)):
            self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
        self._free()
        return explained

    def slot(self) -> _Slot:
        """`async with` it to hold a slot for the block (for calls that never report overload)."""
        return _Slot(self)

    def _grant(self) -> Ticket:
        """Take a slot. The ticket is numbered now, not when the waiter resumes: a slot granted
        before a cut belongs to the window that cut."""
        self.in_flight += 1
        self._issued += 1
        return self._issued, self.in_flight

    def _free(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        """Hand free slots to the waiters in order (none while a Retry-After pause lasts)."""
        delay = self._resume_at - time.monotonic()
        if delay > 0:
            if self._waiters and self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(delay, self._resume)
            return
        while self._waiters and self.in_flight < int(self.limit):
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(self._grant())

    def _resume(self) -> None:
        self._timer = None
        self._wake()


class _Slot:
    """One slot held for an `async with` block."""

    def __init__(self, limiter: Limiter):
        self._limiter = limiter
        self._ticket: Ticket = (0, 0)

    async def __aenter__(self) -> None:
        self._ticket = await self._limiter.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._limiter.release(self._ticket, succeeded=True)
