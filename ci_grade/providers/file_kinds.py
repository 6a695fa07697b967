"""The language a file provider runs in: promptfoo's `python:`, `ruby:` and `golang:` ids name it
whatever the file's suffix; otherwise the suffix does (JavaScript and TypeScript run in Node.js)."""

from __future__ import annotations

from pathlib import PurePath

from ci_grade.config import files
from ci_grade.workers.node import is_script

LANGUAGE_PREFIXES = {"python:": "python", "ruby:": "ruby", "golang:": "go"}
SUFFIXES = {".py": "python", ".rb": "ruby", ".go": "go"}
UNSUPPORTED = "file providers run Python (.py), JavaScript and TypeScript (.js, .cjs, .mjs, .ts), Ruby (.rb) and Go (.go) files"


def reference(provider_id: str) -> str:
    """The file reference (`file://x.py:fn`, `x.go`) without a language prefix."""
    for prefix in LANGUAGE_PREFIXES:
        if provider_id.startswith(prefix):
            return provider_id[len(prefix) :]
    return provider_id


def language(provider_id: str) -> str | None:
    """`python`, `ruby`, `go` or `node`; None for a file no provider runs."""
    named = next((kind for prefix, kind in LANGUAGE_PREFIXES.items() if provider_id.startswith(prefix)), None)
    if named is not None:
        return named
    path = files.split_function(provider_id)[0]
    return "node" if is_script(path) else SUFFIXES.get(PurePath(path).suffix.lower())
