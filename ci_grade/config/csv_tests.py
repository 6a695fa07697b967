"""Tests from CSV rows, with promptfoo's special columns and its `__expected` grammar."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from ci_grade.config import comma_values
from ci_grade.config.assertion_types import AssertionVocabulary
from ci_grade.errors import ConfigError

_ARRAY_TYPES = {"contains-all", "contains-any", "icontains-all", "icontains-any"}
_RAW_VALUE_TYPES = {"contains-json", "is-json"}


def _js_parse_float(text: str) -> float | None:
    """JavaScript's parseFloat: the longest numeric prefix, or None."""
    match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    if not match:
        return None
    value = float(match.group(0))
    return value if math.isfinite(value) else None


def assertion_from_string(expected: str, vocabulary: AssertionVocabulary) -> dict[str, Any]:
    """Turn an `__expected` cell into an assertion, as promptfoo's CSV reader does."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix) :].strip()}
    if expected.startswith("file://") and re.search(r"\.(js|cjs|mjs|ts)(:|$)", expected):
        return {"type": "javascript", "value": expected.strip()}
    if expected.startswith("grade:"):
        return {"type": "llm-rubric", "value": expected[len("grade:") :]}
    if expected.startswith("llm-rubric:"):
        return {"type": "llm-rubric", "value": expected[len("llm-rubric:") :]}
    if expected.startswith("python:"):
        return {"type": "python", "value": expected[len("python:") :].strip()}
    if expected.startswith("file://") and (expected.endswith(".py") or ".py:" in expected):
        return {"type": "python", "value": expected.strip()}

    names = "|".join(re.escape(t) for t in sorted(vocabulary.names, key=len, reverse=True))
    match = re.match(rf"^(not-)?({names})(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$", expected)
    if not match:
        return {"type": "equals", "value": expected}
    inverse, base, threshold_text, value = match.groups()
    full_type = f"not-{base}" if inverse else base
    if base in _ARRAY_TYPES:
        return {"type": full_type, "value": comma_values.split(value) if value else value}
    if base in _RAW_VALUE_TYPES:
        return {"type": full_type, "value": value}
    out: dict[str, Any] = {"type": full_type, "value": value.strip() if value is not None else None}
    if base in vocabulary.csv_thresholds:
        threshold = _js_parse_float(threshold_text) if threshold_text else None
        out["threshold"] = threshold if threshold is not None else vocabulary.csv_thresholds[base]
    return out


def _split_metadata_list(value: str) -> list[str]:
    return [item.strip().replace("\\,", ",") for item in re.split(r"(?<!\\),", value)]


def test_from_row(row: dict[str, str], vocabulary: AssertionVocabulary, file: str, line: int) -> dict[str, Any]:
    """One CSV row -> one raw test mapping."""
    variables: dict[str, str] = {}
    asserts: dict[str, dict[str, Any]] = {}
    options: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    configs: dict[str, dict[str, float]] = {}
    test: dict[str, Any] = {}
    metric: str | None = None
    for raw_key, value in row.items():
        if raw_key is None:
            raise ConfigError("row has more cells than the header has columns", file=file, line=line)
        key = raw_key.strip()
        value = value if value is not None else ""
        if re.fullmatch(r"__expected\d*", key):
            if value.strip():
                try:
                    asserts[key] = assertion_from_string(value.strip(), vocabulary)
                except ValueError as exc:  # a list value's quoting (`comma_values`)
                    raise ConfigError(f"{exc} in the assertion's list of values", file=file, line=line, path=key) from None
        elif key in ("__prefix", "__suffix"):
            options[key[2:]] = value
        elif key == "__description":
            if value:
                test["description"] = value
        elif key == "__providerOutput":
            if value:
                test["providerOutput"] = value
        elif key == "__metric":
            metric = value.strip() or None
        elif key == "__threshold":
            threshold = _js_parse_float(value)
            if threshold is not None:
                test["threshold"] = threshold
            elif value.strip():
                raise ConfigError(f"expected a number, got {value!r}", file=file, line=line, path="__threshold")
        elif key.startswith("__metadata:"):
            name = key[len("__metadata:") :]
            if value.strip():
                if name.endswith("[]"):
                    metadata[name[:-2]] = _split_metadata_list(value)
                else:
                    metadata[name] = value
        elif key.startswith("__config:"):
            target, number = _config_cell(key, value, file, line)
            if number is not None:
                configs.setdefault(target, {})["threshold"] = number
        elif key == "__metadata":
            continue
        else:
            variables[key] = value
    ordered = list(asserts.values())
    for assertion in ordered:
        if metric is not None:
            assertion["metric"] = metric
    for target, settings in configs.items():
        # `__expected` names the column of that name, else (as in promptfoo) the first assertion.
        chosen = asserts.get(target) or (ordered[0] if target == "__expected" and ordered else None)
        if chosen is not None:
            chosen.update(settings)
    test.update({"vars": variables, "assert": ordered, "options": options})
    if metadata:
        test["metadata"] = metadata
    return test


def _config_cell(key: str, value: str, file: str, line: int) -> tuple[str, float | None]:
    """A `__config:__expected<N>:threshold` cell -> (target column, number or None if blank)."""
    parts = key[len("__config:") :].split(":")
    if len(parts) != 2:
        raise ConfigError("expected a column named __config:__expected:threshold or __config:__expected<N>:threshold", file=file, line=1, path=key)
    target, setting = parts
    if not re.fullmatch(r"__expected\d*", target):
        raise ConfigError(f"{target!r} is not __expected or __expected<N>", file=file, line=1, path=key)
    if setting != "threshold":
        raise ConfigError(f"unknown setting {setting!r}; only threshold is supported", file=file, line=1, path=key)
    if not value.strip():
        return target, None
    number = _js_parse_float(value)
    if number is None:
        raise ConfigError(f"expected a number, got {value!r}", file=file, line=line, path=key)
    return target, number


def read_csv_tests(text: str, file: str, vocabulary: AssertionVocabulary) -> list[tuple[dict[str, Any], int]]:
    """All rows of a CSV test file, each with its line number.

    Quotes are read leniently (a stray quote inside a cell is kept, as promptfoo's relaxed
    parsing does), but a quote that is never closed, or a file without a header or rows, is an
    error: either would silently swallow or drop tests.
    """
    opened = _unterminated_quote(text)
    if opened is not None:
        raise ConfigError("invalid CSV: a quoted cell is never closed (a missing \")", file=file, line=opened)
    reader = csv.DictReader(io.StringIO(text))
    rows: list[tuple[dict[str, Any], int]] = []
    try:
        if reader.fieldnames is None:
            raise ConfigError("the CSV file is empty: it needs a header row and one row per test", file=file, line=1)
        for row in reader:
            line = reader.line_num - sum(value.count("\n") for value in row.values() if isinstance(value, str))  # where the row starts
            if None in row.values():  # as promptfoo's reader refuses it (Invalid Record Length)
                raise ConfigError("row has fewer cells than the header has columns", file=file, line=line)
            rows.append((test_from_row(row, vocabulary, file, line), line))
    except csv.Error as exc:
        raise ConfigError(f"invalid CSV: {exc}", file=file, line=reader.line_num) from exc
    if not rows:
        raise ConfigError("the CSV file has a header but no rows: no tests", file=file, line=1)
    return rows


def _unterminated_quote(text: str) -> int | None:
    """The line where a record with an unclosed quoted cell starts, if there is one."""
    reader = csv.reader(io.StringIO(text), strict=True)
    while True:
        start = reader.line_num + 1
        try:
            next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:  # the csv module tells its errors apart only by message
            if "unexpected end of data" in str(exc):
                return start
