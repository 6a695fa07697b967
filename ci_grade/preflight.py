"""Preflight: everything about a loaded config that can be checked before any model is called.

A problem here is a ConfigError (exit 2) naming the file, key path and line; nothing has been
spent yet. What ci-grade can run but only partly (unknown keys, ignored features) is a warning.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.config import files, nunjucks
from ci_grade.config.assertion_types import PROMPTFOO_ASSERTION_TYPES
from ci_grade.config.errors import suggest
from ci_grade.config.loader import LoadedConfig
from ci_grade.config.models import KNOWN_TOP_LEVEL_KEYS, Assertion, Config
from ci_grade.config.sources import Location, SourceMap
from ci_grade.errors import ConfigError, TemplateError
from ci_grade.grading import registry
from ci_grade.providers import unavailable
from ci_grade.providers.registry import is_known as provider_is_known


def check(loaded: LoadedConfig) -> list[str]:
    """Fail early, with file and line, on assertion types, provider ids, prompt filters and prompt
    templates ci-grade cannot run; returns warnings (unknown keys, invalid static regexes, file
    providers that cannot run here and will be ERROR rows)."""
    registry.load_all()
    sources = loaded.sources
    warnings: list[str] = []
    raw_providers = _list(loaded.raw.get("providers"))
    for spec_index, spec in enumerate(loaded.config.providers):
        raw = _item(raw_providers, spec_index)
        loc = sources.location(raw, "id") if isinstance(raw, dict) else None
        if not provider_is_known(spec.id):
            from ci_grade.providers.registry import SUPPORTED_PREFIXES

            prefix = spec.id.split(":", 1)[0]
            raise ConfigError.at(
                f"unknown provider {spec.id!r}{suggest(prefix, set(SUPPORTED_PREFIXES))}; ci-grade supports {', '.join(SUPPORTED_PREFIXES)}",
                loc,
                f"providers[{spec_index}]",
            )
        if spec.id.startswith("file://") and not files.split_function(spec.id)[0].endswith(".py"):
            why = unavailable.reason(files.split_function(spec.id)[0])
            warnings.append(f"{ConfigError.at(f'provider {spec.id!r}: {why}', loc, f'providers[{spec_index}]')}; its rows will be ERRORs")
        if spec.prompts is not None and not any(p.allowed_by(spec.prompts) for p in loaded.config.prompts):
            raise ConfigError.at(
                f"prompts {spec.prompts} match no prompt (prompts are {[p.label for p in loaded.config.prompts]})",
                loc,
                f"providers[{spec_index}].prompts",
            )
    raw_prompts = _list(loaded.raw.get("prompts"))
    for index, prompt in enumerate(loaded.config.prompts):
        try:
            nunjucks.check(prompt.raw)
        except TemplateError as exc:
            loc = sources.location(_item(raw_prompts, index))
            raise ConfigError.at(str(exc), loc, f"prompts[{index}]") from None
    raw_tests = _list(loaded.raw.get("tests"))
    for index, test in enumerate(loaded.config.tests):
        raw = _item(raw_tests, index)
        _check_assertions(test.assert_ or [], loaded, raw.get("assert") if isinstance(raw, dict) else None, f"tests[{index}].assert", warnings)
    if loaded.config.defaultTest is not None:
        raw_default = loaded.raw.get("defaultTest")
        _check_assertions(loaded.config.defaultTest.assert_ or [], loaded, raw_default.get("assert") if isinstance(raw_default, dict) else None, "defaultTest.assert", warnings)
    raw_scenarios = _list(loaded.raw.get("scenarios"))
    for s_index, scenario in enumerate(loaded.config.scenarios or []):
        raw_scenario = _item(raw_scenarios, s_index) or {}
        for kind, tests in (("config", scenario.config), ("tests", scenario.tests)):
            raw_list = _list(raw_scenario.get(kind)) if isinstance(raw_scenario, dict) else []
            for t_index, test in enumerate(tests):
                raw = _item(raw_list, t_index)
                _check_assertions(test.assert_ or [], loaded, raw.get("assert") if isinstance(raw, dict) else None, f"scenarios[{s_index}].{kind}[{t_index}].assert", warnings)
    return warnings + _unknown_key_warnings(loaded.config, loaded.raw, loaded.sources)


def _check_assertions(assertions: list[Assertion], loaded: LoadedConfig, raw_list: Any, path: str, warnings: list[str]) -> None:
    known = registry.names()
    for i, item in enumerate(assertions):
        raw_item = raw_list[i] if isinstance(raw_list, list) and i < len(raw_list) else None
        loc = loaded.sources.location(raw_item, "type") if raw_item is not None else loaded.sources.location(raw_list, i)
        where = f"{path}[{i}].type"
        if item.type == "assert-set":
            if not item.assert_:
                raise ConfigError.at("assert-set needs a non-empty assert: list", loc, where)
            _check_assertions(item.assert_, loaded, raw_item.get("assert") if isinstance(raw_item, dict) else None, f"{path}[{i}].assert", warnings)
            continue
        base = item.base_type
        if base == "regex":
            value_loc = loaded.sources.location(raw_item, "value") if raw_item is not None else loc
            warnings.extend(_regex_warning(item.value, value_loc, f"{path}[{i}].value"))
        if base in known:
            continue
        if base in PROMPTFOO_ASSERTION_TYPES:
            raise ConfigError.at(f"assertion type {item.type!r} is not yet supported by ci-grade", loc, where)
        raise ConfigError.at(f"unknown assertion type {item.type!r}{suggest(base, known)}", loc, where)


def _regex_warning(pattern: Any, loc: Location | None, where: str) -> list[str]:
    """A static regex value JavaScript rejects: graded as a failure, so say so before the run."""
    if not isinstance(pattern, str) or not pattern or "{{" in pattern or "{%" in pattern or pattern.startswith("file://"):
        return []
    from ci_grade.scripting.js import regex_error

    problem = regex_error(pattern)
    if problem is None:
        return []
    hint = "; JavaScript has no inline flags such as (?i)" if re.search(r"\(\?[a-zA-Z]+[:)]", pattern) else ""
    place = f"{loc} {where}" if loc else where
    return [f"{place}: regex {pattern!r} is not a valid JavaScript regular expression ({problem}){hint}; every row will fail this assertion"]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _item(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None


def _unknown_key_warnings(config: Config, raw: dict[str, Any], sources: SourceMap) -> list[str]:
    """One warning per unknown key name (the first place it was written), never an error."""
    seen: dict[str, Location | None] = {}
    for key in raw:
        if key not in KNOWN_TOP_LEVEL_KEYS:
            seen.setdefault(key, sources.location(raw, key))
    tests = [("tests[].", test, raw_test) for test, raw_test in zip(config.tests, _items(raw.get("tests")), strict=False)]
    if config.defaultTest is not None:
        tests.append(("defaultTest.", config.defaultTest, raw.get("defaultTest")))
    for prefix, test, raw_test in tests:
        for key in test.extra_keys():
            seen.setdefault(f"{prefix}{key}", sources.location(raw_test, key))
        for assertion, raw_assertion in _assertion_pairs(test.assert_ or [], raw_test.get("assert") if isinstance(raw_test, dict) else None):
            for key in assertion.extra_keys():
                seen.setdefault(f"assert[].{key}", sources.location(raw_assertion, key))
    for spec, raw_spec in zip(config.providers, _items(raw.get("providers")), strict=False):
        for key in spec.extra_keys():
            seen.setdefault(f"providers[].{key}", sources.location(raw_spec, key))
    return [
        f"{loc}: unknown key {key!r} ignored" if loc else f"unknown key {key!r} ignored"
        for key, loc in seen.items()
    ]


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _assertion_pairs(assertions: list[Assertion], raw: Any) -> list[tuple[Assertion, Any]]:
    """Every assertion (assert-set children too) with the raw mapping it was read from."""
    out: list[tuple[Assertion, Any]] = []
    raw_items = _items(raw)
    for i, assertion in enumerate(assertions):
        raw_item = raw_items[i] if i < len(raw_items) else None
        out.append((assertion, raw_item))
        out.extend(_assertion_pairs(assertion.assert_ or [], raw_item.get("assert") if isinstance(raw_item, dict) else None))
    return out
