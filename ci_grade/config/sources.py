"""Where each piece of a config came from: file and line for every mapping key and list item.

Loaders register every container they build; a pydantic error location or a test's position can
then be turned into `file:line`. Containers are kept alive by the map so their ids stay valid.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ci_grade.errors import ConfigError


@dataclass(frozen=True)
class Location:
    """A place in a user's file (line is 1-based, None when unknown)."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


Lines = tuple[int | None, ...]
"""Lines as offsets from the container's own line (small numbers: Python shares them)."""
Packed = Lines | tuple[tuple[Any, ...], Lines]
"""A container's children's lines: a list's as `Lines`, a mapping's as (its keys, `Lines`)."""


@dataclass(slots=True)
class _Entry:
    """Where a container was written; its keys' or items' lines, stored compactly (`_pack`)."""

    file: str
    line: int | None
    children: Packed = ()

    def child(self, key: Any) -> tuple[bool, int | None]:
        """Whether `key` (or item index) was registered, and its line (None when unknown)."""
        stored = self.children
        offset: int | None
        if stored and type(stored[0]) is tuple:
            keys, offsets = stored
            try:
                offset = offsets[keys.index(key)]
            except ValueError:
                return False, None
        elif isinstance(key, int) and 0 <= key < len(stored):
            offset = stored[key]  # type: ignore[assignment]
        else:
            return False, None
        return True, None if offset is None else (self.line or 0) + offset

    def lines(self) -> dict[Any, int | None]:
        """Every key's or item's line."""
        stored = self.children
        keys = stored[0] if stored and type(stored[0]) is tuple else range(len(stored))
        return {key: self.child(key)[1] for key in keys}


class SourceMap:
    """Maps containers (dicts and lists) of loaded data to their file and per-key lines."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._keep: list[Any] = []
        self._shapes: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def register(self, obj: Any, file: str, line: int | None, children: dict[Any, int | None] | None = None) -> None:
        """Record `obj` as defined at `file:line`, with the lines of its keys or items."""
        if id(obj) not in self._entries:
            self._keep.append(obj)
        self._entries[id(obj)] = _Entry(file, line, self.pack(obj, line, children or {}))

    def register_built(self, entries: list[tuple[Any, int | None, Packed]], file: str) -> None:
        """Register containers just built from `file`, their children's lines already `pack`ed."""
        for obj, line, children in entries:
            if id(obj) not in self._entries:
                self._keep.append(obj)
            self._entries[id(obj)] = _Entry(file, line, children)

    def pack(self, obj: Any, line: int | None, children: dict[Any, int | None]) -> Packed:
        """A list's item lines as a tuple of offsets; a mapping's as (its keys, shared with other
        mappings of the same keys, and their offsets)."""
        base = line or 0
        offsets = tuple(None if value is None else value - base for value in children.values())
        if isinstance(obj, list) and all(key == index and type(key) is int for index, key in enumerate(children)):
            return offsets
        keys = tuple(children)
        try:
            keys = self._shapes.setdefault(keys, keys)
        except TypeError:  # unhashable keys (never from a file, but keep them)
            pass
        return (keys, offsets)

    def retain(self, root: Any) -> None:
        """Forget every container but `root` and those still inside it."""
        entries: dict[int, _Entry] = {}
        keep: list[Any] = []
        seen: set[int] = set()
        pending = [root]
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            entry = self._entries.get(id(node))
            if entry is not None:
                entries[id(node)] = entry
                keep.append(node)
            pending.extend(child for child in (node.values() if isinstance(node, dict) else node) if isinstance(child, dict | list))
        self._entries, self._keep = entries, keep

    def alias(self, obj: Any, new_key: Any, old_key: Any) -> None:
        """Let `new_key` of `obj` point at the line where `old_key` was written (a renamed key)."""
        entry = self._entries.get(id(obj))
        if entry is not None and entry.child(old_key)[0]:
            self.register(obj, entry.file, entry.line, {**entry.lines(), new_key: entry.child(old_key)[1]})

    def location(self, obj: Any, key: Any = None) -> Location | None:
        """Where `obj` (or its `key`) was written, if it came from a file."""
        entry = self._entries.get(id(obj))
        if entry is None:
            return None
        if key is not None:
            found, line = entry.child(key)
            if found:
                return Location(entry.file, line)
        return Location(entry.file, entry.line)

    def locate_path(self, root: Any, path: tuple[Any, ...]) -> Location | None:
        """The deepest known location along `path` (keys and indexes) from `root`."""
        best = self.location(root)
        node = root
        for key in path:
            loc = self.location(node, key)
            if loc is not None:
                best = loc
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                break
            loc = self.location(node)
            if loc is not None and loc.file != (best.file if best else None):
                best = loc
        return best

    def copy_tree(self, obj: Any) -> tuple[Any, int]:
        """Deep-copy `obj`, carrying source locations over to the copied containers; the copy and
        how many objects were copied."""
        memo: dict[int, Any] = {}
        new = copy.deepcopy(obj, memo)
        for old_id, copied in list(memo.items()):
            entry = self._entries.get(old_id)
            if entry is not None and isinstance(copied, dict | list):
                self.register(copied, entry.file, entry.line, entry.lines())
        return new, len(memo)


def format_path(path: tuple[Any, ...]) -> str:
    """`('tests', 2, 'assert', 0)` -> `tests[2].assert[0]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class SourceReader:
    """Base of the config readers: finds where data was written and raises errors that point there."""

    def __init__(self, sources: SourceMap):
        self.sources = sources

    def where(self, obj: Any, key: Any = None) -> Location | None:
        return self.sources.location(obj, key)

    def error(self, message: str, obj: Any, key: Any = None, path: str | None = None) -> ConfigError:
        loc = self.where(obj, key)
        return ConfigError.at(message, loc, path)

    def as_list(self, value: Any, holder: Any, key: Any) -> list[Any]:
        """`value` as a list; a single item written in place of a list keeps its line."""
        if isinstance(value, list):
            return value
        out = [value]
        loc = self.where(holder, key)
        if loc is not None:
            self.sources.register(out, loc.file, loc.line, {0: loc.line})
        return out

    def line(self, obj: Any, key: Any) -> int | None:
        loc = self.where(obj, key)
        return loc.line if loc else None
