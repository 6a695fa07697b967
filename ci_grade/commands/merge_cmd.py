"""`ci-grade merge`: pool shard results (`eval --shard K/N`) into one run, compare, write, gate.

The merged results carry exactly the verdicts of one unsharded run; the baseline and gate flags
then apply as in `eval`, with the same exit codes. A missing or duplicated shard, or shards of
different configs, exit 2 naming them. Results of several configs (a monorepo) are merged each
on its own and reported together: a section per config, one verdict.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(subparsers: Any) -> None:
    from ci_grade.commands.shared import add_gate_arguments, add_history_argument

    parser = subparsers.add_parser("merge", help="merge shard results into one run and gate", description=__doc__)
    parser.add_argument("results", nargs="+", metavar="SHARD.json", help="results files of `eval --shard K/N` (paths or quoted globs); every shard of each config")
    parser.add_argument(
        "-o", "--output", action="append", default=[], metavar="PATH",
        help="write the merged results; format by extension as in eval (.md: the gate report, .junit.xml: JUnit). "
        "With several configs, other formats are written once per config ({config} in PATH, else added before the extension)",
    )
    add_gate_arguments(parser)
    parser.add_argument("--save-baseline", metavar="PATH", help="also save the merged results as a baseline file (one per config, as -o; carrying the history of the one already there)")
    add_history_argument(parser)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks for internal errors")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ci_grade import merging, redact
    from ci_grade.commands.shared import gate_policy
    from ci_grade.errors import ExitCode
    from ci_grade.report import console
    from ci_grade.report.gate_summary import terminal_summary
    from ci_grade.report.sections import gate_failed

    merging.check_outputs(args.output)
    merged = merging.merge(args.results, Path.cwd(), args.baseline, gate_policy(args))
    for warning in [*merged.warnings, *(w for part in merged.pooled for w in part.run.warnings)]:
        sys.stderr.write(f"warning: {redact.text(warning)}\n")
    written = merging.write_outputs(args.output, merged, args.title)
    if args.save_baseline:
        written += merging.save_baselines(args.save_baseline, merged, args.history)
    for part, section in zip(merged.pooled, merged.sections, strict=True):
        if merged.several:
            print(f"== {redact.text(part.name)}")
        print(f"merged {len(part.paths)} file(s): {', '.join(part.paths)}")
        print(console.summary(part.run))
        print(terminal_summary(section.comparison))
    for path in written:
        print(f"  wrote {path}")
    return ExitCode.GATE_FAILED if gate_failed(merged.sections) else ExitCode.OK
