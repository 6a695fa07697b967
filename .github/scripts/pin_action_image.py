"""Point a release's action.yml at the prebuilt image instead of the Dockerfile.

Rewrites the one `image: Dockerfile` line of `runs:` in place, keeping every other line (and its
comments) as it is. The reference must name a tag and the image's digest, so a release pinned by
tag or commit always runs the same image. Standard library only: it runs on a bare runner.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

USAGE = "usage: pin_action_image.py ACTION_YML ghcr.io/OWNER/REPO:1.2.3@sha256:DIGEST"
REFERENCE = re.compile(r"[a-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9._-]+)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[0-9a-f]{64}")
IMAGE_LINE = re.compile(r"^(?P<indent>[ ]+)image:[ ]*(?P<quote>[\"']?)Dockerfile(?P=quote)[ ]*$", re.M)


class PinError(ValueError):
    """The reference or the action.yml cannot be pinned."""


def pin(text: str, reference: str) -> str:
    """Return action.yml's text with `runs.image` set to `docker://<reference>`."""
    if not REFERENCE.fullmatch(reference):
        raise PinError(f"not a lowercase image reference with a tag and a sha256 digest: {reference!r}")
    runs = re.search(r"^runs:[ ]*\n", text, re.M)
    if runs is None:
        raise PinError("action.yml has no top-level runs: section")
    end = re.search(r"^\S", text[runs.end() :], re.M)
    section = text[runs.end() : runs.end() + end.start()] if end else text[runs.end() :]
    lines = list(IMAGE_LINE.finditer(section))
    if len(lines) != 1:
        raise PinError(f"runs: must have exactly one `image: Dockerfile` line, found {len(lines)}")
    start = runs.end() + lines[0].start()
    stop = runs.end() + lines[0].end()
    return f"{text[:start]}{lines[0]['indent']}image: docker://{reference}{text[stop:]}"


def main(argv: list[str]) -> int:
    """CLI: pin_action_image.py ACTION_YML REFERENCE; exit 2 on bad input."""
    if len(argv) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    path, reference = Path(argv[0]), argv[1]
    try:
        path.write_text(pin(path.read_text(encoding="utf-8"), reference), encoding="utf-8")
    except (OSError, PinError) as error:
        print(f"pin_action_image: {error}", file=sys.stderr)
        return 2
    print(f"{path}: runs.image is docker://{reference}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
