"""Text from outside (model replies, grader reasons, HTTP bodies) made safe for each sink.

A reply can hold anything a JSON string can: a lone UTF-16 surrogate (a reply cut mid-emoji),
NUL and other control characters, ANSI escape sequences. Python keeps such text as it is; the
sinks cannot all take it:

- UTF-8 (files, request bodies, the terminal) cannot encode a lone surrogate: `well_formed`
  replaces each with U+FFFD.
- JSON keeps the text exactly: `json_dumps` writes lone surrogates as `\\udXXX` escapes, which
  read back to the same string, and the file stays valid UTF-8.
- The terminal and CI logs would obey control characters (ESC starts colour and cursor sequences,
  CR overwrites the line) and bidirectional formatting (a right-to-left override shows text in
  another order than it is): `terminal` shows them as visible `\\xNN` and `\\uNNNN` escapes.
- XML 1.0 forbids NUL, most C0 controls and surrogates (the JUnit writer drops the controls,
  `well_formed` the surrogates); Markdown drops controls in `report/markdown_escape.py`.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# C0 controls but tab and newline, DEL, and C1 controls (U+009B is a one-character CSI).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional marks, embeddings, overrides and isolates, and the invisible characters that hide text.
_FORMAT = re.compile("[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def well_formed(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be encoded as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if not text.isascii() and _SURROGATE.search(text) else text


def utf16_units(text: str) -> str:
    """`text` as JavaScript indexes it: one character per UTF-16 code unit (an astral character
    becomes its surrogate pair), so lengths, indexes and edit distances count as in JavaScript."""
    return text if text.isascii() else _ASTRAL.sub(_pair, text)


def from_utf16_units(units: str) -> str:
    """The text `utf16_units` took apart: surrogate pairs joined again (a lone surrogate stays)."""
    return units if units.isascii() else units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _pair(match: re.Match[str]) -> str:
    point = ord(match.group()) - 0x10000
    return chr(0xD800 + (point >> 10)) + chr(0xDC00 + (point & 0x3FF))


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_dumps(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)` with lone surrogates escaped.

    Inside JSON text a surrogate can only stand in a string, where `\\udXXX` means the same
    code point: the result is valid UTF-8 and `json.loads` returns the original data.
    """
    text = json.dumps(value, ensure_ascii=False, **options)
    return _SURROGATE.sub(_escape, text) if not text.isascii() and _SURROGATE.search(text) else text


def terminal(text: str) -> str:
    """`text` fit to print: well formed, control characters (but newline and tab) shown as `\\xNN`,
    bidirectional and invisible formatting characters as `\\uNNNN`."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", well_formed(text))
    return text if text.isascii() else _FORMAT.sub(_escape, text)
