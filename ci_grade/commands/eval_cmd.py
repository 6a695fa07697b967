"""`ci-grade eval`: run a promptfoo config, grade everything, write result files."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ci_grade.base_run import BaseCommit
    from ci_grade.evaluate import EvalOptions, EvalOutcome


def add_parser(subparsers: Any) -> None:
    from ci_grade.commands.shared import add_eval_arguments, add_gate_arguments, add_history_argument

    parser = subparsers.add_parser("eval", help="run and grade a promptfoo config", description=__doc__)
    add_eval_arguments(parser)
    add_gate_arguments(parser)
    parser.add_argument("--save-baseline", metavar="PATH", help="also save this run as a baseline file (carrying the history of the one already there)")
    add_history_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="call nothing: print the plan's rows, provider and grader calls (and how many the response cache holds), estimated tokens, cost per provider and time (reply sizes and latencies from --baseline when given)")
    parser.add_argument("--confirm", type=int, default=0, metavar="N", help="rerun each newly failing sampled test N more times and judge it on those fresh runs (confirmed or flaky)")
    scale = parser.add_argument_group("shards and retries")
    scale.add_argument("--shard", metavar="K/N", help="run only shard K of N (a balanced part of the plan, whole tests); write its results, no gate: `ci-grade merge` decides")
    scale.add_argument("--retry-errors", metavar="RESULTS", help="re-run only the rows that errored in RESULTS (an earlier results JSON of this config) and write complete results")
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
    results (`.md` is the gate report when `--baseline` is given), and exit per the gate (130 or
    143 after SIGINT or SIGTERM, once everything is written)."""
    from ci_grade.commands.shared import eval_options
    from ci_grade.errors import Interrupted, UsageError

    options = eval_options(args)
    if args.confirm < 0:
        raise UsageError("--confirm must be 0 or more")
    if args.shard:
        from ci_grade.plan.shard import parse_shard

        options.shard = parse_shard(args.shard)
        if args.baseline or args.save_baseline:
            raise UsageError("--shard writes a part of the results: give --baseline and --save-baseline to `ci-grade merge`")
        if not any(path.lower().endswith(".json") for path in args.output):
            raise UsageError("a shard's results are for `ci-grade merge`: write them to a .json file (-o shard.json)")
    options.retry_errors = args.retry_errors
    options.dry_run = args.dry_run
    with options.stop.catching_signals():
        code = _evaluate(args, options)
    if options.stop.signum is not None:
        raise Interrupted(options.stop.signum)
    return code


def _evaluate(args: argparse.Namespace, options: EvalOptions) -> int:
    from pathlib import Path

    from ci_grade import redact
    from ci_grade.commands.shared import gate_policy, judge, observed, read_baseline
    from ci_grade.errors import ExitCode, InfrastructureError
    from ci_grade.evaluate import evaluate
    from ci_grade.gate.baseline import baseline_from_run
    from ci_grade.gate.store import save_baseline
    from ci_grade.report import console, outputs
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import write_files
    from ci_grade.report.gate_summary import terminal_summary
    from ci_grade.safe_text import terminal

    policy = gate_policy(args)
    base = _base_commit(args.baseline)
    baseline, missing = (None, None) if base else read_baseline(args.baseline, Path.cwd())
    if args.save_baseline:
        outputs.check_writable(args.save_baseline)
    if baseline is not None:
        options.observed = observed(baseline)
    with _log_group("ci-grade: evaluate"):
        outcome = evaluate(options)
    for warning in outcome.run.warnings:
        sys.stderr.write(f"warning: {terminal(redact.text(warning))}\n")
    if outcome.spending is not None:
        from ci_grade.report import spending

        print(spending.text(outcome.spending))
        return ExitCode.OK
    if outcome.rerun is not None:
        sys.stderr.write(f"retry: ran {outcome.rerun} of {len(outcome.run.results)} rows again, kept the others from {args.retry_errors}\n")
    problems: list[str] = []  # a file that cannot be written is a warning: the verdict stands
    cap = outputs.DEFAULT_MAX_OUTPUT_CHARS if args.max_output_chars is None else args.max_output_chars
    if outcome.run.info.shard:
        return _shard_done(outcome, cap)
    if base is not None:
        from ci_grade.base_run import measure

        with _log_group("ci-grade: evaluate the base"):
            baseline, notes = measure(base, options)
        problems += notes
    part = Part(outcome.run.info.config_name, outcome.run, None, outcome.config_for_output)
    try:
        part.comparison = comparison = judge(outcome, options, baseline, policy, 0 if options.stop.requested else args.confirm)
    except Exception:  # the run's results are written whatever becomes of the comparison
        write_files(outcome.output_paths, Document([part], title=args.title, max_output_chars=cap), problems=problems)
        raise
    comparison.baseline_missing = missing
    doc = Document([part], title=args.title, gate_report=bool(args.baseline), max_output_chars=cap)
    written = write_files(outcome.output_paths, doc, problems=problems)
    if args.save_baseline and options.stop.requested:
        problems.append(f"the run was stopped: no baseline saved to {args.save_baseline}")
    elif args.save_baseline:
        try:
            save_baseline(baseline_from_run(outcome.run), Path(args.save_baseline), args.history)
            written.append(Path(args.save_baseline))
        except InfrastructureError as exc:  # the disk filled during the run
            problems.append(str(exc))
    print(console.summary(outcome.run))
    print(terminal_summary(comparison))
    for path in written:
        print(f"  wrote {path}")
    for problem in problems:
        sys.stderr.write(f"warning: {redact.text(problem)}\n")
    return ExitCode.GATE_FAILED if comparison.gate_failed else ExitCode.OK


def _base_commit(source: str | None) -> BaseCommit | None:
    """For `--baseline run:REF` (or `run`, the base of the pull request in GITHUB_EVENT_PATH): the
    commit to evaluate, found before anything runs."""
    import os
    from pathlib import Path

    from ci_grade.gate.store import names_a_run

    if not names_a_run(source):
        return None
    assert source is not None
    from ci_grade.base_run import resolve
    from ci_grade.github.event import ActionEvent

    return resolve(source, Path.cwd(), ActionEvent.from_env(os.environ).payload)


def _shard_done(outcome: EvalOutcome, max_output_chars: int) -> int:
    """A shard writes its results and exits 0 whatever its tests did: the merge gives the verdict."""
    from ci_grade.errors import ExitCode
    from ci_grade.report import console
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import write_files

    run = outcome.run
    shard = run.info.shard
    assert shard is not None
    written = write_files(outcome.output_paths, Document([Part(run.info.config_name, run, None, outcome.config_for_output)], max_output_chars=max_output_chars))
    print(console.summary(run))
    print(f"shard {shard.index}/{shard.count}: {len(run.results)} of {shard.rows} rows; merge the shards with `ci-grade merge` for the verdict")
    for path in written:
        print(f"  wrote {path}")
    return ExitCode.OK
