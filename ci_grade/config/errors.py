"""Config mistakes as one-line errors: pydantic's errors turned into file, line and key path, and the
small descriptions of values every message uses."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ci_grade.config.sources import SourceMap, format_path
from ci_grade.errors import ConfigError


def validation_error(exc: ValidationError, root: Any, sources: SourceMap, fallback_file: str | None, prefix: tuple[Any, ...] = ()) -> ConfigError:
    """The first pydantic error as a one-line ConfigError with file, line and key path."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc, union = _data_path(root, first)
    others = len({_data_path(root, e)[0] for e in errors} - {loc})
    where = sources.locate_path(root, loc)
    more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
    if union and first["type"] in ("string_type", "int_type", "float_type", "bool_type"):
        first = {**first, "type": "scalar_type"}  # a union of plain types: one message for all of them
    return ConfigError(
        _message(first) + more,
        file=where.file if where else fallback_file,
        line=where.line if where else None,
        path=format_path(prefix + loc) or None,
    )


def _data_path(root: Any, error: ErrorDetails) -> tuple[tuple[Any, ...], bool]:
    """A pydantic error location as a path in the data, and whether a union member's name (the
    `str` in `env.X.str`) was dropped from it."""
    loc = [part for part in error["loc"] if not (isinstance(part, str) and part.startswith("function-"))]
    out: list[Any] = []
    node: Any = root
    for index, part in enumerate(loc):
        found = (isinstance(node, dict) and part in node) or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        if found:
            node = node[part]
        elif not (error["type"] == "missing" and index == len(loc) - 1):
            return tuple(out), True
        out.append(part)
    return tuple(out), False


def _message(error: ErrorDetails) -> str:
    kind, value = error["type"], error.get("input")
    got = f", got {describe(value)}"
    if kind == "missing":
        return "is required"
    if kind == "scalar_type":
        return "expected a string, number or boolean" + got
    if kind in ("float_parsing", "float_type"):
        return "expected a number" + got
    if kind == "finite_number":
        return "expected a finite number" + got
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "expected a whole number" + got
    if kind == "string_type":
        return "expected a string" + got
    if kind in ("bool_parsing", "bool_type"):
        return "expected true or false" + got
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "expected a mapping" + got
    if kind == "list_type":
        return "expected a list" + got
    if kind in ("greater_than_equal", "greater_than"):
        bound = error.get("ctx", {}).get("ge", error.get("ctx", {}).get("gt"))
        return f"must be at least {bound:g}" + got
    return str(error["msg"]) + got


def describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def kind_name(kind: type) -> str:
    names: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    return names.get(kind, kind.__name__)


def suggest(name: str, choices: set[str] | frozenset[str]) -> str:
    """' (did you mean X?)' for a near-miss, else ''."""
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
