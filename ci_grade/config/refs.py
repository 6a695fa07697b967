"""`$ref` in configs and tests files, resolved as promptfoo resolves them: a fragment of the same
file (`#/definitions/x`) or of another one (`defs.yaml#/b`, or a whole file), sibling keys kept
over the referenced mapping. JSON schemas of tool definitions and response formats keep their
own `$ref`s, and a reference inside an assertion's `value` that points at nothing stays as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_grade import json_pointer
from ci_grade.config import files
from ci_grade.config.sources import SourceMap, SourceReader, format_path

NOT_DEREFERENCED = {"tools", "functions", "response_format"}
"""Keys whose `$ref`s belong to the JSON schemas they hold."""
MAX_REF_NESTING = 50
"""`$ref`s followed inside one another (a reference whose target holds a reference...) before the
chain is refused as too deep."""
MAX_REF_VALUES = 1_000_000
"""Values `$ref`s may copy into one load: references repeating references would otherwise copy
billions of them."""


class RefReader(SourceReader):
    def __init__(self, sources: SourceMap):
        super().__init__(sources)
        self._copied = 0
        self._sizes: dict[int, tuple[Any, tuple[int, int]]] = {}  # id -> (the node, its sizes)

    def _sizes_of(self, node: Any, root: Any, busy: set[int]) -> tuple[int, int]:
        """How many values `node` holds once its `$ref`s into the same document are expanded, and
        how many of them those references copy (a reference elsewhere, or one that loops, copies
        nothing here). Known sizes are kept with their node, so an id is never reused."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known[1]
        if id(node) in busy:
            return 0, 0
        busy.add(id(node))
        ref = node.get("$ref") if isinstance(node, dict) else None
        target = json_pointer.resolve(root, ref) if isinstance(ref, str) and ref.startswith("#/") else json_pointer.MISSING
        if target is not json_pointer.MISSING:
            expanded = self._sizes_of(target, root, busy)[0]
            sizes = (len(node) - 1 + expanded, expanded)
        elif isinstance(node, (dict, list)):
            children = [self._sizes_of(v, root, busy) for v in _children(node).values()]
            sizes = (1 + sum(e for e, _ in children), sum(c for _, c in children))
        else:
            sizes = (1, 0)
        busy.discard(id(node))
        if isinstance(node, (dict, list)):
            self._sizes[id(node)] = (node, sizes)
        return sizes

    def _refuse_blowup(self, root: Any) -> None:
        """A document whose references would copy more than MAX_REF_VALUES values is refused before
        anything is copied, at the reference the largest share of them comes from."""
        if self._sizes_of(root, root, set())[1] <= MAX_REF_VALUES:
            return
        node = root
        trail: tuple[Any, ...] = ()
        while not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            key, node = max(_children(node).items(), key=lambda kv: self._sizes_of(kv[1], root, set())[1])
            trail = (*trail, key)
        raise self.error(f"$ref {node['$ref']!r}: references copy more than {MAX_REF_VALUES:,} values (references repeating references)", node, "$ref", format_path(trail))

    def dereference(self, node: Any, root: Any, path: Path, trail: tuple[Any, ...], chain: tuple[tuple[Path, str], ...] = ()) -> Any:
        """`node` (at `trail` in the file `path`, whose document is `root`) with its `$ref`s
        replaced by what they point at. `chain` holds the references being followed (file and
        fragment) that led here: one that leads back into itself is refused with the whole chain."""
        if node is root and not trail:
            self._refuse_blowup(root)
        if isinstance(node, dict):
            ref = node.get("$ref")
            local = isinstance(ref, str) and ref.startswith("#/")
            elsewhere = isinstance(ref, str) and not ref.startswith("#") and "://" not in ref and not set(trail) & (NOT_DEREFERENCED | {"value"})
            if local or elsewhere:
                assert isinstance(ref, str)
                written = ref
                if elsewhere:  # another file, whole or at a fragment (`defs.yaml#/b`), as promptfoo resolves it
                    name, _, fragment = ref.partition("#")
                    path = files.expand_glob(name, path.parent, self.where(node, "$ref"), format_path(trail))[0]
                    root = files.load_structured(path, self.sources, self.where(node, "$ref"), format_path(trail))
                    ref = "#" + fragment
                link = (path.resolve(), ref.rstrip("/") or "#")
                if link in chain or len(chain) >= MAX_REF_NESTING:
                    links = [*chain, link]
                    shown = " -> ".join(f"{files.display_path(file)}{fragment}" for file, fragment in links[links.index(link) if link in chain else 0:])
                    problem = "forms a loop:" if link in chain else f"nests more than {MAX_REF_NESTING} references in one another:"
                    raise self.error(f"$ref {written!r} {problem} {shown}", node, "$ref", format_path(trail))
                target = json_pointer.resolve(root, ref)
                if target is json_pointer.MISSING:
                    if set(trail) & (NOT_DEREFERENCED | {"value"}):
                        return node
                    where = "this file" if local else files.display_path(path)
                    raise self.error(f"$ref {node['$ref']!r} points at nothing in {where}", node, "$ref", format_path(trail))
                resolved, copied = self.sources.copy_tree(target)
                self._copied += copied
                if self._copied > MAX_REF_VALUES:
                    raise self.error(f"$ref {written!r}: references copy more than {MAX_REF_VALUES:,} values (references repeating references)", node, "$ref", format_path(trail))
                if isinstance(resolved, dict):
                    extra = {k: v for k, v in node.items() if k != "$ref"}
                    resolved.update(extra)
                return self.dereference(resolved, root, path, trail, (*chain, link))
            for key, value in list(node.items()):
                if key in NOT_DEREFERENCED:
                    continue
                node[key] = self.dereference(value, root, path, (*trail, key), chain)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = self.dereference(value, root, path, (*trail, i), chain)
        return node


def _children(node: Any) -> dict[Any, Any]:
    """What `dereference` walks into: a mapping's values (not the JSON schemas of NOT_DEREFERENCED
    keys) or a list's items, by key or index."""
    if isinstance(node, dict):
        return {k: v for k, v in node.items() if k not in NOT_DEREFERENCED}
    return dict(enumerate(node)) if isinstance(node, list) else {}
