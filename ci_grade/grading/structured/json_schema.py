"""JSON schemas as promptfoo reads them: ajv in strict mode, with ajv-formats' formats.

A schema written for draft 7 (no `$schema`, or draft 7's) is refused where ajv refuses it:
an unknown keyword (a typo such as `requird`, or `example`), an unknown format, `if` without
`then` or `else` (and the reverse), `additionalItems` beside a non-array `items`, `nullable`
without `type`, and draft 4's `id`. Only what a validation would read is checked: a definition
no `$ref` points to is not, as in ajv. A schema declaring another draft is validated by that
draft (promptfoo refuses it). Formats are checked as ajv-formats checks them (`json_formats`), and
`pattern` / `patternProperties` as ajv matches them: JavaScript regular expressions with the
`u` flag, run in V8.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.structured import clip, first_line
from ci_grade.grading.structured.json_formats import FORMATS, format_checker
from ci_grade.json_pointer import MISSING, resolve

DRAFT7 = ("http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#")
KEYWORDS = frozenset(
    {
        "$comment", "$ref", "$schema", "$id", "$defs", "$async", "$vocabulary", "definitions",
        "additionalItems", "additionalProperties", "allOf", "anyOf", "const", "contains", "dependencies",
        "else", "enum", "exclusiveMaximum", "exclusiveMinimum", "format", "if", "items", "maxItems",
        "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum",
        "multipleOf", "not", "nullable", "oneOf", "pattern", "patternProperties", "properties",
        "propertyNames", "required", "then", "type", "uniqueItems",
        "formatMaximum", "formatMinimum", "formatExclusiveMaximum", "formatExclusiveMinimum",
        "title", "description", "default", "examples", "readOnly", "writeOnly", "deprecated",
        "contentMediaType", "contentEncoding", "contentSchema",
    }
)  # fmt: skip
"""The keywords ajv 8 with ajv-formats knows for draft 7 (applicators, validators, metadata)."""
_ONE = ("additionalItems", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "not")
_MAPS = ("properties", "patternProperties")
_LISTS = ("allOf", "anyOf", "oneOf")


def schema_validator(schema: dict[str, Any] | bool, what: str) -> Any:
    """A jsonschema validator honouring `$schema` (draft 7 by default) with ajv-formats' formats;
    a draft 7 schema is first checked as ajv's strict mode checks it (`strict_problem`).

    An invalid schema is a GraderError naming `what`. The registry is empty, so a `$ref` to a
    remote document is an error, never a network fetch.
    """
    import jsonschema
    import referencing
    from jsonschema import validators

    declared = schema.get("$schema") if isinstance(schema, dict) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cls = validators.validator_for(schema, default=None)  # type: ignore[arg-type]
    if cls is None:
        if declared is not None:
            raise GraderError(f"invalid {what}: unknown $schema {declared!r}")
        cls = jsonschema.Draft7Validator
    try:
        # patterns are JavaScript's (checked when applied, in V8), not Python's `regex` format
        cls.check_schema(schema, format_checker=None)  # type: ignore[arg-type, call-arg]  # a boolean schema is valid; the stubs lack format_checker
    except jsonschema.SchemaError as exc:
        raise GraderError(f"invalid {what}: {exc.message}") from None
    if cls is jsonschema.Draft7Validator and (problem := strict_problem(schema)):
        raise GraderError(f"invalid {what}: {problem}")
    cls = validators.extend(cls, {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties})  # type: ignore[no-untyped-call]
    return cls(schema, format_checker=format_checker(), registry=referencing.Registry())


def _search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches in `text` as ajv decides it (JavaScript's regular expressions:
    `$` only at the very end, `\\d` only ASCII digits, named groups as `(?<n>...)`)."""
    from ci_grade.scripting.js import schema_pattern_test

    found = schema_pattern_test(pattern, text)
    if isinstance(found, str):
        raise GraderError(f"invalid JSON schema: pattern {pattern!r} is not a JavaScript regular expression ({found})")
    return found


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = [key for key in instance if key not in known and not any(_search(pattern, key) for pattern in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        listed = ", ".join(repr(extra) for extra in extras)
        yield ValidationError(f"Additional properties are not allowed ({listed} {'was' if len(extras) == 1 else 'were'} unexpected)")


def strict_problem(schema: Any) -> str | None:
    """What ajv's strict mode refuses in a draft 7 `schema` (the first thing found), or None."""
    for path, node in _subschemas(schema, "#", schema, set()):
        for key in node:
            if key == "id":
                return 'NOT SUPPORTED: keyword "id", use "$id" for schema ID'
            if key not in KEYWORDS:
                return f'strict mode: unknown keyword: "{key}" (at {path})'
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in FORMATS:
            return f'unknown format "{fmt}" ignored in schema at path "{path}"'
        if "if" in node and "then" not in node and "else" not in node:
            return f'strict mode: "if" without "then" and "else" is ignored (at {path})'
        for branch in ("then", "else"):
            if branch in node and "if" not in node:
                return f'strict mode: "{branch}" without "if" is ignored (at {path})'
        if "additionalItems" in node and not isinstance(node.get("items"), list):
            return f'strict mode: "additionalItems" is ignored when "items" is not an array of schemas (at {path})'
        if "nullable" in node and "type" not in node:
            return f'"nullable" cannot be used without "type" (at {path})'
    return None


def _subschemas(node: Any, path: str, root: Any, seen: set[int]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object a validation of `node` can apply, with its JSON pointer; local `$ref`s
    are followed once each."""
    if not isinstance(node, dict) or id(node) in seen:
        return
    seen.add(id(node))
    yield path, node
    for key in _ONE:
        yield from _subschemas(node.get(key), f"{path}/{key}", root, seen)
    for key in _MAPS:
        for name, child in (node.get(key) or {}).items() if isinstance(node.get(key), dict) else ():
            yield from _subschemas(child, f"{path}/{key}/{name}", root, seen)
    for key in _LISTS:
        for index, child in enumerate(node.get(key) or []) if isinstance(node.get(key), list) else ():
            yield from _subschemas(child, f"{path}/{key}/{index}", root, seen)
    items = node.get("items")
    if isinstance(items, list):
        for index, child in enumerate(items):
            yield from _subschemas(child, f"{path}/items/{index}", root, seen)
    else:
        yield from _subschemas(items, f"{path}/items", root, seen)
    dependencies = node.get("dependencies")
    for name, child in dependencies.items() if isinstance(dependencies, dict) else ():
        yield from _subschemas(child, f"{path}/dependencies/{name}", root, seen)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and (target := resolve(root, ref)) is not MISSING:
        yield from _subschemas(target, ref, root, seen)


def schema_errors(validator: Any, instance: Any) -> list[str]:
    """Readable schema violations of `instance` (empty when it conforms)."""
    from jsonschema.exceptions import relevance

    try:
        errors = sorted(validator.iter_errors(instance), key=relevance)
    except GraderError:
        raise
    except Exception as exc:  # e.g. an unresolvable $ref
        raise GraderError(f"JSON schema could not be applied: {first_line(exc)}") from None
    return [f"{_json_path(e.absolute_path)}: {clip(e.message, 200)}" for e in errors]


def _json_path(parts: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
