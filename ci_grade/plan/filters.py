"""promptfoo's `--filter-*` flags: which tests, prompts and providers an eval runs.

Tests are kept in promptfoo's order of filters: metadata, description pattern, index range,
first N, random sample. A seeded sample (`--filter-sample-seed`) draws what promptfoo draws
with the same seed: its generator and its shuffle, step for step. Prompts and providers are kept
when a regular expression matches their label or id; a filter that keeps none is an error.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from ci_grade.config.command_line import CommandLineDefaults, parse_range
from ci_grade.config.models import Prompt, ProviderSpec
from ci_grade.errors import ConfigError, UsageError
from ci_grade.plan.cases import Case
from ci_grade.templating.nunjucks import js_string

T = TypeVar("T")


@dataclass(frozen=True)
class EvalFilters:
    """The filters of one eval (`--filter-*`, or the config's `commandLineOptions`)."""

    pattern: str | None = None
    metadata: Sequence[tuple[str, str]] = ()
    """`--filter-metadata KEY=VALUE`s, all of which a test must match."""
    range: str | None = None
    """`--filter-range START:END`: tests by zero-based index, END excluded (either may be left out)."""
    first_n: int | None = None
    sample: int | None = None
    sample_seed: int | None = None
    providers: str | None = None
    prompts: str | None = None
    earlier: Sequence[tuple[str, str]] = ()
    """(kind, path) of `--filter-failing`, `--filter-failing-only`, `--filter-errors-only` (see `earlier.py`)."""

    def completed_by(self, defaults: CommandLineDefaults) -> EvalFilters:
        """These filters, each one not given taken from the config's `commandLineOptions`."""
        earlier = (("failing", defaults.filter_failing), ("failing-only", defaults.filter_failing_only), ("errors-only", defaults.filter_errors_only))
        return replace(
            self,
            pattern=self.pattern or defaults.filter_pattern,
            metadata=self.metadata or defaults.filter_metadata,
            range=self.range if self.range is not None else defaults.filter_range,
            first_n=self.first_n if self.first_n is not None else defaults.filter_first_n,
            sample=self.sample if self.sample is not None else defaults.filter_sample,
            sample_seed=self.sample_seed if self.sample_seed is not None else defaults.filter_sample_seed,
            providers=self.providers or defaults.filter_providers,
            prompts=self.prompts or defaults.filter_prompts,
            earlier=self.earlier or tuple((kind, path) for kind, path in earlier if path),
        )


def select(cases: list[Case], filters: EvalFilters) -> list[Case]:
    """The cases the filters keep, in order (a sample: in the order it was drawn, as in promptfoo)."""
    if filters.metadata:
        cases = [c for c in cases if all(metadata_matches(c.test.metadata or {}, k, v) for k, v in filters.metadata)]
    if filters.pattern:
        pattern = _regex(filters.pattern, "--filter-pattern", ConfigError)
        cases = [c for c in cases if pattern.search(c.test.description or "")]
    if filters.range is not None:
        start, end = parse_range(filters.range)
        cases = cases[start:end]
    if filters.first_n is not None:
        cases = cases[: filters.first_n]
    if filters.sample is not None:
        cases = sample(cases, filters.sample, filters.sample_seed)
    return cases


def metadata_matches(metadata: dict[str, object], key: str, expected: str) -> bool:
    """promptfoo's rule: the value (or one item of a list) holds `expected` in its JavaScript text."""
    value = metadata.get(key)
    items = value if isinstance(value, list) else [value]
    return any(item is not None and expected in js_string(item) for item in items)


def sample(items: list[T], count: int, seed: int | None) -> list[T]:
    """`count` items drawn at random (promptfoo's Fisher-Yates shuffle, then the first `count`)."""
    draw = seeded_random(seed) if seed is not None else random.random
    shuffled = list(items)
    for i in range(len(shuffled) - 1, 0, -1):
        j = int(draw() * (i + 1))
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    return shuffled[:count]


def seeded_random(seed: int) -> Callable[[], float]:
    """promptfoo's seeded generator (FNV-1a over the seed's digits, then a mulberry32-style
    mix), in JavaScript's 32-bit arithmetic: the same seed gives the same numbers."""
    state = 2166136261
    for char in str(seed):
        state = _imul(state ^ ord(char), 16777619)

    def draw() -> float:
        nonlocal state
        state = _int32(state + 1831565813)
        value = _imul(state ^ (_uint32(state) >> 15), state | 1)
        value = _int32(value) ^ _int32(value + _imul(value ^ (_uint32(value) >> 7), value | 61))
        return _uint32(value ^ (_uint32(value) >> 14)) / 4294967296

    return draw


def _uint32(value: int) -> int:
    return value & 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def _imul(a: int, b: int) -> int:
    return _int32(_uint32(a) * _uint32(b))


def provider_filter(text: str | None, providers: list[ProviderSpec]) -> Callable[[ProviderSpec], bool]:
    """`--filter-providers`: providers whose id or label the regular expression matches."""
    return _name_filter(text, "--filter-providers", "provider", providers, lambda p: [p.id, p.label or ""], lambda p: p.label or p.id)


def prompt_filter(text: str | None, prompts: list[Prompt]) -> Callable[[Prompt], bool]:
    """`--filter-prompts`: prompts whose label or id the regular expression matches."""
    return _name_filter(text, "--filter-prompts", "prompt", prompts, lambda p: [p.label, p.id or ""], lambda p: p.label)


def _name_filter(text: str | None, flag: str, noun: str, items: list[T], names: Callable[[T], list[str]], shown: Callable[[T], str]) -> Callable[[T], bool]:
    if not text:
        return lambda item: True
    pattern = _regex(text, flag, UsageError)

    def wanted(item: T) -> bool:
        return any(name and pattern.search(name) for name in names(item))

    if not any(wanted(item) for item in items):
        raise UsageError(f"{flag} {text!r} matches no {noun} ({noun}s are {[shown(item) for item in items]})")
    return wanted


def _regex(text: str, flag: str, error: type[ConfigError] | type[UsageError]) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise error(f"{flag} {text!r} is not a valid regular expression: {exc}") from None
