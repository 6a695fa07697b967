"""One assertion's grader calls: prompt choice and rendering, asking, parsing, and the accounting.

Every model-graded assertion talks to its graders through a `GraderSession`: it renders the
built-in prompt (or the user's `rubricPrompt`), asks the grader, reads the reply with the
handler's parse function, and sums the tokens, cost and grader ids of every call. A failed call,
an empty reply or a reply the parse function cannot read becomes a GraderError that carries the
usage so far and an excerpt of the reply, so a broken grader is an ERROR, never a verdict.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ci_grade.errors import GraderError, VerdictError
from ci_grade.grading.context import Grade
from ci_grade.grading.grader_prompts import (
    GraderTemplate,
    Scoring,
    load_override,
    load_template,
    render_override,
    template_vars,
)
from ci_grade.providers.base import CallContext, Capability, Provider, ProviderResponse
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    from ci_grade.grading.context import AssertionContext

T = TypeVar("T")


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
            raise self.error(f"{prefix}{exc.reason}", {**metadata, "graderReply": excerpt(reply)}) from None


class GraderSession(Tally):
    """The grader calls of one assertion (`ctx`), with their accounting."""

    def __init__(self, ctx: AssertionContext):
        super().__init__()
        self.ctx = ctx

    def provider(self, kind: Capability) -> Provider:
        """The grader serving `kind` for this assertion (a GraderError when there is none)."""
        return self.ctx.run.graders.resolve(kind, self.ctx.grader_ref, self.ctx.type)

    def template(self, name: str) -> GraderTemplate:
        """A built-in template, recorded (with its hash) as used by this run."""
        template = load_template(name)
        self.ctx.run.templates[name] = template.hash
        return template

    def scoring(self, name: str) -> Scoring:
        """The `scoring:` section of the built-in template `name`."""
        scoring = self.template(name).scoring
        if scoring is None:
            raise self.error(f"grader prompt {name!r} has no scoring section")
        return scoring

    def prompt(
        self,
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
        raw = override if override is not None else (self.ctx.rubric_prompt if inherit else None)
        if raw is not None:
            text = load_override(raw, self.ctx.run.base_dir, self.ctx.run.env_overrides)
            return render_override(text, variables, self.ctx.run.env_overrides), None
        template = self.template(name)
        return template.render({**template_vars(variables), **(builtin_extra or {})}), template.response_schema

    async def call(self, prompt: str, *, schema: dict[str, Any] | None = None, what: str = "grader", provider: Provider | None = None) -> ProviderResponse:
        """One text grader call; an error or an empty reply raises GraderError (with the usage so far).

        `provider` overrides the resolved text grader (e.g. a web-search grader).
        """
        provider = provider or self.provider("text")
        context = CallContext(vars=self.ctx.vars, prompt_label=self.ctx.prompt_label, response_schema=schema, traceparent=self.ctx.traceparent)
        response = await provider.call(prompt, context)
        self.add(response.token_usage, response.cost, provider.describe())
        if response.error:
            raise self.error(f"{what} call to {provider.describe()} failed: {response.error}")
        output = response.output
        if output is None or (isinstance(output, str) and not output.strip()):
            raise self.error(f"{what} call to {provider.describe()} returned an empty reply")
        return response

    async def ask(self, prompt: str, *, schema: dict[str, Any] | None = None, what: str = "grader") -> Any:
        """One text grader call; returns the reply (see `call`)."""
        return (await self.call(prompt, schema=schema, what=what)).output

    async def read(
        self,
        prompt: str,
        parse: Callable[[Any], T],
        *,
        schema: dict[str, Any] | None = None,
        what: str = "grader",
        prefix: str = "",
        **metadata: Any,
    ) -> T:
        """Ask, then read the reply with `parse`; an unreadable reply is a GraderError carrying it."""
        reply = await self.ask(prompt, schema=schema, what=what)
        with self.reading(reply, prefix, **metadata):
            return parse(reply)

    async def embed(self, text: str) -> list[float]:
        """One embedding call; errors and empty vectors raise GraderError."""
        provider = self.provider("embedding")
        response = await provider.embed(text)
        self.add(response.token_usage, response.cost, provider.describe())
        if response.error:
            raise self.error(f"embedding call to {provider.describe()} failed: {response.error}")
        if not response.embedding:
            raise self.error(f"embedding call to {provider.describe()} returned no embedding")
        return response.embedding

    async def similarity(self, expected: str, output: str) -> float:
        """One call to a grader that scores two texts itself; errors and non-numbers raise GraderError."""
        provider = self.provider("embedding")
        response = await provider.similarity(expected, output)
        self.add(None, None, provider.describe())
        if response.error:
            raise self.error(f"similarity call to {provider.describe()} failed: {response.error}")
        if response.similarity is None or not math.isfinite(response.similarity):
            raise self.error(f"similarity call to {provider.describe()} returned no similarity score")
        return response.similarity


def excerpt(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"
