"""Test generators: `tests: file://gen.py[:fn]` or `file://gen.js[:fn]` (or `{path: ..., config: ...}`) run while loading.

As promptfoo calls them: the function (Python's default `generate_tests`, JavaScript's the
default export) gets the entry's `config` as its one argument, or no argument when there is
none, and returns a list of tests. It runs in a worker process for its language
(`ci_grade.workers.dispatch`: JavaScript and TypeScript in Node.js); its failure, or a value that is not a list of test
mappings, is a config error naming the reference (exit 2, before any model is called).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.errors import describe
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError, ScriptAborted, ScriptError

DEFAULT_FUNCTION = "generate_tests"


def is_generator(ref: str) -> bool:
    """Whether a tests reference names a script (`file://gen.py`, `gen.py:fn`) rather than data."""
    path, _ = files.split_function(ref)
    return path.lower().endswith(files.SCRIPT_SUFFIXES)


def generate(ref: str, base: Path, config: Any, referenced_from: Location | None, where: str) -> list[dict[str, Any]]:
    """The tests the generator `ref` returns (relative to `base`)."""
    path_text, function = files.split_function(ref)
    file = files.resolve(path_text, base)
    if not file.is_file():
        raise files.missing_file_error(files.not_a_file(file), referenced_from, where)
    from ci_grade.scripting.python import file_syntax_error
    from ci_grade.workers import dispatch, node

    shown = files.display_path(file)
    problem = node.syntax_error(file, shown) if node.is_script(file) else file_syntax_error(file, shown)
    if problem:
        raise ConfigError.at(f"test generator {shown}: {problem}", referenced_from, where)
    name = function or (DEFAULT_FUNCTION if file.suffix == ".py" else "default")
    try:
        value = dispatch.call_file_sync(file, function, [] if config is None else [config], python_default=DEFAULT_FUNCTION, base_dir=base, data=True)
    except (ScriptError, ScriptAborted) as exc:
        raise ConfigError.at(f"test generator {shown}:{name}() failed: {exc}", referenced_from, where) from None
    if not isinstance(value, list):
        raise ConfigError.at(f"test generator {shown}:{name}() must return a list of tests, got {describe(value)}", referenced_from, where)
    for index, test in enumerate(value):
        if not isinstance(test, dict):
            raise ConfigError.at(f"test generator {shown}:{name}() returned {describe(test)} as test {index}; each test is a mapping", referenced_from, where)
    return value
