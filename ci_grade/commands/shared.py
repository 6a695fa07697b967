"""What several commands share: the gate's options, reading the baseline they name, the eval options."""

from __future__ import annotations

import argparse
import atexit
import gc
import signal
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ci_grade.evaluate import EvalOptions, EvalOutcome
    from ci_grade.gate.baseline import Baseline
    from ci_grade.gate.models import Comparison, GatePolicy
    from ci_grade.run.spending import Observed


Number = TypeVar("Number", int, float)


def _argument(parse: Callable[[str], Number], within: Callable[[Number], bool], expected: str, outside: str) -> Callable[[str], Number]:
    """An argparse `type`: `parse` the stripped text (a ValueError says `expected`), then check it
    is `within` range (else `outside`)."""

    def convert(text: str) -> Number:
        try:
            number = parse(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not within(number):
            raise argparse.ArgumentTypeError(f"expected {outside}, got {text!r}")
        return number

    return convert


def _share(value: str) -> float:
    """A number, or a percentage such as 80%."""
    return float(value[:-1]) / 100 if value.endswith("%") else float(value)


_fraction = _argument(_share, lambda n: 0 <= n <= 1, "a number", "a fraction from 0 to 1 (or a percentage like 80%)")
_drop = _argument(float, lambda n: 0 <= n <= 1, "a number", "a score drop from 0 to 1")
_count = _argument(int, lambda n: n >= 0, "a whole number", "0 or more")
_alpha = _argument(float, lambda n: 0 < n <= 0.5, "a number", "a significance level above 0 and at most 0.5")
money = _argument(lambda v: float(v.removeprefix("$")), lambda n: 0 < n < float("inf"), "an amount in US dollars such as 5 or 0.50", "an amount in US dollars above zero")
"""US dollars above zero: `5`, `0.50`, `$2`."""
increase = _argument(_share, lambda n: 0 <= n < float("inf"), "a percentage such as 20% (or a fraction such as 0.2)", "a rise of 0% or more")
"""A tolerated rise: `20%` or `0.2` (0 or more)."""


def _duration(text: str) -> float:
    from ci_grade.run.stop import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """The baseline source, the gate's options and the report title (shared by eval and compare)."""
    group = parser.add_argument_group("baseline and gate")
    group.add_argument("--baseline", metavar="SOURCE", help="baseline to compare with: a baseline file, a results JSON, git:REF:PATH, a glob of results files of one config (several runs fold into one baseline), or run:REF (eval only: evaluate the merge base of REF and HEAD here too, with the same options and cache; about doubles the model calls); missing: thresholds only")
    group.add_argument("--fail-on", choices=("failures", "regressions", "never"), default="regressions", help="what fails the gate (default regressions: regressions against the baseline, errors and floors; failures: any failing test)")
    group.add_argument("--max-score-drop", type=_drop, default=0.1, metavar="X", help="largest tolerated drop of a test's score (a sampled test: its pass rate) (default 0.1)")
    group.add_argument("--max-metric-drop", type=_drop, default=0.02, metavar="X", help="practical margin: a significant drop of the mean score, pass rate or a metric must exceed it to regress (default 0.02)")
    group.add_argument("--alpha", type=_alpha, default=0.05, metavar="A", help="significance level of the one-sided tests (default 0.05; Holm-corrected)")
    group.add_argument("--cluster-key", metavar="KEY", help="metadata key grouping tests that are not independent (e.g. the source document): clustered standard errors")
    group.add_argument("--min-pass-rate", type=_fraction, metavar="X", help="pass rate (0-1 or N%%) failing tests are tolerated down to (instead of failing the gate as --fail-on says)")
    group.add_argument("--max-errors", type=_count, metavar="N", help="errored rows tolerated (default 0)")
    group.add_argument("--max-cost-increase", type=increase, metavar="PCT", help="fail the gate when the cost per test (provider and graders, rows not served from the cache) rises more than PCT over the baseline's, e.g. 20%%")
    group.add_argument("--title", default="ci-grade", help="heading of the Markdown report (default ci-grade)")


def add_history_argument(parser: argparse.ArgumentParser) -> None:
    """How many runs of history a saved baseline keeps (the report's trend)."""
    parser.add_argument("--history", type=_count, metavar="N", help="runs of history the saved baseline keeps for the report's trend: those of the baseline already at its path, then this one (default 30; 0 keeps none)")


def gate_policy(args: argparse.Namespace) -> GatePolicy:
    from ci_grade.gate.models import GatePolicy

    return GatePolicy(
        fail_on=args.fail_on,
        max_score_drop=args.max_score_drop,
        max_metric_drop=args.max_metric_drop,
        min_pass_rate=args.min_pass_rate,
        max_errors=args.max_errors,
        alpha=args.alpha,
        cluster_key=args.cluster_key,
        max_cost_increase=args.max_cost_increase,
    )


def judge(
    outcome: EvalOutcome, options: EvalOptions, baseline: Baseline | None, policy: GatePolicy, confirm: int,
    around: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> Comparison:
    """Compare the run with the baseline; with `confirm` reruns, sample every newly failing sampled
    test `confirm` more times first and judge it on those fresh runs (`--confirm N`), inside
    `around()` (e.g. a log group: opened only when there are reruns)."""
    from ci_grade.evaluate import confirm as rerun
    from ci_grade.gate.compare import compare
    from ci_grade.gate.decision import cancel

    comparison = compare(outcome.run, baseline, policy, every_test=False)
    targets = [t.test_id for t in comparison.new_failures if not t.reproducible]
    if confirm and baseline is not None and targets:
        with around():
            sys.stderr.write(f"confirming {len(targets)} newly failing sampled test(s) with {confirm} more run(s) each\n")
            outcome.run.confirmations = rerun(options, targets, confirm)
        comparison = compare(outcome.run, baseline, policy, every_test=False)
    if options.stop.signum is not None:
        cancel(comparison, signal.Signals(options.stop.signum).name)
    return comparison


def observed(baseline: Baseline) -> dict[str, Observed]:
    """What each provider's calls measured in the baseline: reply tokens per call, median latency."""
    from ci_grade.run.spending import Observed

    return {
        name: Observed(reply_tokens=totals.completion_tokens / totals.calls, latency_ms=totals.latency_p50_ms)
        for name, totals in baseline.totals.providers.items()
        if totals.calls
    }


def read_baseline(source: str | None, cwd: Path) -> tuple[Baseline | None, str | None]:
    """The baseline `source` names (a glob of results files folds several runs), or None and why
    (a given source that does not exist, said at once and in the verdict)."""
    if not source:
        return None, None
    from ci_grade.gate.store import load_baselines, why_missing

    baseline = load_baselines(source, cwd)
    if baseline is not None:
        return baseline, None
    missing = why_missing(source, cwd)
    sys.stderr.write(f"warning: no baseline at {source}: {missing}; the gate judges thresholds only\n")
    return None, missing


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _paths(text: str) -> list[str]:
    """Comma-separated paths, as promptfoo's --env-path takes them."""
    return [part.strip() for part in text.split(",") if part.strip()]


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by `eval` and anything that runs an evaluation."""
    parser.add_argument("-c", "--config", action="extend", nargs="+", default=[], metavar="CONFIG", help="config files or globs (several after one flag, or repeated; merged like promptfoo). Default: ./promptfooconfig.yaml")
    parser.add_argument("-o", "--output", action="extend", nargs="+", default=[], metavar="PATH", help="write results; format by extension: .json .jsonl .junit.xml .xml .md .csv .yaml (several after one flag, or repeated)")
    parser.add_argument("-p", "--prompts", action="extend", nargs="+", default=[], metavar="PROMPT", help="prompt files (or texts) in place of the config's prompts, relative to the working folder")
    parser.add_argument("-r", "--providers", action="extend", nargs="+", default=[], metavar="PROVIDER", help="providers in place of the config's (one the config lists keeps its settings)")
    parser.add_argument("-t", "--tests", "-v", "--vars", dest="tests", metavar="FILE", help="a tests file (CSV, YAML, JSON, JSONL) in place of the config's tests")
    parser.add_argument("-a", "--assertions", metavar="FILE", help="grade recorded outputs (--model-outputs) with this YAML/JSON list of assertions")
    parser.add_argument("--model-outputs", metavar="FILE", help="a JSON list of outputs (strings, or {output, tags}) to grade with --assertions, no model called")
    parser.add_argument("--grader", metavar="PROVIDER", help="default grader for model-graded assertions (replaces defaultTest.options.provider)")
    parser.add_argument("-j", "--max-concurrency", type=int, metavar="N", help="tests (and calls per provider) run at once, a hard cap (default: evaluateOptions.maxConcurrency, else adapts to each provider's rate limit)")
    parser.add_argument("--repeat", type=int, metavar="N", help="run every test N times (scores become means with a spread); a test's own options.repeat wins for it, as in promptfoo")
    parser.add_argument("--delay", type=_count, metavar="MS", help="wait MS milliseconds after each call a provider answers (not cached replies; a provider's own delay wins); any delay runs tests one at a time")
    parser.add_argument("--description", metavar="TEXT", help="the run's description in reports (default: the config's)")
    parser.add_argument("--filter-pattern", metavar="REGEX", help="only tests whose description matches")
    parser.add_argument("-n", "--filter-first-n", type=int, metavar="N", help="only the first N tests")
    parser.add_argument("--filter-metadata", action="append", type=key_value, default=[], metavar="KEY=VALUE", help="only tests whose metadata value KEY holds VALUE (as text; a list: one item does; repeatable, all must match)")
    parser.add_argument("--filter-range", metavar="START:END", help="only the tests at these zero-based positions, END excluded (10:20, :10, 10:)")
    parser.add_argument("--filter-sample", type=int, metavar="N", help="only N tests drawn at random (after the other test filters)")
    parser.add_argument("--filter-sample-seed", type=int, metavar="SEED", help="draw --filter-sample with this seed: the same tests every time, and the ones promptfoo draws")
    parser.add_argument("--filter-providers", "--filter-targets", metavar="REGEX", help="only providers whose id or label matches")
    parser.add_argument("--filter-prompts", metavar="REGEX", help="only prompts whose label or id matches")
    parser.add_argument("--filter-failing", metavar="RESULTS", help="only the rows that failed or errored in this earlier results file (ci-grade's or promptfoo's)")
    parser.add_argument("--filter-failing-only", metavar="RESULTS", help="only the rows that failed (not errored) in this earlier results file")
    parser.add_argument("--filter-errors-only", metavar="RESULTS", help="only the rows that errored in this earlier results file")
    parser.add_argument("--prompt-prefix", metavar="TEXT", help="put TEXT before every prompt template (defaultTest.options.prefix; a test's own prefix wins)")
    parser.add_argument("--prompt-suffix", metavar="TEXT", help="put TEXT after every prompt template (defaultTest.options.suffix; a test's own suffix wins)")
    parser.add_argument("--var", action="append", type=key_value, default=[], metavar="KEY=VALUE", help="set a variable for every test (repeatable)")
    parser.add_argument("--env-file", "--env-path", action="extend", type=_paths, default=[], metavar="FILE", help="load environment variables from .env files (repeatable or comma-separated)")
    parser.add_argument("--max-output-chars", type=_count, metavar="N", help="characters of each row's output kept in results files (default 100000; 0 keeps all); a cut output says so")
    parser.add_argument("--max-duration", type=_duration, metavar="DURATION", help="time limit for the whole run, e.g. 30m or 1h30m: rows not finished by then are recorded as errors (timed out) and every report is written. Default: evaluateOptions.maxEvalTimeMs, else none")
    parser.add_argument("--max-cost", type=money, metavar="USD", help="spending limit for the run (providers and graders, repeats and --confirm reruns; cache hits are free): a call is made only while its most possible cost fits; rows not run are errors saying so and fail the gate. Each shard has its own")
    parser.add_argument("--cache-dir", metavar="DIR", help="where model replies are cached (default: CI_GRADE_CACHE_DIR, else ~/.cache/ci-grade)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the response cache (it is on by default and off when any test repeats)")
    parser.add_argument("--no-progress", "--no-progress-bar", action="store_true", help="do not report progress on stderr")
    promptfoo = parser.add_argument_group("accepted for promptfoo compatibility")
    promptfoo.add_argument("--table", "--no-table", action="store_true", dest="ignored", help="ignored: ci-grade prints a summary of failures, not a table")
    promptfoo.add_argument("--table-cell-max-length", type=int, metavar="N", dest="ignored_length", help="ignored, as --table is")
    promptfoo.add_argument("--no-share", "--no-write", action="store_true", dest="ignored", help="ignored: ci-grade never uploads results or keeps a database")
    promptfoo.add_argument("--share", action="store_true", help="refused: ci-grade never uploads results (nothing leaves this machine)")
    parser.add_argument("--verbose", action="store_true", help="show tracebacks for internal errors")


def skip_final_collection() -> None:
    """At exit, freeze what is left rather than collect it. The interpreter's last collection walks
    every object an evaluation leaves (the OpenAI SDK's 200,000 among them), about 0.08 s of CPU, to
    free memory the process's end frees anyway; every file is closed by then. Registered once."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


def eval_options(args: argparse.Namespace) -> EvalOptions:
    from ci_grade.config.command_line import parse_range
    from ci_grade.config.overrides import ConfigOverrides
    from ci_grade.errors import UsageError
    from ci_grade.evaluate import EvalOptions
    from ci_grade.plan.filters import EvalFilters
    from ci_grade.providers.budget import Budget
    from ci_grade.run.stop import Stop

    skip_final_collection()

    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise UsageError("--max-concurrency must be at least 1")
    if args.repeat is not None and args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    if args.filter_sample is not None and args.filter_sample < 1:
        raise UsageError("--filter-sample must be at least 1")
    if args.filter_first_n is not None and args.filter_first_n < 1:
        raise UsageError("--filter-first-n must be at least 1")
    if args.filter_range is not None:
        parse_range(args.filter_range)  # exit 2 before anything runs
    if args.share:
        raise UsageError("--share is not supported: ci-grade never uploads results, nothing leaves this machine. "
                         "Write the reports with -o (results.json, report.md, results.junit.xml) and publish them from CI")
    return EvalOptions(
        configs=args.config,
        overrides=ConfigOverrides(
            prompts=tuple(args.prompts), providers=tuple(args.providers), tests=args.tests, assertions=args.assertions, model_outputs=args.model_outputs
        ),
        outputs=args.output,
        grader=args.grader,
        concurrency=args.max_concurrency,
        repeat=args.repeat,
        filters=EvalFilters(
            pattern=args.filter_pattern,
            metadata=tuple(args.filter_metadata),
            range=args.filter_range,
            first_n=args.filter_first_n,
            sample=args.filter_sample,
            sample_seed=args.filter_sample_seed,
            providers=args.filter_providers,
            prompts=args.filter_prompts,
            earlier=tuple((kind, path) for kind, path in (("failing", args.filter_failing), ("failing-only", args.filter_failing_only), ("errors-only", args.filter_errors_only)) if path),
        ),
        prompt_prefix=args.prompt_prefix,
        prompt_suffix=args.prompt_suffix,
        vars=dict(args.var),
        env_files=args.env_file,
        progress=not args.no_progress,
        cache_dir=args.cache_dir,
        cache=not args.no_cache,
        delay_ms=args.delay,
        description=args.description,
        stop=Stop(args.max_duration),
        budget=Budget(args.max_cost) if args.max_cost is not None else None,
    )
