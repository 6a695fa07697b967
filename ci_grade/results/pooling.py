"""Pool shard results (`eval --shard K/N`) back into the results of one whole run.

Files are grouped by their plan fingerprint (`RunInfo.plan_hash`); each group must be a complete
shard set: every shard 1..N exactly once, all of one split, no row twice, as many rows as the
whole plan has. A file without a shard counts as the only shard (1/1). Groups whose config file
is the same but whose fingerprints differ are shards of different configs (the config or a test
file changed between the runs): refused, as are incomplete sets, never merged into a partial
pass. Rows are pooled in plan order and statistics recomputed from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ci_grade.errors import UsageError
from ci_grade.results.models import EvalRun, RunInfo, ShardInfo, TestResult


@dataclass
class ShardFile:
    """One results file read for merging, with the config it records."""

    path: str
    run: EvalRun
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class Pooled:
    """The merged results of one config (one plan)."""

    name: str
    run: EvalRun
    config: dict[str, Any]
    paths: list[str]

    @property
    def slug(self) -> str:
        """The name as a file-name part: `evals/support.yaml` -> `evals-support`."""
        stem = re.sub(r"\.(ya?ml|json)(?=$| )", "", self.name)
        return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.") or "config"


def pool_files(files: list[ShardFile]) -> list[Pooled]:
    """One `Pooled` per config, in the order the configs' first files were given."""
    if not files:
        raise UsageError("no results files to merge")
    groups: dict[str, list[ShardFile]] = {}
    for file in files:
        if not file.run.info.plan_hash:
            raise UsageError(f"{file.path} records no plan fingerprint (written by promptfoo or an older ci-grade): it cannot be merged")
        groups.setdefault(file.run.info.plan_hash, []).append(file)
    _check_configs_differ(groups)
    pooled = [_pool(members) for members in groups.values()]
    names = [p.name for p in pooled]
    slugs = [p.slug for p in pooled]
    if len(set(slugs)) != len(slugs):
        raise UsageError(f"configs {', '.join(names)} have the same file name part; run them from distinct config paths")
    return pooled


def _name(file: ShardFile) -> str:
    info = file.run.info
    return info.config_name or " + ".join(info.config_files) or file.path


def _check_configs_differ(groups: dict[str, list[ShardFile]]) -> None:
    """Two fingerprints of one config file: shards of different versions of that config."""
    by_name: dict[str, list[str]] = {}
    for plan_hash, members in groups.items():
        by_name.setdefault(_name(members[0]), []).append(plan_hash)
    for name, hashes in by_name.items():
        if len(hashes) > 1:
            sides = "; ".join(f"{', '.join(f.path for f in groups[h])} (plan {h})" for h in hashes)
            raise UsageError(f"shards of different configs for {name}: {sides}; the config, its test files, filters or repeats changed between the runs")


def _shard(file: ShardFile) -> ShardInfo:
    return file.run.info.shard or ShardInfo(index=1, count=1, groups=0, rows=len(file.run.results))


def _check_complete(members: list[ShardFile]) -> ShardInfo:
    name = _name(members[0])
    shards = [(_shard(f), f.path) for f in members]
    counts = sorted({s.count for s, _ in shards})
    if len(counts) > 1:
        listed = ", ".join(f"{path} is {s.index}/{s.count}" for s, path in shards)
        raise UsageError(f"{name}: shards of different splits ({listed})")
    count = counts[0]
    seen: dict[int, list[str]] = {}
    for shard, path in shards:
        seen.setdefault(shard.index, []).append(path)
    twice = [f"shard {index}/{count} ({', '.join(paths)})" for index, paths in sorted(seen.items()) if len(paths) > 1]
    if twice:
        raise UsageError(f"{name}: duplicated {'; '.join(twice)}")
    missing = [f"{index}/{count}" for index in range(1, count + 1) if index not in seen]
    if missing:
        have = ", ".join(f"{s.index}/{count} from {path}" for s, path in sorted(shards, key=lambda item: item[0].index))
        raise UsageError(f"{name}: missing shard {', '.join(missing)} (have {have})")
    return shards[0][0]


def _pool(members: list[ShardFile]) -> Pooled:
    first = _check_complete(members)
    name = _name(members[0])
    rows: list[TestResult] = []
    seen: dict[tuple[str, int], str] = {}
    for file in members:
        for row in file.run.results:
            key = (row.test_id, row.repeat_index)
            if key in seen:
                raise UsageError(f"{name}: test {row.test_id} (repeat {row.repeat_index + 1}) is in both {seen[key]} and {file.path}")
            seen[key] = file.path
            rows.append(row)
    if members[0].run.info.shard and len(rows) != first.rows:
        raise UsageError(f"{name}: the shards hold {len(rows)} rows, the plan has {first.rows}")
    rows.sort(key=lambda r: (r.test_index, r.provider_index, r.prompt_index))
    run = EvalRun(info=_info(members), results=rows, stats=EvalRun.summarize(rows), warnings=_warnings(members))
    run.stats.duration_ms = max(f.run.stats.duration_ms for f in members)
    return Pooled(name=name, run=run, config=members[0].config, paths=[f.path for f in members])


def _info(members: list[ShardFile]) -> RunInfo:
    info = members[0].run.info.model_copy(deep=True)
    info.shard = None
    info.created_at = max(f.run.info.created_at for f in members)
    info.graders = sorted({g for f in members for g in f.run.info.graders})
    info.grader_templates = dict(sorted({k: v for f in members for k, v in f.run.info.grader_templates.items()}.items()))
    return info


def _warnings(members: list[ShardFile]) -> list[str]:
    warnings = list(dict.fromkeys(w for f in members for w in f.run.warnings))
    for label, values in (("commits", {f.run.info.commit for f in members}), ("ci-grade versions", {f.run.info.ci_grade_version for f in members})):
        if len(values) > 1:
            warnings.append(f"the shards ran on different {label}: {', '.join(sorted(str(v) for v in values))}")
    return warnings
