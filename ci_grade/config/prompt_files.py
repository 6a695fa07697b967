"""The `prompts:` of a config: inline texts, `{id, label, raw}` objects, the `{file: label}` map,
and prompt files (.txt split on `---`, .md/.j2, JSON/YAML chat messages, .jsonl, .csv), each with
the line it was written on and a stable key for test ids."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.errors import describe
from ci_grade.config.sources import SourceReader
from ci_grade.errors import ConfigError
from ci_grade.js_values import JS_WHITESPACE

INLINE = "inline"
"""The key of an inline prompt until load_config numbers it (`prompts[i]`)."""
PROMPT_FILE_SUFFIXES = (".txt", ".md", ".j2", ".json", ".jsonl", ".yaml", ".yml", ".csv")
FUNCTION_SUFFIXES = (".py", ".js", ".ts", ".mjs", ".cjs", ".mts", ".cts")


def names_files(text: str, base: Path) -> bool:
    """Whether a prompt written without `file://` names prompt files, as promptfoo reads it.

    promptfoo takes a one-line prompt for a path when it ends in a file extension, or holds a
    `/`, `\\` or `*`. Then it must be a file: `prompts: [prompts/support.txt]` reads the file.
    Unlike promptfoo, text that names no existing file stays text when it could be a sentence
    ("Compare A/B", "Summarize package.json"): promptfoo refuses those configs.
    """
    text = text.strip()
    if not text or "\n" in text:
        return False
    head, colon, function = text.rpartition(":")
    path = head if colon and head.endswith(FUNCTION_SUFFIXES) and function.isidentifier() else text
    if any(ch.isspace() for ch in text):  # a sentence, unless it is the name of a file
        return files.resolve(path, base).is_file()
    try:
        return bool(files.expand_glob(path, base, None, "prompts"))
    except (ConfigError, OSError, ValueError):
        return path.lower().endswith(PROMPT_FILE_SUFFIXES + FUNCTION_SUFFIXES)  # a missing file: an error, as in promptfoo


class PromptReader(SourceReader):
    """Reads the prompts of one config file into `{raw, label, key}` entries."""


    def prompts(self, raw: Any, base: Path, holder: dict[str, Any]) -> list[dict[str, Any]]:
        if isinstance(raw, dict) and not ({"raw", "id"} & raw.keys()):
            raw = self.prompt_map(raw)
        if isinstance(raw, str | dict):
            raw = self.as_list(raw, holder, "prompts")
        if not isinstance(raw, list):
            raise self.error(f"expected a list of prompts, got {describe(raw)}", holder, "prompts", "prompts")
        out: list[dict[str, Any]] = []
        for i, item in enumerate(raw):
            path = f"prompts[{i}]"
            loc = self.where(raw, i)
            if isinstance(item, str):
                if item.startswith("file://") or names_files(item, base):
                    out.extend(self.prompt_files(_as_ref(item), base, raw, i, None))
                    continue
                entry: dict[str, Any] = {"raw": item, "label": item, "key": INLINE}
            elif isinstance(item, dict):
                label, pid, text = item.get("label"), item.get("id"), item.get("raw")
                if label is not None and not isinstance(label, str):
                    raise self.error(f"expected a string, got {describe(label)}", item, "label", f"{path}.label")
                named = text if text is not None else pid
                if isinstance(named, str) and (named.startswith("file://") or names_files(named, base)):
                    out.extend(self.prompt_files(_as_ref(named), base, raw, i, label))
                    continue
                if text is None:
                    text = pid
                if not isinstance(text, str):
                    raise self.error("a prompt needs raw text (raw:) or a file (id: file://...)", raw, i, path)
                entry = {"raw": text, "label": label or text, "key": f"label:{label}" if label else INLINE}
                if isinstance(pid, str) and item.get("raw") is not None:
                    entry["id"] = pid
                if isinstance(item.get("config"), dict):
                    entry["config"] = item["config"]
            else:
                raise self.error(f"expected a string or a mapping, got {describe(item)}", raw, i, path)
            if loc is not None:
                self.sources.register(entry, loc.file, loc.line, dict.fromkeys(entry, loc.line))
            out.append(entry)
        return out

    def prompt_map(self, mapping: dict[str, Any]) -> list[dict[str, Any]]:
        """The `{file://path: label}` form as a list of `{id, label}` items, keeping lines."""
        items = [{"id": k, "label": v} for k, v in mapping.items()]
        loc = self.where(mapping)
        if loc is not None:
            lines = {i: self.where(mapping, k).line for i, k in enumerate(mapping)}  # type: ignore[union-attr]
            self.sources.register(items, loc.file, loc.line, lines)
            for i, item in enumerate(items):
                self.sources.register(item, loc.file, lines[i], dict.fromkeys(item, lines[i]))
        return items

    def prompt_files(self, ref: str, base: Path, holder: list[Any], index: int, label: str | None) -> list[dict[str, Any]]:
        ref_path, function = files.split_function(ref)
        if ref_path.endswith(".py"):
            return self.python_prompt(ref_path, function, base, holder, index, label)
        if function or ref_path.endswith((".js", ".ts", ".mjs", ".cjs")):
            raise self.error(
                "prompt functions (.py/.js files) are not supported by ci-grade; use a template file",
                holder,
                index,
                f"prompts[{index}]",
            )
        out = []
        paths = files.expand_glob(ref_path, base, self.where(holder, index), f"prompts[{index}]")
        if len(paths) > 1:
            label = None  # as promptfoo: a glob's files are labelled by their paths, never by one shared label
        for path in paths:
            texts = self.prompt_texts(path)
            if not texts and not files.is_glob(ref_path):  # a glob's empty files add nothing, as in promptfoo
                raise self.error(f"{files.display_path(path)} holds no prompt (it is empty)", holder, index, f"prompts[{index}]")
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            shown = files.display_path(path)
            for j, (text, line) in enumerate(texts):
                key = f"label:{label}" if label and len(texts) == 1 else f"file:{rel}" + (f"#{j + 1}" if len(texts) > 1 else "")
                if label:
                    shown_label = label if len(texts) == 1 else f"{label}: {text}"
                else:
                    shown_label = f"{rel}: {text}"
                entry = {"raw": text, "label": shown_label, "key": key}
                self.sources.register(entry, shown, line, dict.fromkeys(entry, line))
                out.append(entry)
        return out

    def python_prompt(self, ref_path: str, function: str | None, base: Path, holder: list[Any], index: int, label: str | None) -> list[dict[str, Any]]:
        """A Python prompt function (`file://prompts.py:fn`), or a whole file run as a script
        (`file://prompt.py`), as promptfoo labels them; they run per row (`run.prompt_functions`)."""
        path = files.expand_glob(ref_path, base, self.where(holder, index), f"prompts[{index}]")[0]
        source = files.read_text(path)
        rel = os.path.relpath(path, base).replace(os.sep, "/")
        shown = label or (f"{rel}:{function}" if function else f"{rel}: {source}")
        key = f"label:{label}" if label else f"file:{rel}" + (f":{function}" if function else "")
        entry = {"raw": source, "label": shown, "key": key, "function": f"{path}:{function}" if function else str(path)}
        loc = self.where(holder, index)
        if loc is not None:
            self.sources.register(entry, loc.file, loc.line, dict.fromkeys(entry, loc.line))
        return [entry]

    def prompt_texts(self, path: Path) -> list[tuple[str, int]]:
        """The prompts one file holds, each with the line it starts on."""
        text = files.read_text(path)
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            return [(json.dumps(files.parse_structured(text, path, None), ensure_ascii=False), 1)]
        if suffix == ".jsonl":
            return [(line, number) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if suffix == ".csv":
            import csv
            import io

            reader = csv.DictReader(io.StringIO(text))
            return [(row["prompt"], reader.line_num) for row in reader if row.get("prompt")]
        if suffix == ".txt":
            return split_prompts(text)
        return [(text, 1)]


def _as_ref(text: str) -> str:
    return text if text.startswith("file://") else f"file://{text.strip()}"


def split_prompts(text: str) -> list[tuple[str, int]]:
    """A .txt file's prompts, with their start lines: the parts between lines that are the
    separator (`---`, or `PROMPTFOO_PROMPT_SEPARATOR`) apart from spaces around it, each
    trimmed, as promptfoo splits them (on `\n` and `\r\n` only, trimming as JavaScript does)."""
    separator = os.environ.get("PROMPTFOO_PROMPT_SEPARATOR") or "---"
    parts: list[tuple[str, int]] = []
    current: list[str] = []
    start = 1
    for number, line in enumerate([*re.split(r"\r?\n", text), separator], start=1):
        if line.strip(JS_WHITESPACE) == separator:
            body = "\n".join(current)
            if body.strip(JS_WHITESPACE):
                leading = len(body) - len(body.lstrip(JS_WHITESPACE))
                parts.append((body.strip(JS_WHITESPACE), start + body[:leading].count("\n")))
            current, start = [], number + 1
        else:
            current.append(line)
    return parts
