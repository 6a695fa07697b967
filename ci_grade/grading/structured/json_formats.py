"""JSON Schema `format`s as promptfoo checks them: the "full" formats of ajv-formats 3.

promptfoo validates schemas with ajv and ajv-formats, so `format: date-time` fails
`"yesterday"`. Python's jsonschema checks a format only when an optional package for it is
installed, and passes the rest unchecked: a silent pass. `FORMATS` holds every format
ajv-formats knows, with its rules (regular expressions written for JavaScript are anchored with
`fullmatch` here, and `\\d` means ASCII digits, as in JavaScript); any other name is unknown, which
ajv refuses in a schema (`json_schema`). Formats apply to strings, and `int32`, `int64`, `float`
and `double` to numbers; a value of another type passes, as in ajv.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

_compiled = functools.cache(re.compile)
"""Patterns are compiled on first use: `url`'s alone takes some 50 ms, on every start otherwise."""

_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE

_DATE = re.compile(r"(\d\d\d\d)-(\d\d)-(\d\d)", _A)
_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?", _AI)
_DATE_TIME_SEPARATOR = re.compile(r"t|\s", re.IGNORECASE)
_IPV4_PART = r"(?:25[0-5]|2[0-4]\d|[01]?\d\d?)"
_IPV6_IN_URI = (
    r"(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}"
    r"|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}"
    r"|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)"
    rf"(?:[0-9a-f]{{1,4}}:[0-9a-f]{{1,4}}|(?:{_IPV4_PART}\.){{3}}{_IPV4_PART})"
    r"|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)"
)


def _uri_pattern(scheme: str, extra: str, rest: str) -> str:
    """ajv-formats' URI grammar: `scheme` is its scheme part, `extra` the characters its
    `uri-reference` also allows in hosts, paths, queries and fragments (a double quote), `rest` how often the part
    after the scheme occurs (`?` for a reference, which may be empty)."""
    unreserved = rf"[a-z0-9\-._~!$&'(){extra}*+,;=:@]"
    return (
        rf"{scheme}(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{{2}})*@)?"
        rf"(?:\[(?:{_IPV6_IN_URI}|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]"
        rf"|(?:{_IPV4_PART}\.){{3}}{_IPV4_PART}|(?:[a-z0-9\-._~!$&'(){extra}*+,;=]|%[0-9a-f]{{2}})*)"
        rf"(?::\d*)?(?:\/(?:{unreserved}|%[0-9a-f]{{2}})*)*"
        rf"|\/(?:(?:{unreserved}|%[0-9a-f]{{2}})+(?:\/(?:{unreserved}|%[0-9a-f]{{2}})*)*)?"
        rf"|(?:{unreserved}|%[0-9a-f]{{2}})+(?:\/(?:{unreserved}|%[0-9a-f]{{2}})*)*){rest}"
        rf"(?:\?(?:[a-z0-9\-._~!$&'(){extra}*+,;=:@/?]|%[0-9a-f]{{2}})*)?(?:#(?:[a-z0-9\-._~!$&'(){extra}*+,;=:@/?]|%[0-9a-f]{{2}})*)?"
    )


_URI = _uri_pattern(r"(?:[a-z][a-z0-9+\-.]*:)", "", "")
_URI_REFERENCE = _uri_pattern(r"(?:[a-z][a-z0-9+\-.]*:)?", '"', "?")
_NOT_URI_FRAGMENT = re.compile(r"/|:")
_U = r"a-z0-9\u00a1-\uffff"
_URL = (
    r"(?:https?|ftp):\/\/(?:\S+(?::\S*)?@)?(?:(?!(?:10|127)(?:\.[0-9]{1,3}){3})(?!(?:169\.254|192\.168)(?:\.[0-9]{1,3}){2})"
    r"(?!172\.(?:1[6-9]|2[0-9]|3[0-1])(?:\.[0-9]{1,3}){2})(?:[1-9][0-9]?|1[0-9][0-9]|2[01][0-9]|22[0-3])"
    r"(?:\.(?:1?[0-9]{1,2}|2[0-4][0-9]|25[0-5])){2}(?:\.(?:[1-9][0-9]?|1[0-9][0-9]|2[0-4][0-9]|25[0-4]))"
    rf"|(?:(?:[{_U}]+-)*[{_U}]+)(?:\.(?:[{_U}]+-)*[{_U}]+)*(?:\.(?:[a-z\u00a1-\uffff]{{2,}})))(?::[0-9]{{2,5}})?(?:\/[^\s]*)?"
)
_BYTE = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", re.MULTILINE)
_Z_ANCHOR = re.compile(r"[^\\]\\Z")
_IPV6 = (
    r"((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))"
    r"|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))"
    r"|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))"
    r"|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))"
    r"|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))"
    r"|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))"
    r"|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))"
)
_PATTERNS: dict[str, tuple[str, int]] = {
    "duration": (r"P(?!\Z)((\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?|(\d+W)?)", _A),
    "uri-reference": (_URI_REFERENCE, _AI),
    "uri-template": (
        r"(?:(?:[^\x00-\x20\"'<>%\\^`{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?"
        r"(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*",
        _AI,
    ),
    "url": (_URL, re.IGNORECASE),
    "email": (
        r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?",
        _AI,
    ),
    "hostname": (r"(?=.{1,253}\.?\Z)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?", _AI),
    "ipv4": (r"(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)", _A),
    "ipv6": (_IPV6, _AI),
    "uuid": (r"(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", _AI),
    "json-pointer": (r"(?:\/(?:[^~/]|~0|~1)*)*", 0),
    "json-pointer-uri-fragment": (r"#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*", _AI),
    "relative-json-pointer": (r"(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)", 0),
}


def _date(text: str) -> bool:
    found = _DATE.fullmatch(text)
    if not found:
        return False
    year, month, day = int(found[1]), int(found[2]), int(found[3])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and leap else _DAYS[month])


def _time(strict_zone: bool) -> Callable[[str], bool]:
    def time(text: str) -> bool:
        found = _TIME.fullmatch(text)
        if not found:
            return False
        hour, minute, second = int(found[1]), int(found[2]), float(found[3])
        sign = -1 if found[5] == "-" else 1
        zone_hours, zone_minutes = int(found[6] or 0), int(found[7] or 0)
        if zone_hours > 23 or zone_minutes > 59 or (strict_zone and not found[4]):
            return False
        if hour <= 23 and minute <= 59 and second < 60:
            return True
        utc_minute = minute - zone_minutes * sign  # a leap second: 23:59:60 in UTC
        utc_hour = hour - zone_hours * sign - (1 if utc_minute < 0 else 0)
        return utc_hour in (23, -1) and utc_minute in (59, -1) and second < 61

    return time


def _date_time(strict_zone: bool) -> Callable[[str], bool]:
    time = _time(strict_zone)

    def date_time(text: str) -> bool:
        parts = _DATE_TIME_SEPARATOR.split(text)
        return len(parts) == 2 and _date(parts[0]) and time(parts[1])

    return date_time


def _uri(text: str) -> bool:
    return bool(_NOT_URI_FRAGMENT.search(text)) and _compiled(_URI, _AI).fullmatch(text) is not None


def _byte(text: str) -> bool:
    return _BYTE.search(text) is not None


def _regex(text: str) -> bool:
    """A pattern ajv-formats accepts: one JavaScript compiles (`new RegExp(text)`) with no `\\Z`."""
    from ci_grade.scripting.js import regex_error

    return not _Z_ANCHOR.search(text) and regex_error(text) is None


def _matches(source: str, flags: int) -> Callable[[str], bool]:
    return lambda text: _compiled(source, flags).fullmatch(text) is not None


_STRING_FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _date,
    "time": _time(True),
    "date-time": _date_time(True),
    "iso-time": _time(False),
    "iso-date-time": _date_time(False),
    "uri": _uri,
    "regex": _regex,
    "byte": _byte,
    "password": lambda text: True,
    "binary": lambda text: True,
    **{name: _matches(source, flags) for name, (source, flags) in _PATTERNS.items()},
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _integral(value: Any) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_NUMBER_FORMATS: dict[str, Callable[[Any], bool]] = {
    "int32": lambda value: _integral(value) and -(2**31) <= value <= 2**31 - 1,
    "int64": _integral,
    "float": lambda value: True,
    "double": lambda value: True,
}
FORMATS = frozenset(_STRING_FORMATS) | frozenset(_NUMBER_FORMATS)
"""Every format ajv-formats knows; a schema naming another is refused."""


def format_checker() -> Any:
    """A jsonschema `FormatChecker` with exactly these formats."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name, check in _STRING_FORMATS.items():
        checker.checks(name)(lambda value, check=check: not isinstance(value, str) or check(value))
    for name, check in _NUMBER_FORMATS.items():
        checker.checks(name)(lambda value, check=check: not _number(value) or check(value))
    return checker
