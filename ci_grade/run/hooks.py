"""`extensions:` hooks (`beforeAll`, `beforeEach`, `afterEach`, `afterAll`), called as promptfoo calls them.

An extension is `file://hooks.py:fn`. When `fn` is a hook's name it runs for that hook only, as
`fn(context, {"hookName": name})`; any other name runs for every hook as `fn(name, context)`.
Contexts: beforeAll `{suite}` (its returned `tests`, `defaultTest` and `scenarios` replace the
config's, before the plan is made: once per process, so once per shard); beforeEach `{test}` (a
returned `test` replaces the row's test); afterEach `{test, result}` (the row as promptfoo's
results file has it); afterAll `{prompts, results, suite, config}`. Hooks run in worker processes
(`ci_grade.workers`). A failing beforeAll stops the eval before any call (exit 2), a failing
beforeEach or afterEach makes its row an ERROR, a failing afterAll is a warning.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ci_grade.config import files
from ci_grade.config.loader import LoadedConfig
from ci_grade.config.models import Scenario, TestCase
from ci_grade.errors import ConfigError, ScriptError
from ci_grade.results.models import EvalRun
from ci_grade.workers import calls

HOOK_NAMES = ("beforeAll", "beforeEach", "afterEach", "afterAll")


class Hooks:
    """The config's extensions, ready to call."""

    def __init__(self, refs: list[str], base_dir: Path):
        self.refs = refs
        self.base_dir = base_dir

    def __bool__(self) -> bool:
        return bool(self.refs)

    def _targets(self, hook: str) -> list[tuple[str, Path, str, list[Any]]]:
        """(reference, file, function, how to call it) for each extension `hook` runs."""
        out = []
        for ref in self.refs:
            path_text, function = files.split_function(ref)
            if function in HOOK_NAMES and function != hook:
                continue
            name = function or "extension_hook"
            out.append((ref, files.resolve(path_text, self.base_dir), name, [None, {"hookName": hook}] if function in HOOK_NAMES else [hook, None]))
        return out

    @staticmethod
    def _args(shape: list[Any], context: dict[str, Any]) -> list[Any]:
        return [context if arg is None else arg for arg in shape]

    def run_sync(self, hook: str, context: dict[str, Any]) -> dict[str, Any]:
        """Run `hook` outside the event loop (beforeAll, afterAll); the context each returned."""
        for ref, path, name, shape in self._targets(hook):
            try:
                value = calls.call_file_sync(path, name, self._args(shape, context), base_dir=self.base_dir)
            except ScriptError as exc:
                raise ScriptError(f"extension hook {hook} failed for {ref}: {exc}") from None
            context = _updated(hook, context, value)
        return context

    async def run(self, hook: str, context: dict[str, Any]) -> dict[str, Any]:
        """Run `hook` for one row (beforeEach, afterEach); the context each returned."""
        for ref, path, name, shape in self._targets(hook):
            try:
                value = await calls.call_file(path, name, self._args(shape, context), base_dir=self.base_dir)
            except ScriptError as exc:
                raise ScriptError(f"extension hook {hook} failed for {ref}: {exc}") from None
            context = _updated(hook, context, value)
        return context


def _updated(hook: str, context: dict[str, Any], value: Any) -> dict[str, Any]:
    """The context after one extension, keeping what promptfoo lets each hook change."""
    if not isinstance(value, dict):
        return context
    if hook == "beforeAll" and isinstance(value.get("suite"), dict):
        suite = {**context["suite"], **{k: value["suite"][k] for k in ("tests", "defaultTest", "scenarios") if k in value["suite"]}}
        return {**context, "suite": suite}
    if hook == "beforeEach" and isinstance(value.get("test"), dict):
        return {**context, "test": value["test"]}
    return context


def suite_of(loaded: LoadedConfig) -> dict[str, Any]:
    """The `suite` a hook sees: the config's prompts, providers, tests, defaultTest and scenarios as data."""
    raw = loaded.raw
    default = _data(raw.get("defaultTest")) if isinstance(raw.get("defaultTest"), dict) else {}
    default.setdefault("assert", [])  # as promptfoo: hooks may append to defaultTest.assert
    return {
        "description": loaded.config.description,
        "prompts": [{"raw": p.raw, "label": p.label} for p in loaded.config.prompts],
        "providers": [{"id": p.id, "label": p.label} for p in loaded.config.providers],
        "tests": _data(raw.get("tests") or []),
        "defaultTest": default,
        "scenarios": _data(raw.get("scenarios") or []),
        "derivedMetrics": _data(raw.get("derivedMetrics") or []),
    }


def before_all(loaded: LoadedConfig, hooks: Hooks) -> None:
    """Run beforeAll and take the tests, defaultTest and scenarios it returns into the config
    (unchanged tests keep their source lines); a failure or an invalid test exits 2."""
    if not hooks:
        return
    suite = suite_of(loaded)
    try:
        out = hooks.run_sync("beforeAll", {"suite": suite})["suite"]
    except ScriptError as exc:
        raise ConfigError(str(exc), path="extensions") from None
    updates: dict[str, Any] = {}
    try:
        if out["tests"] != suite["tests"] and isinstance(out["tests"], list):
            kept = _list(loaded.raw.get("tests"))
            tests = [kept[i] if i < len(kept) and i < len(suite["tests"]) and item == suite["tests"][i] else item for i, item in enumerate(out["tests"])]
            updates["tests"] = [TestCase.model_validate(t) for t in tests]
            loaded.raw["tests"] = tests
        if out["defaultTest"] != suite["defaultTest"] and isinstance(out["defaultTest"], dict):
            updates["defaultTest"] = TestCase.model_validate(out["defaultTest"])
            loaded.raw["defaultTest"] = out["defaultTest"]
        if out["scenarios"] != suite["scenarios"] and isinstance(out["scenarios"], list):
            updates["scenarios"] = [Scenario.model_validate(s) for s in out["scenarios"]]
            loaded.raw["scenarios"] = out["scenarios"]
    except ValidationError as exc:
        raise ConfigError(f"the beforeAll extension hook returned an invalid suite: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}", path="extensions") from None
    if updates:
        loaded.config = loaded.config.model_copy(update=updates)


def _data(value: Any) -> Any:
    """`value` as JSON data (dates and the like as text)."""
    return json.loads(json.dumps(value, default=str))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def check(loaded: LoadedConfig) -> Hooks:
    """The config's extensions, each a Python file that is there and compiles (else exit 2)."""
    from ci_grade.scripting.python import file_syntax_error

    refs = loaded.config.extensions or []
    for index, ref in enumerate(refs):
        where = loaded.sources.location(loaded.raw.get("extensions"), index) or loaded.sources.location(loaded.raw, "extensions")
        path_text, _ = files.split_function(ref)
        if not ref.startswith("file://") or not path_text.endswith(".py"):
            raise ConfigError.at(f"extension {ref!r}: ci-grade runs Python extension hooks (file://hooks.py:fn)", where, f"extensions[{index}]")
        path = files.resolve(path_text, loaded.base_dir)
        problem = files.not_a_file(path) if not path.is_file() else file_syntax_error(path, files.display_path(path))
        if problem:
            raise ConfigError.at(problem, where, f"extensions[{index}]")
    return Hooks(list(refs), loaded.base_dir)


def after_all(hooks: Hooks | None, run: EvalRun, suite: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Run afterAll with the finished run; a failure is a warning (the results stand)."""
    if not hooks:
        return []
    from ci_grade.results.promptfoo import row_to_promptfoo, to_promptfoo

    context = {"prompts": to_promptfoo(run, config, rows=False)["results"]["prompts"], "results": [row_to_promptfoo(row) for row in run.results], "suite": suite, "config": config}
    try:
        hooks.run_sync("afterAll", _data(context))
    except ScriptError as exc:
        return [str(exc)]
    return []
