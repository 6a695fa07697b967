"""The base evaluated in the same job (`--baseline run:REF`, the action's `baseline: run`).

The merge base of REF and HEAD is checked out in a temporary git worktree (removed afterwards,
also on errors and signals), and its config, at the same path relative to the repository, is
evaluated there with the same options as the head: providers, graders, repeats, filters, the
response cache (requests identical in both runs are served once when it is on), the time limit
and the spending limit. The run becomes the baseline the head is compared with, as a stored
baseline is. Nothing is pushed or stored, so it needs no write token (safe on forks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_grade.errors import ConfigError, InfrastructureError, UsageError
from ci_grade.evaluate import EvalOptions, evaluate
from ci_grade.gate.baseline import Baseline, baseline_from_run
from ci_grade.gate.store import RUN_SOURCE, first_line, git

FETCH_HINT = "in GitHub Actions, check out with `fetch-depth: 0` (actions/checkout)"


@dataclass(frozen=True)
class BaseCommit:
    """The commit whose config is evaluated as the baseline."""

    ref: str
    """What it was named by: REF of `run:REF`, or the pull request's base branch."""
    sha: str
    """The merge base of `ref` and HEAD."""
    top: Path
    """The repository's top folder."""

    @property
    def label(self) -> str:
        return f"the merge base {self.sha[:12]} of {self.ref}"


def _pull_request_base(payload: Mapping[str, Any]) -> tuple[str, str] | None:
    """The pull request's base as (name, commit) from an event payload; None when it has none."""
    base = payload.get("pull_request")
    base = base.get("base") if isinstance(base, dict) else None
    sha = base.get("sha") if isinstance(base, dict) else None
    if not isinstance(sha, str) or not sha:
        return None
    name = base.get("ref") if isinstance(base, dict) else None
    return (name if isinstance(name, str) and name else sha[:12]), sha


def resolve(source: str, cwd: Path, payload: Mapping[str, Any]) -> BaseCommit:
    """The commit `run:REF` (or `run`: the pull request's base in `payload`) names; a usage error
    (exit 2, before any model is called) when git cannot find it or its merge base with HEAD."""
    ref = source[len(RUN_SOURCE) + 1:].strip()
    name = ref
    if source == RUN_SOURCE:
        found = _pull_request_base(payload)
        if found is None:
            raise UsageError("baseline `run` evaluates the pull request's base, and this run's event names none (not a pull-request event): name the base, e.g. run:origin/main")
        name, ref = found
    if not ref:
        raise UsageError(f"invalid baseline {source!r}: expected run:REF, e.g. run:origin/main")
    top = git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise UsageError(f"baseline {source}: {cwd} is not in a git repository ({first_line(Exception(top.stderr))})")
    root = Path(top.stdout.strip()).resolve()
    if git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root).returncode != 0:
        raise UsageError(f"baseline {source}: git does not know {name} in this clone: fetch it ({FETCH_HINT})")
    merge_base = git(["merge-base", ref, "HEAD"], root)
    if merge_base.returncode != 0 or not merge_base.stdout.strip():
        raise UsageError(f"baseline {source}: {name} and HEAD have no merge base in this clone (a shallow clone? {FETCH_HINT})")
    return BaseCommit(ref=name, sha=merge_base.stdout.strip(), top=root)


@contextlib.contextmanager
def checked_out(base: BaseCommit) -> Iterator[Path]:
    """A detached worktree of `base.sha` in a temporary folder, removed (and unregistered) on exit."""
    holder = Path(tempfile.mkdtemp(prefix="ci-grade-base-"))
    tree = holder / "tree"
    try:
        added = git(["worktree", "add", "--detach", str(tree), base.sha], base.top, timeout=600)
        if added.returncode != 0:
            raise InfrastructureError(f"git worktree add {base.sha[:12]} failed: {first_line(Exception(added.stderr))}")
        yield tree
    finally:
        with contextlib.suppress(InfrastructureError):
            git(["worktree", "remove", "--force", str(tree)], base.top)
        shutil.rmtree(holder, ignore_errors=True)
        with contextlib.suppress(InfrastructureError):
            git(["worktree", "prune"], base.top)


def _in_tree(path: str, top: Path, tree: Path) -> str:
    """A config path (or glob) of the head's checkout as the same path in the base's worktree:
    relative ones stay (they are read from the same folder there), absolute ones inside the
    repository move into the worktree."""
    given = Path(path).expanduser()
    if not given.is_absolute():
        return path
    try:
        return str(tree / given.relative_to(top))
    except ValueError:
        return path  # outside the repository: the same file for both runs


def _absolute(path: str, here: Path) -> str:
    """A file that belongs to this job rather than to a commit (an .env file, the cache, an
    earlier results file), read from the same place by both runs."""
    given = Path(path).expanduser()
    return str(given if given.is_absolute() else here / given)


def _options_for(options: EvalOptions, tree: Path, top: Path, here: Path) -> EvalOptions:
    """The head's options for the base's worktree; everything else (the stop, repeats, filters,
    graders, the response cache and the spending limit) is shared."""
    filters = dataclasses.replace(options.filters, earlier=tuple((kind, _absolute(path, here)) for kind, path in options.filters.earlier))
    return dataclasses.replace(
        options,
        configs=[_in_tree(path, top, tree) for path in options.configs],
        outputs=[],
        cwd=None,
        env_files=[_absolute(path, here) for path in options.env_files],
        cache_dir=_absolute(options.cache_dir, here) if options.cache_dir else None,
        filters=filters,
        retry_errors=None,
    )


def _missing(configs: list[str], folder: Path) -> list[str]:
    """The named config files (not globs) that the base does not have."""
    return [path for path in configs if not any(ch in path for ch in "*?[") and not (folder / Path(path).expanduser()).exists()]


def measure(base: BaseCommit, options: EvalOptions) -> tuple[Baseline | None, list[str]]:
    """Evaluate the base's config in a worktree: its baseline, and warnings for the report. A base
    without the config, or whose config cannot run, gives no baseline (the gate then judges
    thresholds only, which fails on any failing test) and a warning saying why."""
    if options.stop.requested:
        return None, [f"{options.stop.reason}: {base.label} was not evaluated, no baseline"]
    here = (options.cwd or Path.cwd()).resolve()
    with checked_out(base) as tree:
        folder = tree / here.relative_to(base.top)
        base_options = _options_for(options, tree, base.top, here)
        missing = _missing(base_options.configs, folder) if folder.is_dir() else [str(here.relative_to(base.top))]
        if missing:
            return None, [f"{', '.join(missing)} does not exist at {base.label}: no baseline, the gate judged thresholds only"]
        try:
            with contextlib.chdir(folder):
                outcome = evaluate(base_options)
        except (ConfigError, UsageError) as exc:
            reason = str(exc).replace(f"{tree}/", "")
            return None, [f"the base's config ({base.label}) could not be evaluated: {reason}; no baseline, the gate judged thresholds only"]
        run = outcome.run
        run.info.commit = base.sha
        run.info.config_files = [_relative(Path(name), tree) for name in run.info.config_files]
        run.info.config_name = " + ".join(run.info.config_files) if run.info.config_files else run.info.config_name
        baseline = baseline_from_run(run)
    baseline.measured = base.label
    return baseline, [f"base ({base.label}): {warning}" for warning in run.warnings]


def _relative(path: Path, tree: Path) -> str:
    try:
        return path.resolve().relative_to(tree.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
