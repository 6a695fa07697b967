"""JSON pointers as `$ref`s write them (`#/definitions/item`, RFC 6901 in a URI fragment)."""

from __future__ import annotations

from typing import Any

MISSING: Any = object()
"""What `resolve` returns for a pointer that names nothing."""


def resolve(root: Any, fragment: str) -> Any:
    """The part of `root` that `fragment` (`#`, `#/a/0/b`) names, or `MISSING`."""
    node = root
    for part in fragment[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node
