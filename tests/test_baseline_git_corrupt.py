"""A `git:REF:PATH` baseline that git cannot give: an object that is there but cannot be read, or a
folder git cannot start in. The error names what failed and why, instead of passing for a missing
baseline."""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import pytest

from ci_grade.errors import ExitCode, InfrastructureError
from ci_grade.gate.store import load_baseline


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def test_a_corrupt_object_is_an_infrastructure_error_naming_ref_and_path(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    content = b'{"version": 1, "tests": {}}\n'
    (tmp_path / "baseline.json").write_bytes(content)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "baseline")
    oid = _git(tmp_path, "rev-parse", "main:baseline.json").strip()
    loose = tmp_path / ".git" / "objects" / oid[:2] / oid[2:]
    loose.chmod(0o644)
    # The header still inflates (the object "exists"), the checksum at the end does not match.
    compressed = zlib.compress(b"blob %d\x00" % len(content) + content)
    loose.write_bytes(compressed[:-4] + bytes(4))
    with pytest.raises(InfrastructureError) as info:
        load_baseline("git:main:baseline.json", tmp_path)
    message = str(info.value)
    assert message.startswith("git show main:baseline.json failed: ")
    assert "inflate" in message or "corrupt" in message
    assert info.value.exit_code == ExitCode.INFRASTRUCTURE


def test_git_that_cannot_start_in_the_folder_is_an_infrastructure_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    with pytest.raises(InfrastructureError) as info:
        load_baseline("git:main:baseline.json", not_a_folder)
    assert str(info.value).startswith("git failed: ") and "Not a directory" in str(info.value)


def test_a_git_error_without_a_message_is_named_by_its_type() -> None:
    from ci_grade.gate.store import first_line

    assert first_line(Exception("  \n")) == "Exception"
    assert first_line(ValueError("first\nsecond")) == "first"
