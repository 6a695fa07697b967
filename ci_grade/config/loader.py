"""Load one or more promptfoo config files into a validated `Config`.

Every `file://` reference is followed here (prompts, providers, tests, defaultTest, scenarios,
provider config values), relative to the file that holds it, so later stages see plain data.
Variables that point at files stay references until planning (they may be globs that fan out).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ci_grade.config import files
from ci_grade.config.assertion_types import PROMPTFOO_ASSERTION_TYPES
from ci_grade.config.csv_tests import read_csv_tests
from ci_grade.config.models import KNOWN_TOP_LEVEL_KEYS, Assertion, Config
from ci_grade.config.sources import Location, SourceMap, format_path
from ci_grade.errors import ConfigError

DEFAULT_CONFIG_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json")
_NOT_DEREFERENCED = {"tools", "functions", "response_format"}
_FUNCTION_CONFIG_KEYS = {"transformResponse", "transformRequest", "sessionParser", "responseParser", "transform"}
_INLINE = "inline"
_IGNORED_KEYS = ("nunjucksFilters", "derivedMetrics", "extensions", "tracing")


@dataclass
class LoadedConfig:
    """A validated config plus what later stages need to point back at the user's files."""

    config: Config
    files: list[Path]
    base_dir: Path
    sources: SourceMap
    raw: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    command_line_options: dict[str, Any] = field(default_factory=dict)

    @property
    def config_hash(self) -> str:
        blob = json.dumps(self.raw, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def find_default_config(cwd: Path) -> Path:
    for name in DEFAULT_CONFIG_NAMES:
        if (cwd / name).is_file():
            return cwd / name
    raise ConfigError(f"no config given and no {' / '.join(DEFAULT_CONFIG_NAMES)} in {cwd}; pass -c CONFIG")


def load_config(paths: list[str | Path], cwd: Path | None = None) -> LoadedConfig:
    """Read, expand, merge and validate the config files named by `paths` (globs allowed)."""
    cwd = cwd or Path.cwd()
    sources = SourceMap()
    config_files: list[Path] = []
    if not paths:
        config_files = [find_default_config(cwd)]
    for ref in paths:
        config_files.extend(files.expand_glob(str(ref), cwd, None, "-c"))
    loader = _Loader(sources)
    parts = [loader.load_file(path) for path in config_files]
    merged = _merge(parts, sources) if len(parts) > 1 else parts[0]
    if "prompts" not in merged:
        merged["prompts"] = [{"raw": "{{prompt}}", "label": "{{prompt}}", "key": "prompt"}]
    for index, prompt in enumerate(merged["prompts"] if isinstance(merged["prompts"], list) else []):
        if isinstance(prompt, dict) and prompt.get("key") == _INLINE:
            prompt["key"] = f"prompts[{index}]"
    if merged["prompts"] == []:
        where = sources.location(merged, "prompts")
        raise ConfigError("the prompts list is empty: add a prompt or leave prompts out", file=where.file if where else None, line=where.line if where else None, path="prompts")
    if not merged.get("providers"):
        where = sources.location(merged, "providers") or Location(files.display_path(config_files[0]))
        raise ConfigError("no providers: add a providers: list (e.g. - echo)", file=where.file, line=where.line, path="providers")
    config = _validate(merged, sources, config_files[0])
    warnings = loader.warnings + _unknown_key_warnings(config, merged, sources)
    return LoadedConfig(
        config=config,
        files=config_files,
        base_dir=config_files[0].parent,
        sources=sources,
        raw=merged,
        warnings=warnings,
        command_line_options=merged.get("commandLineOptions") or {},
    )


class _Loader:
    def __init__(self, sources: SourceMap):
        self.sources = sources
        self.warnings: list[str] = []

    def where(self, obj: Any, key: Any = None) -> Location | None:
        return self.sources.location(obj, key)

    def error(self, message: str, obj: Any, key: Any = None, path: str | None = None) -> ConfigError:
        loc = self.where(obj, key)
        return ConfigError(message, file=loc.file if loc else None, line=loc.line if loc else None, path=path)

    def as_list(self, value: Any, holder: Any, key: Any) -> list[Any]:
        """`value` as a list; a single item written in place of a list keeps its line."""
        if isinstance(value, list):
            return value
        out = [value]
        loc = self.where(holder, key)
        if loc is not None:
            self.sources.register(out, loc.file, loc.line, {0: loc.line})
        return out

    # -- files -----------------------------------------------------------------------------------

    def load_file(self, path: Path) -> dict[str, Any]:
        data = files.load_structured(path, self.sources, what="config")
        shown = files.display_path(path)
        if data is None:
            raise ConfigError("config file is empty", file=shown)
        if not isinstance(data, dict):
            raise ConfigError(f"expected a mapping at the top level, got {_describe(data)}", file=shown, line=1)
        data = self.dereference(data, data, path, ())
        base = path.parent
        if "targets" in data:
            if "providers" in data:
                raise self.error("use either providers or targets, not both", data, "targets", "targets")
            data["providers"] = data.pop("targets")
            self.sources.alias(data, "providers", "targets")
        if "prompts" in data:
            data["prompts"] = self.prompts(data["prompts"], base, data)
        if "providers" in data:
            data["providers"] = self.providers(data["providers"], base, data)
        if data.get("tests") is not None:
            data["tests"] = self.tests(data["tests"], base, data, "tests", "tests")
        if isinstance(data.get("defaultTest"), str):
            data["defaultTest"] = self.structured_ref(data["defaultTest"], base, data, "defaultTest", dict)
        if isinstance(data.get("defaultTest"), dict):
            self.test_vars_file(data["defaultTest"], base, "defaultTest")
        if data.get("scenarios") is not None:
            data["scenarios"] = self.scenarios(data["scenarios"], base, data)
        for key in _IGNORED_KEYS:
            if data.get(key):
                self.warnings.append(f"{self.where(data, key) or shown}: {key!r} is not supported by ci-grade and is ignored")
        return data

    def structured_ref(self, ref: str, base: Path, holder: Any, key: Any, kind: type, path: str | None = None) -> Any:
        """The data in the file `ref` names (one YAML/JSON file), checked to be of `kind`."""
        path = path or str(key)
        if not ref.startswith("file://"):
            raise self.error(f"expected a mapping or a file:// reference, got {ref!r}", holder, key, path)
        matches = files.expand_glob(ref, base, self.where(holder, key), path)
        if len(matches) != 1:
            raise self.error(f"{ref!r} matches {len(matches)} files; name exactly one", holder, key, path)
        value = files.load_structured(matches[0], self.sources, self.where(holder, key), path)
        if not isinstance(value, kind):
            raise ConfigError(f"expected {_kind_name(kind)}, got {_describe(value)}", file=files.display_path(matches[0]), line=1)
        return value

    # -- $ref ------------------------------------------------------------------------------------

    def dereference(self, node: Any, root: dict, path: Path, trail: tuple) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/"):
                target = _pointer(root, ref)
                if target is _MISSING:
                    if set(trail) & (_NOT_DEREFERENCED | {"value"}):
                        return node
                    raise self.error(f"$ref {ref!r} points at nothing in this file", node, "$ref", format_path(trail))
                resolved = self.sources.copy_tree(target)
                if isinstance(resolved, dict):
                    extra = {k: v for k, v in node.items() if k != "$ref"}
                    resolved.update(extra)
                return self.dereference(resolved, root, path, trail)
            for key, value in list(node.items()):
                if key in _NOT_DEREFERENCED:
                    continue
                node[key] = self.dereference(value, root, path, (*trail, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = self.dereference(value, root, path, (*trail, i))
        return node

    # -- prompts ---------------------------------------------------------------------------------

    def prompts(self, raw: Any, base: Path, holder: dict) -> list[dict[str, Any]]:
        if isinstance(raw, dict) and not ({"raw", "id"} & raw.keys()):
            raw = self.prompt_map(raw)
        if isinstance(raw, str | dict):
            raw = self.as_list(raw, holder, "prompts")
        if not isinstance(raw, list):
            raise self.error(f"expected a list of prompts, got {_describe(raw)}", holder, "prompts", "prompts")
        out: list[dict[str, Any]] = []
        for i, item in enumerate(raw):
            path = f"prompts[{i}]"
            loc = self.where(raw, i)
            if isinstance(item, str):
                if item.startswith("file://"):
                    out.extend(self.prompt_files(item, base, raw, i, None))
                    continue
                entry: dict[str, Any] = {"raw": item, "label": item, "key": _INLINE}
            elif isinstance(item, dict):
                label, pid, text = item.get("label"), item.get("id"), item.get("raw")
                if label is not None and not isinstance(label, str):
                    raise self.error(f"expected a string, got {_describe(label)}", item, "label", f"{path}.label")
                if isinstance(pid, str) and pid.startswith("file://") and text is None:
                    out.extend(self.prompt_files(pid, base, raw, i, label))
                    continue
                if text is None:
                    text = pid
                if not isinstance(text, str):
                    raise self.error("a prompt needs raw text (raw:) or a file (id: file://...)", raw, i, path)
                entry = {"raw": text, "label": label or text, "key": f"label:{label}" if label else _INLINE}
                if isinstance(pid, str) and item.get("raw") is not None:
                    entry["id"] = pid
                if isinstance(item.get("config"), dict):
                    entry["config"] = item["config"]
            else:
                raise self.error(f"expected a string or a mapping, got {_describe(item)}", raw, i, path)
            if loc is not None:
                self.sources.register(entry, loc.file, loc.line, dict.fromkeys(entry, loc.line))
            out.append(entry)
        return out

    def _line(self, obj: Any, key: Any) -> int | None:
        loc = self.where(obj, key)
        return loc.line if loc else None

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

    def prompt_files(self, ref: str, base: Path, holder: list, index: int, label: str | None) -> list[dict[str, Any]]:
        ref_path, function = files.split_function(ref)
        if function or ref_path.endswith((".py", ".js", ".ts", ".mjs", ".cjs")):
            raise self.error(
                "prompt functions (.py/.js files) are not supported by ci-grade; use a template file",
                holder,
                index,
                f"prompts[{index}]",
            )
        out = []
        for path in files.expand_glob(ref_path, base, self.where(holder, index), f"prompts[{index}]"):
            texts = self.prompt_texts(path)
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

            reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
            return [(row["prompt"], reader.line_num) for row in reader if row.get("prompt")]
        if suffix == ".txt":
            return _split_prompts(text)
        return [(text, 1)]

    # -- providers -------------------------------------------------------------------------------

    def providers(self, raw: Any, base: Path, holder: dict) -> list[dict[str, Any]]:
        if isinstance(raw, str | dict):
            raw = self.as_list(raw, holder, "providers")
        if not isinstance(raw, list):
            raise self.error(f"expected a list of providers, got {_describe(raw)}", holder, "providers", "providers")
        out: list[dict[str, Any]] = []
        for i, item in enumerate(raw):
            path = f"providers[{i}]"
            if isinstance(item, str) and item.startswith("file://") and item.endswith(files.STRUCTURED_SUFFIXES):
                for file in files.expand_glob(item, base, self.where(raw, i), path):
                    loaded = files.load_structured(file, self.sources, self.where(raw, i), path)
                    container = {"providers": loaded}
                    self.sources.register(container, files.display_path(file), 1, {"providers": 1})
                    out.extend(self.providers(loaded, file.parent, container))
                continue
            if isinstance(item, str):
                entry = {"id": item}
                loc = self.where(raw, i)
                if loc:
                    self.sources.register(entry, loc.file, loc.line, {"id": loc.line})
                out.append(entry)
            elif isinstance(item, dict) and "id" in item:
                out.append(item)
            elif isinstance(item, dict) and len(item) == 1:
                (pid, options), = item.items()
                if options is not None and not isinstance(options, dict):
                    raise self.error(f"expected provider options as a mapping, got {_describe(options)}", item, pid, f"{path}.{pid}")
                entry = {"id": pid, **(options or {})}
                loc = self.where(item, pid)
                if loc:
                    self.sources.register(entry, loc.file, loc.line, {k: loc.line for k in entry})
                out.append(entry)
            else:
                raise self.error("a provider needs an id: a string, {id: ...} or {<id>: {...}}", raw, i, path)
            config = out[-1].get("config")
            if isinstance(config, dict):
                out[-1]["config"] = self.config_files(config, base, f"{path}.config")
        locations = [self.where(entry) for entry in out]
        known = [loc for loc in locations if loc is not None]
        if known:
            self.sources.register(out, known[0].file, known[0].line, {i: loc.line for i, loc in enumerate(locations) if loc})
        return out

    def config_files(self, node: Any, base: Path, path: str, holder: Any = None, key: Any = None) -> Any:
        """Load `file://` values inside provider config (data files, or functions returning data)."""
        if isinstance(node, dict):
            out = {k: (v if k in _FUNCTION_CONFIG_KEYS else self.config_files(v, base, f"{path}.{k}", node, k)) for k, v in node.items()}
            loc = self.where(node)
            if loc is not None:
                self.sources.register(out, loc.file, loc.line, {k: self._line(node, k) for k in node})
            return out
        if isinstance(node, list):
            return [self.config_files(v, base, f"{path}[{i}]", node, i) for i, v in enumerate(node)]
        if isinstance(node, str) and node.startswith("file://"):
            path_text, function = files.split_function(node)
            file = files.resolve(path_text, base)
            if not file.is_file():
                raise files.missing_file_error(f"file not found: {files.display_path(file)}", self.where(holder, key), path)
            if function and file.suffix == ".py":
                from ci_grade.scripting.python import call_function_sync

                return call_function_sync(file, function)
            if function and file.suffix in (".js", ".mjs", ".cjs"):
                from ci_grade.scripting.js import call_js_file_function

                return call_js_file_function(file, function, [])
            if file.suffix in files.STRUCTURED_SUFFIXES:
                return files.load_structured(file, self.sources)
            return files.read_text(file)
        return node

    # -- tests -----------------------------------------------------------------------------------

    def tests(self, raw: Any, base: Path, holder: Any, key: Any, path: str) -> list[Any]:
        single = isinstance(raw, str) or (isinstance(raw, dict) and "path" in raw)
        if single:
            raw = self.as_list(raw, holder, key)
        if not isinstance(raw, list):
            raise self.error(f"expected a list of tests or a file:// path, got {_describe(raw)}", holder, key, path)
        out: list[Any] = []
        for i, item in enumerate(raw):
            if isinstance(item, str):
                out.extend(self.test_files(item, base, raw, i, path if single else f"{path}[{i}]"))
            elif isinstance(item, dict) and "path" in item and "vars" not in item and "assert" not in item:
                ref = item["path"]
                _, function = files.split_function(str(ref))
                if function or str(ref).endswith((".py", ".js", ".ts")):
                    raise self.error("test generators (.py/.js) are not supported by ci-grade; list tests in YAML, JSON, JSONL or CSV", item, "path", f"{path}[{i}].path")
                out.extend(self.test_files(str(ref), base, item, "path", f"{path}[{i}].path"))
            else:
                if isinstance(item, dict):
                    self.test_vars_file(item, base, f"{path}[{i}]")
                out.append(item)
        return out

    def test_files(self, ref: str, base: Path, holder: Any, key: Any, path: str) -> list[Any]:
        if not ref.startswith("file://") and not ref.endswith((".yaml", ".yml", ".json", ".jsonl", ".csv")):
            raise self.error(f"expected a test mapping or a file:// path, got {ref!r}", holder, key, path)
        referenced_from = self.where(holder, key)
        out: list[Any] = []
        for file in files.expand_glob(ref, base, referenced_from, path):
            shown = files.display_path(file)
            suffix = file.suffix.lower()
            if suffix == ".csv":
                loaded = []
                for test, line in read_csv_tests(files.read_text(file, referenced_from, path), shown, set(PROMPTFOO_ASSERTION_TYPES)):
                    self.sources.register(test, shown, line, dict.fromkeys(test, line))
                    for value in test.values():
                        if isinstance(value, dict | list):
                            self.sources.register(value, shown, line, dict.fromkeys(value if isinstance(value, dict) else range(len(value)), line))
                    for assertion in test.get("assert") or []:
                        self.sources.register(assertion, shown, line, dict.fromkeys(assertion, line))
                    loaded.append(test)
            elif suffix == ".jsonl":
                loaded = [test for test, _line in files.load_jsonl(file, self.sources, referenced_from, path)]
            elif suffix in files.STRUCTURED_SUFFIXES:
                data = files.load_structured(file, self.sources, referenced_from, path)
                loaded = [data] if isinstance(data, dict) else data
                if not isinstance(loaded, list):
                    raise ConfigError(f"expected a list of tests, got {_describe(data)}", file=shown, line=1)
            else:
                raise ConfigError(f"unsupported test file type {suffix!r} (use .yaml, .json, .jsonl or .csv)", file=referenced_from.file if referenced_from else None, line=referenced_from.line if referenced_from else None, path=path)
            for test in loaded:
                if isinstance(test, dict):
                    self.test_vars_file(test, file.parent, path)
            out.extend(loaded)
        return out

    def test_vars_file(self, test: dict, base: Path, path: str) -> None:
        """`vars: file://vars.yaml` -> the mapping in that file."""
        if isinstance(test.get("vars"), str):
            test["vars"] = self.structured_ref(test["vars"], base, test, "vars", dict, f"{path}.vars")

    # -- scenarios -------------------------------------------------------------------------------

    def scenarios(self, raw: Any, base: Path, holder: dict) -> list[Any]:
        if isinstance(raw, str | dict):
            raw = self.as_list(raw, holder, "scenarios")
        if not isinstance(raw, list):
            raise self.error(f"expected a list of scenarios, got {_describe(raw)}", holder, "scenarios", "scenarios")
        out: list[Any] = []
        for i, item in enumerate(raw):
            if isinstance(item, str):
                for file in files.expand_glob(item, base, self.where(raw, i), f"scenarios[{i}]"):
                    loaded = files.load_structured(file, self.sources, self.where(raw, i), f"scenarios[{i}]")
                    container = {"scenarios": loaded}
                    self.sources.register(container, files.display_path(file), 1, {"scenarios": 1})
                    out.extend(self.scenarios(loaded, file.parent, container))
            elif isinstance(item, dict):
                if item.get("tests") is not None:
                    item["tests"] = self.tests(item["tests"], base, item, "tests", f"scenarios[{i}].tests")
                if isinstance(item.get("config"), list):
                    for j, entry in enumerate(item["config"]):
                        if isinstance(entry, dict):
                            self.test_vars_file(entry, base, f"scenarios[{i}].config[{j}]")
                out.append(item)
            else:
                raise self.error(f"expected a scenario mapping, got {_describe(item)}", raw, i, f"scenarios[{i}]")
        return out


def _split_prompts(text: str) -> list[tuple[str, int]]:
    """A .txt file's prompts: parts between lines of three or more dashes, with start lines."""
    parts: list[tuple[str, int]] = []
    current: list[str] = []
    start = 1
    for number, line in enumerate([*text.splitlines(), "---"], start=1):
        if re.fullmatch(r"-{3,}\s*", line):
            body = "\n".join(current)
            if body.strip():
                leading = len(body) - len(body.lstrip("\n"))
                parts.append((body.strip(), start + body[:leading].count("\n")))
            current, start = [], number + 1
        else:
            current.append(line)
    return parts


_MISSING = object()


def _pointer(root: Any, ref: str) -> Any:
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _merge(parts: list[dict[str, Any]], sources: SourceMap) -> dict[str, Any]:
    """Merge several configs into one eval, as promptfoo merges `-c a.yaml -c b.yaml`."""
    merged: dict[str, Any] = {}
    key_lines: dict[str, Location] = {}
    for part in parts:
        for key, value in part.items():
            loc = sources.location(part, key)
            if loc is not None:
                key_lines.setdefault(key, loc)
            if key in ("prompts", "providers", "tests", "scenarios"):
                merged[key] = [*(merged.get(key) or []), *(value if isinstance(value, list) else [value])]
            elif key == "defaultTest" and isinstance(value, dict) and isinstance(merged.get(key), dict):
                current = dict(merged[key])
                for sub, sub_value in value.items():
                    if sub in ("vars", "options", "metadata") and isinstance(sub_value, dict):
                        current[sub] = {**(current.get(sub) or {}), **sub_value}
                    elif sub == "assert" and isinstance(sub_value, list):
                        current[sub] = [*(current.get(sub) or []), *sub_value]
                    else:
                        current[sub] = sub_value
                merged[key] = current
            elif key in ("env", "evaluateOptions", "metadata", "commandLineOptions") and isinstance(value, dict):
                merged[key] = {**(merged.get(key) or {}), **value}
            elif key == "description" and merged.get(key) and value:
                merged[key] = f"{merged[key]}, {value}"
            elif key == "outputPath" and merged.get(key):
                first = merged[key] if isinstance(merged[key], list) else [merged[key]]
                merged[key] = [*first, *(value if isinstance(value, list) else [value])]
            else:
                merged[key] = value
    first = next((loc for loc in key_lines.values()), None)
    if first is not None:
        sources.register(merged, first.file, 1, {k: loc.line for k, loc in key_lines.items() if loc.file == first.file})
    return merged


def _validate(merged: dict[str, Any], sources: SourceMap, first_file: Path) -> Config:
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        raise validation_error(exc, merged, sources, files.display_path(first_file)) from None


def validation_error(exc: ValidationError, root: Any, sources: SourceMap, fallback_file: str | None, prefix: tuple = ()) -> ConfigError:
    """The first pydantic error as a one-line ConfigError with file, line and key path."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc, union = _data_path(root, first)
    others = len({_data_path(root, e)[0] for e in errors} - {loc})
    where = sources.locate_path(root, loc)
    more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
    if union and first["type"] in ("string_type", "int_type", "float_type", "bool_type"):
        first = {**first, "type": "scalar_type"}  # a union of plain types: one message for all of them
    return ConfigError(
        _message(first) + more,
        file=where.file if where else fallback_file,
        line=where.line if where else None,
        path=format_path(prefix + loc) or None,
    )


def _data_path(root: Any, error: dict[str, Any]) -> tuple[tuple[Any, ...], bool]:
    """A pydantic error location as a path in the data, and whether a union member's name (the
    `str` in `env.X.str`) was dropped from it."""
    loc = [part for part in error["loc"] if not (isinstance(part, str) and part.startswith("function-"))]
    out: list[Any] = []
    node: Any = root
    for index, part in enumerate(loc):
        found = (isinstance(node, dict) and part in node) or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        if found:
            node = node[part]
        elif not (error["type"] == "missing" and index == len(loc) - 1):
            return tuple(out), True
        out.append(part)
    return tuple(out), False


def _message(error: dict[str, Any]) -> str:
    kind, value = error["type"], error.get("input")
    got = f", got {_describe(value)}"
    if kind == "missing":
        return "is required"
    if kind == "scalar_type":
        return "expected a string, number or boolean" + got
    if kind in ("float_parsing", "float_type", "finite_number"):
        return "expected a number" + got
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "expected a whole number" + got
    if kind == "string_type":
        return "expected a string" + got
    if kind in ("bool_parsing", "bool_type"):
        return "expected true or false" + got
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "expected a mapping" + got
    if kind == "list_type":
        return "expected a list" + got
    if kind in ("greater_than_equal", "greater_than"):
        bound = error.get("ctx", {}).get("ge", error.get("ctx", {}).get("gt"))
        return f"must be at least {bound}" + got
    return error["msg"] + got


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def _kind_name(kind: type) -> str:
    return {dict: "a mapping", list: "a list", str: "a string"}.get(kind, kind.__name__)


def _unknown_key_warnings(config: Config, raw: dict[str, Any], sources: SourceMap) -> list[str]:
    """One warning per unknown key name (the first place it was written), never an error."""
    seen: dict[str, Location | None] = {}
    for key in raw:
        if key not in KNOWN_TOP_LEVEL_KEYS:
            seen.setdefault(key, sources.location(raw, key))
    tests = [("tests[].", test, raw_test) for test, raw_test in zip(config.tests, _items(raw.get("tests")), strict=False)]
    if config.defaultTest is not None:
        tests.append(("defaultTest.", config.defaultTest, raw.get("defaultTest")))
    for prefix, test, raw_test in tests:
        for key in test.extra_keys():
            seen.setdefault(f"{prefix}{key}", sources.location(raw_test, key))
        for assertion, raw_assertion in _assertion_pairs(test.assert_ or [], raw_test.get("assert") if isinstance(raw_test, dict) else None):
            for key in assertion.extra_keys():
                seen.setdefault(f"assert[].{key}", sources.location(raw_assertion, key))
    for spec, raw_spec in zip(config.providers, _items(raw.get("providers")), strict=False):
        for key in spec.extra_keys():
            seen.setdefault(f"providers[].{key}", sources.location(raw_spec, key))
    return [
        f"{loc}: unknown key {key!r} ignored" if loc else f"unknown key {key!r} ignored"
        for key, loc in seen.items()
    ]


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _assertion_pairs(assertions: list[Assertion], raw: Any) -> list[tuple[Assertion, Any]]:
    """Every assertion (assert-set children too) with the raw mapping it was read from."""
    out: list[tuple[Assertion, Any]] = []
    raw_items = _items(raw)
    for i, assertion in enumerate(assertions):
        raw_item = raw_items[i] if i < len(raw_items) else None
        out.append((assertion, raw_item))
        out.extend(_assertion_pairs(assertion.assert_ or [], raw_item.get("assert") if isinstance(raw_item, dict) else None))
    return out


def suggest(name: str, choices: set[str] | frozenset[str]) -> str:
    """' (did you mean X?)' for a near-miss, else ''."""
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
