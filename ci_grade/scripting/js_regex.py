"""`new RegExp(pattern).test(text)` with Python's `re`, for patterns where the two provably agree.

promptfoo's `regex` assertion is JavaScript's `new RegExp(value).test(output)` (no flags). Most
patterns people write use a small part of the syntax on which Python's `re` behaves the same once
translated; for those, the match is decided here instead of in V8. The translation accepts only:

- literal characters of the Basic Multilingual Plane (a pattern with an astral character, or a
  text with one, is left to V8: JavaScript matches UTF-16 code units, Python code points);
- `.` (as JavaScript's: anything but \\n, \\r, U+2028, U+2029), `^`, `$` (end of text only, as
  Python's `\\Z`), `|`, `(...)`, `(?:...)`, `(?=...)`, `(?!...)`;
- `\\d \\D \\w \\W \\b \\B` (ASCII, as JavaScript's without the `u` or `i` flag), `\\s \\S` (spelled
  out as JavaScript's set of white space and line terminators), `\\n \\r \\t \\f \\v`, `\\xHH`,
  `\\uHHHH` (not a surrogate) and a backslash before punctuation;
- classes `[...]` / `[^...]` of those characters, ranges between them, `\\d \\D \\w \\W \\s`;
- quantifiers `* + ? {n} {n,} {n,m}` (lazy with `?`) on a character, a class or a group, with
  no unbounded repetition of something that itself branches or repeats.

Everything else (lookbehind, named groups, backreferences, `\\k \\p \\c \\0`, annex-B oddities such
as a lone `{` or `]`, possessive-looking `a++`, an empty class) goes to V8, as does a pattern
Python cannot compile (so V8 gives the error message) and a text long enough that the pattern's
worst-case backtracking could take long: V8 has a time limit, Python's `re` has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

BUDGET = 2_000_000
"""Most match attempts (start positions x backtracking paths) a pattern may need on a text."""
MAX_REPEAT = 1000

_SPACE = r"\t\n\x0b\x0c\r\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DOT = r"[^\n\r\u2028\u2029]"
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_CHAR_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}
_HEX = frozenset("0123456789abcdefABCDEF")
_SPECIAL = frozenset("\\^$.|?*+()[]{}")
_BRACES = re.compile(r"(\d{1,4})(,(\d{0,4}))?\}")


@dataclass(frozen=True)
class Translation:
    """A pattern's Python form and how much backtracking it may need."""

    compiled: re.Pattern[str]
    paths: int
    """Backtracking paths per start position, apart from the unbounded repetitions."""
    unbounded: int
    """How many unbounded repetitions (each multiplies the paths by up to the text's length)."""

    def affordable(self, length: int) -> bool:
        """Whether the worst case on a text of `length` characters stays within the budget."""
        work: int = (length + 1) ** (1 + self.unbounded) * self.paths
        return work <= BUDGET


class _Refused(Exception):
    """The pattern is outside the subset."""


def test(pattern: str, text: str) -> bool | None:
    """Whether `text` matches `pattern` as JavaScript decides it, or None when V8 must decide."""
    translation = translate(pattern)
    if translation is None or not translation.affordable(len(text)):
        return None
    if not text.isascii() and _ASTRAL.search(text):
        return None
    return translation.compiled.search(text) is not None


@lru_cache(maxsize=1024)
def translate(pattern: str) -> Translation | None:
    """The Python form of `pattern`, or None when it is outside the subset."""
    try:
        parser = _Parser(pattern)
        source, paths, unbounded = parser.alternation()
        if parser.at < len(pattern):
            raise _Refused  # an unbalanced ')'
        return Translation(re.compile(source, re.ASCII), paths, unbounded)
    except (_Refused, re.error, RecursionError, OverflowError):
        return None


class _Parser:
    def __init__(self, pattern: str):
        self.pattern = pattern
        self.at = 0

    def peek(self, offset: int = 0) -> str:
        index = self.at + offset
        return self.pattern[index] if index < len(self.pattern) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise _Refused
        self.at += 1
        return char

    def alternation(self) -> tuple[str, int, int]:
        """branch ('|' branch)*: paths add up; the deepest unbounded count counts."""
        parts, paths, unbounded = [], 0, 0
        while True:
            source, branch_paths, branch_unbounded = self.sequence()
            parts.append(source)
            paths, unbounded = paths + branch_paths, max(unbounded, branch_unbounded)
            if self.peek() != "|":
                return "|".join(parts), paths, unbounded
            self.at += 1

    def sequence(self) -> tuple[str, int, int]:
        """Terms up to '|' or ')': paths multiply, unbounded counts add up."""
        parts, paths, unbounded = [], 1, 0
        while self.peek() not in ("", "|", ")"):
            source, term_paths, term_unbounded, repeatable = self.atom()
            if self.peek() in ("*", "+", "?", "{"):
                if not repeatable:
                    raise _Refused
                source, term_paths, term_unbounded = self.quantified(source, term_paths, term_unbounded)
            parts.append(source)
            paths, unbounded = paths * term_paths, unbounded + term_unbounded
            if paths > BUDGET:
                raise _Refused
        return "".join(parts), paths, unbounded

    def quantified(self, source: str, paths: int, unbounded: int) -> tuple[str, int, int]:
        char = self.take()
        low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}.get(char, (0, 0))
        text = char
        if char == "{":
            match = _BRACES.match(self.pattern, self.at)
            if match is None:
                raise _Refused  # JavaScript reads a malformed quantifier as literal text
            low = int(match.group(1))
            high = None if match.group(2) and not match.group(3) else int(match.group(3) or match.group(1))
            if high is not None and high < low:
                raise _Refused
            text = "{" + match.group(0)
            self.at = match.end()
        if max(low, high or 0) > MAX_REPEAT:
            raise _Refused
        if self.peek() == "?":
            text += self.take()
        if self.peek() in ("*", "+", "?", "{"):
            raise _Refused  # JavaScript rejects it; Python may read a possessive quantifier
        wrapped = f"(?:{source}){text}"
        if high is None:
            if paths > 1 or unbounded:
                raise _Refused  # unbounded repetition of something that branches: exponential
            return wrapped, 1, 1
        if unbounded:
            raise _Refused
        return wrapped, sum(paths**k for k in range(low, high + 1)), 0

    def atom(self) -> tuple[str, int, int, bool]:
        """(source, paths, unbounded, may be repeated)"""
        char = self.take()
        if char == ".":
            return _DOT, 1, 0, True
        if char == "^":
            return "^", 1, 0, False
        if char == "$":
            return r"\Z", 1, 0, False
        if char == "(":
            return self.group()
        if char == "[":
            return self.char_class(), 1, 0, True
        if char == "\\":
            return self.escape()
        if char in _SPECIAL:
            raise _Refused  # a quantifier with nothing to repeat, or a lone ']', '{' or '}'
        return _literal(char), 1, 0, True

    def group(self) -> tuple[str, int, int, bool]:
        kind = ""
        if self.peek() == "?":
            kind = self.pattern[self.at : self.at + 2]
            if kind not in ("?:", "?=", "?!"):
                raise _Refused  # lookbehind, named groups, inline flags
            self.at += 2
        source, paths, unbounded = self.alternation()
        if self.take() != ")":
            raise _Refused
        if kind in ("?=", "?!"):
            return f"({kind}{source})", paths, unbounded, False
        return f"(?:{source})", paths, unbounded, True

    def escape(self) -> tuple[str, int, int, bool]:
        char = self.take()
        if char in "dDwW":
            return "\\" + char, 1, 0, True
        if char in "bB":
            return "\\" + char, 1, 0, False
        if char == "s":
            return f"[{_SPACE}]", 1, 0, True
        if char == "S":
            return f"[^{_SPACE}]", 1, 0, True
        return _literal(self.char_escape(char)), 1, 0, True

    def char_escape(self, char: str) -> str:
        """The one character an escape (after its backslash) stands for."""
        if char in _CHAR_ESCAPES:
            return _CHAR_ESCAPES[char]
        if char in ("x", "u"):
            digits = self.pattern[self.at : self.at + (2 if char == "x" else 4)]
            if len(digits) != (2 if char == "x" else 4) or not set(digits) <= _HEX:
                raise _Refused
            self.at += len(digits)
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF:
                raise _Refused
            return chr(code)
        if char.isascii() and char.isalnum():
            raise _Refused  # backreferences, \0, \c, \k, \p and identity escapes of letters
        return char

    def char_class(self) -> str:
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        if self.peek() == "]":
            raise _Refused  # [] matches nothing and [^] anything in JavaScript
        parts: list[str] = []
        previous: str | None = None  # the last single character, which may start a range
        first = True
        while (char := self.take()) != "]":
            if char == "-" and not first and self.peek() != "]":
                if previous is None:
                    raise _Refused  # after a class escape or a range: JavaScript reads a literal '-'
                end = self.class_char(self.take())
                if end is None or ord(end) < ord(previous):
                    raise _Refused
                parts.append("-" + _literal(end))
                previous = None
            elif char == "\\" and self.peek() in ("d", "D", "w", "W", "s"):
                escape = self.take()
                parts.append(_SPACE if escape == "s" else "\\" + escape)
                previous = None
            else:
                single = self.class_char(char)
                if single is None:
                    raise _Refused
                parts.append(_literal(single))
                previous = single
            first = False
        return ("[^" if negated else "[") + "".join(parts) + "]"

    def class_char(self, char: str) -> str | None:
        """The single character a class item stands for (None for a class escape)."""
        if char != "\\":
            return char
        escape = self.take()
        if escape in "dDwWsSbB":
            return None
        return self.char_escape(escape)


def _literal(char: str) -> str:
    """One character, safe anywhere in a Python pattern (inside a class too)."""
    if char.isascii() and char.isalnum():
        return char
    if ord(char) > 0xFFFF:
        raise _Refused  # JavaScript sees two code units
    return f"\\u{ord(char):04x}"
