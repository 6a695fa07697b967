"""Reading the files a config points at: `file://` references, globs and structured data."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

import yaml

from ci_grade.config import yaml12
from ci_grade.config.sources import Location, SourceMap
from ci_grade.errors import ConfigError

STRUCTURED_SUFFIXES = (".yaml", ".yml", ".json")


def strip_file_prefix(ref: str) -> str:
    return ref[len("file://") :] if ref.startswith("file://") else ref


def split_function(ref: str) -> tuple[str, str | None]:
    """`file://x.py:fn` -> ('x.py', 'fn'); a Windows drive letter is not a function name."""
    path = strip_file_prefix(ref)
    head, sep, tail = path.rpartition(":")
    if sep and tail and "/" not in tail and "\\" not in tail and "." not in tail and len(head) > 1:
        return head, tail
    return path, None


def is_glob(path: str) -> bool:
    return any(ch in path for ch in "*?[")


def resolve(ref: str, base: Path) -> Path:
    path = Path(os.path.expanduser(strip_file_prefix(ref)))
    return path if path.is_absolute() else base / path


def expand_glob(ref: str, base: Path, referenced_from: Location | None, what: str) -> list[Path]:
    """The files `ref` names (a path or a glob), sorted; an error naming the referrer if none."""
    path = resolve(ref, base)
    if is_glob(str(path)):
        matches = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
        if not matches:
            raise missing_file_error(f"no files match {display_path(path)}", referenced_from, what)
        return matches
    if not path.is_file():
        raise missing_file_error(f"file not found: {display_path(path)}", referenced_from, what)
    return [path]


def missing_file_error(message: str, referenced_from: Location | None, what: str) -> ConfigError:
    """A ConfigError for a referenced file that is not there, pointing at the reference."""
    if referenced_from is None:
        return ConfigError(message, path=what)
    return ConfigError(message, file=referenced_from.file, line=referenced_from.line, path=what)


def display_path(path: Path) -> str:
    """A path relative to the working directory when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_text(path: Path, referenced_from: Location | None = None, what: str = "file") -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise missing_file_error(f"file not found: {display_path(path)}", referenced_from, what)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=display_path(path))
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=display_path(path))


def parse_structured(text: str, path: Path, sources: SourceMap | None) -> Any:
    """YAML or JSON text -> data, registering source lines; a syntax error names file and line."""
    shown = display_path(path)
    try:
        if sources is not None:
            return yaml12.load_with_sources(text, shown, sources)
        return yaml12.loads(text)
    except yaml.MarkedYAMLError as exc:
        if path.suffix == ".json":
            try:
                return json.loads(text)
            except json.JSONDecodeError as jexc:
                raise ConfigError(f"invalid JSON: {jexc.msg}", file=shown, line=jexc.lineno) from jexc
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"invalid YAML: {problem}", file=shown, line=mark.line + 1 if mark else None) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=shown) from exc


def load_structured(path: Path, sources: SourceMap | None, referenced_from: Location | None = None, what: str = "file") -> Any:
    return parse_structured(read_text(path, referenced_from, what), path, sources)


def load_jsonl(path: Path, sources: SourceMap, referenced_from: Location | None, what: str) -> list[tuple[Any, int]]:
    """One JSON value per non-blank line, each with its line number."""
    rows = []
    shown = display_path(path)
    for number, line in enumerate(read_text(path, referenced_from, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON: {exc.msg}", file=shown, line=number) from exc
        _register_json(value, shown, number, sources)
        rows.append((value, number))
    return rows


def _register_json(value: Any, file: str, line: int, sources: SourceMap) -> None:
    if isinstance(value, dict):
        sources.register(value, file, line, {k: line for k in value})
        for v in value.values():
            _register_json(v, file, line, sources)
    elif isinstance(value, list):
        sources.register(value, file, line, dict.fromkeys(range(len(value)), line))
        for v in value:
            _register_json(v, file, line, sources)
