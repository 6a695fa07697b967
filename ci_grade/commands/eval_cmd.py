"""`ci-grade eval`: run a promptfoo config, grade everything, write result files."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any


def add_parser(subparsers: Any) -> None:
    from ci_grade.commands.shared import add_eval_arguments, add_gate_arguments

    parser = subparsers.add_parser("eval", help="run and grade a promptfoo config", description=__doc__)
    add_eval_arguments(parser)
    add_gate_arguments(parser)
    parser.add_argument("--save-baseline", metavar="PATH", help="also save this run as a baseline file")
    parser.add_argument("--confirm", type=int, default=0, metavar="N", help="rerun each newly failing sampled test N more times and judge it on those fresh runs (confirmed or flaky)")
    parser.set_defaults(handler=main)


@contextlib.contextmanager
def _log_group(title: str) -> Iterator[None]:
    """In GitHub Actions, the run's log (progress, user code's prints) as one collapsible group."""
    import os

    if os.environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    from ci_grade.github.workflow_commands import WorkflowCommands

    with WorkflowCommands(stream=sys.stderr).group(title):
        yield


def main(args: argparse.Namespace) -> int:
    """Run, compare with `--baseline` (read first: a bad one exits 2 before any call), write the
    results (`.md` is the gate report when `--baseline` is given), and exit per the gate."""
    from pathlib import Path

    from ci_grade import redact
    from ci_grade.commands.shared import eval_options, gate_policy, judge, read_baseline
    from ci_grade.errors import ExitCode, UsageError
    from ci_grade.evaluate import evaluate
    from ci_grade.gate.baseline import baseline_from_run
    from ci_grade.gate.store import save_baseline
    from ci_grade.report import console, outputs
    from ci_grade.report.gate_summary import terminal_summary
    from ci_grade.report.outputs import write_reports

    policy = gate_policy(args)
    baseline = read_baseline(args.baseline, Path.cwd())
    if args.confirm < 0:
        raise UsageError("--confirm must be 0 or more")
    options = eval_options(args)
    with _log_group("ci-grade: evaluate"):
        outcome = evaluate(options)
    for warning in outcome.run.warnings:
        sys.stderr.write(f"warning: {redact.text(warning)}\n")
    comparison = judge(outcome, options, baseline, policy, args.confirm)
    if args.baseline:
        written = write_reports(outcome.output_paths, outcome.run, comparison, args.title, config=outcome.config_for_output)
    else:
        written = outputs.write_outputs(outcome.output_paths, outcome.run, outcome.config_for_output)
    if args.save_baseline:
        save_baseline(baseline_from_run(outcome.run), Path(args.save_baseline))
        written.append(Path(args.save_baseline))
    print(console.summary(outcome.run))
    print(terminal_summary(comparison))
    for path in written:
        print(f"  wrote {path}")
    return ExitCode.GATE_FAILED if comparison.gate_failed else ExitCode.OK
