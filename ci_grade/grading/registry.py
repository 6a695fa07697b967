"""The assertion registry: every assertion type, keyed by its promptfoo name, with its metadata.

A type is one decorated async function in any module of the `ci_grade.grading` package; what the
engine and the config checks need to know about it is declared right there:

    @assertion("levenshtein", value=ValueSpec("{type} needs a string value (the expected text)", STRING),
               default_threshold=5, csv_threshold=0.75)
    async def levenshtein(ctx: AssertionContext) -> Grade: ...

    @assertion("factuality", grader="text", prompt="factuality", value=ValueSpec(...))
    async def factuality(ctx: AssertionContext, grader: GraderSession) -> Measure: ...

Three shapes of handler:
- a *check* (`ctx -> Grade`) grades the base check; the engine applies `not-` unless it declares
  `handles_inverse`;
- a *graded* type (it names its grader `prompt`, `ctx, session -> Measure`) only reads its replies
  into a score; the engine renders, asks, parses and tallies through the session, then applies the
  prompt's pass rule, the threshold (`default_threshold` when the config sets none) and `not-`;
- a *comparison* (`comparison=True`, `[ctx] -> [Grade]`) grades all outputs of one test together.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from ci_grade.config.assertion_types import PROMPTFOO_ASSERTION_TYPES, AssertionVocabulary
from ci_grade.config.models import Assertion
from ci_grade.errors import GraderError

if TYPE_CHECKING:
    pass

Handler = Callable[..., Awaitable[Any]]
GraderKind = Literal["text", "embedding", "classification", "moderation"]


class Kind(Enum):
    """What an assertion's `value` may hold (after rendering)."""

    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    LIST = "list"
    MAPPING = "mapping"

    def holds(self, value: Any) -> bool:
        if self is Kind.STRING:
            return isinstance(value, str)
        if self is Kind.BOOLEAN:
            return isinstance(value, bool)
        if self is Kind.NUMBER:
            return isinstance(value, int | float) and not isinstance(value, bool)
        if self is Kind.LIST:
            return isinstance(value, list)
        return isinstance(value, dict)


STRING = (Kind.STRING,)
MAPPING = (Kind.MAPPING,)
LIST = (Kind.LIST,)
SCALAR = (Kind.STRING, Kind.NUMBER, Kind.BOOLEAN)


@dataclass(frozen=True)
class ValueSpec:
    """Whether a value is required, of which kinds, and what to say when it is not right.

    `message` may use `{type}` (as written, e.g. `not-contains`) and `{base}` (without `not-`).
    A value is missing when it is absent or empty text (blank text too, unless `blank` allows it);
    a required value is also missing as an empty list. With `kinds`, a value of another kind is
    refused with the same message: at run time, as an ERROR row (promptfoo's behaviour), or with
    `at_load` already when the config is loaded, before any call, for a value that is not text
    (text is rendered first, so only its rendering has a final kind).
    """

    message: str
    kinds: tuple[Kind, ...] = ()
    required: bool = True
    blank: bool = False
    at_load: bool = False

    def check(self, value: Any, type_name: str, base: str) -> None:
        """Raise GraderError when `value` does not fit."""
        empty = value is None or value == "" or (not self.blank and isinstance(value, str) and not value.strip())
        if empty and not self.required:
            return
        if empty or (self.required and value == []) or (self.kinds and not any(kind.holds(value) for kind in self.kinds)):
            raise GraderError(self.message.format(type=type_name, base=base))


@dataclass(frozen=True)
class AssertionType:
    """A registered type: its handler and what the engine and the config checks need to know."""

    name: str
    handler: Handler
    value: ValueSpec | None = None
    """What `value` must be (None: the handler reads it, or it takes none)."""
    default_threshold: float | None = None
    """The threshold when the config sets none (None: no threshold unless one is set)."""
    csv_threshold: float | None = None
    """The threshold a CSV `__expected` cell of this type gets when it names none (promptfoo's grammar)."""
    grader: GraderKind | None = None
    """The kind of grader provider it calls (None: no grader)."""
    prompt: str | None = None
    """Its grader prompt (`grading/prompts/<prompt>.yaml`), whose `scoring:` rules its verdict."""
    handles_inverse: bool = False
    invertible: bool = True
    model_graded: bool = False
    comparison: bool = False
    reproducible: bool = True
    """Whether the same output always gets the same verdict (not for model graders, webhooks or latency)."""
    uses_trace: bool = False
    """Whether it grades the row's trace (the row then waits for late spans)."""
    keys: tuple[str, ...] = ()
    """Keys of its own that the assertion may carry besides the common ones (e.g. meteor's `alpha`)."""

    @property
    def graded(self) -> bool:
        """Whether the handler returns a Measure that the engine scores (a prompt-based type)."""
        return self.prompt is not None


_REGISTRY: dict[str, AssertionType] = {}
_loaded = False


def assertion(
    name: str,
    *,
    aliases: tuple[str, ...] = (),
    value: ValueSpec | None = None,
    default_threshold: float | None = None,
    csv_threshold: float | None = None,
    grader: GraderKind | None = None,
    prompt: str | None = None,
    handles_inverse: bool = False,
    invertible: bool = True,
    model_graded: bool = False,
    comparison: bool = False,
    reproducible: bool = True,
    uses_trace: bool = False,
    keys: tuple[str, ...] = (),
) -> Callable[[Handler], Handler]:
    """Register `handler` for the assertion type `name` (and its aliases), with its metadata."""

    def register(handler: Handler) -> Handler:
        for key in (name, *aliases):
            if key in _REGISTRY:
                raise ValueError(f"assertion type {key!r} registered twice")
            is_model_graded = model_graded or grader is not None or prompt is not None
            _REGISTRY[key] = AssertionType(
                key, handler, value, default_threshold, csv_threshold, grader, prompt,
                handles_inverse or prompt is not None, invertible, is_model_graded, comparison, reproducible and not is_model_graded,
                uses_trace, keys,
            )
        return handler

    return register


def load_all() -> None:
    """Import every module of the grading package once, so every `@assertion` has registered."""
    global _loaded
    if _loaded:
        return
    import ci_grade.grading as package

    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)
    _loaded = True


def get(name: str) -> AssertionType | None:
    """The registered type for a base name (without `not-`)."""
    load_all()
    return _REGISTRY.get(name)


def names() -> set[str]:
    load_all()
    return set(_REGISTRY)


def reproducible(assertions: Iterable[Assertion]) -> bool:
    """Whether these assertions (assert-set children too) give the same output the same verdict."""
    for item in assertions:
        if item.type == "assert-set":
            if not reproducible(item.assert_ or []):
                return False
            continue
        spec = get(item.base_type)
        if spec is None or not spec.reproducible:
            return False
    return True


def uses_trace(assertions: Iterable[Assertion]) -> bool:
    """Whether grading these assertions reads the row's trace: a trace type, a script assertion
    whose code is in a file (as promptfoo decides: it may read `context.trace`), or inline script
    code that names `trace`."""
    for item in assertions:
        if item.type == "assert-set":
            if uses_trace(item.assert_ or []):
                return True
            continue
        spec = get(item.base_type)
        if (spec is not None and spec.uses_trace) or (item.base_type in ("python", "javascript") and isinstance(item.value, str) and (item.value.startswith("file://") or "trace" in item.value)):
            return True
    return False


def vocabulary() -> AssertionVocabulary:
    """What config reading needs to know about assertion types (names, CSV thresholds)."""
    load_all()
    return AssertionVocabulary(
        names=PROMPTFOO_ASSERTION_TYPES | frozenset(_REGISTRY),
        csv_thresholds={name: spec.csv_threshold for name, spec in _REGISTRY.items() if spec.csv_threshold is not None},
    )

