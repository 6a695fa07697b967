"""Reading and writing baselines: a baseline file, any results JSON (ci-grade's or promptfoo's own),
or `git:REF:PATH` (e.g. the base branch's committed baseline). `run:REF`, the base evaluated in
the same job, is `ci_grade.base_run`'s."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ci_grade import redact
from ci_grade.atomic import write_atomic
from ci_grade.config import files
from ci_grade.errors import ConfigError, InfrastructureError, UsageError
from ci_grade.gate.baseline import BASELINE_VERSION, Baseline, baseline_from_run, baseline_from_runs
from ci_grade.gate.history import DEFAULT_KEEP, RunPoint, extend
from ci_grade.results.models import EvalRun
from ci_grade.safe_text import json_dumps

GIT_PREFIX = "git:"
RUN_SOURCE = "run"


def names_a_run(source: str | None) -> bool:
    """Whether a baseline source asks for the base to be evaluated in this job (`run`, `run:REF`)."""
    return source is not None and (source == RUN_SOURCE or source.startswith(RUN_SOURCE + ":"))


def save_baseline(baseline: Baseline, path: Path, keep: int | None = None) -> None:
    """Write atomically, secrets masked and config paths under the working directory made relative;
    the history of the baseline already at `path` is carried, the last `keep` runs kept (default
    `DEFAULT_KEEP`; a file that cannot be read as a baseline has none to carry)."""
    portable = baseline.model_copy(deep=True)
    portable.history = extend(_previous_history(Path(path)), portable.history, DEFAULT_KEEP if keep is None else keep)
    portable.info.config_files = [_relative(name) for name in portable.info.config_files]
    data = redact.data(portable.model_dump(mode="json"))
    write_atomic(Path(path), json_dumps(data, indent=2) + "\n")


def save_run_baseline(run: EvalRun, path: Path, keep: int | None, problems: list[str]) -> list[Path]:
    """Save `run` as the baseline at `path` (carrying its history): the path written, or none and
    the reason in `problems` (a full disk is a warning: the verdict stands)."""
    try:
        save_baseline(baseline_from_run(run), path, keep)
    except InfrastructureError as exc:
        problems.append(str(exc))
        return []
    return [path]


def _previous_history(path: Path) -> list[RunPoint]:
    if not path.is_file():
        return []
    try:
        return parse_baseline(files.read_text(path, None, "the baseline to replace"), str(path)).history
    except (ConfigError, UsageError, InfrastructureError):
        return []


def _relative(name: str) -> str:
    """A config path relative to the working directory when under it (a committed baseline
    should not carry one machine's absolute paths)."""
    path = Path(name)
    try:
        return path.relative_to(Path.cwd()).as_posix() if path.is_absolute() else name
    except ValueError:
        return name


def load_baseline(source: str, cwd: Path) -> Baseline | None:
    """A baseline from a file, a results JSON or `git:REF:PATH`; None when it does not exist."""
    if names_a_run(source):
        raise UsageError(f"baseline {source} evaluates the base in the same job: only `ci-grade eval` and the action's eval take it (not `compare`, `merge` or a merge job)")
    text = _read_source(source, cwd)
    return None if text is None else parse_baseline(text, source)


def check_finite(baseline: Baseline, source: str, *, baseline_file: bool = False) -> Baseline:
    """`baseline` if every score, spread and weight in it is a finite number; else a ConfigError
    naming the test (a NaN or an infinity would turn every comparison it enters into noise), and
    its key path when `source` is a baseline file (not results)."""
    for test_id, test in baseline.tests.items():
        numbers = [("score", test.score), ("score_spread", test.score_spread)]
        numbers += [(f"assertions[{i}].score", item.score) for i, item in enumerate(test.assertions)]
        for field, values in (("named_scores", test.named_scores), ("named_spreads", test.named_spreads), ("named_weights", test.named_weights)):
            numbers += [(f"{field}.{name}", value) for name, value in values.items()]
        bad = next(((field, value) for field, value in numbers if not math.isfinite(value)), None)
        if bad is not None:
            name = " ".join((test.description or test.name or test_id).split())[:80]
            where = f"tests.{test_id}.{bad[0]}" if baseline_file else None
            raise ConfigError(f"test {name!r} (id {test_id}) has a {bad[0]} of {bad[1]}: a baseline's scores must be finite numbers", file=source, path=where)
    return baseline


def load_baselines(source: str, cwd: Path) -> Baseline | None:
    """`load_baseline`, where `source` may also be a glob of results files (e.g. the last runs of
    main, `.ci-grade/runs/*.json`): several matches fold into one baseline; none is no baseline."""
    if source.startswith(GIT_PREFIX) or not any(ch in source for ch in "*?["):
        return load_baseline(source, cwd)
    pattern = Path(source).expanduser()
    matches = sorted(str(p) for p in (pattern.parent if pattern.is_absolute() else cwd / pattern.parent).glob(pattern.name) if p.is_file())
    return baseline_from_sources(matches, cwd) if matches else None


def why_missing(source: str, cwd: Path) -> str:
    """Why `load_baselines` found no baseline at `source`, in words a reviewer can act on."""
    from ci_grade.config.errors import suggest

    if source.startswith(GIT_PREFIX):
        ref, _, inside = source[len(GIT_PREFIX):].partition(":")
        if git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).returncode != 0:
            branch = ref.removeprefix("origin/")
            return (
                f"{ref} is not in this clone: a shallow checkout holds only the commit it checked out; set "
                f"fetch-depth: 0 on actions/checkout (or run git fetch origin {branch}) so {source} can be read"
            )
        return f"{inside} is not in {ref} (no baseline committed there yet?)"
    if any(ch in source for ch in "*?["):
        return f"no file matches {source}"
    path = Path(source).expanduser()
    folder = (path if path.is_absolute() else cwd / path).parent
    names = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
    return f"{source} does not exist{suggest(path.name, names)}"


def baseline_from_sources(sources: list[str], cwd: Path) -> Baseline:
    """One source as `load_baseline` reads it; several results files of one config (e.g. the last
    runs of main) folded into one baseline whose tests hold every run as a repeat."""
    if len(sources) == 1:
        baseline = load_baseline(sources[0], cwd)
        if baseline is None:
            raise UsageError(f"{sources[0]} does not exist")
        return baseline
    from ci_grade.results.promptfoo import from_promptfoo

    runs = []
    for source in sources:
        text = _read_source(source, cwd)
        if text is None:
            raise UsageError(f"{source} does not exist")
        data = _json_object(text, source)
        if not isinstance(data.get("results"), dict):
            raise ConfigError("expected a results file (results.results[]): only results files combine into one baseline", file=source)
        try:
            runs.append(from_promptfoo(data))
        except (ValueError, TypeError, OverflowError, ValidationError) as exc:
            raise ConfigError(f"unreadable results file: {first_line(exc)}", file=source) from None
    hashes = {run.info.config_hash for run in runs if run.info.config_hash}
    if len(hashes) > 1:
        named = ", ".join(f"{source} ({run.info.config_hash or 'unknown'})" for source, run in zip(sources, runs, strict=True))
        raise UsageError(f"these results come from different configs and cannot form one baseline: {named}")
    return check_finite(baseline_from_runs(runs), ", ".join(sources))


def _read_source(source: str, cwd: Path) -> str | None:
    """The text of a file or of `git:REF:PATH`; None when it does not exist."""
    if source.startswith(GIT_PREFIX):
        return _git_file(source, cwd)
    path = Path(source).expanduser()
    path = path if path.is_absolute() else Path(cwd) / path
    if not path.exists():
        return None
    if path.is_dir():
        raise UsageError(f"baseline {source} is a directory, expected a baseline or results JSON file")
    return files.read_text(path, None, "--baseline")  # a regular file (never a FIFO), within the size limit


def _json_object(text: str, source: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=source, line=exc.lineno) from None
    except RecursionError:
        raise ConfigError("arrays or objects nested too deep", file=source) from None
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object (a ci-grade baseline or a results file)", file=source)
    return data


def parse_baseline(text: str, source: str) -> Baseline:
    """A baseline file's text, or a results JSON's (converted), as a Baseline."""
    data = _json_object(text, source)
    if "tests" in data and "version" in data:
        return check_finite(_baseline_from_data(data, source), source, baseline_file=True)
    if isinstance(data.get("results"), dict):
        from ci_grade.results.promptfoo import from_promptfoo

        try:
            return check_finite(baseline_from_run(from_promptfoo(data)), source)
        except (ValueError, TypeError, OverflowError, ValidationError) as exc:
            raise ConfigError(f"unreadable results file: {first_line(exc)}", file=source) from None
    raise ConfigError("neither a ci-grade baseline (version, tests) nor a results file (results.results[])", file=source)


def _baseline_from_data(data: dict[str, Any], source: str) -> Baseline:
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise ConfigError(f"invalid baseline version {version!r}", file=source, path="version")
    if version > BASELINE_VERSION:
        raise ConfigError(f"baseline version {version} was written by a newer ci-grade (this one reads version {BASELINE_VERSION})", file=source, path="version")
    try:
        return Baseline.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ConfigError(f"invalid baseline: {error['msg']}", file=source, path=where) from None


def first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def git(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise InfrastructureError("git is not installed: a git: or run: baseline needs it") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"git failed: {exc}") from None


def _git_file(source: str, cwd: Path) -> str | None:
    """`git show REF:PATH` in `cwd`; None if REF or PATH does not exist there."""
    ref, sep, path = source[len(GIT_PREFIX):].partition(":")
    if not sep or not ref or not path:
        raise UsageError(f"invalid baseline source {source!r}: expected git:REF:PATH, e.g. git:origin/main:.ci-grade/baseline.json")
    inside = git(["rev-parse", "--is-inside-work-tree"], cwd)
    if inside.returncode != 0:
        raise InfrastructureError(f"cannot read {source}: {Path(cwd)} is not in a git repository ({first_line(Exception(inside.stderr))})")
    if git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).returncode != 0:
        return None
    if git(["cat-file", "-e", f"{ref}:{path}"], cwd).returncode != 0:
        return None
    shown = git(["show", f"{ref}:{path}"], cwd)
    if shown.returncode != 0:
        raise InfrastructureError(f"git show {ref}:{path} failed: {first_line(Exception(shown.stderr))}")
    return shown.stdout
