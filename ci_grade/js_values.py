"""Values written as JavaScript writes them: `String(number)` and `JSON.stringify`.

promptfoo turns a provider's non-text output into text with `JSON.stringify` before `equals`,
`contains` or `regex` look at it, and prints template values with JavaScript's rules. Python's
own writers differ on numbers (`1.0`, `1e-07`, `-0.0`), on integers past 2**53 (JavaScript holds
them as doubles) and on key order (JavaScript lists integer-like keys first, in ascending order).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

JS_WHITESPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""What JavaScript's `\\s` and `trim()` take for whitespace (Python's `str.isspace` differs)."""
_SAFE_INTEGER = 2**53
_ARRAY_INDEX_LIMIT = 2**32 - 1


def js_number(value: float) -> str:
    """`String(value)` for a JavaScript number: the shortest digits that read back as `value`,
    in plain notation from 1e-6 up to 1e21 and as `1.5e-7` / `1e+21` outside that."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # -0 too
    sign, digits_tuple, exponent = Decimal(repr(float(value))).as_tuple()
    digits = "".join(map(str, digits_tuple)).rstrip("0") or "0"
    exponent = int(exponent) + len(digits_tuple) - len(digits)
    k, n = len(digits), len(digits) + exponent  # n: where the decimal point goes
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if n - 1 > 0 else '-'}{abs(n - 1)}"
    return ("-" if sign else "") + text


def number_text(value: int | float) -> str:
    """`String(value)` for a Python number: integers past 2**53 as the doubles JavaScript holds."""
    if isinstance(value, float) or abs(value) > _SAFE_INTEGER:
        return js_number(float(value))
    return str(value)


def js_fixed(value: float, digits: int) -> str:
    """`value.toFixed(digits)`: the exact binary value rounded half away from zero."""
    from decimal import ROUND_HALF_UP

    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_number(value)
    return str(Decimal(value or 0.0).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))  # -0 as 0


def js_json(value: Any, indent: int | str | None = None) -> str:
    """`JSON.stringify(value, null, indent)`: numbers as JavaScript writes them (NaN and
    Infinity as null), integer-like keys first, text as JSON text without ASCII escapes. `indent`
    is a number of spaces (at most 10) or the text to indent with (its first 10 characters)."""
    unit = " " * min(10, int(indent)) if isinstance(indent, int | float) and not isinstance(indent, bool) else indent[:10] if isinstance(indent, str) else ""
    return _encode(value, unit, "")


def _encode(value: Any, indent: str, at: str) -> str:
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return number_text(value) if math.isfinite(value) else "null"
    if isinstance(value, dict):
        items = [(str(key), item) for key, item in value.items()]
        items.sort(key=lambda pair: (0, int(pair[0])) if array_index(pair[0]) else (1, 0))
        parts = [f"{json.dumps(key, ensure_ascii=False)}:{' ' if indent else ''}{_encode(item, indent, at + indent)}" for key, item in items]
        return _join(parts, "{", "}", indent, at)
    if isinstance(value, list | tuple):
        return _join([_encode(item, indent, at + indent) for item in value], "[", "]", indent, at)
    return json.dumps(str(value), ensure_ascii=False)


def _join(parts: list[str], opening: str, closing: str, indent: str, at: str) -> str:
    if not parts:
        return opening + closing
    if not indent:
        return opening + ",".join(parts) + closing
    inner = at + indent
    return opening + "\n" + ",\n".join(inner + part for part in parts) + "\n" + at + closing


def array_index(key: str) -> bool:
    """Whether JavaScript orders `key` as an integer (a canonical array index): such keys come
    first in an object, in ascending order."""
    return key.isdigit() and key.isascii() and (key == "0" or not key.startswith("0")) and int(key) < _ARRAY_INDEX_LIMIT
