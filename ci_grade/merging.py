"""Shard results in, one verdict out (used by `merge` and the action's `merge` input).

Reads results files (paths or globs), pools each config's complete shard set (results/pooling.py),
compares each config with its baseline as `eval` does, and writes the outputs. With several
configs, a path for one config's file (a results JSON, a baseline) takes the config's name part
in place of `{config}`, or before its extension when it has no `{config}`: `base.json` becomes
`base-evals-support.json` for `evals/support.yaml`. Markdown and JUnit outputs hold every config.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path

from ci_grade.errors import UsageError
from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.gate.store import load_baselines, save_baseline, why_missing
from ci_grade.report import formats
from ci_grade.report.document import Document, Part
from ci_grade.report.sections import Section
from ci_grade.results.pooling import Pooled, ShardFile, pool_files
from ci_grade.results.promptfoo import read_results_and_config

PLACEHOLDER = "{config}"
_EXTENSION = re.compile(r"(\.junit\.xml|\.[A-Za-z0-9]+)$")


@dataclass
class Merged:
    """Every config's pooled results and their comparison, in input order."""

    pooled: list[Pooled]
    sections: list[Section]
    warnings: list[str]

    @property
    def several(self) -> bool:
        return len(self.pooled) > 1


def expand(patterns: list[str], cwd: Path) -> list[str]:
    """The files the patterns name, each once; a glob matching nothing is a usage error."""
    found: list[str] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, root_dir=cwd, recursive=True))
            if not matches:
                raise UsageError(f"no results files match {pattern}")
            found += matches
        else:
            found.append(pattern)
    unique: dict[Path, str] = {}
    for name in found:
        unique.setdefault((cwd / name).resolve(), name)
    return list(unique.values())


def for_config(path: str, pooled: Pooled, several: bool) -> str:
    """`path` for one config's file: `{config}` replaced; with several configs and no `{config}`,
    the config's name part added before the extension."""
    if PLACEHOLDER in path:
        return path.replace(PLACEHOLDER, pooled.slug)
    if not several:
        return path
    match = _EXTENSION.search(path)
    return path[: match.start()] + f"-{pooled.slug}" + match[1] if match else f"{path}-{pooled.slug}"


def merge(patterns: list[str], cwd: Path, baseline: str | None, policy: GatePolicy) -> Merged:
    """Read, pool and compare; a missing baseline is a warning (thresholds only), as in `eval`."""
    files = []
    for name in expand(patterns, cwd):
        run, config = read_results_and_config(str(cwd / name))
        files.append(ShardFile(name, run, config))
    pooled = pool_files(files)
    several = len(pooled) > 1
    sections, warnings = [], []
    for part in pooled:
        source = for_config(baseline, part, several) if baseline else None
        base = load_baselines(source, cwd) if source else None
        comparison = compare(part.run, base, policy, every_test=False)
        if source and base is None:
            comparison.baseline_missing = why_missing(source, cwd)
            warnings.append(f"no baseline at {source}{f' for {part.name}' if several else ''}: {comparison.baseline_missing}; the gate judges thresholds only")
        sections.append(Section(part.name, part.run, comparison))
    return Merged(pooled, sections, warnings)


def check_outputs(paths: list[str]) -> None:
    """Unsupported types exit 2 before anything is read (a `{config}` in a path is allowed)."""
    formats.check_outputs([path.replace(PLACEHOLDER, "config") for path in paths])


def write_outputs(paths: list[str], merged: Merged, title: str) -> list[Path]:
    """Reports (Markdown, JUnit, HTML) hold every config; other formats are written once per config."""
    parts = [Part(s.name, s.run, s.comparison, p.config) for p, s in zip(merged.pooled, merged.sections, strict=True)]
    doc = Document(parts, title=title, gate_report=True)
    return formats.write_files(paths, doc, per_config=lambda path, index: for_config(path, merged.pooled[index], merged.several))


def save_baselines(path: str, merged: Merged, keep: int | None = None) -> list[Path]:
    """Each config's results as a baseline file, keeping the last `keep` runs of history."""
    saved = []
    for part in merged.pooled:
        target = Path(for_config(path, part, merged.several))
        save_baseline(baseline_from_run(part.run), target, keep)
        saved.append(target)
    return saved
