"""Load one or more promptfoo config files into a validated `Config`.

Every `file://` reference is followed here (prompts, providers, tests, defaultTest, scenarios,
provider config values), relative to the file that holds it, so later stages see plain data.
Variables that point at files stay references until planning (they may be globs that fan out).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from ci_grade.config import command_line, digest, files, generators, nunjucks_filters, test_sources
from ci_grade.config.assertion_types import AssertionVocabulary
from ci_grade.config.command_line import CommandLineDefaults
from ci_grade.config.csv_tests import read_csv_tests
from ci_grade.config.errors import describe, kind_name, validation_error
from ci_grade.config.merge import merge_configs
from ci_grade.config.models import Config
from ci_grade.config.overrides import ConfigOverrides, apply_overrides
from ci_grade.config.prompt_files import INLINE, PromptReader
from ci_grade.config.refs import RefReader
from ci_grade.config.sources import Location, SourceMap
from ci_grade.errors import ConfigError, ScriptError
from ci_grade.workers import dispatch

DEFAULT_CONFIG_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json")
# Code the provider runs per call, not data to load.
_FUNCTION_CONFIG_KEYS = {"transformResponse", "transformRequest", "sessionParser", "responseParser", "transform", "functionToolCallbacks", "functionToolStatefulApi"}
TEST_KEYS = ("assert", "vars", "options", "metadata", "provider", "providerOutput", "threshold")
"""A test has one of these (promptfoo's rule): a tests file holding one mapping without any is not a test."""
MAX_FILE_NESTING = 20
"""How deep tests, providers or scenarios files may name further such files."""


@dataclass
class LoadedConfig:
    """A validated config plus what later stages need to point back at the user's files."""

    config: Config
    files: list[Path]
    base_dir: Path
    sources: SourceMap
    raw: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    command_line: CommandLineDefaults = field(default_factory=CommandLineDefaults)
    """The config's `commandLineOptions`, read and checked."""
    _hash: str | None = field(default=None, repr=False)

    @property
    def config_hash(self) -> str:
        if self._hash is None:
            self._hash = digest.canonical_digest(self.raw)[:16]
        return self._hash

    def release(self) -> None:
        """Drop the tests once the plan holds what it needs of them: the raw tests and scenarios,
        their source lines and their validated models (for a large config, most of its memory).
        The config's hash is kept; preflight and planning cannot run on a released config."""
        _ = self.config_hash
        self.raw.pop("tests", None)
        self.raw.pop("scenarios", None)
        self.sources.retain(self.raw)
        self.config = self.config.model_copy(update={"tests": [], "scenarios": None})


def find_default_config(cwd: Path, overrides: ConfigOverrides | None = None) -> list[Path]:
    """`promptfooconfig.yaml` (`.yml`, `.json`) in `cwd` (no `-c`, or `-c FOLDER` as promptfoo
    takes it); none when the command line gives a whole eval (`-p` and `-r`, or `--assertions`
    with `--model-outputs`), else an error."""
    for name in DEFAULT_CONFIG_NAMES:
        if (cwd / name).is_file():
            return [cwd / name]
    if overrides is not None and overrides.complete:
        return []
    raise ConfigError(f"no config given and no {' / '.join(DEFAULT_CONFIG_NAMES)} in {cwd}; pass -c CONFIG (or -p and -r)")


def load_config(
    paths: Sequence[str | Path],
    vocabulary: AssertionVocabulary,
    cwd: Path | None = None,
    overrides: ConfigOverrides | None = None,
    known_provider: Callable[[str], bool] | None = None,
) -> LoadedConfig:
    """Read, expand, merge and validate the config files named by `paths` (globs allowed);
    `vocabulary` (from the grading registry) says how CSV `__expected` cells read; `overrides`
    replace the config's prompts, providers or tests (`-p`, `-r`, `-t`); `known_provider` (from the
    provider registry) says which ids a provider family takes: the files in an unknown provider's
    config are not read, so the unknown provider is what is reported."""
    cwd = cwd or Path.cwd()
    sources = SourceMap()
    config_files: list[Path] = []
    if not paths:
        config_files = find_default_config(cwd, overrides)
    for ref in paths:
        folder = files.resolve(str(ref), cwd)
        config_files.extend(find_default_config(folder) if folder.is_dir() else files.expand_glob(str(ref), cwd, None, "-c"))
    loader = _Loader(sources, vocabulary, known_provider)
    parts = [loader.load_file(path) for path in config_files]
    merged = merge_configs(parts, sources) if len(parts) > 1 else parts[0] if parts else {}
    if overrides:
        apply_overrides(merged, overrides, loader, cwd)
    if "prompts" not in merged:
        merged["prompts"] = [{"raw": "{{prompt}}", "label": "{{prompt}}", "key": "prompt"}]
    for index, prompt in enumerate(merged["prompts"] if isinstance(merged["prompts"], list) else []):
        if isinstance(prompt, dict) and prompt.get("key") == INLINE:
            prompt["key"] = f"prompts[{index}]"
    if merged["prompts"] == []:
        where = sources.location(merged, "prompts")
        raise ConfigError("the prompts list is empty: add a prompt or leave prompts out", file=where.file if where else None, line=where.line if where else None, path="prompts")
    if merged.get("redteam") and not merged.get("tests") and not merged.get("scenarios"):
        where = sources.location(merged, "redteam")
        raise ConfigError(
            "this config holds a red-team block and no tests: generating attacks is out of ci-grade's scope. Generate them with "
            "`promptfoo redteam generate -c CONFIG -o redteam.yaml`, then evaluate the generated file with `ci-grade eval -c redteam.yaml`",
            file=where.file if where else None, line=where.line if where else None, path="redteam",
        )
    if not merged.get("providers"):
        where = sources.location(merged, "providers") or Location(files.display_path(config_files[0]))
        raise ConfigError("no providers: add a providers: list (e.g. - echo)", file=where.file, line=where.line, path="providers")
    config = _validate(merged, sources, files.display_path(config_files[0]) if config_files else None)
    warnings = loader.warnings + nunjucks_filters.use(merged, sources)
    return LoadedConfig(
        config=config,
        files=config_files,
        base_dir=config_files[0].parent if config_files else cwd,
        sources=sources,
        raw=merged,
        warnings=warnings,
        command_line=command_line.read(config.commandLineOptions or {}, lambda key: sources.location(merged.get("commandLineOptions"), key)),
    )


class _Loader(RefReader):
    def __init__(self, sources: SourceMap, vocabulary: AssertionVocabulary, known_provider: Callable[[str], bool] | None = None):
        super().__init__(sources)
        self.vocabulary = vocabulary
        self.known_provider = known_provider
        self.warnings: list[str] = []
        self.prompt_reader = PromptReader(sources)
        self._nesting: list[Path] = []
        """The tests, providers or scenarios files being read that name the current one."""

    @contextlib.contextmanager
    def _inside(self, file: Path, what: str, path: str) -> Iterator[None]:
        """Read what `file` names while it counts as open: a file that names itself again, through
        any others, is refused with the chain of files (as are chains deeper than `MAX_FILE_NESTING`)."""
        real = file.resolve()
        if real in self._nesting or len(self._nesting) >= MAX_FILE_NESTING:
            chain = [*self._nesting[self._nesting.index(real) if real in self._nesting else 0:], real]
            shown = " -> ".join(files.display_path(step) for step in chain)
            problem = "name each other in a loop" if real in self._nesting else f"name one another more than {MAX_FILE_NESTING} deep"
            raise ConfigError(f"{what} files {problem}: {shown}", file=files.display_path(file), line=1, path=path)
        self._nesting.append(real)
        try:
            yield
        finally:
            self._nesting.pop()

    # -- files -----------------------------------------------------------------------------------

    def load_file(self, path: Path) -> dict[str, Any]:
        data = files.load_structured(path, self.sources, what="config")
        shown = files.display_path(path)
        if data is None:
            raise ConfigError("config file is empty", file=shown)
        if not isinstance(data, dict):
            raise ConfigError(f"expected a mapping at the top level, got {describe(data)}", file=shown, line=1)
        data = cast(dict[str, Any], self.dereference(data, data, path, ()))
        base = path.parent
        if "targets" in data:
            if "providers" in data:
                raise self.error("use either providers or targets, not both", data, "targets", "targets")
            data["providers"] = data.pop("targets")
            self.sources.alias(data, "providers", "targets")
        if "prompts" in data:
            data["prompts"] = self.prompt_reader.prompts(data["prompts"], base, data)
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
        filters = data.get("nunjucksFilters")
        if isinstance(filters, dict):  # paths are relative to the file that names them
            for name, ref in filters.items():
                if isinstance(ref, str) and ref.strip():
                    filters[name] = str(files.resolve(ref, base))
        if data.get("redteam") and data.get("tests"):
            self.warnings.append(f"{self.where(data, 'redteam') or shown}: 'redteam' is ignored: ci-grade runs the tests this config holds and generates no attacks")
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
            raise ConfigError(f"expected {kind_name(kind)}, got {describe(value)}", file=files.display_path(matches[0]), line=1)
        return value

    # -- providers -------------------------------------------------------------------------------

    def providers(self, raw: Any, base: Path, holder: dict[str, Any]) -> list[dict[str, Any]]:
        if isinstance(raw, str | dict):
            raw = self.as_list(raw, holder, "providers")
        if not isinstance(raw, list):
            raise self.error(f"expected a list of providers, got {describe(raw)}", holder, "providers", "providers")
        out: list[dict[str, Any]] = []
        for i, item in enumerate(raw):
            path = f"providers[{i}]"
            if isinstance(item, str) and item.startswith("file://") and item.endswith(files.STRUCTURED_SUFFIXES):
                for file in files.expand_glob(item, base, self.where(raw, i), path):
                    loaded = files.load_structured(file, self.sources, self.where(raw, i), path)
                    container = {"providers": loaded}
                    self.sources.register(container, files.display_path(file), 1, {"providers": 1})
                    with self._inside(file, "providers", path):
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
                    raise self.error(f"expected provider options as a mapping, got {describe(options)}", item, pid, f"{path}.{pid}")
                entry = {"id": pid, **(options or {})}
                loc = self.where(item, pid)
                if loc:
                    self.sources.register(entry, loc.file, loc.line, {k: loc.line for k in entry})
                out.append(entry)
            else:
                raise self.error("a provider needs an id: a string, {id: ...} or {<id>: {...}}", raw, i, path)
            config, provider_id = out[-1].get("config"), out[-1].get("id")
            unknown = self.known_provider is not None and isinstance(provider_id, str) and "{{" not in provider_id and not self.known_provider(provider_id)
            if isinstance(config, dict) and not unknown:
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
                self.sources.register(out, loc.file, loc.line, {k: self.line(node, k) for k in node})
            return out
        if isinstance(node, list):
            return [self.config_files(v, base, f"{path}[{i}]", node, i) for i, v in enumerate(node)]
        if isinstance(node, str) and node.startswith("file://"):
            path_text, function = files.split_function(node)
            file = files.resolve(path_text, base)
            if not file.is_file():
                raise files.missing_file_error(files.not_a_file(file), self.where(holder, key), path)
            if function and dispatch.runs(file):  # in Node.js for JavaScript, as promptfoo
                try:
                    return dispatch.call_file_sync(file, function, [], python_default=function, base_dir=base)
                except ScriptError as exc:
                    raise ConfigError.at(f"{files.display_path(file)}: {function}() failed: {exc}", self.where(holder, key), path) from None
            if file.suffix in files.STRUCTURED_SUFFIXES:
                return files.load_structured(file, self.sources, self.where(holder, key), path)
            return files.read_text(file, self.where(holder, key), path)
        return node

    # -- tests -----------------------------------------------------------------------------------

    def tests(self, raw: Any, base: Path, holder: Any, key: Any, path: str) -> list[Any]:
        single = isinstance(raw, str) or (isinstance(raw, dict) and "path" in raw)
        if single:
            raw = self.as_list(raw, holder, key)
        if not isinstance(raw, list):
            raise self.error(f"expected a list of tests or a file:// path, got {describe(raw)}", holder, key, path)
        out: list[Any] = []
        for i, item in enumerate(raw):
            if isinstance(item, str):
                out.extend(self.test_files(item, base, raw, i, path if single else f"{path}[{i}]"))
            elif isinstance(item, dict) and "path" in item and "vars" not in item and "assert" not in item:
                out.extend(self.test_files(str(item["path"]), base, item, "path", f"{path}[{i}].path", item.get("config")))
            else:
                if isinstance(item, dict):
                    if not any(k in item for k in TEST_KEYS):  # as promptfoo refuses it
                        keys = ", ".join(map(str, item)) or "none"
                        raise self.error(f"a test needs one of {', '.join(TEST_KEYS)}; this one has {keys}", raw, i, f"{path}[{i}]")
                    self.test_vars_file(item, base, f"{path}[{i}]")
                out.append(item)
        return out

    def test_files(self, ref: str, base: Path, holder: Any, key: Any, path: str, config: Any = None) -> list[Any]:
        referenced_from = self.where(holder, key)
        remote = test_sources.remote(ref, self.vocabulary, referenced_from, path)
        if remote is not None:
            return self.checked_tests(remote(), base, referenced_from, path)
        if generators.is_generator(ref):
            return self.checked_tests(generators.generate(ref, base, config, referenced_from, path), base, referenced_from, path)
        if test_sources.is_spreadsheet(ref):
            return self.spreadsheet_tests(ref, base, referenced_from, path)
        if not ref.startswith("file://") and not ref.endswith((".yaml", ".yml", ".json", ".jsonl", ".csv", ".xlsx", ".xls")) and "#" not in ref:
            raise self.error(f"expected a test mapping or a file:// path, got {ref!r}", holder, key, path)
        out: list[Any] = []
        for file in files.expand_glob(ref, base, referenced_from, path):
            shown = files.display_path(file)
            suffix = file.suffix.lower()
            if suffix == ".csv":
                loaded = []
                for test, line in read_csv_tests(files.read_text(file, referenced_from, path), shown, self.vocabulary):
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
                data = self.dereference(data, data, file, ())
                if isinstance(data, dict) and not any(k in data for k in TEST_KEYS):
                    keys = ", ".join(map(str, list(data)[:5])) or "none"
                    raise ConfigError(f"expected a list of tests or one test (with one of {', '.join(TEST_KEYS)}); this mapping has keys {keys}", file=shown, line=1, path=path)
                loaded = [data] if isinstance(data, dict) else data
                if not isinstance(loaded, list):
                    raise ConfigError(f"expected a list of tests, got {describe(data)}", file=shown, line=1)
            else:
                raise ConfigError(f"unsupported test file type {suffix!r} (use .yaml, .json, .jsonl or .csv)", file=referenced_from.file if referenced_from else None, line=referenced_from.line if referenced_from else None, path=path)
            for i, test in enumerate(loaded):
                if isinstance(test, dict):
                    self.test_vars_file(test, file.parent, path)
                    out.append(test)
                elif isinstance(test, str):  # a tests file naming more tests files, as promptfoo reads them
                    with self._inside(file, "tests", path):
                        out.extend(self.test_files(test, file.parent, loaded, i, f"{path} > {shown}[{i}]"))
                else:
                    out.append(test)
        return out

    def checked_tests(self, tests: list[dict[str, Any]], base: Path, referenced_from: Location | None, path: str) -> list[Any]:
        """Tests made by a generator or read from a remote source, checked as written ones are and
        located at the reference that made them."""
        for index, test in enumerate(tests):
            if not any(k in test for k in TEST_KEYS):
                keys = ", ".join(map(str, test)) or "none"
                raise ConfigError.at(f"test {index} it gave needs one of {', '.join(TEST_KEYS)}; it has {keys}", referenced_from, path)
            if referenced_from is not None:
                self.sources.register(test, referenced_from.file, referenced_from.line, dict.fromkeys(test, referenced_from.line))
            self.test_vars_file(test, base, path)
        return list(tests)

    def spreadsheet_tests(self, ref: str, base: Path, referenced_from: Location | None, path: str) -> list[Any]:
        """An .xlsx file's tests (`tests.xlsx#Sheet` names the sheet)."""
        name, _, sheet = files.strip_file_prefix(ref).partition("#")
        file = files.expand_glob(name, base, referenced_from, path)[0]
        shown = files.display_path(file)
        out = []
        for test, line in test_sources.xlsx_tests(file, sheet or None, self.vocabulary, shown):
            self.sources.register(test, shown, line, dict.fromkeys(test, line))
            out.append(test)
        return out

    def test_vars_file(self, test: dict[str, Any], base: Path, path: str) -> None:
        """`vars` naming files (`file://vars.yaml`, a path, a glob, or a list of them, as promptfoo's
        test files allow) -> their mappings merged, later files over earlier ones."""
        refs = test.get("vars")
        if isinstance(refs, str) and refs.startswith("file://") and not files.is_glob(refs):
            test["vars"] = self.structured_ref(refs, base, test, "vars", dict, f"{path}.vars")
        elif isinstance(refs, str) or (isinstance(refs, list) and refs and all(isinstance(ref, str) for ref in refs)):
            merged: dict[str, Any] = {}
            for i, ref in enumerate([refs] if isinstance(refs, str) else refs):
                holder, key = (test, "vars") if isinstance(refs, str) else (refs, i)
                for file in files.expand_glob(ref, base, self.where(holder, key), f"{path}.vars"):
                    value = files.load_structured(file, self.sources, self.where(holder, key), f"{path}.vars")
                    if not isinstance(value, dict):
                        raise ConfigError(f"expected a mapping of variables, got {describe(value)}", file=files.display_path(file), line=1)
                    merged.update(value)
            test["vars"] = merged

    # -- scenarios -------------------------------------------------------------------------------

    def scenarios(self, raw: Any, base: Path, holder: dict[str, Any]) -> list[Any]:
        if isinstance(raw, str | dict):
            raw = self.as_list(raw, holder, "scenarios")
        if not isinstance(raw, list):
            raise self.error(f"expected a list of scenarios, got {describe(raw)}", holder, "scenarios", "scenarios")
        out: list[Any] = []
        for i, item in enumerate(raw):
            if isinstance(item, str):
                for file in files.expand_glob(item, base, self.where(raw, i), f"scenarios[{i}]"):
                    loaded = files.load_structured(file, self.sources, self.where(raw, i), f"scenarios[{i}]")
                    container = {"scenarios": loaded}
                    self.sources.register(container, files.display_path(file), 1, {"scenarios": 1})
                    with self._inside(file, "scenarios", f"scenarios[{i}]"):
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
                raise self.error(f"expected a scenario mapping, got {describe(item)}", raw, i, f"scenarios[{i}]")
        return out


def _validate(merged: dict[str, Any], sources: SourceMap, first_file: str | None) -> Config:
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        raise validation_error(exc, merged, sources, first_file) from None


