"""Preflight for user code: the files it names are there and it compiles (Python files and inline
code, JavaScript assertions on V8, Ruby, Go providers), and the code a provider runs to answer function calls
exists, before any model is called."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.loader import LoadedConfig
from ci_grade.config.sources import Location
from ci_grade.errors import ConfigError


def check_inline(kind: str, code: str, loc: Location | None, where: str) -> None:
    """Inline `python` or `javascript` code that does not compile: exit 2 before any call (as
    promptfoo's wrapper builds it; code with a template tag is only known once rendered)."""
    if kind == "python":
        from ci_grade.scripting.python import inline_syntax_error

        problem = inline_syntax_error(code)
        if problem:
            raise ConfigError.at(f"python assertion: {problem}", loc, where)
    elif kind == "javascript":
        from ci_grade.errors import ScriptError
        from ci_grade.scripting import js

        try:
            js.runtime().define(("output", "context"), js.assertion_body(code))
        except ScriptError as exc:
            line = re.match(r"<anonymous>:(\d+): ", str(exc))  # the line in the wrapping function
            problem = f"{str(exc)[line.end():]} (line {max(1, int(line.group(1)) - 1)} of the code)" if line else str(exc)
            raise ConfigError.at(f"javascript assertion: {problem}", loc, where) from None


def check_ruby(source: str | None, shown: str | None, loc: Location | None, where: str, what: str = "ruby assertion") -> None:
    """Ruby code (a `ruby` assertion, or a Ruby file provider as `what`) needs Ruby
    (PROMPTFOO_RUBY or `ruby` on PATH), and must compile."""
    from ci_grade.scripting import ruby

    if ruby.interpreter() is None:
        raise ConfigError.at(f"{what}s need Ruby: install it (ruby on PATH) or set PROMPTFOO_RUBY to its executable", loc, where)
    problem = None if source is None else ruby.syntax_error(source, shown or "", inline=shown is None)
    if problem:
        raise ConfigError.at(f"{what}: {problem}", loc, where)


def check_go(path: Path, function: str | None, config: Mapping[str, Any], loc: Location | None, where: str) -> None:
    """A Go file provider: the file is there, Go is installed, and its package builds with the
    function it names (the program is kept for the run's calls)."""
    from ci_grade.errors import ScriptError
    from ci_grade.scripting import go

    if not path.is_file():
        raise ConfigError.at(files.not_a_file(path), loc, where)
    toolchain = go.toolchain(config)
    if toolchain is None:
        raise ConfigError.at(go.NO_TOOLCHAIN, loc, where)
    try:
        go.build(path, function or go.DEFAULT_FUNCTION, toolchain)
    except ScriptError as exc:
        raise ConfigError.at(f"Go file provider {files.display_path(path)}: {exc}", loc, where) from None


def check_python_provider(provider_id: str, loaded: LoadedConfig, loc: Location | None, where: str) -> None:
    """A Python file provider (`file://x.py[:fn]`, `python:x.py`) that is missing or does not compile."""
    reference = provider_id.removeprefix("python:") if provider_id.startswith("python:") else provider_id
    if provider_id.startswith(("python:", "file://")) and "{{" not in reference and files.split_function(reference)[0].endswith(".py"):
        check_python_file(reference if reference.startswith("file://") else f"file://{reference}", loaded, loc, where)


def check_python_file(reference: str, loaded: LoadedConfig, loc: Location | None, where: str) -> None:
    """`file://x.py[:fn]`: there, and compiling (the error names the file's line)."""
    from ci_grade.scripting.python import file_syntax_error

    path = files.resolve(files.split_function(reference)[0], loaded.base_dir)
    if not path.is_file():
        raise ConfigError.at(files.not_a_file(path), loc, where)
    problem = file_syntax_error(path, files.display_path(path))
    if problem:
        raise ConfigError.at(problem, loc, where)


def check_tool_code(config: dict[str, Any], raw: Any, loaded: LoadedConfig, where: str) -> None:
    """The files a provider runs for function calls (`functionToolCallbacks` entries naming a
    file, `functionCallHandler`, `functionToolStatefulApi.file`), relative to the config's folder, exist."""
    callbacks, api = config.get("functionToolCallbacks"), config.get("functionToolStatefulApi")
    raw = raw if isinstance(raw, dict) else {}
    references: list[tuple[Any, str, Any, str]] = []
    if isinstance(callbacks, dict):
        raw_callbacks = raw.get("functionToolCallbacks")
        references += [(raw_callbacks, name, value, f"{where}.functionToolCallbacks.{name}") for name, value in callbacks.items()]
    handler = config.get("functionCallHandler")
    if isinstance(handler, str) and handler.startswith("file://"):  # OpenAI Realtime's
        references.append((raw, "functionCallHandler", handler, f"{where}.functionCallHandler"))
    if isinstance(api, dict):
        raw_api = raw.get("functionToolStatefulApi")
        if not api.get("url"):
            raise ConfigError.at("functionToolStatefulApi needs the url its API serves", loaded.sources.location(raw_api), f"{where}.functionToolStatefulApi.url")
        if api.get("file"):
            references.append((raw_api, "file", api["file"], f"{where}.functionToolStatefulApi.file"))
    for holder, key, value, path in references:
        if isinstance(value, str) and (value.startswith("file://") or key == "file"):
            file = files.resolve(files.split_function(value)[0] if key != "file" else value, loaded.base_dir)
            if not file.is_file():
                raise files.missing_file_error(files.not_a_file(file), loaded.sources.location(holder, key), path)
