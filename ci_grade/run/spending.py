"""What a plan will call and may spend, found without calling anything.

Two users: a run under a budget (`--max-cost`) refuses, before any call, every provider and
grader whose price is unknown (`check_prices`); `--dry-run` prints the plan's calls per provider,
how many the response cache already holds, estimated tokens, cost and time (`estimate`).

Estimates: a prompt's tokens are its rendered text's length / 4 (a grader's: its template, the
assertion's value and the expected reply); a reply's tokens are, in order, what the provider's
replies averaged in the baseline (`observed`), what the cached reply for the same call holds,
the config's `max_tokens` (an upper bound), else `ASSUMED_REPLY_TOKENS`; a grader's verdict is taken as `ASSUMED_VERDICT_TOKENS`. Time is calls x latency (the baseline's median, else
`ASSUMED_LATENCY_MS`) spread over the run's concurrency. Each grader call counts once per
model-graded assertion (types that ask several times, such as g-eval, ask more).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ci_grade.config.models import Assertion, ProviderSpec
from ci_grade.errors import CiGradeError, UsageError
from ci_grade.grading import registry
from ci_grade.grading.grader_prompts import load_template
from ci_grade.grading.graders import GraderResolver
from ci_grade.plan.build import Plan, PlannedRow
from ci_grade.providers.base import Provider
from ci_grade.providers.budget import prompt_tokens
from ci_grade.providers.cache import ResponseCache
from ci_grade.providers.limiter import ADAPTIVE_START
from ci_grade.providers.registry import ProviderPool, as_spec
from ci_grade.run.conversation import template_of
from ci_grade.templating import nunjucks

ASSUMED_REPLY_TOKENS = 256
ASSUMED_VERDICT_TOKENS = 64
ASSUMED_LATENCY_MS = 1000.0
Role = Literal["target", "grader"]


@dataclass(frozen=True)
class Observed:
    """A provider's calls as an earlier run measured them (the baseline's)."""

    reply_tokens: float
    latency_ms: float | None = None


@dataclass
class Calls:
    """One provider's calls in a plan, as a target or as a grader."""

    provider: str
    role: Role
    price: tuple[float, float] | None
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    reply_tokens: int = 0
    bases: set[str] = field(default_factory=set)
    """Where the reply tokens come from: baseline, cache, max_tokens, assumed."""
    latency_ms: float = ASSUMED_LATENCY_MS

    @property
    def cost(self) -> float | None:
        """Estimated USD for the calls not in the cache (None: the price is unknown)."""
        if self.price is None:
            return None
        return self.prompt_tokens * self.price[0] + self.reply_tokens * self.price[1]

    def add(self, prompt: int, reply: int, basis: str) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.reply_tokens += reply
        self.bases.add(basis)


@dataclass
class SpendingPlan:
    """The calls a plan makes, per provider, and what they may cost and take."""

    rows: int
    concurrency: int
    providers: dict[tuple[Role, str], Calls] = field(default_factory=dict)
    recorded: int = 0
    """Rows with a recorded output (`providerOutput`): no provider call."""
    ungraded: list[str] = field(default_factory=list)
    """Assertions whose grader cannot be resolved (they will be errors)."""

    def calls(self, role: Role) -> int:
        return sum(c.calls for c in self.providers.values() if c.role == role)

    def cached(self, role: Role) -> int:
        return sum(c.cached for c in self.providers.values() if c.role == role)

    @property
    def cost(self) -> float | None:
        costs = [c.cost for c in self.providers.values()]
        return None if any(cost is None for cost in costs) else math.fsum(cost or 0.0 for cost in costs)

    @property
    def seconds(self) -> float:
        """Wall time: every uncached call's latency, spread over the concurrency."""
        busy = math.fsum((c.calls - c.cached) * c.latency_ms for c in self.providers.values())
        return busy / 1000 / max(1, self.concurrency)


def _grader_kind(assertion: Assertion) -> registry.GraderKind | None:
    spec = registry.get(assertion.base_type)
    return spec.grader if spec is not None else None


def _assertions(assertions: list[Assertion] | None) -> Iterator[Assertion]:
    for assertion in assertions or []:
        yield assertion
        yield from _assertions(assertion.assert_)


@cache
def _template_tokens(prompt: str | None) -> int:
    """Tokens of a built-in grader template's messages, before the values are put in."""
    if not prompt:
        return 0
    try:
        template = load_template(prompt)
    except (OSError, CiGradeError):
        return 0
    return prompt_tokens("".join(content for _, content in template.messages))


class _Walker:
    """Resolves the providers a plan's rows call, as the run would (no call is made)."""

    def __init__(self, env: Mapping[str, str], base_dir: Path, cache: ResponseCache | None):
        self.pool = ProviderPool(env, base_dir=base_dir, cache=cache)
        self.graders = GraderResolver(self.pool, env)

    def target(self, row: PlannedRow) -> Provider | None:
        if row.test.providerOutput is not None:
            return None
        spec: ProviderSpec = as_spec(row.test.provider) if row.test.provider is not None else row.provider
        return self.pool.get(spec)

    def graders_of(self, row: PlannedRow) -> Iterator[tuple[Assertion, Provider | None, str | None]]:
        """Each model-graded assertion with its grader, or None and why it has none."""
        for assertion in _assertions(row.test.assert_):
            kind = _grader_kind(assertion)
            if kind is None:
                continue
            ref = assertion.provider if assertion.provider is not None else row.test.options.provider
            try:
                if assertion.base_type == "search-rubric":
                    yield assertion, self.graders.resolve_search(ref, assertion.type)[0], None
                else:
                    yield assertion, self.graders.resolve(kind, ref, assertion.type), None
            except CiGradeError as exc:
                yield assertion, None, str(exc)

    def close(self) -> None:
        asyncio.run(self.pool.aclose())


def check_prices(plan: Plan, env: Mapping[str, str], base_dir: Path) -> None:
    """Under a budget, every provider and grader the plan calls must have a known price: a
    UsageError (exit 2) names those that do not, before any call."""
    walker = _Walker(env, base_dir, None)
    unpriced: dict[str, str] = {}
    try:
        for row in plan.rows:
            target = walker.target(row)
            if target is not None and target.price() is None:
                unpriced.setdefault(target.id, "provider")
            for _, grader, _ in walker.graders_of(row):
                if grader is not None and grader.price() is None:
                    unpriced.setdefault(grader.id, "grader")
    finally:
        walker.close()
    if unpriced:
        listed = ", ".join(f"{name} ({role})" for name, role in unpriced.items())
        raise UsageError(
            f"--max-cost needs a price for every model it bounds, and these have none: {listed}. "
            "Give each its price in USD per token in its config (cost, or inputCost and outputCost, as promptfoo reads them), e.g. "
            "{id: ..., config: {inputCost: 0.000002, outputCost: 0.000008}}; cost: 0 for a free local model"
        )


def estimate(
    plan: Plan,
    env: Mapping[str, str],
    base_dir: Path,
    *,
    cache: ResponseCache | None,
    concurrency: int | None,
    env_overrides: dict[str, str] | None = None,
    observed: Mapping[str, Observed] | None = None,
) -> SpendingPlan:
    """The plan's calls, tokens, cost and time, per provider; nothing is called."""
    observed = observed or {}
    walker = _Walker(env, base_dir, cache)
    spending = SpendingPlan(rows=len(plan.rows), concurrency=concurrency or ADAPTIVE_START)

    def entry(provider: Provider, role: Role, name: str) -> Calls:
        calls = spending.providers.get((role, name))
        if calls is None:
            seen = observed.get(name)
            calls = Calls(provider=name, role=role, price=provider.price())
            if seen is not None and seen.latency_ms:
                calls.latency_ms = seen.latency_ms
            spending.providers[(role, name)] = calls
        return calls

    try:
        for row in plan.rows:
            reply = _target(row, walker, entry, observed, env_overrides, spending)
            for assertion, grader, problem in walker.graders_of(row):
                if grader is None:
                    spending.ungraded.append(f"{assertion.type}: {problem}")
                    continue
                name = grader.describe()
                value = assertion.value if isinstance(assertion.value, str) else str(assertion.value or "")
                spec = registry.get(assertion.base_type)
                entry(grader, "grader", name).add(_template_tokens(spec.prompt if spec else None) + prompt_tokens(value) + reply, ASSUMED_VERDICT_TOKENS, "assumed")
    finally:
        walker.close()
    return spending


def _target(row: PlannedRow, walker: _Walker, entry: Any, observed: Mapping[str, Observed], env_overrides: dict[str, str] | None, spending: SpendingPlan) -> int:
    """Counts the row's provider call; returns the reply tokens it expects (what graders read)."""
    provider = walker.target(row)
    if provider is None:
        spending.recorded += 1
        output = row.test.providerOutput
        return prompt_tokens(output if isinstance(output, str) else str(output))
    name = (row.provider.label or row.provider.id) if row.test.provider is None else provider.id
    calls: Calls = entry(provider, "target", name)
    template = template_of(row)
    try:
        prompt = nunjucks.render_prompt(template, row.vars, env_overrides)
    except CiGradeError:
        prompt = template
    hit = provider.cached_reply(prompt)
    if hit is not None:
        calls.calls += 1
        calls.cached += 1
        return hit.token_usage.completion or prompt_tokens(str(hit.output or ""))
    seen = observed.get(name)
    if seen is not None:
        tokens, basis = round(seen.reply_tokens), "baseline"
    elif provider.max_output_tokens():
        tokens, basis = provider.max_output_tokens() or 0, "max_tokens"
    else:
        tokens, basis = ASSUMED_REPLY_TOKENS, "assumed"
    calls.add(prompt_tokens(prompt), tokens, basis)
    return tokens

