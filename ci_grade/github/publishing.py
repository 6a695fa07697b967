"""Publishing a finished run on GitHub: the sticky PR comment, annotations, the job summary and
the step outputs. A GitHub problem (a read-only token on a fork's pull request, an API error, a
runner file that cannot be written) is a warning: it never changes the gate's verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ci_grade import redact
from ci_grade.errors import CiGradeError, ConfigError, GitHubError
from ci_grade.github.annotations import annotate, findings, workspace_path
from ci_grade.github.comment import marker_for, upsert_comment
from ci_grade.github.env_files import SUMMARY_LIMIT_BYTES, append_summary, write_outputs
from ci_grade.github.event import ActionEvent
from ci_grade.github.graded import Graded
from ci_grade.github.inputs import ActionInputs
from ci_grade.github.workflow_commands import WorkflowCommands
from ci_grade.report.links import Links
from ci_grade.report.markdown_escape import Escaper
from ci_grade.report.sections import render_report


def publish_results(commands: WorkflowCommands, env: Mapping[str, str], event: ActionEvent, inputs: ActionInputs, graded: Graded, workdir: Path, links: Links | None = None) -> None:
    """The comment, the annotations (warnings about the run first), the job summary and the outputs."""
    from ci_grade.github.step_outputs import step_outputs

    marker = marker_for(inputs.comment_title)
    report = render_report(graded.sections, title=inputs.comment_title, marker=marker, links=links)
    comment_url, comment_problem = publish_comment(commands, event, inputs, report, marker)
    warnings = [comment_problem] if comment_problem else []
    warnings += graded.warnings
    for section in graded.sections:
        warnings += [*section.comparison.warnings, *section.run.warnings]
    emit_annotations(commands, graded, warnings, workdir, event.workspace)
    if env.get("GITHUB_STEP_SUMMARY"):
        # The summary allows 1 MiB where a comment allows 65,536 characters: render it at its own size.
        note = warning_note(comment_problem)
        summary = render_report(graded.sections, title=inputs.comment_title, max_chars=SUMMARY_LIMIT_BYTES - len(note), max_bytes=SUMMARY_LIMIT_BYTES - len(note.encode()), links=links)
        publish(commands, "the job summary", lambda: append_summary(Path(env["GITHUB_STEP_SUMMARY"]), summary + note))
    if env.get("GITHUB_OUTPUT"):
        values = step_outputs(graded, event.workspace, comment_url)
        publish(commands, "the step outputs", lambda: write_outputs(Path(env["GITHUB_OUTPUT"]), values))


def publish(commands: WorkflowCommands, what: str, write: Callable[[], object]) -> None:
    """Write a runner file; a failure (a full disk, a missing folder) is a warning: the verdict stands."""
    try:
        write()
    except OSError as exc:
        commands.warning(f"could not write {what}: {exc.strerror or exc}; the verdict stands", title="ci-grade")


def publish_comment(commands: WorkflowCommands, event: ActionEvent, inputs: ActionInputs, report: str, marker: str) -> tuple[str, str | None]:
    """Post or update the sticky comment; returns (url, problem) and never raises for GitHub errors."""
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
            inputs.pull_request_number = number  # found once: the report after the running status reuses it
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
        inputs.comment_author = posted.author  # the report after the running status finds it at once
    return posted.url, None


def emit_annotations(commands: WorkflowCommands, graded: Graded, warnings: list[str], workdir: Path, workspace: Path) -> None:
    """Warnings about the run first (they are few and matter), then one annotation per failing test."""
    for text in warnings:
        commands.warning(text, title="ci-grade")
    items = [item for s in graded.sections for item in findings(s.run, s.comparison.gate_notes(), workdir, workspace)]
    annotate(commands, sorted(items, key=lambda item: item.rank), "error" if graded.gate_failed else "warning")


def warning_note(problem: str | None) -> str:
    """A GitHub-style warning block for the job summary (empty without a problem)."""
    return f"\n> [!WARNING]\n> {Escaper().inline(problem, limit=1000)}\n" if problem else ""


def report_failure(commands: WorkflowCommands, env: Mapping[str, str], event: ActionEvent, inputs: ActionInputs | None, exc: Exception) -> None:
    """A run that could not complete: an error annotation (at the config line when known), the
    sticky comment (so it never shows a stale result; not from a shard job) and the job summary say why."""
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
        publish(commands, "the job summary", lambda: append_summary(Path(summary_path), report + warning_note(problem)))
