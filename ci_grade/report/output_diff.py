"""A regression's output before and after, as a compact diff in a fenced code block.

Short outputs (up to `SHORT_LINES` lines each) are shown whole: the baseline's lines as `-`, this
run's as `+`. Longer ones as a unified diff with one line of context, at most `MAX_LINES` lines.
Lines are cut to `LINE_CHARS` characters, secrets masked, control and bidi characters dropped,
`@name` and `#123` split by a zero-width joiner as everywhere in the report.
The fence is longer than any run of backticks in the text, so nothing in an output can close it;
inside a code block nothing is a link, a mention or HTML.
"""

from __future__ import annotations

import difflib
import re

from ci_grade.report.markdown_escape import ZWJ, Escaper, Md, clip
from ci_grade.report.wording import plural
from ci_grade.safe_text import well_formed

SHORT_LINES = 3
MAX_LINES = 16
LINE_CHARS = 160
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_TICKS = re.compile("`+")
_REFERENCE = re.compile(r"(@|#(?=\d)|\bGH-(?=\d))(?=[A-Za-z0-9])", re.I)


def _lines(text: str, escaper: Escaper) -> list[str]:
    clean = _INVISIBLE.sub("", escaper.redactor.text(well_formed(text)).replace("\t", "    "))
    clean = _REFERENCE.sub(lambda m: m.group(1) + ZWJ, clean)  # nobody pinged, no issue referenced
    return [clip(line.rstrip(), LINE_CHARS) for line in clean.splitlines()] or [""]


def _changes(before: list[str], after: list[str]) -> list[str]:
    if len(before) <= SHORT_LINES and len(after) <= SHORT_LINES:
        return [f"- {line}" for line in before] + [f"+ {line}" for line in after]
    diff = difflib.unified_diff(before, after, lineterm="", n=1)
    return [f"{line[0]} {line[1:]}" if line[:1] in "+- " else line for line in diff if not line.startswith(("---", "+++"))]


def output_diff(before: str, after: str, escaper: Escaper, indent: str = "    ") -> Md:
    """The fenced diff of `before` (the baseline's output) and `after` (this run's), each line
    indented by `indent` (to sit inside a list item)."""
    changes = _changes(_lines(before, escaper), _lines(after, escaper))
    hidden = len(changes) - MAX_LINES
    if hidden > 0:
        changes = [*changes[:MAX_LINES], f"… {plural(hidden, 'more changed line')}"]
    longest = max((len(run) for line in changes for run in _TICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    # a line of spaces only would be a blank line inside the list item: keep a visible mark
    body = [f"{indent}{line if line.strip() else line + '¶'}" for line in changes]
    return Md("\n".join([f"{indent}{fence}diff", *body, f"{indent}{fence}"]))
