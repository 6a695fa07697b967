"""What nunjucks does as JavaScript does it, for the jinja2 environment in `jinja_overrides`.

promptfoo renders prompts with nunjucks 3, whose operators, truth and conversions are
JavaScript's: `{{ "5" + 1 }}` is `51` and `{{ "6" * 2 }}` is `12` (CSV values are text), `-7 % 3`
is `-1`, `1 / 0` is `Infinity`, comparisons and truth are JavaScript's (`"10" > 9`, an empty list
is true), `in` is nunjucks' (`===` in lists, text in text, keys of objects), `for` walks what
nunjucks walks (`jinja_overrides` calls these from compiled templates). nunjucks' filters and
tests are in `builtin_filters`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import jinja2
from markupsafe import Markup

from ci_grade.js_values import JS_WHITESPACE, number_text
from ci_grade.safe_text import utf16_units

_NUMBER_TEXT = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def to_string(value: Any) -> str:
    """JavaScript's String() as `+` uses it: null and undefined are spelled out."""
    if value is None:
        return "null"
    if isinstance(value, jinja2.Undefined):
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value)
    if isinstance(value, list | tuple):
        return ",".join("" if item is None or isinstance(item, jinja2.Undefined) else to_string(item) for item in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def to_number(value: Any) -> float:
    """JavaScript's Number(): text read as a number literal (blank is 0, else NaN)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, jinja2.Undefined | Mapping):
        return math.nan
    text = (to_string(value) if isinstance(value, list | tuple) else str(value)).strip(JS_WHITESPACE)
    if not text:
        return 0.0
    if not _NUMBER_TEXT.fullmatch(text):
        return math.nan
    if text[:2].lower() in ("0x", "0o", "0b"):
        return float(int(text, 0))
    return float(text.replace("Infinity", "inf"))


def numeric(result: float, *operands: Any) -> Any:
    """A result that is a whole number stays a Python int (an index, a `range` bound) when the
    operands were whole numbers; anything else is the float JavaScript has."""
    if math.isfinite(result) and result.is_integer() and abs(result) <= 2**53 and all(isinstance(o, int) and not isinstance(o, bool) for o in operands):
        return int(result)
    return result


def _primitive(value: Any) -> Any:
    """JavaScript's ToPrimitive before `+` or a comparison: lists and objects become their text."""
    return to_string(value) if isinstance(value, list | tuple | Mapping) else value


def binop(operator: str, left: Any, right: Any) -> Any:
    """A binary operator as JavaScript computes it (`//` is nunjucks' floor division)."""
    if operator == "+":
        left, right = _primitive(left), _primitive(right)
        if isinstance(left, str) or isinstance(right, str):
            return to_string(left) + to_string(right)
    a, b = to_number(left), to_number(right)
    if operator == "+":
        return numeric(a + b, left, right)
    if operator == "-":
        return numeric(a - b, left, right)
    if operator == "*":
        return numeric(a * b, left, right)
    if operator in ("/", "//"):
        quotient = a / b if b != 0 else math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
        if operator == "//" and math.isfinite(quotient):
            quotient = float(math.floor(quotient))
        return numeric(quotient, left, right)
    if operator == "%":
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
            return math.nan
        return numeric(a if math.isinf(b) else math.fmod(a, b), left, right)
    if operator == "**":
        if math.isnan(b) or (math.isnan(a) and b != 0):
            return math.nan
        try:
            return numeric(math.pow(a, b), left, right)
        except ValueError:  # a negative number to a fractional power
            return math.nan
        except OverflowError:
            return -math.inf if a < 0 and b % 2 == 1 else math.inf
    raise jinja2.TemplateRuntimeError(f"unsupported operator {operator!r}")


def unop(operator: str, value: Any) -> Any:
    number = to_number(value)
    return numeric(-number if operator == "-" else number, value)


def absent(value: Any) -> bool:
    return value is None or isinstance(value, jinja2.Undefined)


def loose_equal(left: Any, right: Any) -> bool:
    """JavaScript's `==`: null equals undefined only, lists and objects are equal only to
    themselves, text against a number or a boolean compares as numbers."""
    if absent(left) or absent(right):
        return absent(left) and absent(right)
    if isinstance(left, list | tuple | Mapping) and isinstance(right, list | tuple | Mapping):
        return left is right
    left, right = _primitive(left), _primitive(right)
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    return to_number(left) == to_number(right)


def compare(operator: str, left: Any, right: Any) -> bool:
    """A comparison as JavaScript makes it (`in` keeps its meaning: an item of a list, a part
    of a text, a key of an object)."""
    if operator in ("in", "notin"):
        found = _contains(right, left)
        return found if operator == "in" else not found
    if operator in ("eq", "ne"):
        return loose_equal(left, right) == (operator == "eq")
    a, b = _primitive(left), _primitive(right)
    if isinstance(a, str) and isinstance(b, str):
        x: Any = utf16_units(a)
        y: Any = utf16_units(b)
    else:
        x, y = to_number(a), to_number(b)
        if math.isnan(x) or math.isnan(y):
            return False
    if operator == "lt":
        return bool(x < y)
    if operator == "lteq":
        return bool(x <= y)
    if operator == "gt":
        return bool(x > y)
    if operator == "gteq":
        return bool(x >= y)
    raise jinja2.TemplateRuntimeError(f"unsupported comparison {operator!r}")


def _contains(container: Any, key: Any) -> bool:
    """nunjucks' `in`: an item of a list (`===`), a part of a text (`indexOf` of the key as
    text: `3 in "a3"`), a key of an object (as text); nothing is in a missing value."""
    if isinstance(container, list | tuple):
        return any(strict_equal(item, key) for item in container)
    if isinstance(container, str):
        return to_string(key) in container
    if isinstance(container, Mapping):
        name = to_string(key)
        return any(name == (item if isinstance(item, str) else to_string(item)) for item in container)
    if absent(container):
        return False
    raise jinja2.TemplateRuntimeError(f'Cannot use "in" operator to search for "{to_string(key)}" in unexpected types.')


def strict_equal(left: Any, right: Any) -> bool:
    """JavaScript's `===`: the same kind and value (numbers by value, NaN never), lists and objects only themselves."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return bool(left == right)
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, jinja2.Undefined) or isinstance(right, jinja2.Undefined):
        return isinstance(left, jinja2.Undefined) and isinstance(right, jinja2.Undefined)
    return left is right


def concat(parts: tuple[Any, ...]) -> str:
    """`a ~ b`: each part as JavaScript's `+` writes it (`null`, `undefined`, `true`, `2`)."""
    return "".join(part if isinstance(part, str) else to_string(part) for part in parts)


def loop_items(value: Any, pairs: bool) -> Any:
    """What `{% for %}` walks in nunjucks: nothing for a false value (`null`, `""`, `0`) or any
    other number or boolean (the `else` branch runs), an object's key/value pairs for
    `for k, v in obj` and nothing for a single loop variable over an object; anything else as it is."""
    if not truthy(value) or isinstance(value, bool | int | float):
        return ()
    if isinstance(value, Mapping):
        return list(value.items()) if pairs else ()
    return value


def truthy(value: Any) -> bool:
    """JavaScript's truthiness: empty lists and objects are true, NaN is false."""
    if value is None or isinstance(value, jinja2.Undefined) or value is False:
        return False
    if isinstance(value, int | float):
        return bool(value) and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, Markup):
        return True  # nunjucks' marked-safe text is an object, true even when empty
    if isinstance(value, str):
        return value != ""
    return True
