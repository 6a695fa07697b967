"""A test's variables at planning: promptfoo's expansion into combinations, `file://` values
loaded once per file, `{{ name }}` references filled in, and `transformVars`.

String arrays and `file://` globs fan out into a cartesian product (unless
`disableVarExpansion`). Data files are loaded as promptfoo renders them (`config.var_files`);
var loader scripts (`file://vars.py`) stay references, run per row at run time.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

from ci_grade.config import files, var_files
from ci_grade.config.models import TestCase
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError, ScriptError
from ci_grade.templating import nunjucks


def var_choices(test: TestCase, base_dir: Path, location: Location | None, path: str) -> tuple[list[str], list[list[Any]]]:
    """promptfoo's expansion: string arrays and file globs fan out into a cartesian product of these choices."""
    variables = test.vars or {}
    if test.options.disableVarExpansion:
        return list(variables), [[value] for value in variables.values()]
    choices: list[list[Any]] = []
    for key, value in variables.items():
        if isinstance(value, str) and value.startswith("file://") and files.is_glob(value):
            matches = files.expand_glob(value, base_dir, location, f"{path}.vars.{key}")
            choices.append([f"file://{_relative(match, base_dir)}" for match in matches])
        elif isinstance(value, list) and value and isinstance(value[0], str):
            choices.append(list(value))
        else:
            choices.append([value])
    return list(variables), choices


def _relative(path: Path, base_dir: Path) -> str:
    """A matched file as the config would name it: relative to the config folder when inside it."""
    try:
        return path.relative_to(base_dir).as_posix()
    except ValueError:
        return str(path)


class VarLoader:
    """Loads `file://` variable values once per file per plan (see `config.var_files`); var loader
    scripts stay references, run per row."""

    def __init__(self, base_dir: Path):
        self.base_dir = base_dir
        self._loaded: dict[Path, Any] = {}

    def row_variables(self, identity_vars: dict[str, Any], location: Location | None, path: str) -> tuple[dict[str, Any], tuple[str, ...]]:
        """One combination's variables, loaded and with references filled in, and the names of
        those a var loader script computes at run time."""
        variables = var_files.strip_newline({k: self._value(k, v, location, path) for k, v in identity_vars.items()})
        script_vars = tuple(k for k, v in variables.items() if isinstance(v, str) and v.startswith("file://") and var_files.is_script(v))
        resolved = nunjucks.resolve_references({k: v for k, v in variables.items() if k not in script_vars})
        return {k: v if k in script_vars else resolved[k] for k, v in variables.items()}, script_vars

    def _value(self, key: str, value: Any, location: Location | None, path: str) -> Any:
        if not (isinstance(value, str) and value.startswith("file://")):
            return value
        file = files.resolve(files.split_function(value)[0], self.base_dir)
        where = f"{path}.vars.{key}"
        if not file.is_file():
            raise files.missing_file_error(files.not_a_file(file), location, where)
        if var_files.is_script(value):
            return value
        if file not in self._loaded:
            try:
                self._loaded[file] = var_files.load(file)
            except ConfigError as exc:
                raise ConfigError.at(f"{exc.file}: {exc.message}" if exc.file else exc.message, location, where) from None
        return copy.deepcopy(self._loaded[file])


def transform_vars(test: TestCase, variables: dict[str, Any], location: Location | None, path: str, base_dir: Path) -> dict[str, Any]:
    """promptfoo's `transformVars`: inline JavaScript, or a function of a Python or JavaScript file
    (`file://vars.py[:fn]`, default `get_transform`), called with the variables and the context
    `{prompt: {}, uuid}`; what it returns is laid over the variables."""
    from ci_grade.scripting import js

    code = test.options.transformVars or ""
    where = f"{path}.options.transformVars"
    context = {"prompt": {}, "uuid": str(uuid.uuid4())}
    try:
        if code.startswith("file://"):
            value = _transform_file(code, variables, context, base_dir, location, where)
        else:
            _, value = js.run_inline(js.transform_body(code), ("vars", "context"), [variables, context])
    except ScriptError as exc:
        raise ConfigError.at(f"transformVars failed: {exc}", location, where) from None
    if not isinstance(value, dict):
        raise ConfigError.at("transformVars must return an object", location, where)
    return {**variables, **value}


def _transform_file(ref: str, variables: dict[str, Any], context: dict[str, Any], base_dir: Path, location: Location | None, where: str) -> Any:
    path_text, function = files.split_function(ref)
    file = files.resolve(path_text, base_dir)
    if not file.is_file():
        raise files.missing_file_error(f"file not found: {files.display_path(file)}", location, where)
    if file.suffix == ".py":
        from ci_grade.workers.calls import call_file_sync

        return call_file_sync(file, function or "get_transform", [variables, context], base_dir=base_dir)
    from ci_grade.scripting import js

    return js.call_js_file_function(file, function, [variables, context])
