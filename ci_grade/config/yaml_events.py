"""The quick way to read a config with source lines: data and lines straight from libyaml's events.

`yaml12.load_with_sources` composes a node tree, constructs the data from it and walks both again
to register lines; for a large config the node tree alone is several times the size of the data.
This reader builds the data and registers the same lines in one pass over the parser's events,
with no node tree, for the YAML configs are made of: plain and quoted scalars, block and flow
mappings and sequences, one document. Anything else (anchors, aliases, tags, merge keys,
duplicate keys, keys whose text does not name them, several documents, any syntax error) makes
it give up (`None`) without touching the source map, and the full reader then does the work,
error messages included. Mapping keys and short scalars are shared, not copied per occurrence.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from ci_grade.config.sources import Packed, SourceMap

_PARSER: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)
"""libyaml's event parser (absent from PyYAML built without it: the full reader does everything)."""

_SHARED_LENGTH = 64
"""Scalars up to this length are shared between occurrences (assertion types, keys, ids)."""


class _Unusual(Exception):
    """Something only the full reader handles."""


class _Frame:
    """A mapping or sequence being built."""

    __slots__ = ("data", "keys", "line", "pending")

    def __init__(self, data: dict[Any, Any] | list[Any], line: int):
        self.data = data
        self.line = line
        self.keys: list[tuple[str, Any, int]] = []
        """A mapping's (key as written, key, line); a sequence's items' lines go in as ("", None, line)."""
        self.pending: tuple[str, Any, int] | None = None


def load(text: str, file: str, sources: SourceMap, resolvers: dict[Any, Any], max_depth: int) -> tuple[bool, Any]:
    """(True, data) with every mapping key's and list item's line registered in `sources`, or
    (False, None) when the full reader must do it (collections nested deeper than `max_depth`
    included). `resolvers` are the loader's implicit ones."""
    if _PARSER is None:
        return False, None
    parser = _PARSER(text)
    registered: list[tuple[Any, int | None, Packed]] = []
    try:
        data = _build(parser, resolvers, registered, sources, max_depth)
    except (_Unusual, yaml.YAMLError):
        return False, None
    finally:
        parser.dispose()
    sources.register_built(registered, file)
    return True, data


def _build(parser: Any, resolvers: dict[Any, Any], registered: list[tuple[Any, int | None, Packed]], sources: SourceMap, max_depth: int) -> Any:
    shared: dict[str, str] = {}
    scalar_event, mapping_start, sequence_start = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    mapping_end, sequence_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    parser.get_event()  # the stream's start
    event = parser.get_event()
    if type(event) is yaml.StreamEndEvent:
        return None
    if type(event) is not yaml.DocumentStartEvent:
        raise _Unusual
    stack: list[_Frame] = []
    root: Any = None
    while True:
        event = parser.get_event()
        kind = type(event)
        if kind is scalar_event:
            if event.anchor is not None or event.tag is not None:
                raise _Unusual
            value = event.value
            if event.implicit[0]:
                value = _plain(value, resolvers)
            if type(value) is str and len(value) <= _SHARED_LENGTH:
                value = shared.setdefault(value, value)
            line = event.start_mark.line + 1
            if stack and type(stack[-1].data) is dict and stack[-1].pending is None:
                _key(stack[-1], event.value, value, line)
                continue
        elif kind is mapping_start or kind is sequence_start:
            if event.anchor is not None or event.tag is not None:
                raise _Unusual
            if stack and type(stack[-1].data) is dict and stack[-1].pending is None:
                raise _Unusual  # a mapping or list as a key
            if len(stack) >= max_depth:
                raise _Unusual  # the full reader refuses it, with its line
            stack.append(_Frame({} if kind is mapping_start else [], event.start_mark.line + 1))
            continue
        elif kind is mapping_end or kind is sequence_end:
            frame = stack.pop()
            value, line = frame.data, frame.line
            registered.append((value, line, sources.pack(value, line, _children(frame))))
            line = frame.line
        elif kind is yaml.DocumentEndEvent:
            break
        else:
            raise _Unusual  # an alias
        if not stack:
            root = value
            continue
        top = stack[-1]
        if type(top.data) is list:
            top.data.append(value)
            top.keys.append(("", None, line))
        else:
            assert top.pending is not None
            top.data[top.pending[1]] = value
            top.keys.append(top.pending)
            top.pending = None
    if type(parser.get_event()) is not yaml.StreamEndEvent:
        raise _Unusual  # several documents
    return root


def _key(frame: _Frame, written: str, key: Any, line: int) -> None:
    if any(seen == written for seen, _, _ in frame.keys):
        raise _Unusual  # a key written twice: the full reader says where
    frame.pending = (written, key, line)


def _children(frame: _Frame) -> dict[Any, int | None]:
    """The lines of a finished container's keys or items, as the full reader registers them."""
    data = frame.data
    if isinstance(data, list):
        return {index: line for index, (_, _, line) in enumerate(frame.keys)}
    children: dict[Any, int | None] = {}
    for written, key, line in frame.keys:
        if not _names(data, written, key):
            raise _Unusual
        children[key] = line
    return children


def _names(data: dict[Any, Any], written: str, key: Any) -> bool:
    """Whether the full reader finds `key` from its text `written` (`yaml12._matching_key`)."""
    if written in data:
        return type(key) is str
    for other in data:
        if str(other) == written or (isinstance(other, bool) and written.lower() == str(other).lower()):
            return other is key or (type(other) is type(key) and other == key)
    return False


def _plain(value: str, resolvers: dict[Any, Any]) -> Any:
    """A plain scalar typed as the loader's YAML 1.2 resolvers and constructors type it."""
    candidates = resolvers.get(value[0] if value else "", []) + resolvers.get(None, [])
    tag = next((tag for tag, pattern in candidates if pattern.match(value)), "tag:yaml.org,2002:str")
    kind = tag.rsplit(":", 1)[1]
    if kind == "str":
        return value
    if kind == "null":
        return None
    if kind == "bool":
        return value.lower() == "true"
    if kind == "int":
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value, 10)
    if kind == "float":
        return _float(value)
    raise _Unusual  # merge keys and the other YAML 1.1 leftovers


def _float(text: str) -> float:
    """SafeConstructor.construct_yaml_float for the YAML 1.2 float forms."""
    value = text.replace("_", "").lower()
    sign = -1 if value[0] == "-" else +1
    if value[0] in "+-":
        value = value[1:]
    if value == ".inf":
        return float(sign * SafeConstructor.inf_value)
    if value == ".nan":
        return float(SafeConstructor.nan_value)
    return sign * float(value)
