"""YAML loading with YAML 1.2 core-schema scalars (as js-yaml reads them) and source lines.

PyYAML follows YAML 1.1, where `yes`, `no`, `on` and `off` are booleans and `010` is octal;
promptfoo reads configs with js-yaml (1.2 core), where they are strings and decimal numbers.
Timestamps stay strings.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import yaml

from ci_grade.config import yaml_events
from ci_grade.config.sources import SourceMap

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Yaml12Loader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader with YAML 1.2 core-schema implicit typing; a key written twice is an error."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key_node.value!r} is written twice in this mapping", key_node.start_mark
                )
            seen.add(key_node.value)
        return dict(super().construct_mapping(node, deep=deep))


def _add(tag: str, pattern: str, first: str) -> None:
    Yaml12Loader.add_implicit_resolver(tag, re.compile(pattern, re.X), list(first))


for _ch, _resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items():
    kept = [(tag, rx) for tag, rx in _resolvers if tag.endswith((":merge", ":value", ":yaml"))]
    if kept:
        Yaml12Loader.yaml_implicit_resolvers[_ch] = kept

_add("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_add("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN\0")
Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), None)
_add("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789")
_add(
    "tag:yaml.org,2002:float",
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    "-+0123456789.",
)


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _construct_bool(loader: Any, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
Yaml12Loader.add_constructor("tag:yaml.org,2002:timestamp", Yaml12Loader.construct_yaml_str)


MAX_DEPTH = 1000
"""Collections nested deeper than this are refused with a YAML error: libyaml's composer recurses
on the C stack, and some tens of thousands of levels (80 KB of `- - - …`, or of `{a: ` in a
model's reply) would crash the process."""

MAX_ALIASES = 100_000
"""Aliases (`*name`) one YAML text may use."""
MAX_ALIAS_VALUES = 1_000_000
"""Values (scalars, mappings and lists) the aliases of one YAML text may add when expanded: a few
levels of aliases repeating aliases (an "alias bomb") would otherwise stand for billions of values,
and every stage that walks the data would walk them all."""

_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    """Raise a YAML error (with its line) if `text` nests collections deeper than `limit`, or its
    aliases repeat themselves, are too many (`MAX_ALIASES`), expand to too much (`MAX_ALIAS_VALUES`)
    or nest deeper than `limit` once expanded; the parser's events are read without building anything."""
    aliases = "*" in text
    if len(text) <= limit and not aliases:
        return  # each level takes at least one character
    try:
        _check_events(yaml.parse(text, Loader=_BaseLoader), limit)
    except yaml.MarkedYAMLError as exc:
        if exc.problem == _LIBYAML_TOO_DEEP:
            _refuse(exc.problem_mark, f"collections nested more than {limit} levels deep")
        raise


def _check_events(events: Any, limit: int) -> None:
    depth = used = added = 0
    frames: list[list[Any]] = []  # per open collection: [anchor, values in it, deepest level under it]
    anchored: dict[str, tuple[int, int]] = {}  # anchor -> (values, levels below the anchored node)
    for event in events:
        kind = type(event)
        if kind in _OPENS:
            depth += 1
            if depth > limit:
                _refuse(event.start_mark, f"collections nested more than {limit} levels deep")
            frames.append([event.anchor, 1, depth])
        elif kind in _CLOSES:
            anchor, values, deepest = frames.pop()
            depth -= 1
            if anchor is not None:
                anchored[anchor] = (values, deepest - depth)
            _count(frames, values, deepest)
        elif kind is yaml.ScalarEvent:
            if event.anchor is not None:
                anchored[event.anchor] = (1, 0)
            _count(frames, 1, depth)
        elif kind is yaml.AliasEvent:
            used += 1
            if used > MAX_ALIASES:
                _refuse(event.start_mark, f"more than {MAX_ALIASES:,} aliases")
            found = anchored.get(event.anchor)
            if found is None:
                if any(frame[0] == event.anchor for frame in frames):
                    _refuse(event.start_mark, f"alias *{event.anchor} repeats the collection it is inside (a structure that contains itself)")
                continue  # an undefined alias: the loader says so
            values, below = found
            added += values
            if added > MAX_ALIAS_VALUES:
                _refuse(event.start_mark, f"aliases expand to more than {MAX_ALIAS_VALUES:,} values (aliases repeating aliases); write the data out or use fewer levels")
            if depth + below > limit:
                _refuse(event.start_mark, f"alias *{event.anchor} nests collections more than {limit} levels deep")
            _count(frames, values, depth + below)
        elif kind is yaml.DocumentStartEvent:
            anchored.clear()


def _count(frames: list[list[Any]], values: int, deepest: int) -> None:
    if frames:
        frames[-1][1] += values
        frames[-1][2] = max(frames[-1][2], deepest)


_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
"""What the libyaml bundled with newer PyYAML wheels says at its own nesting limit (also 1000)."""


def _refuse(at: Any, problem: str) -> NoReturn:
    mark = yaml.error.Mark("<text>", at.index, at.line, at.column, None, 0) if at is not None else None
    raise yaml.MarkedYAMLError(problem=problem, problem_mark=mark)


UNREADABLE = (yaml.YAMLError, ValueError, TypeError, IndexError, RecursionError)
"""How `loads` fails on text that does not read as YAML: PyYAML's errors, and the constructors'
on a tag that does not fit its value (`!!int "x"`, `!!float ""`, `!!set [1]`)."""


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse YAML 1.2 text into Python data (collections nested deeper than `max_depth` refused)."""
    check_depth(text, max_depth)
    return yaml.load(text, Loader=Yaml12Loader)


def load_with_sources(text: str, file: str, sources: SourceMap, max_depth: int = MAX_DEPTH) -> Any:
    """Parse `text` and register the line of every mapping key and list item in `sources`
    (straight from the parser's events when the text allows, see `yaml_events`)."""
    done, data = yaml_events.load(text, file, sources, Yaml12Loader.yaml_implicit_resolvers, max_depth)
    return data if done else load_composed(text, file, sources, max_depth)


def load_composed(text: str, file: str, sources: SourceMap, max_depth: int = MAX_DEPTH) -> Any:
    """`load_with_sources` through the full reader (a node tree, then construction): for what the
    quick path leaves, and its errors."""
    check_depth(text, max_depth)
    loader = Yaml12Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    if node is not None:
        _register(node, data, file, sources)
    return data


def _register(node: yaml.Node, data: Any, file: str, sources: SourceMap) -> None:
    if isinstance(node, yaml.MappingNode) and isinstance(data, dict):
        children: dict[Any, int | None] = {}
        for key_node, value_node in node.value:
            if key_node.tag.endswith(":merge") or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = _matching_key(data, key_node.value)
            if key is _MISSING:
                continue
            children[key] = key_node.start_mark.line + 1
            _register(value_node, data[key], file, sources)
        sources.register(data, file, node.start_mark.line + 1, children)
    elif isinstance(node, yaml.SequenceNode) and isinstance(data, list):
        children = {}
        for i, (item_node, item) in enumerate(zip(node.value, data, strict=False)):
            children[i] = item_node.start_mark.line + 1
            _register(item_node, item, file, sources)
        sources.register(data, file, node.start_mark.line + 1, children)


_MISSING = object()


def _matching_key(data: dict[Any, Any], raw: str) -> Any:
    if raw in data:
        return raw
    for key in data:
        if str(key) == raw or (isinstance(key, bool) and raw.lower() == str(key).lower()):
            return key
    return _MISSING
