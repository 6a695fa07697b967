"""The sticky comment while the evaluation runs: it says so as soon as the rows are planned.

The action posts it in place of whatever the comment said before (an earlier run's verdict
must not look current while this one runs); the report replaces it at the end, a cancelled run's
included ("cancelled", with its partial results). A run killed before it could report leaves this
status, which says when it started and links the workflow run, never a stale verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ci_grade.report.links import Links
from ci_grade.report.markdown_escape import Escaper
from ci_grade.report.wording import plural

if TYPE_CHECKING:
    from ci_grade.github.workflow_commands import WorkflowCommands


def announcer(commands: WorkflowCommands, title: str, links: Links, post: Callable[[str], object]) -> Callable[[int], None]:
    """What the evaluation calls when its rows start: `post` the running status, with workflow
    commands acted on (the evaluation's log has them stopped), so a warning about it is seen."""

    def started(rows: int) -> None:
        with commands.commands_resumed():
            post(running_body(title, rows, links))

    return started


def running_body(title: str, rows: int, links: Links, started: datetime | None = None) -> str:
    """The status of a run that has just started: rows planned, start time, commit and run links."""
    escaper = Escaper()
    when = (started or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"**{escaper.inline(title, 120)}**"]
    if links.commit:
        parts.append(f"commit [{escaper.inline(links.sha[:7], 7)}]({links.commit})")
    if links.run:
        parts.append(f"[workflow run]({links.run})")
    return "\n".join([
        f"### ○ **Running** · {plural(rows, 'row')} planned · started {when}",
        "",
        " · ".join(parts),
        "",
        "The evaluation is running; this comment is replaced by its report when it ends. "
        "If the workflow run has ended and this is still here, the run was stopped before it could report: see its log.",
        "",
    ])
