"""JavaScript's string and array methods, as nunjucks templates call them on values.

In promptfoo a template runs in JavaScript, so `{{ name.toUpperCase() }}`, `{{ text.split("\\n") }}`
or `{{ tags.join(", ") }}` call JavaScript's methods. `method` gives the one a template asks for,
with JavaScript's meaning where a Python method of the same name differs (`replace` replaces the
first match only; `split()` without a separator keeps the text whole). Indexes count characters.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jinja2

from ci_grade.js_values import JS_WHITESPACE
from ci_grade.templating.javascript import to_string


def _index(position: Any, length: int, default: int) -> int:
    """A JavaScript index argument: negative counts from the end (as `slice` reads it)."""
    if position is None or isinstance(position, jinja2.Undefined):
        return default
    value = int(position)
    return max(0, length + value) if value < 0 else min(value, length)


def _slice(value: Any, start: Any = None, end: Any = None) -> Any:
    return value[_index(start, len(value), 0) : _index(end, len(value), len(value))]


def _substring(text: str, start: Any = 0, end: Any = None) -> str:
    def clamp(position: Any, default: int) -> int:
        return default if position is None or isinstance(position, jinja2.Undefined) else max(0, min(int(position), len(text)))

    a, b = clamp(start, 0), clamp(end, len(text))
    return text[min(a, b) : max(a, b)]


def _split(text: str, separator: Any = None, limit: Any = None) -> list[str]:
    if separator is None or isinstance(separator, jinja2.Undefined):
        parts = [text]
    elif separator == "":
        parts = list(text)
    else:
        parts = text.split(str(separator))
    return parts if limit is None else parts[: int(limit)]


def _index_of(value: Any, item: Any, start: Any = 0) -> int:
    if isinstance(value, str):
        return value.find(str(item), int(start or 0))
    return next((i for i in range(int(start or 0), len(value)) if value[i] == item), -1)


def _at(value: Any, position: Any) -> Any:
    index = int(position)
    return value[index] if -len(value) <= index < len(value) else None


_STRING: dict[str, Callable[..., Any]] = {
    "toUpperCase": str.upper,
    "toLowerCase": str.lower,
    "trim": lambda text: text.strip(JS_WHITESPACE),
    "trimStart": lambda text: text.lstrip(JS_WHITESPACE),
    "trimEnd": lambda text: text.rstrip(JS_WHITESPACE),
    "startsWith": lambda text, part, position=0: text.startswith(str(part), int(position or 0)),
    "endsWith": lambda text, part: text.endswith(str(part)),
    "includes": lambda text, part: str(part) in text,
    "indexOf": _index_of,
    "lastIndexOf": lambda text, part: text.rfind(str(part)),
    "slice": _slice,
    "substring": _substring,
    "charAt": lambda text, position=0: text[int(position)] if 0 <= int(position) < len(text) else "",
    "at": _at,
    "split": _split,
    "replace": lambda text, old, new: text.replace(str(old), to_string(new), 1),
    "replaceAll": lambda text, old, new: text.replace(str(old), to_string(new)),
    "repeat": lambda text, count: text * int(count),
    "padStart": lambda text, width, fill=" ": (str(fill) * int(width))[: max(0, int(width) - len(text))] + text,
    "padEnd": lambda text, width, fill=" ": text + (str(fill) * int(width))[: max(0, int(width) - len(text))],
    "concat": lambda text, *more: text + "".join(to_string(part) for part in more),
    "toString": lambda text: text,
}
_ARRAY: dict[str, Callable[..., Any]] = {
    "join": lambda items, separator=",": str(separator).join("" if item is None else to_string(item) for item in items),
    "indexOf": _index_of,
    "includes": lambda items, item: item in items,
    "slice": _slice,
    "at": _at,
    "concat": lambda items, *more: [*items, *(x for part in more for x in (part if isinstance(part, list | tuple) else [part]))],
    "toString": to_string,
}


def method(value: Any, name: str) -> Callable[..., Any] | None:
    """JavaScript's method `name` bound to `value` (text, or a list), or None."""
    table = _STRING if isinstance(value, str) else _ARRAY if isinstance(value, list | tuple) else None
    found = table.get(name) if table else None
    return functools.partial(found, value) if found else None
