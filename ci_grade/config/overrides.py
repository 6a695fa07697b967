"""promptfoo's `-p/--prompts`, `-r/--providers` and `-t/--tests` (`-v/--vars`): the config's own,
replaced; and its standalone grading of recorded outputs (`--assertions` with `--model-outputs`).

Prompts and tests named on the command line are read like the config's, relative to the working
folder. A provider named on the command line that the config also lists (by id, by label, or as
the end of an id after `:`, as promptfoo matches them) keeps the config's settings; another one
is used as named, a file in its id found from the config's folder, as promptfoo finds it.
With `-p` and `-r` no config file is needed.

`--assertions FILE --model-outputs FILE` grades outputs produced elsewhere: each output (a string,
or `{output, tags}`) becomes a test of the prompt `{{output}}` on the `echo` provider, with the
assertions file's list as its assertions and `tags` joined into a `tags` variable, as promptfoo
builds them; the config's prompts, providers and tests (if there is a config) are replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ci_grade.config import files
from ci_grade.config.prompt_files import PromptReader
from ci_grade.config.sources import SourceMap
from ci_grade.errors import ConfigError, UsageError


@dataclass(frozen=True)
class ConfigOverrides:
    prompts: Sequence[str] = ()
    providers: Sequence[str] = ()
    tests: str | None = None
    assertions: str | None = None
    model_outputs: str | None = None

    def __bool__(self) -> bool:
        return bool(self.prompts or self.providers or self.tests or self.assertions or self.model_outputs)

    @property
    def complete(self) -> bool:
        """Whether these stand for a whole eval without a config file (`-p` with `-r`, or the
        standalone mode, whose two files `graded_outputs` requires together)."""
        return bool((self.prompts and self.providers) or self.assertions or self.model_outputs)


class Reader(Protocol):
    """What `apply_overrides` needs of the config loader: how it reads prompts, providers and tests."""

    sources: SourceMap

    @property
    def prompt_reader(self) -> PromptReader: ...

    def providers(self, raw: Any, base: Path, holder: dict[str, Any]) -> list[dict[str, Any]]: ...

    def tests(self, raw: Any, base: Path, holder: Any, key: Any, path: str) -> list[Any]: ...


def apply_overrides(merged: dict[str, Any], overrides: ConfigOverrides, reader: Reader, cwd: Path) -> None:
    """The command line's prompts, providers and tests in place of the config's (see the module)."""
    if overrides.assertions or overrides.model_outputs:
        standalone = graded_outputs(overrides, cwd, lambda path: files.load_structured(path, reader.sources, None, "--assertions"))
        merged["prompts"] = reader.prompt_reader.prompts(standalone["prompts"], cwd, standalone)
        merged["providers"] = reader.providers(standalone["providers"], cwd, standalone)
        merged["tests"] = standalone["tests"]
        return
    given: dict[str, Any] = {"prompts": list(overrides.prompts), "providers": cli_providers(overrides.providers, merged.get("providers")), "tests": overrides.tests}
    if overrides.prompts:
        merged["prompts"] = reader.prompt_reader.prompts(given["prompts"], cwd, given)
    if overrides.providers:
        merged["providers"] = reader.providers(given["providers"], cwd, given)
    if overrides.tests:
        merged["tests"] = reader.tests(overrides.tests, cwd, given, "tests", "tests")


def graded_outputs(overrides: ConfigOverrides, cwd: Path, load: Callable[[Path], Any]) -> dict[str, Any]:
    """The prompts, providers and tests of `--assertions` with `--model-outputs` (see the module)."""
    if not overrides.assertions or not overrides.model_outputs:
        raise UsageError("--assertions and --model-outputs go together: the assertions grade the recorded outputs")
    assertions = load(_file(overrides.assertions, cwd))
    if not isinstance(assertions, list) or not all(isinstance(item, dict) for item in assertions):
        raise ConfigError("expected a list of assertions", file=overrides.assertions, line=1)
    outputs = load(_file(overrides.model_outputs, cwd))
    if not isinstance(outputs, list):
        raise ConfigError("expected a list of outputs (strings, or {output, tags})", file=overrides.model_outputs, line=1)
    tests = []
    for index, item in enumerate(outputs):
        if isinstance(item, str):
            variables: dict[str, Any] = {"output": item}
        elif isinstance(item, dict) and "output" in item:
            tags = item.get("tags")
            variables = {"output": item["output"], **({"tags": ", ".join(map(str, tags))} if isinstance(tags, list) else {})}
        else:
            raise ConfigError(f"[{index}]: expected a string or {{output, tags}}, got {item!r}", file=overrides.model_outputs, line=1)
        tests.append({"vars": variables, "assert": [dict(assertion) for assertion in assertions]})
    return {"prompts": ["{{output}}"], "providers": ["echo"], "tests": tests}


def _file(name: str, cwd: Path) -> Path:
    path = files.resolve(name, cwd)
    if not path.is_file():
        raise ConfigError(files.not_a_file(path))
    return path


def cli_providers(names: Sequence[str], configured: Any) -> list[Any]:
    """The providers `names` select: each the config's entry it names, else a new one by that id."""
    listed = [entry for entry in configured if isinstance(entry, dict)] if isinstance(configured, list) else []
    chosen: list[Any] = []
    for name in names:
        found = next((entry for entry in listed if entry.get("id") == name), None)
        found = found or next((entry for entry in listed if entry.get("label") == name), None)
        found = found or next((entry for entry in listed if str(entry.get("id", "")).endswith(":" + name)), None)
        chosen.append(found if found is not None else name)
    return chosen
