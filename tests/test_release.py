"""The release: pinning the prebuilt image in action.yml, and the workflow step that tags it.

The step's shell is taken from .github/workflows/release.yml and run against a local bare
repository standing in for GitHub, so what is tested is what the workflow runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.test_static_checks import assert_clean, run

SCRIPT = REPO / ".github" / "scripts" / "pin_action_image.py"
RELEASE = REPO / ".github" / "workflows" / "release.yml"
DIGEST = "sha256:" + "0123456789abcdef" * 4
STEP = "Pin the image in action.yml, tag the release commit, move the major tag"


def pin(action: Path, reference: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, SCRIPT, action, reference], capture_output=True, text=True, timeout=60)


def test_main_builds_the_image_from_the_dockerfile() -> None:
    """`uses: org/ci-grade@main` builds from source; only release commits use the prebuilt image."""
    assert yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["runs"]["image"] == "Dockerfile"


def test_pinning_changes_only_runs_image_and_stays_valid(tmp_path: Path) -> None:
    original = (REPO / "action.yml").read_text(encoding="utf-8")
    action = tmp_path / "action.yml"
    action.write_text(original, encoding="utf-8")
    reference = f"ghcr.io/org/ci-grade:1.2.3@{DIGEST}"
    result = pin(action, reference)
    assert result.returncode == 0, result.stderr
    pinned = action.read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(original.splitlines(), pinned.splitlines(), strict=True) if a != b]
    assert changed == [("  image: Dockerfile", f"  image: docker://{reference}")]
    before, after = yaml.safe_load(original), yaml.safe_load(pinned)
    assert after["runs"].pop("image") == f"docker://{reference}"
    before["runs"].pop("image")
    assert after == before
    assert_clean(run("check-jsonschema", "--builtin-schema", "vendor.github-actions", action))
    assert_clean(run("zizmor", "--offline", "--persona", "pedantic", action))
    assert (REPO / "action.yml").read_text(encoding="utf-8") == original


@pytest.mark.parametrize(
    "reference",
    [
        "ghcr.io/org/ci-grade:1.2.3",  # no digest: the tag could be pushed again
        f"ghcr.io/org/ci-grade@{DIGEST}",  # no tag
        f"ghcr.io/Org/ci-grade:1.2.3@{DIGEST}",  # registries want lowercase names
        f"docker://ghcr.io/org/ci-grade:1.2.3@{DIGEST}",  # the script adds the scheme
        "ghcr.io/org/ci-grade:1.2.3@sha256:abc",
        f"ghcr.io/org/ci-grade:1.2.3@{DIGEST}\nusing: node20",
    ],
)
def test_pinning_refuses_a_reference_without_tag_and_digest(tmp_path: Path, reference: str) -> None:
    action = tmp_path / "action.yml"
    shutil.copy(REPO / "action.yml", action)
    result = pin(action, reference)
    assert result.returncode == 2 and "tag and a sha256 digest" in result.stderr
    assert action.read_bytes() == (REPO / "action.yml").read_bytes()


def test_pinning_refuses_an_action_that_does_not_build_the_dockerfile(tmp_path: Path) -> None:
    action = tmp_path / "action.yml"
    shutil.copy(REPO / "action.yml", action)
    assert pin(action, f"ghcr.io/org/ci-grade:1.2.3@{DIGEST}").returncode == 0
    again = pin(action, f"ghcr.io/org/ci-grade:1.2.4@{DIGEST}")
    assert again.returncode == 2 and "found 0" in again.stderr
    assert "ci-grade:1.2.3@" in action.read_text(encoding="utf-8")
    action.write_text("name: x\ndescription: y\nruns:\n  using: composite\n  steps: []\n", encoding="utf-8")
    assert pin(action, f"ghcr.io/org/ci-grade:1.2.3@{DIGEST}").returncode == 2


def test_release_workflow_has_least_permissions_and_pinned_actions() -> None:
    text = RELEASE.read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    assert workflow[True] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}  # YAML 1.1 reads `on` as True
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    assert jobs["image"]["permissions"] == {"contents": "read", "packages": "write"}
    assert jobs["release"]["permissions"] == {"contents": "write"}
    assert jobs["release"]["needs"] == "image"
    steps = [step for job in jobs.values() for step in job["steps"]]
    for step in steps:
        if "uses" in step:
            assert re.search(rf"uses: {re.escape(step['uses'])} # v\d+\.\d+\.\d+\n", text), step["uses"]
            assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"] == {"ref": "${{ github.sha }}", "persist-credentials": False}
        assert "${{" not in step.get("run", ""), "pass values to run: through env"
    build = next(step for step in steps if step.get("id") == "build")["with"]
    assert build["push"] is True and build["provenance"] == "mode=max" and build["sbom"] is True


def _release_step() -> tuple[str, dict[str, str]]:
    """The step's script and its literal env entries (those without an expression)."""
    jobs = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))["jobs"]
    step = next(step for step in jobs["release"]["steps"] if step.get("name") == STEP)
    return step["run"], {k: str(v) for k, v in step["env"].items() if "${{" not in str(v)}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, f"git {' '.join(args)}\n{result.stderr}"
    return result.stdout.strip()


@pytest.fixture
def origin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bare repository with main at a commit tagged v1.10.0 and an older release v1.9.0."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (tmp_path / "home").mkdir()
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    git(work, "config", "user.name", "Maintainer")
    git(work, "config", "user.email", "maintainer@example.com")
    (work / ".github" / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, work / ".github" / "scripts" / SCRIPT.name)
    shutil.copy(REPO / "action.yml", work / "action.yml")
    for version in ("1.9.0", "1.10.0"):
        (work / "VERSION").write_text(version, encoding="utf-8")
        git(work, "add", "-A")
        git(work, "commit", "--quiet", "-m", f"Version {version}")
        git(work, "tag", "-a", f"v{version}", "-m", f"v{version}")
    git(work, "push", "--quiet", "origin", "main", "--tags")
    return bare


def release(origin: Path, tag: str) -> Path:
    """Run the workflow's step in a fresh checkout of `tag`, as the release job does."""
    checkout = origin.parent / f"checkout-{tag}"
    git(origin.parent, "clone", "--quiet", str(origin), str(checkout))
    git(checkout, "checkout", "--quiet", "--detach", tag)
    script, step_env = _release_step()
    env = {**os.environ, **step_env, "GH_TOKEN": "not-used", "GITHUB_REF_NAME": tag,
           "IMAGE": "ghcr.io/org/ci-grade", "DIGEST": DIGEST}
    result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                            cwd=checkout, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return checkout


def commit_of(origin: Path, ref: str) -> str:
    return git(origin, "rev-parse", f"{ref}^{{commit}}")


def runs_image(origin: Path, ref: str) -> Any:
    return yaml.safe_load(git(origin, "show", f"{ref}:action.yml"))["runs"]["image"]


def test_release_step_tags_a_pinned_commit_and_moves_the_major_tag(origin: Path) -> None:
    main = commit_of(origin, "main")
    release(origin, "v1.10.0")
    assert runs_image(origin, "v1.10.0") == f"docker://ghcr.io/org/ci-grade:1.10.0@{DIGEST}"
    assert git(origin, "rev-parse", "v1.10.0^") == main  # the release commit sits on the tagged one
    assert git(origin, "diff", "--name-only", "main", "v1.10.0") == "action.yml"
    assert git(origin, "cat-file", "-t", "v1.10.0") == "tag"
    assert commit_of(origin, "v1") == commit_of(origin, "v1.10.0")  # sort -V: 1.10 is newer than 1.9
    assert commit_of(origin, "main") == main and runs_image(origin, "main") == "Dockerfile"
    assert git(origin, "for-each-ref", "--format=%(refname)", "refs/heads") == "refs/heads/main"


def test_a_backport_release_leaves_the_major_tag_on_the_newest(origin: Path) -> None:
    release(origin, "v1.10.0")
    newest = commit_of(origin, "v1")
    backport = origin.parent / "work"
    git(backport, "checkout", "--quiet", "-b", "release-1.9", "v1.9.0")
    (backport / "VERSION").write_text("1.9.1", encoding="utf-8")
    git(backport, "commit", "--quiet", "-am", "Version 1.9.1")
    git(backport, "tag", "v1.9.1")
    git(backport, "push", "--quiet", "origin", "v1.9.1")
    release(origin, "v1.9.1")
    assert runs_image(origin, "v1.9.1") == f"docker://ghcr.io/org/ci-grade:1.9.1@{DIGEST}"
    assert commit_of(origin, "v1") == newest


def test_a_new_major_release_gets_its_own_major_tag(origin: Path) -> None:
    release(origin, "v1.10.0")
    v1 = commit_of(origin, "v1")
    work = origin.parent / "work"
    (work / "VERSION").write_text("2.0.0", encoding="utf-8")
    git(work, "commit", "--quiet", "-am", "Version 2.0.0")
    git(work, "tag", "v2.0.0")
    git(work, "push", "--quiet", "origin", "main", "v2.0.0")
    release(origin, "v2.0.0")
    assert commit_of(origin, "v2") == commit_of(origin, "v2.0.0") != commit_of(origin, "main")
    assert commit_of(origin, "v1") == v1
