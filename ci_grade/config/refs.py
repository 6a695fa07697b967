"""`$ref` in configs and tests files, resolved as promptfoo resolves them: a fragment of the same
file (`#/definitions/x`) or of another one (`defs.yaml#/b`, or a whole file), sibling keys kept
over the referenced mapping. JSON schemas of tool definitions and response formats keep their
own `$ref`s, and a reference inside an assertion's `value` that points at nothing stays as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_grade import json_pointer
from ci_grade.config import files
from ci_grade.config.sources import SourceReader, format_path

NOT_DEREFERENCED = {"tools", "functions", "response_format"}
"""Keys whose `$ref`s belong to the JSON schemas they hold."""
MAX_REF_HOPS = 50
"""`$ref`s followed one after another before the chain counts as a loop."""


class RefReader(SourceReader):
    def dereference(self, node: Any, root: Any, path: Path, trail: tuple[Any, ...], hops: int = 0) -> Any:
        """`node` (at `trail` in the file `path`, whose document is `root`) with its `$ref`s
        replaced by what they point at."""
        if isinstance(node, dict):
            ref = node.get("$ref")
            local = isinstance(ref, str) and ref.startswith("#/")
            elsewhere = isinstance(ref, str) and not ref.startswith("#") and "://" not in ref and not set(trail) & (NOT_DEREFERENCED | {"value"})
            if local or elsewhere:
                assert isinstance(ref, str)
                if hops > MAX_REF_HOPS:
                    raise self.error(f"$ref {ref!r}: more than {MAX_REF_HOPS} references in a row (a loop?)", node, "$ref", format_path(trail))
                if elsewhere:  # another file, whole or at a fragment (`defs.yaml#/b`), as promptfoo resolves it
                    name, _, fragment = ref.partition("#")
                    path = files.expand_glob(name, path.parent, self.where(node, "$ref"), format_path(trail))[0]
                    root = files.load_structured(path, self.sources, self.where(node, "$ref"), format_path(trail))
                    ref = "#" + fragment
                target = json_pointer.resolve(root, ref)
                if target is json_pointer.MISSING:
                    if set(trail) & (NOT_DEREFERENCED | {"value"}):
                        return node
                    where = "this file" if local else files.display_path(path)
                    raise self.error(f"$ref {node['$ref']!r} points at nothing in {where}", node, "$ref", format_path(trail))
                resolved = self.sources.copy_tree(target)
                if isinstance(resolved, dict):
                    extra = {k: v for k, v in node.items() if k != "$ref"}
                    resolved.update(extra)
                return self.dereference(resolved, root, path, trail, hops + 1)
            for key, value in list(node.items()):
                if key in NOT_DEREFERENCED:
                    continue
                node[key] = self.dereference(value, root, path, (*trail, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = self.dereference(value, root, path, (*trail, i))
        return node
