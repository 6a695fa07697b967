"""The assertion registry: one entry per assertion type, keyed by its promptfoo name.

Add a type by decorating an async handler in any module listed in `_MODULES`:

    @assertion("contains")
    async def contains(ctx: AssertionContext) -> Grade: ...

A handler grades the base check; the engine applies `not-` (unless the handler declares
`handles_inverse`), weights, thresholds at test level, metrics and error handling.
Comparison types (`select-best`, `max-score`) grade all outputs of a test row together.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ci_grade.grading.context import AssertionContext, Grade

Handler = Callable[["AssertionContext"], Awaitable["Grade"]]
ComparisonHandler = Callable[[list["AssertionContext"]], Awaitable[list["Grade"]]]


@dataclass(frozen=True)
class AssertionType:
    name: str
    handler: Handler | ComparisonHandler
    handles_inverse: bool = False
    invertible: bool = True
    model_graded: bool = False
    comparison: bool = False


_REGISTRY: dict[str, AssertionType] = {}
_MODULES = (
    "ci_grade.grading.deterministic",
    "ci_grade.grading.scripts",
    "ci_grade.grading.structured",
    "ci_grade.grading.text_metrics",
    "ci_grade.grading.runtime_checks",
    "ci_grade.grading.model_graded",
)
_loaded = False


def assertion(
    name: str,
    *,
    aliases: tuple[str, ...] = (),
    handles_inverse: bool = False,
    invertible: bool = True,
    model_graded: bool = False,
    comparison: bool = False,
) -> Callable[[Any], Any]:
    """Register an async handler for the assertion type `name` (and its aliases)."""

    def register(handler: Any) -> Any:
        for key in (name, *aliases):
            if key in _REGISTRY:
                raise ValueError(f"assertion type {key!r} registered twice")
            _REGISTRY[key] = AssertionType(key, handler, handles_inverse, invertible, model_graded, comparison)
        return handler

    return register


def load_all() -> None:
    """Import every module that registers assertion types (once)."""
    global _loaded
    if _loaded:
        return
    for module in _MODULES:
        importlib.import_module(module)
    _loaded = True


def get(name: str) -> AssertionType | None:
    """The registered type for a base name (without `not-`)."""
    load_all()
    return _REGISTRY.get(name)


def names() -> set[str]:
    load_all()
    return set(_REGISTRY)
