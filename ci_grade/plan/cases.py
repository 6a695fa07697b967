"""A config's tests as the plan expands them: defaultTest merged in, scenarios crossed.

promptfoo's rules: a test's assertions come after defaultTest's (unless it sets
`disableDefaultAsserts`); vars, options and metadata merge shallowly, the test's own winning;
each scenario config x scenario test is one test, and one conversation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ci_grade.config.loader import LoadedConfig
from ci_grade.config.models import Assertion, TestCase, TestOptions
from ci_grade.config.sources import Location


@dataclass(slots=True)
class Case:
    """A test after defaultTest (and scenario) merging, with where it was written."""

    test: TestCase
    location: Location | None
    path: str


def default_test(
    loaded: LoadedConfig, cli_vars: dict[str, str] | None = None, grader: str | None = None, prefix: str | None = None, suffix: str | None = None
) -> TestCase:
    """The config's defaultTest, with `--var` values over its vars, and `--grader`,
    `--prompt-prefix` and `--prompt-suffix` over its grader, prefix and suffix."""
    default = loaded.config.defaultTest or TestCase()
    updates: dict[str, Any] = {}
    if cli_vars:
        updates["vars"] = {**(default.vars or {}), **cli_vars}
    options = {key: value for key, value in (("provider", grader), ("prefix", prefix), ("suffix", suffix)) if value}
    if options:
        updates["options"] = default.options.model_copy(update=options)
    return default.model_copy(update=updates) if updates else default


def merge_default(test: TestCase, default: TestCase, in_place: bool = False) -> TestCase:
    """promptfoo's defaultTest merge: asserts first, shallow vars/options/metadata, test wins.
    `in_place`: into `test` itself (a model nothing else will read: no copy of its fields)."""
    disable = test.options.disableDefaultAsserts is True
    own_options = test.options.model_dump(exclude_unset=True, by_alias=True)
    default_options = default.options.model_dump(exclude_unset=True, by_alias=True)
    if not default_options:  # nothing to merge: the test's own options as they are
        merged_options = test.options
    elif not own_options:
        merged_options = default.options
    else:
        merged_options = TestOptions.model_validate({**default_options, **own_options})
    update = {
        "assert_": _joined(default.assert_ if not disable else None, test.assert_),
        "vars": _merged(default.vars, test.vars),
        "options": merged_options,
        "metadata": _merged(default.metadata, test.metadata),
        "threshold": test.threshold if test.threshold is not None else default.threshold,
        "provider": test.provider or default.provider,
        "prompts": test.prompts if test.prompts is not None else default.prompts,
        "providers": test.providers if test.providers is not None else default.providers,
    }
    if not in_place:
        return test.model_copy(update=update)
    changed = {key: value for key, value in update.items() if value is not test.__dict__[key]}
    test.__dict__.update(changed)  # as model_copy does: the values as they are, not validated again
    test.__pydantic_fields_set__.update(changed)
    return test


def _joined(first: list[Assertion] | None, then: list[Assertion] | None) -> list[Assertion]:
    """`first` then `then` (a test's own list itself when nothing comes first: lists are never changed in place)."""
    return then if not first and then is not None else [*(first or []), *(then or [])]


def _merged(default: dict[str, Any] | None, own: dict[str, Any] | None) -> dict[str, Any]:
    """`own` over `default` (the test's own mapping itself when the default adds nothing)."""
    return own if not default and own is not None else {**(default or {}), **(own or {})}


def cases_of(loaded: LoadedConfig, default: TestCase, in_place: bool = False) -> list[Case]:
    """The config's tests and scenario combinations, defaultTest merged. `in_place`: the config's
    own test models become the cases (the config is released next: it never reads them again)."""
    config = loaded.config
    sources = loaded.sources
    raw_tests = _list(loaded.raw.get("tests"))
    found: list[Case] = []
    listed = Counter(map(id, config.tests)) if in_place else Counter()
    for i, test in enumerate(config.tests):
        raw = _item(raw_tests, i)
        alone = in_place and listed[id(test)] == 1  # a model listed twice is copied each time
        found.append(Case(merge_default(test, default, alone), sources.location(raw) if raw is not None else None, f"tests[{i}]"))
    raw_scenarios = _list(loaded.raw.get("scenarios"))
    conversation = 0
    for s_index, scenario in enumerate(config.scenarios or []):
        raw_scenario = _item(raw_scenarios, s_index) or {}
        raw_configs, raw_scenario_tests = _list(raw_scenario.get("config")), _list(raw_scenario.get("tests"))
        for c_index, data in enumerate(scenario.config):
            for t_index, test in enumerate(scenario.tests or [TestCase()]):
                raw = _item(raw_scenario_tests, t_index) if scenario.tests else _item(raw_configs, c_index)
                combined = test.model_copy(
                    update={
                        "vars": {**(data.vars or {}), **(test.vars or {})},
                        "assert_": [*(data.assert_ or []), *(test.assert_ or [])],
                        "metadata": {**(data.metadata or {}), **(test.metadata or {})},
                        "description": test.description or data.description or scenario.description,
                        "threshold": test.threshold if test.threshold is not None else data.threshold,
                        "provider": test.provider or data.provider,
                        "options": TestOptions.model_validate({**data.options.model_dump(exclude_unset=True), **test.options.model_dump(exclude_unset=True)}),
                    }
                )
                location = sources.location(raw) if raw is not None else sources.location(raw_scenario)
                path = f"scenarios[{s_index}].config[{c_index}]" + (f" x tests[{t_index}]" if scenario.tests else "")
                merged = merge_default(combined, default, in_place=True)  # a copy of its own
                if (merged.metadata or {}).get("conversationId") is None:  # each scenario config is one conversation
                    merged.metadata = {**(merged.metadata or {}), "conversationId": f"__scenario_{conversation}__"}
                found.append(Case(merged, location, path))
            conversation += 1
    if not found and not config.scenarios:
        found.append(Case(merge_default(TestCase(), default), None, "defaultTest"))
    return found


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _item(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None
