"""Reading the files a config points at: `file://` references, globs and structured data."""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from ci_grade import settings
from ci_grade.config import yaml12
from ci_grade.config.sources import Location, SourceMap
from ci_grade.errors import ConfigError

STRUCTURED_SUFFIXES = (".yaml", ".yml", ".json")


def strip_file_prefix(ref: str) -> str:
    return ref[len("file://") :] if ref.startswith("file://") else ref


SCRIPT_SUFFIXES = (".py", ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")


def split_function(ref: str) -> tuple[str, str | None]:
    """`file://x.py:fn` -> ('x.py', 'fn'); a Windows drive letter is not a function name. After a
    script's name, a dotted name is a function too (`prompts.py:Prompt.render`, a class's method)."""
    path = strip_file_prefix(ref)
    head, sep, tail = path.rpartition(":")
    dotted = "." in tail and head.lower().endswith(SCRIPT_SUFFIXES) and all(part.isidentifier() for part in tail.split("."))
    if sep and tail and "/" not in tail and "\\" not in tail and ("." not in tail or dotted) and len(head) > 1:
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
        if "**" in str(path):
            _check_walkable(_fixed_prefix(path), referenced_from, what)
        matches = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
        if not matches:
            raise missing_file_error(f"no files match {display_path(path)}", referenced_from, what)
        return matches
    if not path.is_file():
        raise missing_file_error(not_a_file(path), referenced_from, what)
    return [path]


MAX_GLOB_FOLDERS = 100_000


def _fixed_prefix(pattern: Path) -> Path:
    """The folder a glob starts from: its parts before the first wildcard."""
    parts: list[str] = []
    for part in pattern.parts:
        if is_glob(part):
            break
        parts.append(part)
    return Path(*parts)


def _check_walkable(root: Path, referenced_from: Location | None, what: str) -> None:
    """Refuse a `**` glob over a tree with a symlink loop (the glob would never end) or absurdly many folders.

    Folders are followed as `**` follows them (symlinks too, hidden folders not); a symlink to a
    folder on its own path (or above the glob's start) is a loop. Folders reached twice by different routes are fine.
    """
    seen = 0
    real_root = Path(os.path.realpath(root))
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, tuple(str(p) for p in (real_root, *real_root.parents)))]
    while stack:
        folder, chain = stack.pop()
        seen += 1
        if seen > MAX_GLOB_FOLDERS:
            raise missing_file_error(f"a ** glob under {display_path(root)} walks more than {MAX_GLOB_FOLDERS} folders; narrow it", referenced_from, what)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not _is_folder(entry):
                continue
            real = os.path.realpath(entry.path)
            if real in chain:
                raise missing_file_error(f"a symlink loop: {display_path(Path(entry.path), follow=False)} leads back to {display_path(Path(real))}", referenced_from, what)
            stack.append((Path(entry.path), (*chain, real)))


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def not_a_file(path: Path) -> str:
    """Why `path` cannot be read as a file: a symlink loop, not found, or not a regular file
    (a directory, a FIFO, a device, a socket)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"a symlink loop: {display_path(path, follow=False)}"
        return f"file not found: {display_path(path, follow=False)}"
    kind = _kind(mode)
    return f"{display_path(path, follow=False)} is {kind}, not a regular file" if kind else f"cannot read {display_path(path, follow=False)}"


def _kind(mode: int) -> str | None:
    """What a file that is not a regular one is (None for a regular file)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


DEFAULT_MAX_FILE_MB = 64
MAX_FILE_SETTING = "CI_GRADE_MAX_FILE_MB"
"""The setting that raises the size limit of every file a config reads (prompts, tests, variables,
values, referenced data), in MiB (default `DEFAULT_MAX_FILE_MB`)."""


def max_file_bytes() -> int:
    return int(settings.number(MAX_FILE_SETTING, DEFAULT_MAX_FILE_MB)) * 1024 * 1024


def read_bytes(path: Path, referenced_from: Location | None = None, what: str = "file") -> bytes:
    """A regular file's bytes, at most `max_file_bytes()` of them; anything else (a missing file, a
    directory, a FIFO, a device, a file over the limit) is a ConfigError naming it. A FIFO is never
    opened for waiting: it is refused from its type, and the file is opened without blocking."""
    limit = max_file_bytes()
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise missing_file_error(not_a_file(path), referenced_from, what)
        _check_size(path, info.st_size, limit, referenced_from, what)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced since it was looked at
                raise missing_file_error(not_a_file(path), referenced_from, what)
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise missing_file_error(f"file not found: {display_path(path)}", referenced_from, what) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise missing_file_error(not_a_file(path), referenced_from, what) from None
        raise ConfigError(f"cannot read: {exc.strerror}", file=display_path(path)) from None
    _check_size(path, len(data), limit, referenced_from, what)
    return data


def _check_size(path: Path, size: int, limit: int, referenced_from: Location | None, what: str) -> None:
    if size > limit:
        shown = "more than " + _mib(limit) if size == limit + 1 else _mib(size)
        raise missing_file_error(
            f"{display_path(path)} is {shown}, over the limit of {_mib(limit)} for a file a config reads (set {MAX_FILE_SETTING} to raise it)",
            referenced_from, what,
        )


def _mib(size: int) -> str:
    return f"{size / 1024 / 1024:,.1f} MiB".replace(".0 MiB", " MiB")


def missing_file_error(message: str, referenced_from: Location | None, what: str) -> ConfigError:
    """A ConfigError for a referenced file that is not there, pointing at the reference."""
    if referenced_from is None:
        return ConfigError(message, path=what)
    return ConfigError(message, file=referenced_from.file, line=referenced_from.line, path=what)


def display_path(path: Path, *, follow: bool = True) -> str:
    """A path relative to the working directory when it is inside it; `follow=False` shows a
    symlink itself rather than where it leads."""
    try:
        full = path.resolve() if follow else Path(os.path.abspath(path))
        return str(full.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # outside the folder; a symlink loop
        return str(path)


def read_text(path: Path, referenced_from: Location | None = None, what: str = "file") -> str:
    """A file's UTF-8 text (`read_bytes`), without the byte-order mark some editors write first."""
    data = read_bytes(path, referenced_from, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=display_path(path)) from None


def parse_structured(text: str, path: Path, sources: SourceMap | None) -> Any:
    """YAML or JSON text -> data, registering source lines; a syntax error names file and line.

    A `.json` file must be strict JSON (no trailing commas, comments or NaN): YAML would read
    some broken JSON without complaint, so YAML is only used to find the lines of valid JSON.
    """
    shown = display_path(path)
    if path.suffix.lower() == ".json":
        return _parse_json(text, shown, sources)
    try:
        if sources is not None:
            return yaml12.load_with_sources(text, shown, sources, MAX_DEPTH)
        return yaml12.loads(text, MAX_DEPTH)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"invalid YAML: {problem}", file=shown, line=mark.line + 1 if mark else None) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=shown) from exc


_MISMATCH = object()
MAX_DEPTH = 100
"""Config files (and the tests, variables and values they read) nesting collections deeper are
refused, as js-yaml refuses them in promptfoo; far deeper data would crash the stages that walk it."""


def _check_depth(data: Any, shown: str) -> None:
    """A ConfigError if JSON `data` nests collections deeper than `MAX_DEPTH`."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > MAX_DEPTH:
            raise ConfigError(f"invalid JSON: collections nested more than {MAX_DEPTH} levels deep", file=shown)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


_SURROGATE_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.I)
"""An escaped UTF-16 surrogate pair (`\\ud83d\\ude00`, as `json.dumps` writes emoji), which YAML refuses."""


def _pair(match: re.Match[str]) -> str:
    high, low = int(match.group(1), 16), int(match.group(2), 16)
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def _parse_json(text: str, shown: str, sources: SourceMap | None) -> Any:
    data = strict_json(text, shown, 1)
    _check_depth(data, shown)
    if sources is None:
        return data
    try:  # YAML only finds the lines (the character an escaped pair stands for keeps them)
        with_lines = yaml12.load_with_sources(_SURROGATE_PAIR.sub(_pair, text), shown, sources)
    except yaml.YAMLError:
        with_lines = _MISMATCH
    if with_lines == data:
        return with_lines
    _register_json(data, shown, None, sources)  # valid JSON that YAML reads differently: no lines
    return data


def strict_json(text: str, shown: str, first_line: int) -> Any:
    """JSON as the standard has it (`NaN` and `Infinity` are not numbers); errors name file and line."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=shown, line=first_line + exc.lineno - 1) from exc
    except RecursionError:
        raise ConfigError("invalid JSON: arrays or objects nested too deep", file=shown) from None
    except _NotANumber as exc:
        found = re.search(rf"(?<=[\[:,])\s*-?{exc.args[0]}\b", text)
        line = first_line + text.count("\n", 0, found.end()) if found else None
        raise ConfigError(f"invalid JSON: {exc.args[0]} is not a JSON number", file=shown, line=line) from None


class _NotANumber(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotANumber(name.lstrip("-"))


def load_structured(path: Path, sources: SourceMap | None, referenced_from: Location | None = None, what: str = "file") -> Any:
    return parse_structured(read_text(path, referenced_from, what), path, sources)


def load_jsonl(path: Path, sources: SourceMap, referenced_from: Location | None, what: str) -> list[tuple[Any, int]]:
    """One JSON value per non-blank line, each with its line number."""
    rows = []
    shown = display_path(path)
    for number, line in enumerate(read_text(path, referenced_from, what).splitlines(), start=1):
        if not line.strip():
            continue
        value = strict_json(line, shown, number)
        _register_json(value, shown, number, sources)
        rows.append((value, number))
    return rows


def _register_json(value: Any, file: str, line: int | None, sources: SourceMap) -> None:
    if isinstance(value, dict):
        sources.register(value, file, line, {k: line for k in value})
        for v in value.values():
            _register_json(v, file, line, sources)
    elif isinstance(value, list):
        sources.register(value, file, line, dict.fromkeys(range(len(value)), line))
        for v in value:
            _register_json(v, file, line, sources)
