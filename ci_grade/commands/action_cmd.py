"""`ci-grade action`: the GitHub Action's entrypoint.

Reads the inputs from `INPUT_*` variables, runs the eval, compares it with the baseline, writes
the results JSON and JUnit, posts one sticky PR comment (pull-request events), writes the job
summary (always), outputs and annotations, and exits per the gate. GitHub problems (a read-only
token on fork PRs, API errors) are warnings: they never change the gate's verdict.

With `shard`, it runs one shard and writes its results, nothing else: failing tests do not fail
the step (the merge decides). With `merge`, it runs no eval: it merges the shards' results (one
section per config) and publishes and gates them as above.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ci_grade.evaluate import EvalOptions, EvalOutcome
    from ci_grade.gate.models import Comparison, GatePolicy
    from ci_grade.github.event import ActionEvent
    from ci_grade.github.inputs import ActionInputs
    from ci_grade.github.workflow_commands import WorkflowCommands
    from ci_grade.report.sections import Section
    from ci_grade.run.spending import Observed
    from ci_grade.run.stop import Stop


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("action", help="run as the GitHub Action (inputs from INPUT_* variables)", description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks for internal errors")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """The action's exit code: the gate's, or 130/143 after SIGINT/SIGTERM once every report,
    the comment and the outputs are written."""
    from ci_grade import redact
    from ci_grade.errors import Interrupted
    from ci_grade.github.event import ActionEvent
    from ci_grade.github.inputs import read_inputs
    from ci_grade.github.workflow_commands import WorkflowCommands
    from ci_grade.run.stop import Stop

    commands = WorkflowCommands()
    env = dict(os.environ)
    mask_secrets(commands, env)
    event = ActionEvent.from_env(env)
    inputs = None
    stop = Stop()
    try:
        with stop.catching_signals():
            inputs = read_inputs(env)
            stop.max_duration = inputs.max_duration
            redact.current().add(inputs.secrets())
            code = run_action(commands, env, event, inputs, stop)
    except Exception as exc:  # an internal error too: the summary and the comment must not go stale
        report_failure(commands, env, event, inputs, exc)
        raise
    if stop.signum is not None:
        raise Interrupted(stop.signum)
    return code


def mask_secrets(commands: WorkflowCommands, env: Mapping[str, str]) -> None:
    """`::add-mask::` every secret the run knows or learns (secret-looking variables and secret
    inputs now; the config's `env:` values, `--env-file` values and provider credentials as
    they are learned), each before anything could print it."""
    from ci_grade import redact
    from ci_grade.github.inputs import SECRET_INPUTS, raw_input

    redactor = redact.current()
    redactor.learn_env(env)
    redactor.add(raw_input(env, name) for name in SECRET_INPUTS)
    redactor.listen(commands.add_mask)


def run_action(commands: WorkflowCommands, env: Mapping[str, str], event: ActionEvent, inputs: ActionInputs, stop: Stop) -> int:
    """Evaluate, compare, publish everywhere, and return the gate's exit code."""
    from ci_grade.errors import ExitCode, UsageError
    from ci_grade.gate.models import GatePolicy
    from ci_grade.github.comment import marker_for
    from ci_grade.report.sections import render_report

    workdir = (event.workspace / inputs.working_directory).resolve()
    if not workdir.is_dir():
        raise UsageError(f"input `working-directory`: {inputs.working_directory} is not a folder in the workspace")
    if event.problem:
        commands.warning(event.problem, title="ci-grade")
    if (event.name == "pull_request_target" and event.from_fork) or _comment_on_a_fork(event, inputs):
        commands.warning(
            f"running under {event.name} on a fork's pull request: its config can run code with this repository's secrets and write token. Use pull_request (see the docs).",
            title="ci-grade: unsafe trigger",
        )
    policy = GatePolicy(
        fail_on=inputs.fail_on,
        max_score_drop=inputs.max_score_drop,
        max_metric_drop=inputs.max_metric_drop,
        min_pass_rate=inputs.min_pass_rate,
        max_errors=inputs.max_errors,
        alpha=inputs.alpha,
        cluster_key=inputs.cluster_key,
        max_cost_increase=inputs.max_cost_increase,
    )
    if inputs.dry_run:
        return dry_run(commands, env, inputs, workdir, stop)
    if inputs.shard:
        return run_shard(commands, env, inputs, workdir, event.workspace, stop)
    if inputs.merge:
        graded = merge_and_compare(commands, inputs, policy, workdir, event.workspace)
    else:
        graded = evaluate_and_compare(commands, inputs, policy, workdir, event, stop)
    marker = marker_for(inputs.comment_title)
    report = render_report(graded.sections, title=inputs.comment_title, marker=marker)
    comment_url, comment_problem = publish_comment(commands, event, inputs, report, marker)
    warnings = [comment_problem] if comment_problem else []
    warnings += graded.warnings
    for section in graded.sections:
        warnings += [*section.comparison.warnings, *section.run.warnings]
    emit_annotations(commands, graded, warnings, workdir, event.workspace)
    if env.get("GITHUB_STEP_SUMMARY"):
        from ci_grade.github.env_files import SUMMARY_LIMIT_BYTES, append_summary

        # The summary allows 1 MiB where a comment allows 65,536 characters: render it at its own size.
        note = warning_note(comment_problem)
        summary = render_report(graded.sections, title=inputs.comment_title, max_chars=SUMMARY_LIMIT_BYTES - len(note), max_bytes=SUMMARY_LIMIT_BYTES - len(note.encode()))
        publish(commands, "the job summary", lambda: append_summary(Path(env["GITHUB_STEP_SUMMARY"]), summary + note))
    if env.get("GITHUB_OUTPUT"):
        from ci_grade.github.env_files import write_outputs

        values = step_outputs(graded, event.workspace, comment_url)
        publish(commands, "the step outputs", lambda: write_outputs(Path(env["GITHUB_OUTPUT"]), values))
    return ExitCode.GATE_FAILED if graded.gate_failed else ExitCode.OK


def _comment_on_a_fork(event: ActionEvent, inputs: ActionInputs) -> bool:
    """An `issue_comment` on a fork's pull request (the payload cannot say; the API is asked).
    The job has this repository's secrets and write token: if it checked out the pull request's
    head, the fork's config runs with them, as under `pull_request_target`."""
    from ci_grade.errors import GitHubError
    from ci_grade.github.pulls import head_repository

    number = event.pull_request_number
    if event.name != "issue_comment" or number is None or not inputs.github_token or not event.repository:
        return False
    try:
        head = head_repository(event.api_url, inputs.github_token, event.repository, number)
    except GitHubError:
        return False  # the comment step reports GitHub's problems
    return head is not None and head != event.repository


def publish(commands: WorkflowCommands, what: str, write: Callable[[], object]) -> None:
    """Write a runner file; a failure (a full disk, a missing folder) is a warning: the verdict stands."""
    try:
        write()
    except OSError as exc:
        commands.warning(f"could not write {what}: {exc.strerror or exc}; the verdict stands", title="ci-grade")


class Graded(NamedTuple):
    """Finished results (one section per config), compared, with the files written for them."""

    sections: list[Section]
    results_paths: list[Path]
    junit_path: Path
    warnings: list[str]
    """About the run: a missing baseline, result files that could not be written."""

    @property
    def gate_failed(self) -> bool:
        return any(s.comparison.gate_failed for s in self.sections)


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


def _evaluate(commands: WorkflowCommands, inputs: ActionInputs, workdir: Path, stop: Stop, seen: dict[str, Observed] | None = None) -> tuple[EvalOutcome, EvalOptions, Path | None]:
    """Run the eval (or its shard, or its retry) in the working directory, inside a log group."""
    from ci_grade.commands.shared import skip_final_collection
    from ci_grade.evaluate import EvalOptions, evaluate
    from ci_grade.providers.budget import Budget

    skip_final_collection()
    cache = (workdir / inputs.cache_dir).resolve() if inputs.cache_dir else None
    options = EvalOptions(
        configs=inputs.config, grader=inputs.grader, concurrency=inputs.max_concurrency, repeat=inputs.repeat,
        cache_dir=str(cache) if cache else None, cache=inputs.cache, shard=inputs.shard, retry_errors=inputs.retry_errors,
        stop=stop, budget=Budget(inputs.max_cost) if inputs.max_cost is not None else None, dry_run=inputs.dry_run, observed=seen or {},
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


def evaluate_and_compare(commands: WorkflowCommands, inputs: ActionInputs, policy: GatePolicy, workdir: Path, event: ActionEvent, stop: Stop) -> Graded:
    """Run the eval in the working directory, compare with the baseline (with `run`, the base
    evaluated here afterwards), write the results files."""
    from ci_grade import base_run, redact
    from ci_grade.commands.shared import judge
    from ci_grade.gate.store import load_baselines, names_a_run, why_missing
    from ci_grade.github.ownership import hand_over
    from ci_grade.report import console, outputs
    from ci_grade.report.sections import Section

    workspace = event.workspace
    notes: list[str] = []
    with _in_folder(workdir):
        base = base_run.resolve(inputs.baseline, workdir, event.payload) if inputs.baseline and names_a_run(inputs.baseline) else None
        baseline = load_baselines(inputs.baseline, workdir) if inputs.baseline and base is None else None
        outcome, options, cache = _evaluate(commands, inputs, workdir, stop)
        if base is not None:
            with commands.group("ci-grade: evaluate the base"), commands.commands_stopped():
                baseline, notes = base_run.measure(base, options)
        run = outcome.run
        paths = list(dict.fromkeys([*outcome.output_paths, inputs.results_path, inputs.junit_path]))
        problems: list[str] = []  # a file that cannot be written is a warning: the verdict stands
        try:
            comparison = judge(outcome, options, baseline, policy, 0 if stop.requested else inputs.confirm, around=lambda: _confirm_group(commands))
        except Exception:  # the run's results are written whatever becomes of the comparison
            hand_over(outputs.write_outputs(paths, run, outcome.config_for_output, max_output_chars=inputs.max_output_chars, problems=problems), workspace)
            raise
        if inputs.baseline and baseline is None and base is None:
            comparison.baseline_missing = why_missing(inputs.baseline, workdir)
        written = outputs.write_outputs(paths, run, outcome.config_for_output, comparison.gate_notes(), max_output_chars=inputs.max_output_chars, problems=problems)
        hand_over([*written, *(cache.rglob("*") if cache and cache.is_dir() else [])], workspace)
        with commands.commands_stopped():
            print(console.summary(run))
            print(redact.text(f"verdict: {comparison.verdict}: {comparison.reason}"), flush=True)
        warnings = [f"baseline {inputs.baseline} not found: {comparison.baseline_missing}; judged by thresholds only"] if comparison.baseline_missing else notes
        section = Section(run.info.config_name, run, comparison)
        return Graded([section], [Path(inputs.results_path).resolve()], Path(inputs.junit_path).resolve(), [*problems, *warnings])


def merge_and_compare(commands: WorkflowCommands, inputs: ActionInputs, policy: GatePolicy, workdir: Path, workspace: Path) -> Graded:
    """Merge the shards' results (no eval), compare each config with its baseline, write the files."""
    from ci_grade import merging, redact
    from ci_grade.github.ownership import hand_over
    from ci_grade.report import console

    with _in_folder(workdir):
        merged = merging.merge(inputs.merge, workdir, inputs.baseline, policy)
        written = merging.write_outputs([inputs.results_path, inputs.junit_path], merged, inputs.comment_title)
        hand_over(written, workspace)
        with commands.commands_stopped():
            for part, section in zip(merged.pooled, merged.sections, strict=True):
                print(f"{part.name}: merged {', '.join(part.paths)}")
                print(console.summary(part.run))
                print(redact.text(f"verdict: {section.comparison.verdict}: {section.comparison.reason}"), flush=True)
        results = [Path(merging.for_config(inputs.results_path, part, merged.several)).resolve() for part in merged.pooled]
        return Graded(merged.sections, results, Path(inputs.junit_path).resolve(), merged.warnings)


def run_shard(commands: WorkflowCommands, env: Mapping[str, str], inputs: ActionInputs, workdir: Path, workspace: Path, stop: Stop) -> int:
    """One shard: write its results and JUnit, a line in the summary, two outputs; exit 0 whatever
    its tests did (the merge job gives the verdict)."""
    from ci_grade.errors import ExitCode
    from ci_grade.github.annotations import workspace_path
    from ci_grade.github.ownership import hand_over
    from ci_grade.report import console, outputs

    with _in_folder(workdir):
        outcome, _, cache = _evaluate(commands, inputs, workdir, stop)
        run = outcome.run
        paths = list(dict.fromkeys([*outcome.output_paths, inputs.results_path, inputs.junit_path]))
        written = outputs.write_outputs(paths, run, outcome.config_for_output, max_output_chars=inputs.max_output_chars)
        hand_over([*written, *(cache.rglob("*") if cache and cache.is_dir() else [])], workspace)
        with commands.commands_stopped():
            print(console.summary(run), flush=True)
    stats, shard = run.stats, inputs.shard
    line = f"shard {shard}: {stats.total} rows, {stats.successes} passed, {stats.failures} failed, {stats.errors} errors; the merge job gives the verdict"
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


def publish_comment(commands: WorkflowCommands, event: ActionEvent, inputs: ActionInputs, report: str, marker: str) -> tuple[str, str | None]:
    """Post or update the sticky comment; returns (url, problem) and never raises for GitHub errors."""
    from ci_grade.errors import GitHubError
    from ci_grade.github.comment import upsert_comment

    if not inputs.comment:
        return "", None
    number = inputs.pull_request_number or event.pull_request_number
    if number is None and event.run_head is None:
        why = "its event payload could not be read" if event.problem else f"{event.name or 'this run'} is not a pull-request event"
        commands.line(f"ci-grade: {why}: no PR comment, the report is in the job summary")
        return "", None
    if not inputs.github_token:
        return "", "no GitHub token (input `github-token` or GITHUB_TOKEN): the PR comment was skipped; the report is in the job summary"
    if not event.repository:
        return "", "GITHUB_REPOSITORY is not set: the PR comment was skipped; the report is in the job summary"
    try:
        if number is None and event.run_head is not None:  # a workflow_run: its pull request, by head
            from ci_grade.github.pulls import pull_request_of

            number = pull_request_of(event.api_url, inputs.github_token, event.repository, *event.run_head)
        if number is None:
            if event.run_head is not None:
                label, sha = event.run_head
                commands.line(f"ci-grade: no open pull request has {label} at {sha[:12]} as its head: no PR comment, the report is in the job summary")
            return "", None
        posted = upsert_comment(
            api_url=event.api_url, token=inputs.github_token, repository=event.repository, number=number, marker=marker, body=report,
            author=inputs.comment_author,
        )
    except GitHubError as exc:
        hint = ""
        if exc.status == 401:
            hint = " (GitHub did not accept the token: check the input `github-token`)"
        elif exc.forbidden and event.from_fork and event.name != "workflow_run":
            hint = " (this pull request comes from a fork, whose token is read-only: to comment on it, see the docs' two-workflow pattern)"
        elif exc.forbidden:
            hint = " (the workflow needs `permissions: pull-requests: write`)"
        return "", f"could not post the PR comment: {exc}{hint}; the report is in the job summary"
    commands.line(f"ci-grade: {'created' if posted.created else 'updated'} the PR comment {posted.url}")
    if posted.author:
        commands.warning(
            f"the PR comment is written as {posted.author}: set the input comment-author: {posted.author} so later runs "
            "update it instead of posting a comment and deleting it again",
            title="ci-grade",
        )
    return posted.url, None


def emit_annotations(commands: WorkflowCommands, graded: Graded, warnings: list[str], workdir: Path, workspace: Path) -> None:
    """Warnings about the run first (they are few and matter), then one annotation per failing test."""
    from ci_grade.github.annotations import annotate, findings

    for text in warnings:
        commands.warning(text, title="ci-grade")
    items = [item for s in graded.sections for item in findings(s.run, s.comparison.gate_notes(), workdir, workspace)]
    annotate(commands, sorted(items, key=lambda item: item.rank), "error" if graded.gate_failed else "warning")


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def step_outputs(graded: Graded, workspace: Path, comment_url: str) -> dict[str, str]:
    """The step's outputs (documented in action.yml)."""
    from ci_grade.github.annotations import workspace_path

    def shown(path: Path) -> str:
        return workspace_path(str(path), workspace, workspace) or str(path)

    from ci_grade.report.sections import verdict

    comparisons = [s.comparison for s in graded.sections]
    scores = [score for c in comparisons for score in c.head_scores]
    passed, total = sum(c.pass_rate_head.passed for c in comparisons), sum(c.pass_rate_head.total for c in comparisons)
    p_values = [p for c in comparisons if (p := c.mean_score.p_adjusted if c.mean_score.p_adjusted is not None else c.mean_score.p_value) is not None]
    return {
        "passed": "false" if graded.gate_failed else "true",
        "verdict": verdict(graded.sections),
        "pass-rate": _number(passed / total if total else 0.0),
        "score": _number(sum(scores) / len(scores) if scores else None),
        "score-delta": _number(_pooled_delta(comparisons)),
        "p-value": _number(min(p_values) if p_values else None),
        "regressions": str(sum(len(c.regressions) for c in comparisons)),
        "failures": str(sum(len(c.failures) for c in comparisons)),
        "known-failures": str(sum(len(c.known_failures) for c in comparisons)),
        "not-significant": str(sum(len(c.flaky_flips) for c in comparisons)),
        "errors": str(sum(c.error_rows for c in comparisons)),
        "baseline": "mismatched" if any(c.baseline_mismatch for c in comparisons) else "compared" if any(c.has_baseline for c in comparisons) else "none",
        "results-path": "\n".join(shown(path) for path in graded.results_paths),
        "junit-path": shown(graded.junit_path),
        "comment-url": comment_url,
    }


def _pooled_delta(comparisons: list[Comparison]) -> float | None:
    """The mean score's change over the tests scored in both runs, pooled over configs."""
    deltas = [(c.mean_score.delta, c.mean_score.tests) for c in comparisons if c.mean_score.delta is not None]
    if len(deltas) == 1:
        return deltas[0][0]
    weight = sum(n for _, n in deltas)
    return sum(d * n for d, n in deltas) / weight if weight else None


def warning_note(problem: str | None) -> str:
    """A GitHub-style warning block for the job summary (empty without a problem)."""
    from ci_grade.report.markdown_escape import Escaper

    return f"\n> [!WARNING]\n> {Escaper().inline(problem, limit=1000)}\n" if problem else ""


def report_failure(commands: WorkflowCommands, env: Mapping[str, str], event: ActionEvent, inputs: ActionInputs | None, exc: Exception) -> None:
    """A run that could not complete: an error annotation (at the config line when known), the
    sticky comment (so it never shows a stale result; not from a shard job) and the job summary say why."""
    from ci_grade import redact
    from ci_grade.errors import CiGradeError, ConfigError
    from ci_grade.github.annotations import workspace_path
    from ci_grade.github.comment import marker_for
    from ci_grade.report.markdown_escape import Escaper

    message = redact.text(str(exc) if isinstance(exc, CiGradeError) else f"internal error: {type(exc).__name__}: {exc}")
    file = line = None
    if isinstance(exc, ConfigError) and exc.file:
        file = workspace_path(exc.file, Path.cwd(), event.workspace)
        line = exc.line if file else None
    commands.annotate("error", message, file=file, line=line, title="ci-grade could not run")
    title = inputs.comment_title if inputs else "ci-grade"
    report = f"### {Escaper().inline(title, limit=200)}: could not run\n\n{Escaper().inline(message, limit=4000)}\n"
    problem = None
    if inputs is not None and inputs.shard is None:  # a shard never comments: the merge job will fail too
        marker = marker_for(inputs.comment_title)
        _, problem = publish_comment(commands, event, inputs, f"{report}\n{marker}\n", marker)
        if problem:
            commands.warning(problem, title="ci-grade")
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        from ci_grade.github.env_files import append_summary

        publish(commands, "the job summary", lambda: append_summary(Path(summary_path), report + warning_note(problem)))
