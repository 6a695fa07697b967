"""`ci-grade compare`: judge a results file against a baseline, write the reports, gate.

Also holds what `eval` shares with it: the gate flags, loading a baseline source, and writing
the reports of a comparison.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

COMPARE_OUTPUTS = (".md", ".junit.xml", ".xml", ".json")


def _fraction(text: str) -> float:
    """0..1, or a percentage such as 80%."""
    value = text.strip()
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1 (or a percentage like 80%), got {text!r}")
    return number


def _drop(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"expected a score drop from 0 to 1, got {text!r}")
    return number


def _count(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text!r}")
    return number


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """The baseline source, the gate's options and the report title (shared by eval and compare)."""
    group = parser.add_argument_group("baseline and gate")
    group.add_argument("--baseline", metavar="SOURCE", help="baseline to compare with: a baseline file, a results JSON, or git:REF:PATH (missing: thresholds only)")
    group.add_argument("--fail-on", choices=("failures", "regressions", "never"), default="regressions", help="what fails the gate (default regressions: failing tests, errors and regressions)")
    group.add_argument("--max-score-drop", type=_drop, default=0.1, metavar="X", help="largest tolerated score drop per test (default 0.1)")
    group.add_argument("--max-metric-drop", type=_drop, default=0.02, metavar="X", help="largest tolerated drop of a named metric or the mean score (default 0.02)")
    group.add_argument("--min-pass-rate", type=_fraction, metavar="X", help="pass rate (0-1 or N%%) needed instead of every test passing")
    group.add_argument("--max-errors", type=_count, metavar="N", help="errored rows tolerated (default 0)")
    group.add_argument("--title", default="ci-grade", help="heading of the Markdown report (default ci-grade)")


def gate_policy(args: argparse.Namespace) -> Any:
    from ci_grade.gate.models import GatePolicy

    return GatePolicy(
        fail_on=args.fail_on,
        max_score_drop=args.max_score_drop,
        max_metric_drop=args.max_metric_drop,
        min_pass_rate=args.min_pass_rate,
        max_errors=args.max_errors,
    )


def read_baseline(source: str | None, cwd: Path) -> Any:
    """The baseline, or None (with a warning when a given source does not exist)."""
    if not source:
        return None
    from ci_grade.gate.store import load_baseline

    baseline = load_baseline(source, cwd)
    if baseline is None:
        sys.stderr.write(f"warning: no baseline at {source}; the gate judges thresholds only\n")
    return baseline


def write_reports(paths: list[str], run: Any, comparison: Any, redactor: Any, title: str, *, config: dict[str, Any] | None = None, json_is_comparison: bool = False) -> list[Path]:
    """`.md` gets the comparison report, `.json` the comparison itself when `json_is_comparison`;
    every other format is a results file, its JUnit marking regressions."""
    from ci_grade.atomic import write_atomic
    from ci_grade.report import outputs
    from ci_grade.report.markdown import render_markdown

    written = []
    notes = comparison.regression_notes()
    for path in paths:
        target = Path(path)
        if target.name.lower().endswith(".md"):
            text = render_markdown(run, comparison, title=title, max_chars=1_000_000, redactor=redactor, max_bytes=1_000_000)
        elif json_is_comparison and target.name.lower().endswith(".json"):
            text = redactor.text(comparison.model_dump_json(indent=2)) + "\n"
        else:
            text = outputs.render(target, run, config, redactor, notes)
        write_atomic(target, text)
        written.append(target)
    return written


def load_results(path: str) -> Any:
    """A results JSON (ci-grade's or promptfoo's) as an EvalRun; exit 2 when unreadable."""
    import json

    from pydantic import ValidationError

    from ci_grade.errors import ConfigError, UsageError
    from ci_grade.results.promptfoo import from_promptfoo

    file = Path(path)
    if not file.is_file():
        raise UsageError(f"results file {path} does not exist")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read results: {exc}", file=path) from None
    try:
        return from_promptfoo(data if isinstance(data, dict) else {})
    except (ValueError, TypeError, ValidationError) as exc:
        raise ConfigError(f"not a results file: {str(exc).splitlines()[0]}", file=path) from None


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare a results file with a baseline and gate",
        description="Judge a results file against a baseline, write the reports, and exit per the gate.",
    )
    parser.add_argument("results", metavar="RESULTS", help="results JSON from `ci-grade eval -o` (or promptfoo's own)")
    parser.add_argument("-o", "--output", action="append", default=[], metavar="PATH", help="write .md (report), .junit.xml/.xml (JUnit with regressions), .json (the comparison); repeatable")
    add_gate_arguments(parser)
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from ci_grade.errors import ExitCode, UsageError
    from ci_grade.gate.compare import compare
    from ci_grade.redact import Redactor
    from ci_grade.report.gate_summary import terminal_summary

    for path in args.output:
        if not path.lower().endswith(COMPARE_OUTPUTS):
            raise UsageError(f"cannot write {path}: compare writes {', '.join(COMPARE_OUTPUTS)}")
    policy = gate_policy(args)
    run = load_results(args.results)
    comparison = compare(run, read_baseline(args.baseline, Path.cwd()), policy)
    redactor = Redactor.from_env()
    written = write_reports(args.output, run, comparison, redactor, args.title, json_is_comparison=True)
    print(terminal_summary(comparison, redactor))
    for path in written:
        print(f"  wrote {path}")
    return ExitCode.GATE_FAILED if comparison.gate_failed else ExitCode.OK
