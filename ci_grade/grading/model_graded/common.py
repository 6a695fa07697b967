"""What every model-graded assertion shares: grader calls with accounting, and prompt choice."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ci_grade.errors import GraderError, VerdictError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.grader_prompts import load_override, load_template, render_override, template_vars
from ci_grade.providers.base import CallContext, Capability, Provider, ProviderResponse
from ci_grade.results.usage import TokenUsage


@dataclass
class Tally:
    """Token usage, cost and grader ids summed over one assertion's grader calls."""

    token_usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0
    graders: list[str] = field(default_factory=list)

    def add(self, usage: TokenUsage | None, cost: float | None, grader: str) -> None:
        self.token_usage.add(usage)
        self.cost += cost or 0.0
        if grader not in self.graders:
            self.graders.append(grader)

    @property
    def grader(self) -> str | None:
        return ", ".join(self.graders) or None

    def grade(self, passed: bool, score: float, reason: str, **extra: Any) -> Grade:
        return Grade(passed, score, reason, token_usage=self.token_usage, cost=self.cost, grader=self.grader, **extra)

    def error(self, reason: str, metadata: dict[str, Any] | None = None) -> GraderError:
        return GraderError(reason, token_usage=self.token_usage, cost=self.cost, grader=self.grader, metadata=metadata)

    @contextlib.contextmanager
    def reading(self, reply: Any, prefix: str = "", **metadata: Any) -> Iterator[None]:
        """Turn a VerdictError raised while reading `reply` into a grader error that carries the reply."""
        try:
            yield
        except VerdictError as exc:
            raise self.error(f"{prefix}{exc}", {**metadata, "graderReply": excerpt(reply)}) from None


def provider_for(ctx: AssertionContext, kind: Capability) -> Provider:
    return ctx.run.graders.resolve(kind, ctx.grader_ref, ctx.type)


async def ask(ctx: AssertionContext, prompt: str, tally: Tally, *, schema: dict[str, Any] | None = None, what: str = "grader", provider: Provider | None = None) -> Any:
    """One text grader call; an error or an empty reply raises GraderError (with the usage so far)."""
    return (await call_grader(ctx, prompt, tally, schema=schema, what=what, provider=provider)).output


async def call_grader(ctx: AssertionContext, prompt: str, tally: Tally, *, schema: dict[str, Any] | None = None, what: str = "grader", provider: Provider | None = None) -> ProviderResponse:
    """Like `ask`, but returns the whole response (for graders that read its metadata).

    `provider` overrides the resolved text grader (e.g. a web-search grader).
    """
    provider = provider or provider_for(ctx, "text")
    response = await provider.call(prompt, CallContext(vars=ctx.vars, prompt_label=ctx.prompt_label, response_schema=schema))
    tally.add(response.token_usage, response.cost, provider.describe())
    if response.error:
        raise tally.error(f"{what} call to {provider.describe()} failed: {response.error}")
    output = response.output
    if output is None or (isinstance(output, str) and not output.strip()):
        raise tally.error(f"{what} call to {provider.describe()} returned an empty reply")
    return response


async def embed(ctx: AssertionContext, text: str, tally: Tally) -> list[float]:
    """One embedding call; errors and empty vectors raise GraderError."""
    provider = provider_for(ctx, "embedding")
    response = await provider.embed(text)
    tally.add(response.token_usage, response.cost, provider.describe())
    if response.error:
        raise tally.error(f"embedding call to {provider.describe()} failed: {response.error}")
    if not response.embedding:
        raise tally.error(f"embedding call to {provider.describe()} returned no embedding")
    return response.embedding


def rubric_prompt_override(ctx: AssertionContext) -> Any:
    """The `rubricPrompt` that applies: the assertion's, else the test's (defaultTest merged in)."""
    for value in (ctx.assertion.rubricPrompt, ctx.test.options.rubricPrompt):
        if value not in (None, "", {}, []):
            return value
    return None


def grader_prompt(
    ctx: AssertionContext,
    name: str,
    variables: dict[str, Any],
    builtin_extra: dict[str, Any] | None = None,
    override: Any = None,
    *,
    inherit: bool = True,
) -> tuple[str, dict[str, Any] | None]:
    """The rendered grader prompt and the JSON schema to request (None for user overrides).

    `variables` are what an override may use (promptfoo's names); `builtin_extra` adds values
    only the built-in template uses (e.g. fenced copies of untrusted text). `override` replaces
    the `rubricPrompt` lookup; with `inherit=False` only `override` can replace the template.
    """
    raw = override if override is not None else (rubric_prompt_override(ctx) if inherit else None)
    if raw is not None:
        text = load_override(raw, ctx.run.base_dir, ctx.run.env_overrides)
        return render_override(text, variables, ctx.run.env_overrides), None
    template = load_template(name)
    ctx.run.templates[name] = template.hash
    return template.render({**template_vars(variables), **(builtin_extra or {})}), template.response_schema


def excerpt(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"
