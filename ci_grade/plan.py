"""Expand a loaded config into rows: test x vars combination x repeat x provider x prompt.

Merges `defaultTest` into each test by promptfoo's rules, crosses scenarios, expands array and
glob variables, applies filters, loads `file://` variables, and gives every row a stable id
(from the test's description or variables, the prompt's key and the provider) so a baseline
from another run matches the same test even when tests are reordered.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import mimetypes
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.assertion_types import PROMPTFOO_ASSERTION_TYPES
from ci_grade.config.loader import LoadedConfig, suggest
from ci_grade.config.models import Assertion, Prompt, ProviderSpec, TestCase, TestOptions
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError
from ci_grade.grading import registry
from ci_grade.providers.registry import is_known as provider_is_known

_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"}
_STRUCTURED = {".json", ".yaml", ".yml"}


@dataclass
class PlanOptions:
    repeat: int = 1
    filter_pattern: str | None = None
    filter_first_n: int | None = None
    filter_metadata: dict[str, str] = field(default_factory=dict)
    cli_vars: dict[str, str] = field(default_factory=dict)
    grader: str | None = None


@dataclass
class PlannedRow:
    """One provider call to make and grade."""

    index: int
    test_index: int
    repeat_index: int
    test: TestCase
    vars: dict[str, Any]
    prompt: Prompt
    prompt_index: int
    provider: ProviderSpec
    provider_index: int
    test_id: str
    fingerprint: str
    location: Location | None


@dataclass
class Plan:
    rows: list[PlannedRow]
    prompts: list[Prompt]
    providers: list[ProviderSpec]


def build_plan(loaded: LoadedConfig, options: PlanOptions | None = None) -> Plan:
    """Validate assertion types and provider ids, then expand every row."""
    options = options or PlanOptions()
    config = loaded.config
    default_test = _default_test(loaded, options)
    cases = _cases(loaded, default_test)
    validate(loaded, [case for case, _ in cases], default_test)
    if options.filter_pattern:
        try:
            pattern = re.compile(options.filter_pattern)
        except re.error as exc:
            raise ConfigError(f"--filter-pattern is not a valid regular expression: {exc}") from None
        cases = [(c, loc) for c, loc in cases if pattern.search(c.description or "")]
    if options.filter_metadata:
        cases = [(c, loc) for c, loc in cases if all(_metadata_matches(c.metadata or {}, k, v) for k, v in options.filter_metadata.items())]
    if options.filter_first_n is not None:
        cases = cases[: options.filter_first_n]

    var_loader = _VarLoader(loaded.base_dir)
    cells: list[tuple[int, TestCase, dict[str, Any], Location | None, Prompt, int, ProviderSpec, int, str, str]] = []
    seen: dict[str, int] = {}
    group = 0
    for case, loc in cases:
        for identity_vars in _var_combinations(case, loaded.base_dir, loc):
            variables = var_loader.resolve(identity_vars, loc)
            if case.options.transformVars:
                variables = _transform_vars(case.options.transformVars, variables, loaded.base_dir)
            test = case.model_copy(update={"vars": variables})
            for provider_index, provider in enumerate(config.providers):
                if not _allowed(provider.label or provider.id, provider.id, case.providers):
                    continue
                for prompt_index, prompt in enumerate(config.prompts):
                    if not (_prompt_allowed(prompt, provider.prompts) and _prompt_allowed(prompt, case.prompts)):
                        continue
                    provider_key = provider.label or provider.id
                    base_id = _digest(_identity(case, identity_vars), prompt.key, provider_key)
                    seen[base_id] = seen.get(base_id, 0) + 1
                    test_id = base_id if seen[base_id] == 1 else f"{base_id}~{seen[base_id]}"
                    fingerprint = _digest(_canonical(identity_vars), prompt.key, provider_key)
                    cells.append((group, test, variables, loc, prompt, prompt_index, provider, provider_index, test_id, fingerprint))
            group += 1
    rows: list[PlannedRow] = []
    for repeat_index in range(options.repeat):
        for group_index, test, variables, loc, prompt, prompt_index, provider, provider_index, test_id, fingerprint in cells:
            rows.append(
                PlannedRow(
                    index=len(rows),
                    test_index=repeat_index * group + group_index,
                    repeat_index=repeat_index,
                    test=test,
                    vars=variables,
                    prompt=prompt,
                    prompt_index=prompt_index,
                    provider=provider,
                    provider_index=provider_index,
                    test_id=test_id,
                    fingerprint=fingerprint,
                    location=loc,
                )
            )
    return Plan(rows=rows, prompts=config.prompts, providers=config.providers)


def _default_test(loaded: LoadedConfig, options: PlanOptions) -> TestCase:
    default = loaded.config.defaultTest or TestCase()
    updates: dict[str, Any] = {}
    if options.cli_vars:
        updates["vars"] = {**(default.vars or {}), **options.cli_vars}
    if options.grader:
        updates["options"] = default.options.model_copy(update={"provider": options.grader})
    return default.model_copy(update=updates) if updates else default


def merge_default(test: TestCase, default: TestCase) -> TestCase:
    """promptfoo's defaultTest merge: asserts first, shallow vars/options/metadata, test wins."""
    disable = test.options.disableDefaultAsserts is True
    own_options = test.options.model_dump(exclude_unset=True, by_alias=True)
    merged_options = TestOptions.model_validate({**default.options.model_dump(exclude_unset=True, by_alias=True), **own_options})
    return test.model_copy(
        update={
            "assert_": [*([] if disable else (default.assert_ or [])), *(test.assert_ or [])],
            "vars": {**(default.vars or {}), **(test.vars or {})},
            "options": merged_options,
            "metadata": {**(default.metadata or {}), **(test.metadata or {})},
            "threshold": test.threshold if test.threshold is not None else default.threshold,
            "provider": test.provider or default.provider,
            "prompts": test.prompts if test.prompts is not None else default.prompts,
            "providers": test.providers if test.providers is not None else default.providers,
        }
    )


def _cases(loaded: LoadedConfig, default: TestCase) -> list[tuple[TestCase, Location | None]]:
    config = loaded.config
    raw_tests = loaded.raw.get("tests") or []
    cases: list[tuple[TestCase, Location | None]] = []
    for i, test in enumerate(config.tests):
        raw = raw_tests[i] if i < len(raw_tests) else None
        cases.append((merge_default(test, default), loaded.sources.location(raw) if raw is not None else None))
    for s_index, scenario in enumerate(config.scenarios or []):
        raw_scenario = (loaded.raw.get("scenarios") or [])[s_index]
        location = loaded.sources.location(raw_scenario)
        for data in scenario.config:
            for test in scenario.tests or [TestCase()]:
                combined = test.model_copy(
                    update={
                        "vars": {**(data.vars or {}), **(test.vars or {})},
                        "assert_": [*(data.assert_ or []), *(test.assert_ or [])],
                        "metadata": {**(data.metadata or {}), **(test.metadata or {})},
                        "description": test.description or data.description or scenario.description,
                        "options": TestOptions.model_validate({**data.options.model_dump(exclude_unset=True), **test.options.model_dump(exclude_unset=True)}),
                    }
                )
                cases.append((merge_default(combined, default), location))
    if not cases and not config.scenarios:
        cases.append((merge_default(TestCase(), default), None))
    return cases


def validate(loaded: LoadedConfig, cases: list[TestCase], default: TestCase) -> None:
    """Fail early, with file and line, on assertion types and provider ids ci-grade cannot run."""
    registry.load_all()
    raw_tests = loaded.raw.get("tests") or []
    for spec_index, spec in enumerate(loaded.config.providers):
        if not provider_is_known(spec.id):
            raw = (loaded.raw.get("providers") or [None] * (spec_index + 1))[spec_index]
            loc = loaded.sources.location(raw, "id") if isinstance(raw, dict) else loaded.sources.location(loaded.raw.get("providers"), spec_index)
            from ci_grade.providers.registry import SUPPORTED_PREFIXES

            raise ConfigError(
                f"unknown provider {spec.id!r}; ci-grade supports {', '.join(SUPPORTED_PREFIXES)}",
                file=loc.file if loc else None,
                line=loc.line if loc else None,
                path=f"providers[{spec_index}]",
            )
    for index, test in enumerate(loaded.config.tests):
        raw = raw_tests[index] if index < len(raw_tests) else None
        _check_assertions(test.assert_ or [], loaded, raw.get("assert") if isinstance(raw, dict) else None, f"tests[{index}].assert")
    if loaded.config.defaultTest is not None:
        raw_default = loaded.raw.get("defaultTest")
        _check_assertions(loaded.config.defaultTest.assert_ or [], loaded, raw_default.get("assert") if isinstance(raw_default, dict) else None, "defaultTest.assert")
    for s_index, scenario in enumerate(loaded.config.scenarios or []):
        for t_index, test in enumerate([*scenario.config, *scenario.tests]):
            _check_assertions(test.assert_ or [], loaded, None, f"scenarios[{s_index}].tests[{t_index}].assert")


def _check_assertions(assertions: list[Assertion], loaded: LoadedConfig, raw_list: Any, path: str) -> None:
    known = registry.names()
    for i, item in enumerate(assertions):
        raw_item = raw_list[i] if isinstance(raw_list, list) and i < len(raw_list) else None
        loc = loaded.sources.location(raw_item, "type") if raw_item is not None else loaded.sources.location(raw_list, i)
        where = {"file": loc.file if loc else None, "line": loc.line if loc else None, "path": f"{path}[{i}].type"}
        if item.type == "assert-set":
            if not item.assert_:
                raise ConfigError("assert-set needs a non-empty assert: list", **where)
            _check_assertions(item.assert_, loaded, raw_item.get("assert") if isinstance(raw_item, dict) else None, f"{path}[{i}].assert")
            continue
        base = item.base_type
        if base in known:
            continue
        if base in PROMPTFOO_ASSERTION_TYPES:
            raise ConfigError(f"assertion type {item.type!r} is not yet supported by ci-grade", **where)
        raise ConfigError(f"unknown assertion type {item.type!r}{suggest(base, known)}", **where)


def _metadata_matches(metadata: dict[str, Any], key: str, expected: str) -> bool:
    value = metadata.get(key)
    if isinstance(value, list):
        return expected in [str(v) for v in value]
    return value is not None and str(value) == expected


def _var_combinations(test: TestCase, base_dir: Path, loc: Location | None) -> list[dict[str, Any]]:
    """promptfoo's expansion: string arrays and file globs fan out into a cartesian product."""
    variables = test.vars or {}
    if test.options.disableVarExpansion:
        return [dict(variables)]
    choices: list[list[Any]] = []
    for key, value in variables.items():
        if isinstance(value, str) and value.startswith("file://") and files.is_glob(value):
            matches = files.expand_glob(value, base_dir, loc, f"vars.{key}")
            choices.append([f"file://{p}" for p in matches])
        elif isinstance(value, list) and value and isinstance(value[0], str):
            choices.append(list(value))
        else:
            choices.append([value])
    keys = list(variables)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]


class _VarLoader:
    """Loads `file://` variable values (text, JSON/YAML, images as base64), once per file."""

    def __init__(self, base_dir: Path):
        self.base_dir = base_dir

    def resolve(self, variables: dict[str, Any], loc: Location | None) -> dict[str, Any]:
        return {k: self.value(k, v, loc) for k, v in variables.items()}

    def value(self, key: str, value: Any, loc: Location | None) -> Any:
        if not (isinstance(value, str) and value.startswith("file://")):
            return value
        path_text, function = files.split_function(value)
        path = files.resolve(path_text, self.base_dir)
        if function or path.suffix in (".py", ".js", ".ts", ".mjs"):
            raise ConfigError(f"vars.{key}: variables computed by scripts ({value}) are not supported by ci-grade", file=loc.file if loc else None, line=loc.line if loc else None)
        if not path.is_file():
            raise files.missing_file_error(f"file not found: {path}", loc, f"vars.{key}")
        return _load_var_file(path)


@lru_cache(maxsize=256)
def _load_var_file(path: Path) -> Any:
    suffix = path.suffix.lower()
    if suffix in _STRUCTURED:
        return files.load_structured(path, None)
    if suffix in _IMAGE_SUFFIXES or (mimetypes.guess_type(path.name)[0] or "").startswith(("image/", "video/")):
        return base64.b64encode(path.read_bytes()).decode()
    return files.read_text(path)


def _transform_vars(code: str, variables: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    from ci_grade.scripting import js

    if code.startswith("file://"):
        raise ConfigError("options.transformVars from a file is not supported by ci-grade; use an inline expression")
    try:
        _, value = js.run_inline(code, ("vars", "context"), [variables, {}])
    except js.JsError as exc:
        raise ConfigError(f"options.transformVars failed: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError("options.transformVars must return an object")
    return {**variables, **value}


def _allowed(label: str, provider_id: str, allowed: list[str] | None) -> bool:
    if allowed is None:
        return True
    return any(_name_matches(name, label) or _name_matches(name, provider_id) for name in allowed)


def _prompt_allowed(prompt: Prompt, allowed: list[str] | None) -> bool:
    if allowed is None:
        return True
    names = [prompt.label, *( [prompt.id] if prompt.id else [])]
    return any(_name_matches(pattern, name) for pattern in allowed for name in names)


def _name_matches(pattern: str, name: str) -> bool:
    """Exact name, a group prefix (`group` matches `group:x`), or a wildcard (`group:*`)."""
    if pattern == name:
        return True
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name.startswith(pattern + ":")


def _identity(test: TestCase, identity_vars: dict[str, Any]) -> str:
    return f"d:{test.description}" if test.description else f"v:{_canonical(identity_vars)}"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12]
