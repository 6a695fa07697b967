"""One evaluation from config files to written result files (used by `eval` and `action`)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ci_grade import __version__, preflight, redact, settings
from ci_grade.config.env_templates import provider_env, render_spec, unset_env_warnings
from ci_grade.config.envfile import parse_env_file
from ci_grade.config.loader import LoadedConfig, load_config
from ci_grade.config.overrides import ConfigOverrides
from ci_grade.errors import ConfigError, UsageError
from ci_grade.gc_pause import collector_paused
from ci_grade.grading import registry
from ci_grade.plan.build import DEFAULT_MAX_ROWS, Plan, PlanOptions, build_plan
from ci_grade.plan.earlier import EarlierRows
from ci_grade.plan.filters import EvalFilters
from ci_grade.plan.shard import Shard
from ci_grade.providers.budget import Budget
from ci_grade.providers.cache import ResponseCache, cache_enabled_by, cache_folder
from ci_grade.providers.registry import is_known as provider_is_known
from ci_grade.report import formats, outputs
from ci_grade.report.progress import Progress
from ci_grade.results.models import EvalRun, ShardInfo, TestResult
from ci_grade.run import hooks, spending
from ci_grade.run.runner import DEFAULT_ROW_TIMEOUT_MS, RunOptions, run_plan
from ci_grade.run.spending import Observed, SpendingPlan
from ci_grade.run.stop import Stop
from ci_grade.tracing.session import Tracing

DEFAULT_CONCURRENCY: int | None = None
"""Without -j or maxConcurrency: adaptive (each provider finds its rate limit, `providers.limiter`)."""


@dataclass
class EvalOptions:
    configs: list[str] = field(default_factory=list)
    overrides: ConfigOverrides = field(default_factory=ConfigOverrides)
    """`-p`, `-r`, `-t`: the config's prompts, providers or tests replaced."""
    outputs: list[str] = field(default_factory=list)
    grader: str | None = None
    concurrency: int | None = None
    repeat: int | None = None
    filters: EvalFilters = field(default_factory=EvalFilters)
    prompt_prefix: str | None = None
    prompt_suffix: str | None = None
    vars: dict[str, str] = field(default_factory=dict)
    env_files: list[str] = field(default_factory=list)
    progress: bool = True
    cwd: Path | None = None
    cache_dir: str | None = None
    cache: bool = True
    delay_ms: int | None = None
    description: str | None = None
    only_test_ids: frozenset[str] | None = None
    test_repeats: bool = True
    """Tests' own `options.repeat` apply (off for `--confirm` reruns, which set `repeat` themselves)."""
    shard: Shard | None = None
    retry_errors: str | None = None
    stop: Stop = field(default_factory=Stop)
    """Signals and the time limit (`--max-duration`, else evaluateOptions.maxEvalTimeMs)."""
    budget: Budget | None = None
    """The spending limit (`--max-cost`), shared with the `--confirm` reruns of this evaluation."""
    dry_run: bool = False
    """Plan and estimate (`EvalOutcome.spending`), call nothing."""
    observed: dict[str, Observed] = field(default_factory=dict)
    """Per provider, what its calls measured in the baseline (for `dry_run`'s estimate)."""
    on_start: Callable[[int], object] | None = None
    """Told the number of rows planned when they start running (the action's live status)."""


@dataclass
class EvalOutcome:
    run: EvalRun
    loaded: LoadedConfig
    """The config without its tests (`LoadedConfig.release`: the plan holds them while running)."""
    env: dict[str, str]
    output_paths: list[str]
    rerun: int | None = None  # with --retry-errors: the rows run again
    config_for_output: outputs.EncodedConfig | None = None
    """The resolved config for results files, encoded when the plan was built."""
    spending: SpendingPlan | None = None
    """With `dry_run`: the plan's calls, tokens, cost and time (the run is empty)."""


def build_env(options: EvalOptions, loaded: LoadedConfig | None = None) -> dict[str, str]:
    """Process environment + `--env-file` values (not overriding) + the config's `env:` overrides."""
    env = dict(os.environ)
    for path in options.env_files:
        for key, value in parse_env_file(Path(path)).items():
            env.setdefault(key, value)
    if loaded is not None:
        env.update(loaded.config.env_overrides())
    return env


def learn_secrets(options: EvalOptions, loaded: LoadedConfig, env: dict[str, str]) -> None:
    """Teach the sinks' redactor every secret the run can see, before anything is printed or
    called: secret-looking variables, every value of `--env-file` files and the `env:` block
    (rules in `redact`), and credentials written in provider config."""
    secrets = redact.current()
    secrets.learn_env(env)
    for path in options.env_files:
        secrets.learn_values(parse_env_file(Path(path)))
    secrets.learn_values(loaded.config.env_overrides())
    secrets.collect(loaded.raw, env)


def prepare(options: EvalOptions) -> tuple[LoadedConfig, dict[str, str], list[str]]:
    """Load and validate everything that can be checked before running (exit 2 material)."""
    settings.check()
    loaded = load_config(options.configs, registry.vocabulary(), cwd=options.cwd, overrides=options.overrides, known_provider=provider_is_known)
    env = build_env(options, loaded)
    learn_secrets(options, loaded, env)
    loaded.warnings += unset_env_warnings(loaded.raw, env, loaded.sources)
    loaded.config.providers = [render_spec(spec, provider_env(spec, env)) for spec in loaded.config.providers]
    hooks.before_all(loaded, hooks.check(loaded))
    loaded.warnings += preflight.check(loaded, env)
    preflight.check_graders(loaded, env, options.grader or loaded.command_line.grader)
    paths = list(options.outputs)
    if not paths:
        paths = list(loaded.config.outputPath or [])
        base = loaded.base_dir
        paths = [str(p if Path(p).is_absolute() else base / p) for p in paths]
    if not paths:
        paths = list(loaded.command_line.output)
    formats.check_outputs(paths)
    return loaded, env, paths


def _delay(options: EvalOptions, loaded: LoadedConfig) -> int:
    """promptfoo's delay (`--delay`, else commandLineOptions.delay, else evaluateOptions.delay).
    It, or a provider's own, longer than a row's time limit is refused: every row would time out,
    and a typo such as an extra zero should not hold a job for hours."""
    evaluate_options = loaded.config.evaluateOptions
    limit = DEFAULT_ROW_TIMEOUT_MS if evaluate_options.timeoutMs is None else evaluate_options.timeoutMs
    listed = loaded.raw.get("providers")
    raw_providers: list[Any] = listed if isinstance(listed, list) else []
    places = [
        ("--delay", options.delay_ms, None),
        ("commandLineOptions.delay", loaded.command_line.delay, loaded.sources.location(loaded.raw.get("commandLineOptions"), "delay")),
        ("evaluateOptions.delay", evaluate_options.delay, loaded.sources.location(loaded.raw.get("evaluateOptions"), "delay")),
        *((f"providers[{i}].delay", spec.delay, loaded.sources.location(raw_providers[i] if i < len(raw_providers) else None, "delay")) for i, spec in enumerate(loaded.config.providers)),
    ]
    for what, value, place in places:
        if limit and value is not None and value > limit:
            message = f"a delay of {value:,} ms is longer than a row's time limit of {limit:,} ms (evaluateOptions.timeoutMs): every row would time out"
            raise ConfigError.at(message, place, what) if place else UsageError(f"{what}: {message}")
    return next((value for _, value, _ in places[:3] if value is not None), 0)


def evaluate(options: EvalOptions) -> EvalOutcome:
    """Load, plan and run; the cyclic garbage collector is paused while the config and the plan
    are built and they are frozen for the run (see `_built`)."""
    with collector_paused():
        try:
            return _evaluate(options)
        finally:
            gc.unfreeze()


def _built() -> None:
    """Loading a large config creates a few hundred thousand long-lived objects and no garbage
    cycles; a collection meanwhile would scan all of them again (about half the cost of loading
    10,000 tests). Frozen, they are also left out of the run's collections."""
    gc.freeze()
    gc.enable()


def _evaluate(options: EvalOptions) -> EvalOutcome:
    from ci_grade.plan import retry

    previous = retry.Previous.read(options.retry_errors) if options.retry_errors else None
    with options.stop.at_once("loading the config"):
        loaded, env, paths = prepare(options)
    config = loaded.config
    cli_defaults = loaded.command_line
    eval_options = config.evaluateOptions
    concurrency = options.concurrency or eval_options.maxConcurrency or cli_defaults.max_concurrency or DEFAULT_CONCURRENCY
    repeat = options.repeat or eval_options.repeat or cli_defaults.repeat or 1
    grader = options.grader or cli_defaults.grader
    filters = options.filters.completed_by(cli_defaults)
    config_for_output = outputs.encode_config({k: v for k, v in loaded.raw.items() if k != "assertionTemplates"})
    earlier = [EarlierRows.read(kind, path) for kind, path in filters.earlier]
    with options.stop.at_once("planning the run"):
        plan = build_plan(
            loaded,
            PlanOptions(
                repeat=repeat,
                filters=filters,
                earlier=earlier,
                cli_vars={**cli_defaults.vars, **options.vars},
                grader=grader,
                prompt_prefix=options.prompt_prefix or cli_defaults.prompt_prefix,
                prompt_suffix=options.prompt_suffix or cli_defaults.prompt_suffix,
                only_test_ids=options.only_test_ids,
                test_repeats=options.test_repeats,
                shard=previous.shard(options.shard) if previous else options.shard,
                max_rows=int(settings.number("CI_GRADE_MAX_ROWS", DEFAULT_MAX_ROWS)),
                release=True,
            ),
        )
    if earlier and not plan.rows:
        loaded.warnings.append(" and ".join(rows.explain() for rows in earlier))
    kept = None
    if previous is not None:
        plan, kept = retry.plan_retry(plan, previous)
    if options.budget is not None:
        spending.check_prices(plan, env, loaded.base_dir)
    if options.dry_run:
        estimate = spending.estimate(
            plan, env, loaded.base_dir, cache=_cache(options, loaded, env, plan.repeat), concurrency=1 if _delay(options, loaded) else concurrency,
            env_overrides={k: v for k, v in env.items() if os.environ.get(k) != v}, observed=options.observed,
        )
        run = EvalRun(warnings=list(loaded.warnings))
        run.info.config_name = _config_name(loaded.files, env)
        return EvalOutcome(run=run, loaded=loaded, env=env, output_paths=paths, spending=estimate)
    shown = (loaded.raw.get("evaluateOptions") or {}).get("showProgressBar") is not False and cli_defaults.progress_bar is not False  # promptfoo's switches
    _built()
    if options.on_start is not None:
        options.on_start(len(plan.rows))
    progress = Progress(enabled=options.progress and shown, total=len(plan.rows))
    if options.stop.max_duration is None and eval_options.maxEvalTimeMs:
        options.stop.max_duration = eval_options.maxEvalTimeMs / 1000
    run_options = RunOptions(
        env=env,
        base_dir=loaded.base_dir,
        concurrency=concurrency,
        delay_ms=_delay(options, loaded),
        timeout_ms=DEFAULT_ROW_TIMEOUT_MS if eval_options.timeoutMs is None else eval_options.timeoutMs or None,
        env_overrides={k: v for k, v in env.items() if os.environ.get(k) != v},  # env: and --env-file values
        progress=progress,
        cache=_cache(options, loaded, env, plan.repeat),
        stop=options.stop,
        budget=options.budget,
        release_rows=True,
        hooks=hooks.Hooks(config.extensions or [], loaded.base_dir),
    )
    suite = hooks.suite_of(loaded) if run_options.hooks else None
    # User code's prints must not mix with our stdout; user code (Python providers, asserts)
    # sees the config's `env:` and --env-file values as promptfoo's does.
    run_options.tracing = _tracing(loaded)
    try:
        with contextlib.redirect_stdout(sys.stderr), _process_env(run_options.env_overrides), progress:
            run = _run_to_completion(plan, run_options)
    finally:
        if run_options.tracing is not None:
            run_options.tracing.stop()
    if kept is not None:
        run = retry.combine(kept, run)
    if suite is not None:
        shown_config = redact.current().data({k: v for k, v in loaded.raw.items() if k not in ("tests", "scenarios", "assertionTemplates")})
        run.warnings += hooks.after_all(run_options.hooks, run, suite, shown_config)
    run.info.ci_grade_version = __version__
    run.info.created_at = datetime.now(UTC).isoformat(timespec="seconds")
    run.info.description = options.description or cli_defaults.description or config.description
    run.info.config_files = [str(p) for p in loaded.files]
    run.info.config_hash = loaded.config_hash
    run.info.config_name = _config_name(loaded.files, env)
    run.info.plan_hash = plan.fingerprint
    if plan.shard:
        run.info.shard = ShardInfo(index=plan.shard.index, count=plan.shard.count, groups=plan.groups, rows=plan.total_rows)
    run.info.commit = env.get("GITHUB_SHA") or _git_commit(loaded.base_dir)
    run.info.repeat = repeat
    run.info.derived_metrics = [metric.model_dump(include={"name", "value"}) for metric in config.derivedMetrics or []]
    run.warnings = [*loaded.warnings, *run.warnings]
    return EvalOutcome(run=run, loaded=loaded, env=env, output_paths=paths, rerun=kept.rerun if kept else None, config_for_output=config_for_output)


def _tracing(loaded: LoadedConfig) -> Tracing | None:
    """The run's tracing, its receiver listening (before any model is called), when the config enables it."""
    config = loaded.config.tracing
    if config is None or not config.enabled:
        return None
    raw = loaded.raw.get("tracing")
    place = loaded.sources.location(raw, "otlp") if isinstance(raw, dict) else None
    if config.receiver is None:
        loaded.warnings.append("tracing is enabled without an OTLP receiver (tracing.otlp.http): rows get a traceparent but no spans")
    tracing = Tracing(config, place)
    tracing.start()
    return tracing


def confirm(options: EvalOptions, test_ids: Iterable[str], runs: int) -> list[TestResult]:
    """Rerun the tests `test_ids` `runs` more times with fresh samples; their rows (`--confirm N`)."""
    rerun = dataclasses.replace(options, outputs=[], repeat=runs, test_repeats=False, cache=False, only_test_ids=frozenset(test_ids), on_start=None)
    return list(evaluate(rerun).run.results)


def _run_to_completion(plan: Plan, options: RunOptions) -> EvalRun:
    """`asyncio.run(run_plan(...))`, keeping the (large) result off the main task.

    At shutdown CPython's asyncio.run formats the SIGINT handler, which holds the main task, and
    with it a repr of the task's result: for a big run that alone costs a noticeable fraction of
    a second. Returning the result through a holder keeps the task's result None.
    """
    holder: list[EvalRun] = []

    async def main() -> None:
        holder.append(await run_plan(plan, options))

    asyncio.run(main())
    return holder[0]


@contextlib.contextmanager
def _process_env(overrides: dict[str, str]) -> Iterator[None]:
    """Apply `overrides` to os.environ for the duration of the run, then restore it."""
    saved = {key: os.environ.get(key) for key in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _cache(options: EvalOptions, loaded: LoadedConfig, env: dict[str, str], repeat: int) -> ResponseCache | None:
    """The response cache, on by default as in promptfoo. Off with --no-cache or when any test
    repeats (`--repeat`, or a test's own `options.repeat`: repeats exist to sample again); else on with --cache-dir; else off with `cache: false` in the config's
    evaluateOptions or commandLineOptions or PROMPTFOO_CACHE_ENABLED=false."""
    if not options.cache or repeat > 1:
        return None
    configured = [loaded.config.evaluateOptions.cache, loaded.command_line.cache]
    if not options.cache_dir and (False in configured or not cache_enabled_by(env)):
        return None
    return ResponseCache(cache_folder(options.cache_dir, env))


def _config_name(files: list[Path], env: dict[str, str]) -> str:
    """The config file(s) relative to the workspace, else the repository, else the working folder."""
    if not files:
        return "command line"
    root = Path(env.get("GITHUB_WORKSPACE") or _git(files[0].parent, "rev-parse", "--show-toplevel") or Path.cwd()).resolve()
    names = []
    for file in files:
        try:
            names.append(file.resolve().relative_to(root).as_posix())
        except ValueError:
            names.append(file.as_posix())
    return " + ".join(names)


def _git_commit(folder: Path) -> str | None:
    return _git(folder, "rev-parse", "HEAD")


def _git(folder: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None
