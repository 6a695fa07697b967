"""Shards: a deterministic, balanced part of a plan that every shard computes on its own.

A plan's rows fall into groups: one test case x variable combination, with all its prompts,
providers and repeats (the rows select-best and max-score compare, and the rows a baseline folds
into one test). A group is never split. The groups are ordered by a hash of their stable key and
dealt one by one to the shard with the fewest rows so far (the lowest numbered on a tie), so shard
sizes in rows differ by at most one group, and the split depends on the plan alone: each shard of
a CI matrix computes the same split without talking to the others.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ci_grade.errors import UsageError

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (from 1) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, what: str = "--shard") -> Shard:
    """`K/N` with 1 <= K <= N; anything else is a usage error naming `what`."""
    match = _SPEC.fullmatch(text)
    if not match:
        raise UsageError(f"{what} must be K/N (e.g. 2/4: the second of four shards), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"{what} {text!r}: K must be from 1 to N and N at least 1")
    return Shard(index, count)


def deal(keys: list[str], sizes: list[int], count: int) -> list[int]:
    """The shard index (from 1) of each group, given each group's stable key and size in rows."""
    order = sorted(range(len(keys)), key=lambda g: (hashlib.sha256(keys[g].encode()).hexdigest(), g))
    loads = [0] * count
    assigned = [0] * len(keys)
    for group in order:
        target = min(range(count), key=lambda s: (loads[s], s))
        loads[target] += sizes[group]
        assigned[group] = target + 1
    return assigned
