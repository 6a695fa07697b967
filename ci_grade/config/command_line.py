"""The config's `commandLineOptions` (defaults for promptfoo's flags), read once and checked.

promptfoo accepts the key as a loose mapping; ci-grade reads the keys it acts on into
`CommandLineDefaults` when the config loads, so a wrong value exits 2 naming its file, line and
key before anything runs, whether or not a flag overrides it. Keys it does not read are listed in
`preflight` (a warning for those that would change what runs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ci_grade.errors import ConfigError, Place, UsageError

Locate = Callable[[str], Place | None]
"""Where a `commandLineOptions` key was written (None: not from a file)."""


@dataclass(frozen=True)
class CommandLineDefaults:
    """The `commandLineOptions` keys ci-grade reads, typed; None where the config sets nothing."""

    max_concurrency: int | None = None
    repeat: int | None = None
    delay: int | None = None
    grader: str | None = None
    description: str | None = None
    cache: bool | None = None
    progress_bar: bool | None = None
    output: list[str] = field(default_factory=list)
    vars: dict[str, str] = field(default_factory=dict)
    prompt_prefix: str | None = None
    prompt_suffix: str | None = None
    filter_pattern: str | None = None
    filter_first_n: int | None = None
    filter_metadata: tuple[tuple[str, str], ...] = ()
    filter_range: str | None = None
    filter_sample: int | None = None
    filter_sample_seed: int | None = None
    filter_providers: str | None = None
    filter_prompts: str | None = None
    filter_failing: str | None = None
    filter_failing_only: str | None = None
    filter_errors_only: str | None = None


def read(options: Mapping[str, Any], locate: Locate) -> CommandLineDefaults:
    """`commandLineOptions` (a mapping; `locate` says where each key was written) as typed defaults."""
    return _defaults(_Reader(options, locate))


def _defaults(reader: _Reader) -> CommandLineDefaults:
    filter_range = reader.text("filterRange")
    if filter_range is not None:
        try:
            parse_range(filter_range)
        except UsageError as exc:
            raise reader.error("filterRange", str(exc)) from None
    return CommandLineDefaults(
        max_concurrency=reader.whole("maxConcurrency", 1),
        repeat=reader.whole("repeat", 1),
        delay=reader.whole("delay", 0),
        grader=reader.text("grader"),
        description=reader.text("description"),
        cache=reader.flag("cache"),
        progress_bar=reader.flag("progressBar"),
        output=reader.texts("output"),
        vars=reader.variables("var"),
        prompt_prefix=reader.text("promptPrefix"),
        prompt_suffix=reader.text("promptSuffix"),
        filter_pattern=reader.text("filterPattern"),
        filter_first_n=reader.whole("filterFirstN", 1),
        filter_metadata=reader.pairs("filterMetadata"),
        filter_range=filter_range,
        filter_sample=reader.whole("filterSample", 1),
        filter_sample_seed=reader.whole("filterSampleSeed", None),
        filter_providers=reader.text("filterProviders") or reader.text("filterTargets"),
        filter_prompts=reader.text("filterPrompts"),
        filter_failing=reader.text("filterFailing"),
        filter_failing_only=reader.text("filterFailingOnly"),
        filter_errors_only=reader.text("filterErrorsOnly"),
    )


def parse_range(text: str) -> tuple[int, int | None]:
    """`--filter-range START:END` as promptfoo reads it: digits only, one colon, either bound may
    be left out; zero-based, END excluded."""
    start_text, colon, end_text = text.strip().partition(":")
    start_text, end_text = start_text.strip(), end_text.strip()
    if not colon or ":" in end_text or not (start_text or end_text) or not all(part.isascii() and (part.isdigit() or not part) for part in (start_text, end_text)):
        raise UsageError(f"--filter-range must be specified in start:end format using zero-based indices, got: {text}")
    start, end = int(start_text or 0), int(end_text) if end_text else None
    if end is not None and start > end:
        raise UsageError(f"--filter-range start must be less than or equal to end, got: {text}")
    return start, end


class _Reader:
    """Reads and checks the keys of `options`, noting each key it was asked for (`KEYS_READ`)."""

    def __init__(self, options: Mapping[str, Any], locate: Locate):
        self.options = options
        self.locate = locate
        self.asked: set[str] = set()

    def value(self, key: str) -> Any:
        self.asked.add(key)
        return self.options.get(key)

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError.at(message, self.locate(key), f"commandLineOptions.{key}")

    def text(self, key: str) -> str | None:
        value = self.value(key)
        if value is not None and not isinstance(value, str):
            raise self.error(key, f"must be text, got {value!r}")
        return value or None

    def texts(self, key: str) -> list[str]:
        value = self.value(key)
        listed = [value] if isinstance(value, str) else value if value is not None else []
        if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
            raise self.error(key, f"must be text or a list of texts, got {value!r}")
        return [item for item in listed if item]

    def flag(self, key: str) -> bool | None:
        value = self.value(key)
        if value is not None and not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}")
        return value

    def whole(self, key: str, least: int | None) -> int | None:
        value = self.value(key)
        if value is None:
            return None
        try:
            number = int(value) if not isinstance(value, bool) and float(value) == int(value) else None
        except (TypeError, ValueError, OverflowError):
            number = None
        if number is None or (least is not None and number < least):
            bound = f" of at least {least}" if least is not None else ""
            raise self.error(key, f"must be a whole number{bound}, got {value!r}")
        return number

    def pairs(self, key: str) -> tuple[tuple[str, str], ...]:
        value = self.value(key)
        listed = value if isinstance(value, list) else [value] if value is not None else []
        found = []
        for item in listed:
            name, sep, wanted = str(item).partition("=")
            if not isinstance(item, str) or not sep or not name or not wanted:
                raise self.error(key, f"must be key=value, got {item!r}")
            found.append((name, wanted))
        return tuple(found)

    def variables(self, key: str) -> dict[str, str]:
        from ci_grade.templating.nunjucks import js_string

        value = self.value(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, f"must be a mapping of variable names to values, got {value!r}")
        return {str(name): item if isinstance(item, str) else js_string(item) for name, item in value.items()}


def _keys_read() -> frozenset[str]:
    reader = _Reader({}, lambda key: None)
    _defaults(reader)
    return frozenset(reader.asked)


KEYS_READ = _keys_read()
"""The keys `read` takes (the flag, when given, wins over each): those it asks for."""
