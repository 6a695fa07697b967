"""Preflight: everything about a loaded config that can be checked before any model is called.

A problem here is a ConfigError (exit 2) naming the file, key path and line; nothing has been
spent yet. What ci-grade can run but only partly (unknown keys, ignored features) is a warning.
Checked: assertion types; `file://` assertion values and scripts that are not there; values of a
kind a type never takes, for types that declare it (`ValueSpec.at_load`, e.g. `regex: 5`); grader
and test provider references that are not an id, an `{id: ...}` mapping or (graders) a mapping
by kind; provider ids, prompt filters and prompt templates; that user code compiles (Python
files of providers, assertions and variable loaders, inline Python and JavaScript assertions, Go
providers' packages);
and, once the environment is known (`check_graders`), that every model-graded assertion has a
grader.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ci_grade import preflight_code as user_code
from ci_grade.config import command_line, files
from ci_grade.config.assertion_types import REFUSED_ASSERTION_TYPES
from ci_grade.config.errors import describe, suggest, validation_error
from ci_grade.config.loader import LoadedConfig
from ci_grade.config.models import KNOWN_TOP_LEVEL_KEYS, Assertion, Config, ProviderSpec, TestCase
from ci_grade.config.sources import Location, SourceMap
from ci_grade.errors import ConfigError, GraderError, TemplateError
from ci_grade.grading import meteor, registry
from ci_grade.grading.graders import GraderResolver, is_kind_map, is_settings_only, no_default
from ci_grade.preflight_node import NodeNeeds
from ci_grade.providers import file_kinds
from ci_grade.providers import package as package_provider
from ci_grade.providers.base import Capability
from ci_grade.providers.registry import (
    ProviderPool,
    file_provider_path,
    node_scripts,
    spec_problem,
    spec_warnings,
)
from ci_grade.providers.registry import is_known as provider_is_known
from ci_grade.templating import nunjucks
from ci_grade.workers import node


def check(loaded: LoadedConfig, env: Mapping[str, str] | None = None) -> list[str]:
    """Fail early, with file and line, on assertion types, provider ids, provider settings (read
    with the run's `env`), prompt filters and prompt templates ci-grade cannot run; returns
    warnings (unknown keys, invalid static regexes, provider settings a family ignores)."""
    registry.load_all()
    sources = loaded.sources
    warnings: list[str] = []
    needs = NodeNeeds()
    raw_providers = _list(loaded.raw.get("providers"))
    for spec_index, spec in enumerate(loaded.config.providers):
        raw = _item(raw_providers, spec_index)
        loc = sources.location(raw, "id") if isinstance(raw, dict) else None
        _check_known(spec.id, loc, f"providers[{spec_index}]")
        if "{{" not in spec.id and (problem := spec_problem(spec, env)):
            config_loc = sources.location(raw, "config") if isinstance(raw, dict) and "config" in raw else loc
            raise ConfigError.at(f"provider {spec.id!r}: {problem}", config_loc, f"providers[{spec_index}].config")
        if "{{" not in spec.id:
            warnings += [f"provider {spec.id!r}: {warning}" for warning in spec_warnings(spec)]
        user_code.check_python_provider(spec.id, loaded, loc, f"providers[{spec_index}]")
        user_code.check_tool_code(spec.config, raw.get("config") if isinstance(raw, dict) else None, loaded, f"providers[{spec_index}].config")
        script = file_provider_path(spec.id)
        kind = file_kinds.language(spec.id) if script is not None and "{{" not in script else None
        if script is not None and kind == "node":
            needs.add(f"provider {spec.id!r}", files.resolve(script, loaded.base_dir), loc, f"providers[{spec_index}]")
        elif (package := package_provider.parse(spec.id)) is not None:
            needs.add_package(f"provider {spec.id!r}", package[0], loaded.base_dir, loc, f"providers[{spec_index}]")
        elif script is not None and kind == "ruby":
            ruby_file = files.resolve(script, loaded.base_dir)
            if not ruby_file.is_file():
                raise ConfigError.at(files.not_a_file(ruby_file), loc, f"providers[{spec_index}]")
            user_code.check_ruby(ruby_file.read_text(encoding="utf-8", errors="replace"), files.display_path(ruby_file), loc, f"providers[{spec_index}]", "Ruby file provider")
        elif script is not None and kind == "go":
            function = files.split_function(file_kinds.reference(spec.id))[1]
            user_code.check_go(files.resolve(script, loaded.base_dir), function, spec.config, loc, f"providers[{spec_index}]")
        elif script is not None and kind is None and "{{" not in script:
            raise ConfigError.at(f"provider {spec.id!r}: {file_kinds.UNSUPPORTED}", loc, f"providers[{spec_index}]")
        for path in node_scripts(spec):  # an `mcp` provider's `.js` servers
            needs.add(f"provider {spec.id!r}: {path}", files.resolve(path, loaded.base_dir), loc, f"providers[{spec_index}]")
        if spec.prompts is not None and not any(p.allowed_by(spec.prompts) for p in loaded.config.prompts):
            raise ConfigError.at(
                f"prompts {spec.prompts} match no prompt (prompts are {[p.label for p in loaded.config.prompts]})",
                loc,
                f"providers[{spec_index}].prompts",
            )
    raw_prompts = _list(loaded.raw.get("prompts"))
    for index, prompt in enumerate(loaded.config.prompts):
        if prompt.function and node.is_script(files.split_function(prompt.function)[0]):
            needs.add(f"prompt function {prompt.label!r}", Path(files.split_function(prompt.function)[0]), sources.location(_item(raw_prompts, index)), f"prompts[{index}]")
            continue
        if prompt.function:
            user_code.check_python_file(f"file://{prompt.function}", loaded, sources.location(_item(raw_prompts, index)), f"prompts[{index}]")
            continue
        try:
            nunjucks.check(prompt.raw)
        except TemplateError as exc:
            loc = sources.location(_item(raw_prompts, index))
            raise ConfigError.at(str(exc), loc, f"prompts[{index}]") from None
    if loaded.config.derivedMetrics:
        from ci_grade.results.derived_metrics import check as check_derived

        problem = check_derived([metric.model_dump() for metric in loaded.config.derivedMetrics])
        if problem:
            raise ConfigError.at(f"derivedMetrics {problem}", sources.location(loaded.raw, "derivedMetrics"), "derivedMetrics")
    raw_tests = _list(loaded.raw.get("tests"))
    for index, test in enumerate(loaded.config.tests):
        _check_test(test, _item(raw_tests, index), loaded, f"tests[{index}]", warnings)
    if loaded.config.defaultTest is not None:
        _check_test(loaded.config.defaultTest, loaded.raw.get("defaultTest"), loaded, "defaultTest", warnings)
    raw_scenarios = _list(loaded.raw.get("scenarios"))
    for s_index, scenario in enumerate(loaded.config.scenarios or []):
        raw_scenario = _item(raw_scenarios, s_index) or {}
        for kind, tests in (("config", scenario.config), ("tests", scenario.tests)):
            raw_list = _list(raw_scenario.get(kind)) if isinstance(raw_scenario, dict) else []
            for t_index, test in enumerate(tests):
                _check_test(test, _item(raw_list, t_index), loaded, f"scenarios[{s_index}].{kind}[{t_index}]", warnings)
    _javascript_assertion_files(loaded, needs)
    needs.check()
    return warnings + _unknown_key_warnings(loaded.config, loaded.raw, loaded.sources) + _command_line_warnings(loaded)


def _javascript_assertion_files(loaded: LoadedConfig, needs: NodeNeeds) -> None:
    """`javascript` assertions whose value is a file (run in Node.js, as promptfoo runs them)."""
    raw_tests = _items(loaded.raw.get("tests"))
    tests = [(f"tests[{i}]", test, raw_tests[i] if i < len(raw_tests) else None) for i, test in enumerate(loaded.config.tests)]
    if loaded.config.defaultTest is not None:
        tests.append(("defaultTest", loaded.config.defaultTest, loaded.raw.get("defaultTest")))
    tests += [(f"scenarios[{s}]", test, None) for s, scenario in enumerate(loaded.config.scenarios or []) for test in [*scenario.config, *scenario.tests]]
    for where, test, raw_test in tests:
        for assertion, raw in _assertion_pairs(test.assert_ or [], raw_test.get("assert") if isinstance(raw_test, dict) else None):
            value = assertion.value
            if assertion.base_type == "javascript" and isinstance(value, str) and value.startswith("file://"):
                loc = loaded.sources.location(raw, "value") if isinstance(raw, dict) else None
                needs.add(f"javascript assertion {value!r}", files.resolve(files.split_function(value)[0], loaded.base_dir), loc, f"{where}.assert")


_ALSO_NEEDS: dict[str, tuple[Capability, ...]] = {"answer-relevance": ("embedding",)}
"""Kinds of grader call a type makes besides its own `grader` kind."""


def check_graders(loaded: LoadedConfig, env: Mapping[str, str], grader: str | None) -> None:
    """A model-graded assertion that no grader can serve (none named for it, by the assertion, its
    test, `--grader` or `defaultTest.options.provider`, and no credentials for a default one) exits 2
    before any model is called, naming the assertion and what would serve it."""
    resolver = GraderResolver(ProviderPool(env), env)
    config = loaded.config
    default_ref = grader or (config.defaultTest.options.provider if config.defaultTest is not None else None)
    scenario_refs = [entry.options.provider for scenario in config.scenarios or [] for entry in scenario.config]
    raw_tests = _list(loaded.raw.get("tests"))
    tests = [(test, _item(raw_tests, i), f"tests[{i}]") for i, test in enumerate(config.tests)]
    raw_scenarios = _list(loaded.raw.get("scenarios"))
    for s_index, scenario in enumerate(config.scenarios or []):
        raw_scenario = _item(raw_scenarios, s_index)
        raw_list = _list(raw_scenario.get("tests")) if isinstance(raw_scenario, dict) else []
        tests += [(test, _item(raw_list, t), f"scenarios[{s_index}].tests[{t}]") for t, test in enumerate(scenario.tests)]
    check = _GraderCheck(loaded, resolver)
    for test, raw, path in tests:
        ref = test.options.provider or default_ref or next((r for r in scenario_refs if r is not None), None)
        check.assertions(test.assert_ or [], raw.get("assert") if isinstance(raw, dict) else None, ref, f"{path}.assert")
    if config.defaultTest is not None and (not tests or any(test.options.provider is None for test, _, _ in tests)):
        raw_default = loaded.raw.get("defaultTest")
        check.assertions(config.defaultTest.assert_ or [], raw_default.get("assert") if isinstance(raw_default, dict) else None, default_ref, "defaultTest.assert")


class _GraderCheck:
    """Whether each model-graded assertion has a grader for every kind of call it makes."""

    def __init__(self, loaded: LoadedConfig, resolver: GraderResolver):
        self.loaded = loaded
        self.resolver = resolver
        self.defaults: dict[Capability, bool] = {}

    def assertions(self, assertions: list[Assertion], raw_list: Any, ref: Any, path: str) -> None:
        for i, item in enumerate(assertions):
            raw_item = _item(_list(raw_list), i)
            if item.type == "assert-set":
                self.assertions(item.assert_ or [], raw_item.get("assert") if isinstance(raw_item, dict) else None, ref, f"{path}[{i}].assert")
                continue
            spec = registry.get(item.base_type)
            if spec is None or spec.grader is None:
                continue
            given = item.provider if item.provider is not None else ref
            loc = self.loaded.sources.location(raw_item, "type") if raw_item is not None else self.loaded.sources.location(raw_list, i)
            if item.base_type == "search-rubric" and (given is None or is_settings_only(given)):
                try:
                    self.resolver.default_search_spec(item.type)
                except GraderError as exc:
                    raise ConfigError.at(str(exc), loc, f"{path}[{i}].type") from None
                continue
            for kind in (spec.grader, *_ALSO_NEEDS.get(item.base_type, ())):
                named = given.get(kind) if is_kind_map(given) else given
                if (named is None or is_settings_only(named)) and not self._default(kind):
                    raise ConfigError.at(no_default(kind, item.type), loc, f"{path}[{i}].type")

    def _default(self, kind: Capability) -> bool:
        if kind not in self.defaults:
            self.defaults[kind] = self.resolver.default_id(kind) is not None
        return self.defaults[kind]


def _check_test(test: TestCase, raw: Any, loaded: LoadedConfig, path: str, warnings: list[str]) -> None:
    raw_test = raw if isinstance(raw, dict) else {}
    sources = loaded.sources
    if test.options.provider is not None:
        loc = sources.location(raw_test.get("options"), "provider") or sources.location(raw_test, "options")
        _check_provider_ref(test.options.provider, loc, f"{path}.options.provider", grader=True, sources=sources)
    if test.provider is not None:
        _check_provider_ref(test.provider, sources.location(raw_test, "provider"), f"{path}.provider", grader=False, sources=sources)
    _check_assertions(test.assert_ or [], loaded, raw_test.get("assert"), f"{path}.assert", warnings)
    for name, value in (test.vars or {}).items() if isinstance(test.vars, dict) else ():
        if isinstance(value, str) and value.startswith("file://") and files.split_function(value)[0].endswith(".py"):
            loc = sources.location(raw_test.get("vars"), name) or sources.location(raw_test, "vars")
            user_code.check_python_file(value, loaded, loc, f"{path}.vars.{name}")


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
        if base not in known:
            if base in REFUSED_ASSERTION_TYPES:
                raise ConfigError.at(f"assertion type {item.type!r} is not supported by ci-grade: {REFUSED_ASSERTION_TYPES[base]}", loc, where)
            raise ConfigError.at(f"unknown assertion type {item.type!r}{suggest(base, known)}", loc, where)
        if base == "meteor" and (missing := meteor.missing_requirements()):
            raise ConfigError.at(missing, loc, where)
        value_loc = loaded.sources.location(raw_item, "value") if raw_item is not None else loc
        if base == "regex":
            warnings.extend(_regex_warning(item.value, value_loc, f"{path}[{i}].value"))
        _check_value(item, registry.get(base), loaded, value_loc, f"{path}[{i}].value")
        if item.provider is not None:
            _check_provider_ref(item.provider, loaded.sources.location(raw_item, "provider") if raw_item is not None else loc, f"{path}[{i}].provider", grader=True, sources=loaded.sources)


def _check_value(item: Assertion, spec: registry.AssertionType | None, loaded: LoadedConfig, loc: Location | None, where: str) -> None:
    """A `file://` value (or script) that is not there; a value of a kind the type never takes."""
    value = item.value
    if isinstance(value, str) and value.startswith("file://"):
        path = files.resolve(files.split_function(value)[0], loaded.base_dir)
        if not path.is_file():
            raise ConfigError.at(files.not_a_file(path), loc, where)
        if path.suffix == ".py" and item.base_type == "python":
            user_code.check_python_file(value, loaded, loc, where)
        if path.suffix in (".js", ".cjs", ".mjs") and item.base_type == "javascript":
            from ci_grade.scripting.js import file_syntax_error

            if problem := file_syntax_error(path, files.display_path(path)):
                raise ConfigError.at(f"javascript assertion: {problem}", loc, where)
        if item.base_type == "ruby":
            user_code.check_ruby(path.read_text(encoding="utf-8", errors="replace"), files.display_path(path), loc, where)
        return
    if item.base_type == "ruby" and isinstance(value, str) and "{{" not in value and "{%" not in value:
        user_code.check_ruby(value, None, loc, where)
    elif item.base_type == "ruby":
        user_code.check_ruby(None, None, loc, where)
    if isinstance(value, str) and "{{" not in value and "{%" not in value:
        user_code.check_inline(item.base_type, value, loc, where)
    if spec is None or spec.value is None or not spec.value.at_load or value is None or isinstance(value, str):
        return  # text is rendered first: its kind is only known at run time
    try:
        spec.value.check(value, item.type, item.base_type)
    except GraderError as exc:
        raise ConfigError.at(f"{exc}, got {describe(value)}", loc, where) from None


def _regex_warning(pattern: Any, loc: Location | None, where: str) -> list[str]:
    """A static regex value JavaScript rejects: graded as a failure, so say so before the run."""
    if not isinstance(pattern, str) or not pattern or "{{" in pattern or "{%" in pattern or pattern.startswith("file://"):
        return []
    problem = _regex_error(pattern)
    if problem is None:
        return []
    hint = "; JavaScript has no inline flags such as (?i)" if re.search(r"\(\?[a-zA-Z]+[:)]", pattern) else ""
    place = f"{loc} {where}" if loc else where
    return [f"{place}: regex {pattern!r} is not a valid JavaScript regular expression ({problem}){hint}; every row will fail this assertion"]


@functools.lru_cache(maxsize=1024)
def _regex_error(pattern: str) -> str | None:
    """V8's verdict on a pattern, asked once per pattern (a large suite repeats a few patterns)."""
    from ci_grade.scripting.js import regex_error

    return regex_error(pattern)


def _check_provider_ref(ref: Any, loc: Location | None, where: str, *, grader: bool, sources: SourceMap | None = None) -> None:
    """A provider reference: an id, an `{id: ...}` mapping (its settings checked as a provider's
    are), or (graders) a mapping by kind of call."""
    if grader and is_kind_map(ref):
        for kind, inner in ref.items():
            if inner is not None:
                _check_provider_ref(inner, loc, f"{where}.{kind}", grader=False, sources=sources)
        return
    if isinstance(ref, str) and ref.strip():
        return _check_known(ref, loc, where)
    settings_only = grader and is_settings_only(ref)
    if settings_only or (isinstance(ref, dict) and isinstance(ref.get("id"), str) and ref["id"].strip()):
        try:
            ProviderSpec.model_validate({"id": "default", **ref} if settings_only else ref)
        except ValidationError as exc:  # e.g. `config: 5`: found now, not row by row
            error = validation_error(exc, ref, sources or SourceMap(), loc.file if loc else None)
            raise ConfigError(error.message, file=error.file, line=error.line or (loc.line if loc else None), path=f"{where}.{error.path}" if error.path else where) from None
        return None if settings_only else _check_known(ref["id"], loc, where)
    shapes = "a provider id, an {id: ...} mapping, a {config: ...} mapping (the default grader with those settings) or a mapping by kind ({text: ..., embedding: ...})" if grader else "a provider id or an {id: ...} mapping"
    raise ConfigError.at(f"expected {shapes}, got {describe(ref)}", loc, where)


PROVIDERS_DOC = "docs/providers.md (in the ci-grade repository)"


def _check_known(provider_id: str, loc: Location | None, where: str) -> None:
    """An id no provider family takes exits 2 before any model is called (an id that reads the
    environment, `{{ env.X }}`, is known once it is filled in, when the run starts)."""
    from ci_grade.providers.registry import SUPPORTED_PREFIXES, id_problem

    if "{{" in provider_id:
        return
    if provider_is_known(provider_id):
        if problem := id_problem(provider_id):
            raise ConfigError.at(f"provider {provider_id!r} is not supported: {problem}; supported providers are listed in {PROVIDERS_DOC}", loc, where)
        return

    prefix = provider_id.split(":", 1)[0]
    if files.split_function(provider_id)[0].endswith(".py"):  # promptfoo reads a Python file only with file:// or python:
        hint = f"; to load a Python file provider, write file://{provider_id}"
    else:
        hint = suggest(prefix, set(SUPPORTED_PREFIXES))
    raise ConfigError.at(
        f"unknown provider {provider_id!r}{hint}; the provider families ci-grade supports "
        f"are listed in {PROVIDERS_DOC}",
        loc,
        where,
    )


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
            own = kind.keys if (kind := registry.get(assertion.base_type)) else ()
            for key in assertion.extra_keys():
                if key not in own:
                    seen.setdefault(f"assert[].{key}", sources.location(raw_assertion, key))
    for spec, raw_spec in zip(config.providers, _items(raw.get("providers")), strict=False):
        for key in spec.extra_keys():
            seen.setdefault(f"providers[].{key}", sources.location(raw_spec, key))
    return [
        f"{loc}: unknown key {key!r} ignored" if loc else f"unknown key {key!r} ignored"
        for key, loc in seen.items()
    ]


COMMAND_LINE_OPTIONS_MOOT = frozenset(
    ["table", "tableCellMaxLength", "write", "share", "noShare", "verbose", "watch", "generateSuggestions", "suggestionsCount", "tags"]
)
"""Keys about promptfoo's own table, database, sharing and logs: nothing to do here, no warning."""


def _command_line_warnings(loaded: LoadedConfig) -> list[str]:
    """A warning for each `commandLineOptions` key that would change what promptfoo runs but that
    ci-grade does not read (`prompts`, `tests`, `envPath`, ...), naming where it was written."""
    raw = loaded.raw.get("commandLineOptions")
    if not isinstance(raw, dict):
        return []
    warnings = []
    for key in raw:
        if key not in command_line.KEYS_READ and key not in COMMAND_LINE_OPTIONS_MOOT:
            loc = loaded.sources.location(raw, key)
            warnings.append(f"{f'{loc}: ' if loc else ''}commandLineOptions.{key} is not read by ci-grade: the config's own keys say what runs")
    return warnings


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
