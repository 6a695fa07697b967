"""The runner's environment files: step outputs (`$GITHUB_OUTPUT`) and the job summary (`$GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from pathlib import Path

from ci_grade import redact
from ci_grade.safe_text import well_formed

# GitHub rejects a step summary above 1 MiB; keep a margin for what other tools append.
SUMMARY_LIMIT_BYTES = 1_000_000
_OUTPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def format_output(name: str, value: str) -> str:
    """One output in the heredoc form, with a random delimiter that cannot occur in the value."""
    if not _OUTPUT_NAME.match(name):
        raise ValueError(f"invalid output name {name!r}")
    while True:
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        if delimiter not in value:
            break
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def write_outputs(path: Path, values: Mapping[str, str]) -> None:
    """Append outputs to the `$GITHUB_OUTPUT` file (secrets masked)."""
    text = "".join(format_output(name, well_formed(redact.text(value))) for name, value in values.items())
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write(text)


def fit_bytes(text: str, budget: int, note: str) -> str:
    """`text` cut at a line boundary so that it plus `note` fits in `budget` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    room = max(0, budget - len(note.encode("utf-8")))
    cut = data[:room].decode("utf-8", errors="ignore")
    newline = cut.rfind("\n")
    return (cut[: newline + 1] if newline > 0 else cut) + note


def append_summary(path: Path, markdown: str, limit: int = SUMMARY_LIMIT_BYTES) -> bool:
    """Append to the step summary within the step's size limit; True if it had to be cut."""
    used = path.stat().st_size if path.exists() else 0
    budget = max(0, limit - used)
    note = "\n_The rest of this report was cut to fit GitHub's job summary limit; see the results files._\n"
    markdown = well_formed(redact.text(markdown))
    body = markdown if markdown.endswith("\n") else markdown + "\n"
    fitted = fit_bytes(body, budget, note)
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write(fitted)
    return fitted != body
