"""nunjucks' own filters and tests, as jinja filters and tests (`nunjucks` installs them).

Where jinja's differ from nunjucks' or are missing: `round(2.5)` is `3`, `"12abc" | int` is `12`,
`"hi😀" | length` counts UTF-16 units, filters that list things return lists, a number, boolean or
object has no items, text filters work on JavaScript's text, and the tests use JavaScript's `%`,
`===` and comparisons (`javascript`). Each rule is pinned against nunjucks' own output in the tests.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jinja2
from markupsafe import Markup

from ci_grade.js_values import JS_WHITESPACE, array_index
from ci_grade.safe_text import utf16_units
from ci_grade.templating.javascript import (
    absent,
    binop,
    compare,
    numeric,
    strict_equal,
    to_number,
    to_string,
    truthy,
)

_INT_PREFIX = re.compile(rf"[{JS_WHITESPACE}]*([+-]?[0-9]+)")
_FLOAT_PREFIX = re.compile(rf"[{JS_WHITESPACE}]*([+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))")
_ESCAPES = {"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"}


def _text(value: Any) -> str:
    return "" if value is None or isinstance(value, jinja2.Undefined) else value if isinstance(value, str) else to_string(value)


def listed(filter_: Callable[..., Any]) -> Callable[..., Any]:
    """jinja's filter, returning a list where it returns an iterator (nunjucks returns arrays)."""

    @functools.wraps(filter_)
    def listed(*args: Any, **kwargs: Any) -> Any:
        result = filter_(*args, **kwargs)
        return list(result) if isinstance(result, Iterator) else result

    return listed


def _round(value: Any, precision: Any = 0, method: str = "common") -> float:
    factor = 10 ** (to_number(precision) if precision else 0)
    scaled = to_number(value) * factor
    if not math.isfinite(scaled):
        return scaled / factor
    floor = math.floor(scaled)
    rounded = math.ceil(scaled) if method == "ceil" else floor if method == "floor" else floor + (1 if scaled - floor >= 0.5 else 0)
    return rounded / factor


_NO_DEFAULT = object()
"""A filter's default left out: nunjucks then gives undefined (`+ 1` makes NaN), not null."""


def _int(value: Any, default: Any = _NO_DEFAULT, base: int = 10) -> Any:
    found = _INT_PREFIX.match(_text(value)) if base == 10 else None
    if found is None:
        try:
            return int(_text(value).strip(), base)
        except ValueError:
            return jinja2.Undefined() if default is _NO_DEFAULT else default
    return int(found[1])


def _float(value: Any, default: Any = _NO_DEFAULT) -> Any:
    found = _FLOAT_PREFIX.match(_text(value))
    if found:
        return float(found[1].replace("Infinity", "inf"))
    return jinja2.Undefined() if default is _NO_DEFAULT else default


def _length(value: Any) -> Any:
    if value is None or isinstance(value, jinja2.Undefined):
        return 0
    if isinstance(value, str):
        return len(utf16_units(value))
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return len(value)
    if isinstance(value, Iterator):
        return len(list(value))
    return jinja2.Undefined()  # a number's .length is undefined in JavaScript (`+ 1` gives NaN)


def _join(value: Any, separator: str = "", attribute: Any = None) -> str:
    items = [] if value is None else list(value)
    if attribute is not None:
        items = [item.get(attribute) if isinstance(item, Mapping) else getattr(item, str(attribute), None) for item in items]
    return _text(separator).join("" if item is None or isinstance(item, jinja2.Undefined) else to_string(item) for item in items)


def _truncate(value: Any, length: int = 255, killwords: bool = False, end: Any = None) -> Any:
    text, length = _text(value), int(length or 255)
    if isinstance(value, list | tuple) and len(value) <= length:
        return value  # nunjucks measures a list by its items, and gives back a short one as it is
    if len(text) <= length:
        return text
    if killwords:
        text = text[:length]
    else:
        cut = text.rfind(" ", 0, length + 1)
        text = text[: length if cut == -1 else cut]
    return text + ("..." if end is None else _text(end))


def _capitalize(value: Any) -> str:
    text = _text(value).lower()
    return text[:1].upper() + text[1:]


def _escape(value: Any) -> Markup:
    if isinstance(value, Markup):
        return value
    return Markup(re.sub(r"[&\"'<>\\]", lambda m: _ESCAPES[m[0]], _text(value)))


def _indent(value: Any, width: int = 4, first: bool = False) -> str:
    text = _text(value)
    if text == "":
        return ""
    pad = " " * int(width or 4)
    return "\n".join(line if i == 0 and not first else pad + line for i, line in enumerate(text.split("\n")))


def _nl2br(value: Any) -> str:
    return "" if value is None or isinstance(value, jinja2.Undefined) else re.sub(r"\r\n|\n", "<br />\n", _text(value))


def _abs(value: Any) -> Any:
    return numeric(abs(to_number(value)), value)


def _batch(value: Any, size: Any, fill: Any = None) -> list[list[Any]]:
    items, count = list(value), int(to_number(size))
    rows = [items[i : i + count] for i in range(0, len(items), count)] if count > 0 else []
    if rows and truthy(fill):
        rows[-1] += [fill] * (count - len(rows[-1]))
    return rows


def _list(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [{"key": key, "value": item} for key, item in value.items()]
    return list(value)


def _urlencode(value: Any) -> str:
    from urllib.parse import quote

    def encode(part: Any) -> str:  # encodeURIComponent: null and undefined are spelled out
        return quote(part if isinstance(part, str) else to_string(part), safe="-_.!~*'()")

    if isinstance(value, str):
        return encode(value)
    if isinstance(value, bool | int | float):
        return ""  # nothing to encode, as in nunjucks
    if isinstance(value, Mapping):
        return "&".join(f"{encode(key)}={encode(item)}" for key, item in value.items())
    return "&".join(f"{encode(_item(pair, 0))}={encode(_item(pair, 1))}" for pair in value)


def _item(value: Any, index: int) -> Any:
    """`value[index]` as JavaScript reads it (undefined where there is none)."""
    if isinstance(value, list | tuple | str) and index < len(value):
        return value[index]
    return jinja2.Undefined()


def _striptags(value: Any, linebreaks: bool = False) -> str:
    text = re.sub(r"</?([a-z][a-z0-9]*)\b[^>]*>|<!--[\s\S]*?-->", "", _text(value), flags=re.IGNORECASE).strip(JS_WHITESPACE)
    if linebreaks:
        text = re.sub(r"^ +| +$", "", text, flags=re.MULTILINE)
        return re.sub(r"\n\n\n+", "\n\n", re.sub(r" +", " ", text).replace("\r\n", "\n"))
    return re.sub(rf"[{JS_WHITESPACE}]+", " ", text)


def _center(value: Any, width: Any = 80) -> Any:
    """nunjucks' `center`: text (and a list, by its item count) padded to `width`; a number, a
    boolean or an object comes back as its JavaScript text, unpadded (its `.length` is undefined)."""
    if absent(value) or value is False:
        value = ""
    text = value if isinstance(value, str) else to_string(value)
    if not isinstance(value, str | list | tuple):
        return text
    spaces: float = (to_number(width) or 80) - (len(utf16_units(value)) if isinstance(value, str) else len(value))
    if not spaces > 0:
        return text
    return " " * math.ceil(spaces / 2 - spaces % 2) + text + " " * math.ceil(spaces / 2)


def _groupby(value: Any, attribute: Any) -> dict[str, list[Any]]:
    """nunjucks' `groupby`: an object from each item's `attribute` (a dotted path) as text to the
    items that have it, in first-seen order (integer-like keys first, as JavaScript orders them)."""
    groups: dict[str, list[Any]] = {}
    for item in () if isinstance(value, bool | int | float) or value is None else value:  # a number has no items
        key: Any = item
        for part in str(attribute).split("."):
            key = key.get(part) if isinstance(key, Mapping) else jinja2.Undefined() if key is None or isinstance(key, jinja2.Undefined) else getattr(key, part, jinja2.Undefined())
        groups.setdefault(to_string(key), []).append(item)
    return dict(sorted(groups.items(), key=lambda pair: (0, int(pair[0])) if array_index(pair[0]) else (1, 0)))


def _wordcount(value: Any) -> Any:
    if not truthy(value):
        return None  # nunjucks counts nothing in a false value (0, "", null), and says null
    words = re.findall(r"\w+", _text(value), re.ASCII)
    return len(words) if words else None


def _replace(value: Any, old: Any, new: Any, count: Any = None) -> Any:
    """nunjucks' `replace`: a number becomes text first; anything else that is not text comes
    back as it is (jinja would replace inside Python's rendering of it)."""
    if isinstance(old, int | float) and not isinstance(old, bool):
        old = to_string(old)
    if not isinstance(old, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = to_string(value)
    if not isinstance(value, str):
        return value
    limit = -1 if count is None or absent(count) else int(to_number(count))
    replaced = value.replace(old, _text(new), limit)
    return Markup(replaced) if isinstance(value, Markup) else replaced


def sequences_only(name: str, filter_: Callable[..., Any]) -> Callable[..., Any]:
    """jinja's list filter `name`, for a number, a boolean or an object (which have no items in
    nunjucks: jinja would fail on a number, or walk an object's keys) giving what nunjucks gives:
    an empty list, or undefined for `first` and `last`."""
    passed = 1 if getattr(filter_, "jinja_pass_arg", None) is not None else 0  # jinja's environment or context comes first

    @functools.wraps(filter_)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(args[passed], bool | int | float | Mapping):
            return jinja2.Undefined() if name in ("first", "last") else []
        return filter_(*args, **kwargs)

    return wrapped


FILTERS: dict[str, Callable[..., Any]] = {
    "upper": lambda value: _text(value).upper(),
    "lower": lambda value: _text(value).lower(),
    "trim": lambda value: _text(value).strip(JS_WHITESPACE),
    "string": lambda value: value if isinstance(value, str) else _text(value),  # JavaScript's toString()
    "safe": lambda value: value if isinstance(value, Markup) else Markup(_text(value)),
    "replace": _replace,
    "round": _round,
    "int": _int,
    "float": _float,
    "length": _length,
    "count": _length,
    "join": _join,
    "truncate": _truncate,
    "capitalize": _capitalize,
    "title": lambda value: " ".join(_capitalize(word) for word in _text(value).split(" ")),
    "escape": _escape,
    "e": _escape,
    "forceescape": lambda value: _escape(str(value) if isinstance(value, Markup) else value),
    "abs": _abs,
    "batch": _batch,
    "list": _list,
    "urlencode": _urlencode,
    "striptags": _striptags,
    "center": _center,
    "groupby": _groupby,
    "indent": _indent,
    "nl2br": _nl2br,
    "wordcount": _wordcount,
}
"""nunjucks' filters where jinja's differ or are missing."""
LISTING = ("reverse", "slice", "select", "reject", "selectattr", "rejectattr", "map", "unique")
"""jinja filters that return iterators where nunjucks returns arrays."""
SEQUENCES = ("first", "last", "sort", "reverse", "batch", "select", "reject")
"""Filters that give nothing for a number, a boolean or an object (`sequences_only`)."""


def _remainder(value: Any, divisor: Any) -> float:
    result = binop("%", value, divisor)
    return result if isinstance(result, float) else float(result)


def _comparing(operator: str) -> Callable[[Any, Any], bool]:
    return lambda value, other: compare(operator, value, other)


TESTS: dict[str, Callable[..., bool]] = {
    "null": lambda value: value is None,
    "truthy": truthy,
    "falsy": lambda value: not truthy(value),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "iterable": lambda value: isinstance(value, str | list | tuple | set | frozenset),  # a plain object is not
    "escaped": lambda value: isinstance(value, Markup),
    "lower": lambda value: _text(value).lower() == _text(value),
    "upper": lambda value: _text(value).upper() == _text(value),
    "odd": lambda value: _remainder(value, 2) == 1,
    "even": lambda value: _remainder(value, 2) == 0,
    "divisibleby": lambda value, divisor: _remainder(value, divisor) == 0,
    "eq": strict_equal,
    "equalto": strict_equal,
    "sameas": strict_equal,
    "==": strict_equal,
    "ne": lambda value, other: not strict_equal(value, other),
    "!=": lambda value, other: not strict_equal(value, other),
    "gt": _comparing("gt"),
    "greaterthan": _comparing("gt"),
    ">": _comparing("gt"),
    "ge": _comparing("gteq"),
    ">=": _comparing("gteq"),
    "lt": _comparing("lt"),
    "lessthan": _comparing("lt"),
    "<": _comparing("lt"),
    "le": _comparing("lteq"),
    "<=": _comparing("lteq"),
}
"""nunjucks' tests, where jinja's differ (JavaScript's `%`, `===` and comparisons) or are missing."""
