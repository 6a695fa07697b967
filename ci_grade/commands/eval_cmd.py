"""`ci-grade eval`: run a promptfoo config, grade everything, write result files."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by `eval` and anything that runs an evaluation."""
    parser.add_argument("-c", "--config", action="append", default=[], metavar="CONFIG", help="config file or glob (repeatable; merged like promptfoo). Default: ./promptfooconfig.yaml")
    parser.add_argument("-o", "--output", action="append", default=[], metavar="PATH", help="write results; format by extension: .json .jsonl .junit.xml .xml .md .csv .yaml (repeatable)")
    parser.add_argument("--grader", metavar="PROVIDER", help="default grader for model-graded assertions (replaces defaultTest.options.provider)")
    parser.add_argument("-j", "--max-concurrency", type=int, metavar="N", help="tests run at once (default 16, or evaluateOptions.maxConcurrency)")
    parser.add_argument("--repeat", type=int, metavar="N", help="run every test N times (scores become means with a spread)")
    parser.add_argument("--filter-pattern", metavar="REGEX", help="only tests whose description matches")
    parser.add_argument("-n", "--filter-first-n", type=int, metavar="N", help="only the first N tests")
    parser.add_argument("--filter-metadata", action="append", type=key_value, default=[], metavar="KEY=VALUE", help="only tests whose metadata matches (repeatable, all must match)")
    parser.add_argument("--var", action="append", type=key_value, default=[], metavar="KEY=VALUE", help="set a variable for every test (repeatable)")
    parser.add_argument("--env-file", action="append", default=[], metavar="FILE", help="load environment variables from a .env file (repeatable)")
    parser.add_argument("--cache-dir", metavar="DIR", help="cache model replies on disk in DIR (reused across runs; off with --repeat > 1). Also CI_GRADE_CACHE_DIR")
    parser.add_argument("--no-progress", action="store_true", help="do not report progress on stderr")
    parser.add_argument("--verbose", action="store_true", help="show tracebacks for internal errors")


def eval_options(args: argparse.Namespace) -> Any:
    from ci_grade.errors import UsageError
    from ci_grade.evaluate import EvalOptions

    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise UsageError("--max-concurrency must be at least 1")
    if args.repeat is not None and args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    return EvalOptions(
        configs=args.config,
        outputs=args.output,
        grader=args.grader,
        concurrency=args.max_concurrency,
        repeat=args.repeat,
        filter_pattern=args.filter_pattern,
        filter_first_n=args.filter_first_n,
        filter_metadata=dict(args.filter_metadata),
        vars=dict(args.var),
        env_files=args.env_file,
        progress=not args.no_progress,
        cache_dir=args.cache_dir,
    )


def add_parser(subparsers: Any) -> None:
    from ci_grade.commands.compare_cmd import add_gate_arguments

    parser = subparsers.add_parser("eval", help="run and grade a promptfoo config", description=__doc__)
    add_eval_arguments(parser)
    add_gate_arguments(parser)
    parser.add_argument("--save-baseline", metavar="PATH", help="also save this run as a baseline file")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Run, compare with `--baseline` (read first: a bad one exits 2 before any call), write the
    results (`.md` is the gate report when `--baseline` is given), and exit per the gate."""
    from pathlib import Path

    from ci_grade.commands.compare_cmd import gate_policy, read_baseline, write_reports
    from ci_grade.errors import ExitCode
    from ci_grade.evaluate import evaluate
    from ci_grade.gate.baseline import baseline_from_run
    from ci_grade.gate.compare import compare
    from ci_grade.gate.store import save_baseline
    from ci_grade.report import console, outputs
    from ci_grade.report.gate_summary import terminal_summary

    policy = gate_policy(args)
    baseline = read_baseline(args.baseline, Path.cwd())
    outcome = evaluate(eval_options(args))
    for warning in outcome.run.warnings:
        sys.stderr.write(f"warning: {outcome.redactor.text(warning)}\n")
    comparison = compare(outcome.run, baseline, policy)
    if args.baseline:
        written = write_reports(outcome.output_paths, outcome.run, comparison, outcome.redactor, args.title, config=outcome.config_for_output)
    else:
        written = outputs.write_outputs(outcome.output_paths, outcome.run, outcome.config_for_output, outcome.redactor)
    if args.save_baseline:
        save_baseline(baseline_from_run(outcome.run), Path(args.save_baseline), redactor=outcome.redactor)
        written.append(Path(args.save_baseline))
    print(console.summary(outcome.run, outcome.redactor))
    print(terminal_summary(comparison, outcome.redactor))
    for path in written:
        print(f"  wrote {path}")
    return ExitCode.GATE_FAILED if comparison.gate_failed else ExitCode.OK
