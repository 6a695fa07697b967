"""Reading verdicts out of grader replies: tolerant about form, strict about meaning.

Tolerated: code fences, prose around the JSON, YAML-style unquoted keys (`{pass: true}`),
`//` comments, string booleans (`"true"`, `"yes"`, `"pass"`). Refused (a grader error, never a
pass): a reply with no verdict, several verdicts that disagree, and verdict-like text left over
outside any complete object (the signature of an echoed or injected fragment, e.g. an
unterminated `{pass: true, ... {"pass": false}` that promptfoo's auto-closing parser accepts).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ci_grade.config import yaml12
from ci_grade.errors import VerdictError, VerdictProblem

_TRUE = {"true", "yes", "y", "pass", "passed", "1"}
_FALSE = {"false", "no", "n", "fail", "failed", "0"}
_MAX_SCAN = 200_000
_SCAN_BUDGET = 2 * _MAX_SCAN
"""Characters scanned for objects in all, over every `{` tried: a reply of `{a: ` nested 50,000
deep would otherwise be scanned once per brace (10^10 steps); a real reply needs a fraction."""


@dataclass(frozen=True)
class Found:
    value: dict[str, Any]
    start: int
    end: int


def parse_bool(value: Any) -> bool | None:
    """true/false from booleans and the usual words; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def parse_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if number == number and abs(number) != float("inf") else None
    return None


def strip_comments(text: str) -> str:
    """Drop `//` comments outside strings (and not in `://`)."""
    out = []
    in_string: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if ch == in_string:
                in_string = None
        elif ch in "\"'":
            in_string = ch
            out.append(ch)
        elif ch == "/" and text[i + 1 : i + 2] == "/" and (i == 0 or text[i - 1] != ":"):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
        return None
    return value if isinstance(value, dict) else None


def _parse_object(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate)
    except (ValueError, RecursionError):
        try:
            value = yaml12.loads(strip_comments(candidate))
        except yaml12.UNREADABLE:
            return None
    return value if isinstance(value, dict) else None


def find_objects(text: str) -> list[Found]:
    """Every complete `{...}` object in `text`, outermost first, scanning strings correctly."""
    found: list[Found] = []
    if text[:1] == "{" and text[-1:] == "}" and len(text) <= _MAX_SCAN and (whole := _json_object(text)) is not None:
        return [Found(whole, 0, len(text))]  # the usual reply: one JSON object, nothing around it
    text = text[:_MAX_SCAN]
    i = scanned = 0
    while True:
        start = text.find("{", i)
        if start < 0 or scanned > _SCAN_BUDGET:
            return found
        end = _balanced_end(text, start)
        scanned += (end or len(text)) - start
        if end is None:
            i = start + 1
            continue
        value = _parse_object(text[start:end])
        if value is None:
            i = start + 1
            continue
        found.append(Found(value, start, end))
        i = end


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    in_string: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == in_string:
                in_string = None
        elif ch == '"':
            in_string = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _leftover_values(text: str, spans: list[Found], key: str) -> list[Any]:
    """Values written as `key: value` outside the objects we parsed (e.g. an unterminated fragment)."""
    pieces = []
    last = 0
    for item in sorted(spans, key=lambda f: f.start):
        pieces.append(text[last : item.start])
        last = item.end
    pieces.append(text[last:])
    pattern = re.compile(
        rf"""["']?\b{re.escape(key)}\b["']?\s*[:=]\s*["']?(true|false|yes|no|-?\d+(?:\.\d+)?|[A-E])\b""", re.I
    )
    return [_normal(_scalar(m.group(1))) for piece in pieces for m in pattern.finditer(piece)]


def _scalar(text: str) -> Any:
    number = parse_number(text)
    return number if number is not None else text


def extract(reply: Any, key: str, *, compare: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The one verdict object in `reply` that carries `key`.

    `compare` names the fields that must agree when several objects carry `key`
    (default: just `key`). Raises VerdictError for none, conflicting or ambiguous verdicts.
    """
    if isinstance(reply, dict):
        if key not in reply:
            raise VerdictError(f"grader reply has no {key!r} field", VerdictProblem.MISSING)
        return reply
    if not isinstance(reply, str):
        raise not_text(reply, f"a JSON object with {key!r}")
    if not reply.strip():
        raise VerdictError("grader returned an empty reply", VerdictProblem.EMPTY)
    text = reply.strip()
    objects = find_objects(text)
    if len(objects) == 1 and objects[0].end - objects[0].start == len(text) and key in objects[0].value and not _nested_with(objects[0].value, key):
        return objects[0].value  # the usual reply: one verdict, nothing around it or inside it
    verdicts = [f for f in objects if key in f.value]
    if not verdicts:
        raise VerdictError(f"grader reply contains no JSON object with {key!r}: {_excerpt(text)}", VerdictProblem.MISSING)
    outermost = [f for f in verdicts if not any(o.start <= f.start and f.end <= o.end and o is not f for o in verdicts)]
    fields = compare or (key,)
    nested = [inner for f in outermost for inner in _nested_with(f.value, key)]
    signatures = {tuple(json.dumps(_normal(v.get(name)), sort_keys=True) for name in fields) for v in [f.value for f in outermost] + nested}
    if len(signatures) > 1:
        raise VerdictError(f"grader reply contains conflicting verdicts: {_excerpt(text)}", VerdictProblem.CONFLICTING)
    chosen = _normal(outermost[0].value.get(key))
    if any(value != chosen for value in _leftover_values(text, objects, key)):
        raise VerdictError(f"grader reply has a different {key!r} outside its JSON verdict (ambiguous): {_excerpt(text)}", VerdictProblem.AMBIGUOUS)
    return outermost[0].value


def not_text(reply: Any, wanted: str) -> VerdictError:
    """The error for a reply that is not text (or an object): a number, a boolean, a list, or nothing."""
    if reply is None:
        return VerdictError("grader returned an empty reply", VerdictProblem.EMPTY)
    kind = "a boolean" if isinstance(reply, bool) else "a number" if isinstance(reply, int | float) else "a list" if isinstance(reply, list) else type(reply).__name__
    shown = json.dumps(reply, ensure_ascii=False, default=str)
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    return VerdictError(f"grader replied with {kind} ({shown}), not {wanted}", VerdictProblem.MISSING)


def _nested_with(value: Any, key: str) -> list[dict[str, Any]]:
    """Objects below the top level of `value` that also carry `key` (echoed or injected verdicts)."""
    out: list[dict[str, Any]] = []
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        if isinstance(child, dict):
            if key in child:
                out.append(child)
            out.extend(_nested_with(child, key))
        elif isinstance(child, list):
            out.extend(_nested_with(child, key))
    return out


def _normal(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    as_bool = parse_bool(value)
    if as_bool is not None:
        return as_bool
    if isinstance(value, str):
        number = parse_number(value)
        return number if number is not None else value.strip().upper()
    return value


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")
