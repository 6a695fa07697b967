"""promptfoo's `nunjucksFilters`: JavaScript filter functions from files, as template filters.

`nunjucksFilters: {name: path/to/filter.js}` (relative to the config's folder, globs allowed: the
last match wins, as in promptfoo). Each file's export (`module.exports = function (value, ...args)`
or an ES `export default`) runs in the embedded V8; values cross as JSON. A file that cannot be
evaluated here (it needs Node.js modules, say) does not stop the run: the filter raises when used,
so only the rows whose templates use it are ERRORs, and a warning says why.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2

from ci_grade.config import files
from ci_grade.config.errors import describe
from ci_grade.config.sources import SourceMap
from ci_grade.errors import ConfigError, ScriptError, TemplateError
from ci_grade.scripting import js

Filter = Callable[..., Any]


def load(spec: Mapping[str, Any], base_dir: Path) -> tuple[dict[str, Filter], dict[str, str]]:
    """The filters `spec` names, and why those that cannot run here cannot (by name)."""
    filters: dict[str, Filter] = {}
    problems: dict[str, str] = {}
    for name, ref in spec.items():
        where = f"nunjucksFilters.{name}"
        if not isinstance(ref, str) or not ref.strip():
            raise ConfigError(f"expected the path of a JavaScript file, got {ref!r}", path=where)
        pattern = str(files.resolve(ref, base_dir))
        matches = sorted(glob.glob(pattern, recursive=True)) if files.is_glob(pattern) else [pattern] if Path(pattern).is_file() else []
        if not matches:
            raise ConfigError(f"file not found: {files.display_path(Path(pattern))}", path=where)
        path = Path(matches[-1])
        try:
            js.check_js_file_function(path, None)
        except ScriptError as exc:
            problem = f"{files.display_path(path)} cannot run in ci-grade's embedded V8 (no Node.js modules): {exc}"
            problems[str(name)] = problem
            filters[str(name)] = _broken(str(name), problem)
            continue
        filters[str(name)] = _filter(str(name), path)
    return filters, problems


def _filter(name: str, path: Path) -> Filter:
    def run(value: Any, *args: Any, **kwargs: Any) -> Any:
        arguments = [_plain(value), *(_plain(a) for a in args)]
        if kwargs:
            arguments.append({k: _plain(v) for k, v in kwargs.items()})
        try:
            return js.call_js_file_function(path, None, arguments)
        except ScriptError as exc:
            raise TemplateError(f"filter {name!r} failed: {exc}") from None

    return run


def _broken(name: str, problem: str) -> Filter:
    def run(*_args: Any, **_kwargs: Any) -> Any:
        raise TemplateError(f"filter {name!r}: {problem}")

    return run


def _plain(value: Any) -> Any:
    """A template value as JSON data (undefined stays undefined)."""
    if isinstance(value, jinja2.Undefined):
        return js.UNDEFINED
    return value


def use(merged: dict[str, Any], sources: SourceMap) -> list[str]:
    """Load the config's `nunjucksFilters` (JavaScript) and make them the filters every template sees."""
    from ci_grade.templating import nunjucks

    spec = merged.get("nunjucksFilters") or {}
    if not isinstance(spec, dict):
        raise ConfigError.at(f"expected a mapping of filter names to JavaScript files, got {describe(spec)}", sources.location(merged, "nunjucksFilters"), "nunjucksFilters")
    filters: dict[str, Any] = {}
    problems: dict[str, str] = {}
    if spec:
        try:
            filters, problems = load(spec, Path.cwd())
        except ConfigError as exc:
            name = (exc.path or "").removeprefix("nunjucksFilters.")
            raise ConfigError.at(exc.message, sources.location(spec, name), exc.path) from None
    nunjucks.use_filters(filters)
    return [f"{ConfigError.at(problem, sources.location(spec, name), f'nunjucksFilters.{name}')}; templates that use it will be ERRORs" for name, problem in problems.items()]
