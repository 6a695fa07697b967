"""promptfoo's comma-separated values (`contains-any: "a, b"`, a CSV `__expected` cell's list).

A field may be quoted to hold commas: `"a, b"`, with `\\"`, `\\\\` and `""` escapes inside;
unquoted fields are trimmed (JavaScript's white space) and empty ones skipped.
"""

from __future__ import annotations

from ci_grade.js_values import JS_WHITESPACE


def split(value: str) -> list[str]:
    """The fields of `value`; a ValueError for a quoted field left open or followed by text."""
    fields: list[str] = []
    i = 0
    while True:
        while i < len(value) and (value[i] in JS_WHITESPACE or value[i] == ","):
            i += 1
        if i == len(value):
            return fields
        if value[i] != '"':
            end = value.find(",", i)
            end = len(value) if end < 0 else end
            fields.append(value[i:end].strip(JS_WHITESPACE))
            i = end
            continue
        field, i = _quoted_field(value, i + 1)
        fields.append(field)
        while i < len(value) and value[i] in JS_WHITESPACE:
            i += 1
        if i < len(value) and value[i] != ",":
            raise ValueError("Expected comma after quoted field")


def _quoted_field(value: str, i: int) -> tuple[str, int]:
    """The field of a quoted value starting at `i` (after its `"`) and the index after its closing quote."""
    field: list[str] = []
    while i < len(value):
        pair = value[i : i + 2]
        if pair in ('\\"', "\\\\", '""'):
            field.append(pair[1])
            i += 2
        elif value[i] == '"':
            return "".join(field), i + 1
        else:
            field.append(value[i])
            i += 1
    raise ValueError("Unterminated quoted field")
