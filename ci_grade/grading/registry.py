"""The assertion registry: one entry per assertion type, keyed by its promptfoo name.

Add a type by decorating an async handler in any module of the `ci_grade.grading` package:

    @assertion("contains")
    async def contains(ctx: AssertionContext) -> Grade: ...

A handler grades the base check; the engine applies `not-` (unless the handler declares
`handles_inverse`), weights, thresholds at test level, metrics and error handling.
Comparison types (`select-best`, `max-score`) grade all outputs of a test row together.
"""

from __future__ import annotations

import importlib
import pkgutil
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
    "ci_grade.grading.text",
    "ci_grade.grading.scripts",
    "ci_grade.grading.structured",
    "ci_grade.grading.metrics",
    "ci_grade.grading.runtime",
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
