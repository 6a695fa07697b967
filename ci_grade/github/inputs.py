"""Action inputs from `INPUT_*` variables, validated here (the runner enforces nothing).

The runner upper-cases an input's name and keeps its hyphens (`INPUT_FAIL-ON`); some runners
and wrappers use underscores (`INPUT_FAIL_ON`). Both are read; the hyphen form wins when both
are set. An empty value means "use the default", as it does for inputs the workflow leaves out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ci_grade.errors import UsageError
from ci_grade.plan.shard import Shard, parse_shard

FailOn = Literal["failures", "regressions", "never"]

# Defaults, mirrored in action.yml (a test keeps the two in step).
DEFAULTS: dict[str, str] = {
    "config": "promptfooconfig.yaml",
    "baseline": "",
    "fail-on": "regressions",
    "max-score-drop": "0.1",
    "max-metric-drop": "0.02",
    "min-pass-rate": "",
    "max-errors": "",
    "alpha": "0.05",
    "cluster-key": "",
    "confirm": "0",
    "grader": "",
    "max-concurrency": "",
    "repeat": "",
    "comment": "on",
    "comment-title": "ci-grade",
    "comment-author": "",
    "pull-request-number": "",
    "working-directory": ".",
    "junit-path": "ci-grade-results/results.junit.xml",
    "results-path": "ci-grade-results/results.json",
    "cache-dir": "",
    "shard": "",
    "merge": "",
    "retry-errors": "",
    "max-duration": "",
    "max-cost": "",
    "max-cost-increase": "",
    "dry-run": "off",
    "max-output-chars": "100000",
    "github-token": "",
    "cache": "on",
}

SECRET_INPUTS = ("github-token",)
"""Inputs that hold secrets: masked in the log and in everything ci-grade writes."""

_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}


def raw_input(env: Mapping[str, str], name: str) -> str:
    """The input's value (trimmed) from either spelling, else its default."""
    upper = name.upper().replace(" ", "_")
    for key in (f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return DEFAULTS.get(name, "")


@dataclass
class ActionInputs:
    """Every input, typed and checked."""

    config: list[str]
    baseline: str | None
    fail_on: FailOn
    max_score_drop: float
    max_metric_drop: float
    min_pass_rate: float | None
    max_errors: int | None
    alpha: float
    cluster_key: str | None
    confirm: int
    grader: str | None
    max_concurrency: int | None
    repeat: int | None
    comment: bool
    comment_title: str
    comment_author: str | None
    pull_request_number: int | None
    working_directory: str
    junit_path: str
    results_path: str
    cache_dir: str | None
    shard: Shard | None
    merge: list[str]
    retry_errors: str | None
    max_duration: float | None
    max_output_chars: int
    github_token: str | None = field(repr=False)
    cache: bool = True
    max_cost: float | None = None
    max_cost_increase: float | None = None
    dry_run: bool = False

    def secrets(self) -> list[str]:
        """The values of the secret inputs (and of GITHUB_TOKEN when it stands in for `github-token`)."""
        return [self.github_token] if self.github_token else []


def _number(name: str, text: str, *, low: float = 0.0, high: float | None = None) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"input `{name}` must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        raise UsageError(f"input `{name}` must be {bounds}, got {text!r}")
    return value


def _whole(name: str, text: str, *, low: int) -> int:
    if not re.fullmatch(r"[+]?\d+", text):
        raise UsageError(f"input `{name}` must be a whole number, got {text!r}")
    value = int(text)
    if value < low:
        raise UsageError(f"input `{name}` must be at least {low}, got {text!r}")
    return value


def _alpha(text: str) -> float:
    value = _number("alpha", text, high=0.5)
    if value <= 0:
        raise UsageError(f"input `alpha` must be above 0 and at most 0.5, got {text!r}")
    return value


def _rate(name: str, text: str) -> float:
    """A fraction (0.8) or a percentage (80%)."""
    if text.endswith("%"):
        return _number(name, text[:-1].strip(), high=100.0) / 100
    return _number(name, text, high=1.0)


def _switch(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise UsageError(f"input `{name}` must be on or off (true/false), got {text!r}")


def _path(name: str, text: str, suffixes: tuple[str, ...]) -> str:
    if not text.lower().endswith(suffixes):
        raise UsageError(f"input `{name}` must end with {' or '.join(suffixes)}, got {text!r}")
    return text


def _duration(name: str, text: str) -> float:
    from ci_grade.run.stop import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"input `{name}`: {exc}") from None


def _money(name: str, text: str) -> float:
    """US dollars above zero (`5`, `0.50`, `$2`)."""
    value = _number(name, text.removeprefix("$").strip())
    if value <= 0:
        raise UsageError(f"input `{name}` must be an amount in US dollars above zero, got {text!r}")
    return value


def _increase(name: str, text: str) -> float:
    """A tolerated rise: a percentage (20%) or a fraction (0.2)."""
    return _number(name, text[:-1].strip()) / 100 if text.endswith("%") else _number(name, text)


def split_list(text: str) -> list[str]:
    """Newline- or comma-separated values, trimmed, empties dropped."""
    return [part.strip() for part in re.split(r"[\n,]", text) if part.strip()]


def read_inputs(env: Mapping[str, str]) -> ActionInputs:
    """Parse and validate every input; a bad value is a usage error (exit 2) naming the input."""

    def get(name: str) -> str:
        return raw_input(env, name)

    def optional(name: str) -> str | None:
        return get(name) or None

    fail_on = get("fail-on").lower()
    if fail_on not in ("failures", "regressions", "never"):
        raise UsageError(f"input `fail-on` must be one of failures, regressions, never; got {get('fail-on')!r}")
    configs = split_list(get("config"))
    if not configs:
        raise UsageError("input `config` names no config file")
    title = " ".join(get("comment-title").split())
    if not title:
        raise UsageError("input `comment-title` must not be empty")
    shard = parse_shard(text, "input `shard`") if (text := get("shard")) else None
    merge = split_list(get("merge"))
    if merge and (shard or get("retry-errors")):
        raise UsageError("input `merge` merges shard results: it cannot be combined with `shard` or `retry-errors`")
    return ActionInputs(
        config=configs,
        baseline=optional("baseline"),
        fail_on=fail_on,  # type: ignore[arg-type]
        max_score_drop=_number("max-score-drop", get("max-score-drop"), high=1.0),
        max_metric_drop=_number("max-metric-drop", get("max-metric-drop"), high=1.0),
        min_pass_rate=_rate("min-pass-rate", text) if (text := get("min-pass-rate")) else None,
        max_errors=_whole("max-errors", text, low=0) if (text := get("max-errors")) else None,
        alpha=_alpha(get("alpha")),
        cluster_key=optional("cluster-key"),
        confirm=_whole("confirm", get("confirm"), low=0),
        grader=optional("grader"),
        max_concurrency=_whole("max-concurrency", text, low=1) if (text := get("max-concurrency")) else None,
        repeat=_whole("repeat", text, low=1) if (text := get("repeat")) else None,
        comment=_switch("comment", get("comment")),
        comment_title=title,
        comment_author=optional("comment-author"),
        pull_request_number=_whole("pull-request-number", text, low=1) if (text := get("pull-request-number")) else None,
        working_directory=get("working-directory"),
        junit_path=_path("junit-path", get("junit-path"), (".xml",)),
        results_path=_path("results-path", get("results-path"), (".json",)),
        cache_dir=optional("cache-dir"),
        shard=shard,
        merge=merge,
        retry_errors=optional("retry-errors"),
        max_duration=_duration("max-duration", text) if (text := get("max-duration")) else None,
        max_output_chars=_whole("max-output-chars", get("max-output-chars"), low=0),
        github_token=optional("github-token") or (env.get("GITHUB_TOKEN") or "").strip() or None,
        cache=_switch("cache", get("cache")),
        max_cost=_money("max-cost", text) if (text := get("max-cost")) else None,
        max_cost_increase=_increase("max-cost-increase", text) if (text := get("max-cost-increase")) else None,
        dry_run=_switch("dry-run", get("dry-run")),
    )
