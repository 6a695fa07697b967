"""The action's runs: evaluate (or one shard, or a dry run) or merge the shards' results, compare
with the baseline and write the results files, in the working directory and inside log groups."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ci_grade.github.graded import Graded
from ci_grade.github.publishing import publish

if TYPE_CHECKING:
    from ci_grade.evaluate import EvalOptions, EvalOutcome
    from ci_grade.gate.models import Comparison, GatePolicy
    from ci_grade.github.event import ActionEvent
    from ci_grade.github.inputs import ActionInputs
    from ci_grade.github.workflow_commands import WorkflowCommands
    from ci_grade.run.spending import Observed
    from ci_grade.run.stop import Stop


def dry_run(commands: WorkflowCommands, env: Mapping[str, str], inputs: ActionInputs, workdir: Path, stop: Stop) -> int:
    """`dry-run: true`: the plan and its estimates in the log and the job summary; nothing is called."""
    from ci_grade.commands.shared import observed
    from ci_grade.gate.store import load_baselines
    from ci_grade.report import spending

    with _in_folder(workdir):
        baseline = load_baselines(inputs.baseline, workdir) if inputs.baseline else None
        plan = _evaluate(commands, inputs, workdir, stop, observed(baseline) if baseline else {})[0].spending
    assert plan is not None
    with commands.commands_stopped():
        print(spending.text(plan), flush=True)
    if env.get("GITHUB_STEP_SUMMARY"):
        from ci_grade.github.env_files import append_summary

        publish(commands, "the job summary", lambda: append_summary(Path(env["GITHUB_STEP_SUMMARY"]), spending.markdown(plan, inputs.comment_title)))
    return 0


def _evaluate(
    commands: WorkflowCommands, inputs: ActionInputs, workdir: Path, stop: Stop, seen: dict[str, Observed] | None = None, on_start: Callable[[int], object] | None = None,
) -> tuple[EvalOutcome, EvalOptions, Path | None]:
    """Run the eval (or its shard, or its retry) in the working directory, inside a log group."""
    from ci_grade.commands.shared import skip_final_collection
    from ci_grade.evaluate import EvalOptions, evaluate
    from ci_grade.providers.budget import Budget

    skip_final_collection()
    cache = (workdir / inputs.cache_dir).resolve() if inputs.cache_dir else None
    options = EvalOptions(
        configs=inputs.config, grader=inputs.grader, concurrency=inputs.max_concurrency, repeat=inputs.repeat,
        cache_dir=str(cache) if cache else None, cache=inputs.cache, shard=inputs.shard, retry_errors=inputs.retry_errors,
        stop=stop, budget=Budget(inputs.max_cost) if inputs.max_cost is not None else None, dry_run=inputs.dry_run, observed=seen or {}, on_start=on_start,
    )
    with commands.group("ci-grade: evaluate"), commands.commands_stopped():
        outcome = evaluate(options)
    if outcome.rerun is not None:
        commands.line(f"ci-grade: ran {outcome.rerun} of {len(outcome.run.results)} rows again (errored in {inputs.retry_errors}), kept the others")
    return outcome, options, cache


@contextlib.contextmanager
def _in_folder(workdir: Path) -> Iterator[None]:
    """Work in `workdir`; the file a ConfigError names is made absolute, so that its annotation
    finds it from the workspace (the message keeps the path as written)."""
    from ci_grade.errors import ConfigError

    try:
        with contextlib.chdir(workdir):
            yield
    except ConfigError as exc:
        if exc.file:
            exc.file = str((workdir / exc.file).resolve())
        raise


@contextlib.contextmanager
def _confirm_group(commands: WorkflowCommands) -> Iterator[None]:
    """The log group of the confirmation reruns (only when there are any: no empty group)."""
    with commands.group("ci-grade: confirm newly failing tests"), commands.commands_stopped():
        yield


def evaluate_and_compare(commands: WorkflowCommands, inputs: ActionInputs, policy: GatePolicy, workdir: Path, event: ActionEvent, stop: Stop, on_start: Callable[[int], object] | None = None) -> Graded:
    """Run the eval in the working directory, compare with the baseline (a stored one, or the base
    evaluated in this job: `run:REF`), write the results files."""
    from ci_grade import base_run, redact
    from ci_grade.commands.shared import judge
    from ci_grade.gate.store import load_baselines, names_a_run, save_run_baseline, why_missing
    from ci_grade.github.ownership import hand_over
    from ci_grade.report import console
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import write_files
    from ci_grade.report.sections import Section

    workspace = event.workspace
    notes: list[str] = []
    with _in_folder(workdir):
        base = base_run.resolve(inputs.baseline, workdir, event.payload) if inputs.baseline and names_a_run(inputs.baseline) else None
        baseline = load_baselines(inputs.baseline, workdir) if inputs.baseline and base is None else None
        outcome, options, cache = _evaluate(commands, inputs, workdir, stop, on_start=on_start)
        if base is not None:
            with commands.group("ci-grade: evaluate the base"), commands.commands_stopped():
                baseline, notes = base_run.measure(base, options)
        run = outcome.run
        paths = list(dict.fromkeys([*outcome.output_paths, inputs.results_path, inputs.junit_path, inputs.html_path]))
        problems: list[str] = []  # a file that cannot be written is a warning: the verdict stands

        def document(comparison: Comparison | None) -> Document:
            part = Part(run.info.config_name, run, comparison, outcome.config_for_output)
            # a config's own `.md` output is the gate's report when there is a baseline, as with `eval`
            return Document([part], title=inputs.comment_title, gate_report=comparison is not None and bool(inputs.baseline), max_output_chars=inputs.max_output_chars)

        try:
            comparison = judge(outcome, options, baseline, policy, 0 if stop.requested else inputs.confirm, around=lambda: _confirm_group(commands))
        except Exception:  # the run's results are written whatever becomes of the comparison
            hand_over(write_files(paths, document(None), problems=problems), workspace)
            raise
        if inputs.baseline and baseline is None and base is None:
            comparison.baseline_missing = why_missing(inputs.baseline, workdir)
        written = write_files(paths, document(comparison), problems=problems)
        if inputs.save_baseline and not stop.requested:  # e.g. on main: the baseline for pull requests, with its history
            written += save_run_baseline(run, Path(inputs.save_baseline), inputs.baseline_history, problems)
        hand_over([*written, *(cache.rglob("*") if cache and cache.is_dir() else [])], workspace)
        with commands.commands_stopped():
            print(console.summary(run))
            print(redact.text(f"verdict: {comparison.verdict}: {comparison.reason}"), flush=True)
        warnings = [f"baseline {inputs.baseline} not found: {comparison.baseline_missing}; judged by thresholds only"] if comparison.baseline_missing else notes
        section = Section(run.info.config_name, run, comparison)
        results, junit, html = (Path(path).resolve() for path in (inputs.results_path, inputs.junit_path, inputs.html_path))
        return Graded([section], [results], junit, html, [*problems, *warnings])


def merge_and_compare(commands: WorkflowCommands, inputs: ActionInputs, policy: GatePolicy, workdir: Path, workspace: Path) -> Graded:
    """Merge the shards' results (no eval), compare each config with its baseline, write the files."""
    from ci_grade import merging, redact
    from ci_grade.github.ownership import hand_over
    from ci_grade.report import console

    with _in_folder(workdir):
        merged = merging.merge(inputs.merge, workdir, inputs.baseline, policy)
        written = merging.write_outputs([inputs.results_path, inputs.junit_path, inputs.html_path], merged, inputs.comment_title)
        hand_over(written, workspace)
        with commands.commands_stopped():
            for part, section in zip(merged.pooled, merged.sections, strict=True):
                print(f"{part.name}: merged {', '.join(part.paths)}")
                print(console.summary(part.run))
                print(redact.text(f"verdict: {section.comparison.verdict}: {section.comparison.reason}"), flush=True)
        results = [Path(merging.for_config(inputs.results_path, part, merged.several)).resolve() for part in merged.pooled]
        return Graded(merged.sections, results, Path(inputs.junit_path).resolve(), Path(inputs.html_path).resolve(), merged.warnings)


def run_shard(commands: WorkflowCommands, env: Mapping[str, str], inputs: ActionInputs, workdir: Path, workspace: Path, stop: Stop) -> int:
    """One shard: write its results and JUnit, a line in the summary, two outputs; exit 0 whatever
    its tests did (the merge job gives the verdict)."""
    from ci_grade.errors import ExitCode
    from ci_grade.github.annotations import workspace_path
    from ci_grade.github.ownership import hand_over
    from ci_grade.report import console
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import write_files
    from ci_grade.report.wording import plural

    with _in_folder(workdir):
        outcome, _, cache = _evaluate(commands, inputs, workdir, stop)
        run = outcome.run
        paths = list(dict.fromkeys([*outcome.output_paths, inputs.results_path, inputs.junit_path]))
        doc = Document([Part(run.info.config_name, run, None, outcome.config_for_output)], title=inputs.comment_title, max_output_chars=inputs.max_output_chars)
        written = write_files(paths, doc)
        hand_over([*written, *(cache.rglob("*") if cache and cache.is_dir() else [])], workspace)
        with commands.commands_stopped():
            print(console.summary(run), flush=True)
    stats, shard = run.stats, inputs.shard
    line = f"shard {shard}: {plural(stats.total, 'row')}, {stats.successes} passed, {stats.failures} failed, {plural(stats.errors, 'error')}; the merge job gives the verdict"
    commands.line(f"ci-grade: {line}")
    if env.get("GITHUB_STEP_SUMMARY"):
        from ci_grade.github.env_files import append_summary
        from ci_grade.report.markdown_escape import Escaper

        publish(commands, "the job summary", lambda: append_summary(Path(env["GITHUB_STEP_SUMMARY"]), f"### {Escaper().inline(inputs.comment_title, limit=200)}: {line}\n"))
    if env.get("GITHUB_OUTPUT"):
        from ci_grade.github.env_files import write_outputs

        files = {"results-path": inputs.results_path, "junit-path": inputs.junit_path}
        values = {name: workspace_path(path, workdir, workspace) or path for name, path in files.items()}
        publish(commands, "the step outputs", lambda: write_outputs(Path(env["GITHUB_OUTPUT"]), values))
    return ExitCode.OK
