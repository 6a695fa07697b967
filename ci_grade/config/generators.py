"""Test generators: `tests: file://gen.js:fn` (or `{path: ..., config: {...}}`), as promptfoo reads them.

The function is called once while the config loads, with the entry's `config` (when it has one),
in a worker for the file's language (`workers.dispatch`); an export that is not a function is
taken as the tests themselves. It returns a list of tests (or one test). A generator that throws,
or returns anything else, stops the load with exit 2, naming where it was referenced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.errors import describe
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError, ScriptError
from ci_grade.workers import dispatch

PYTHON_DEFAULT = "generate_tests"


def generated_tests(ref: str, config: Any, base: Path, loc: Location | None, where: str) -> list[Any]:
    """The tests the generator `ref` (`file://gen.js[:fn]`) returns."""
    path_text, function = files.split_function(ref)
    path = files.resolve(path_text, base)
    if not path.is_file():
        raise files.missing_file_error(files.not_a_file(path), loc, where)
    shown = files.display_path(path)
    try:
        tests = dispatch.call_file_sync(path, function, [] if config is None else [config], python_default=PYTHON_DEFAULT, base_dir=base)
    except ScriptError as exc:
        raise ConfigError.at(f"test generator {shown}{f':{function}' if function else ''} failed: {exc}", loc, where) from None
    if isinstance(tests, dict):
        tests = [tests]
    if not isinstance(tests, list) or not all(isinstance(test, dict) for test in tests):
        raise ConfigError.at(f"test generator {shown} must return a list of tests, got {describe(tests)}", loc, where)
    return tests
