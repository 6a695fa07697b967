"""The sticky comment while the evaluation runs: it says so as soon as the rows are planned.

The action posts it in place of whatever the comment said before (an earlier run's verdict
must not look current while this one runs); the report replaces it at the end, a cancelled run's
included ("cancelled", with its partial results). A run killed before it could report leaves this
status, which says when it started and links the workflow run, never a stale verdict.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ci_grade.report.links import Links
from ci_grade.report.markdown_escape import Escaper
from ci_grade.report.wording import plural


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
