"""Sampled mutation testing, each mutant judged by the tests of its own area only.

    python bench/mutation.py --ast --per-module 3 --seed 1 --jobs 2   # the sample of bench/README.md
    python bench/mutation.py --ast --per-module 3 --seed 1 --report --survivors
    python bench/mutation.py --ast --per-module 3 --seed 1 --only NAME...   # some mutants again
    python bench/mutation.py --ast --per-module 3 --seed 1 --list          # the sample, nothing run

`bench/mutation_areas.toml` names the modules and, per group of modules, the tests that judge
their mutants. For each module, every mutant `bench/ast_mutants.py` can make is numbered, and
`--per-module N` of them are drawn at random with the seed (the same code and seed draw the same
mutants). The repository is copied to a temporary folder (one copy per job); each mutant is
written into a copy and tests run there with `pytest -x -q -p no:cacheprovider` (subprocesses the
tests start import the copy too). First each group's tests run once on the unchanged code under
coverage (pytest-cov, one context per test): a mutant is then judged by the group's tests that ran
its statement, and if they all pass, by all the group's tests (code that only a subprocess runs,
or that runs at import time, is judged by all of them at once). A mutant is

- killed: a test failed (or the tests could not even be collected);
- timeout: the tests ran past 3x the time they take on the unchanged code, plus 30 s;
- mypy: every test passed but `mypy --strict` (run in CI) rejects the mutant (`--mypy`);
- survived: every test passed; equivalent: a survivor listed in `bench/mutation_equivalents.txt`
  with the reason no test can tell it from the original.

Results are kept in `mutants/ast-results.json`, per mutant, with the change they were judged on:
a run judges only the mutants of its sample not judged yet on their present change (`--only`
judges the named ones again, e.g. survivors after new tests). The sample with `--per-module N`
holds the one with fewer, so a larger sample only judges the extra mutants.
"""

from __future__ import annotations

import argparse
import fcntl
import fnmatch
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

from ast_mutants import Mutant, compiles, mutants
from mutation import interval, read_equivalents

REPO = Path(__file__).resolve().parent.parent
AREAS = Path(__file__).resolve().parent / "mutation_areas.toml"
RESULTS = REPO / "mutants" / "ast-results.json"
COVERAGE = REPO / "mutants" / "ast-coverage"
DETECTED = ("killed", "timeout", "mypy")
_NOT_COPIED = {".git", ".venv", "mutants", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tools", ".corpus", ".ci-grade", "out"}


@dataclass(frozen=True)
class Group:
    """Modules judged by the same tests."""

    area: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()


    @property
    def arguments(self) -> tuple[str, ...]:
        return (*self.tests, *(f"--deselect={test}" for test in self.deselect))


def read_groups(path: Path = AREAS) -> dict[str, Group]:
    """Each mutated module (its path in the repository) and the group whose tests judge it."""
    groups: dict[str, Group] = {}
    for entry in tomllib.loads(path.read_text(encoding="utf-8"))["group"]:
        group = Group(entry["area"], tuple(entry["modules"]), tuple(entry["tests"]), tuple(entry.get("deselect", ())))
        for test in group.tests:
            if not (REPO / test).exists():
                raise SystemExit(f"{path.name}: {test} does not exist")
        for pattern in group.modules:
            matched = sorted(str(p.relative_to(REPO)) for p in REPO.glob(pattern) if p.name != "__init__.py")
            if not matched:
                raise SystemExit(f"{path.name}: {pattern} matches no module")
            for module in matched:
                groups.setdefault(module, group)
    return groups


def sample(groups: dict[str, Group], per_module: int, seed: int) -> list[Mutant]:
    """`per_module` mutants of each module: the first that compile of its mutants shuffled by a
    generator seeded by the seed and the module."""
    drawn: list[Mutant] = []
    for path in sorted(groups):
        source = (REPO / path).read_bytes()
        every = mutants(source, path[:-3].replace("/", "."), path)
        random.Random(f"{seed}:{path}").shuffle(every)
        drawn += _first_compiling(every, source, per_module)
    return drawn


def _first_compiling(shuffled: list[Mutant], source: bytes, count: int) -> list[Mutant]:
    taken: list[Mutant] = []
    for mutant in shuffled:
        if len(taken) == count:
            break
        if compiles(mutant, source):
            taken.append(mutant)
    return taken


def _ignore(folder: str, names: list[str]) -> set[str]:
    return {name for name in names if name in _NOT_COPIED}


@contextmanager
def copies(jobs: int) -> Iterator[Queue[Path]]:
    """`jobs` copies of the repository in a temporary folder, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="ci-grade-mutation-"))
    slots: Queue[Path] = Queue()
    try:
        for number in range(jobs):
            slot = root / f"copy{number}"
            shutil.copytree(REPO, slot, ignore=_ignore, symlinks=True)
            slots.put(slot)
        yield slots
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_tests(slot: Path, tests: tuple[str, ...], timeout: float | None, coverage: bool = False) -> tuple[int | None, float, str]:
    """pytest on `tests` in the copy: (exit code, None after a timeout; seconds; the output's tail).
    With `coverage`, which test ran which line is recorded in the copy's `.coverage`."""
    env = {**os.environ, "PYTHONPATH": str(slot), "PYTHONDONTWRITEBYTECODE": "1"}
    measure = ["--cov=ci_grade", "--cov-context=test", "--cov-report="] if coverage else ["-p", "no:pytest_cov"]
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *measure, *tests]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=slot, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        code = None
    return code, time.monotonic() - started, output[-3000:]


def rejected_by_mypy(slot: Path) -> bool:
    """mypy --strict (the project's configuration) rejects the copy as it is."""
    mypy = Path(sys.executable).parent / "mypy"
    found = subprocess.run([str(mypy), "ci_grade"], cwd=slot, capture_output=True, text=True, check=False)
    return found.returncode == 1


Covered = dict[str, dict[int, set[str]]]
"""Per module (its path in the repository), per line: the tests that ran it ("" for none: imports)."""


def covered(slot: Path) -> Covered:
    """Which test ran each line of the copy, from the coverage data of the last run there."""
    from coverage import CoverageData

    data = CoverageData(basename=str(slot / ".coverage"))
    data.read()
    found: Covered = {}
    for measured in data.measured_files():
        lines = data.contexts_by_lineno(measured)
        found[str(Path(measured).relative_to(slot))] = {line: {c.rpartition("|")[0] for c in contexts} for line, contexts in lines.items()}
    return found


def selection(mutant: Mutant, group: Group, coverage: Covered | None) -> tuple[str, ...] | None:
    """The group's tests that ran the mutant's statement, in the group's order; None: all of them
    (no coverage, code that no test ran in-process or that ran at import time)."""
    if coverage is None:
        return None
    lines = coverage.get(mutant.path, {})
    tests = set().union(*(lines.get(n, set()) for n in range(mutant.statement, mutant.line + 1)))
    if not tests or "" in tests:
        return None
    order = {test: index for index, test in enumerate(group.tests)}
    return tuple(sorted(tests, key=lambda t: (order.get(t.partition("::")[0], len(order)), t)))


def judge(mutant: Mutant, group: Group, slots: Queue[Path], limit: float, with_mypy: bool, coverage: Covered | None) -> dict[str, object]:
    """Write the mutant into a free copy, run the tests that reach it (then, if they pass, all
    its group's tests), put the original back."""
    slot = slots.get()
    target = slot / mutant.path
    original = target.read_bytes()
    try:
        target.write_bytes(mutant.apply(original))
        selected = selection(mutant, group, coverage)
        code, seconds, tail = run_tests(slot, selected or group.arguments, limit)
        if code == 0 and selected is not None:
            code, more, tail = run_tests(slot, group.arguments, limit)
            seconds += more
        if code is None:
            outcome = "timeout"
        elif code == 0:
            outcome = "mypy" if with_mypy and rejected_by_mypy(slot) else "survived"
        elif code == 5:
            outcome = "no tests"
        else:
            outcome = "killed"
    finally:
        target.write_bytes(original)
        slots.put(slot)
    return {"outcome": outcome, "seconds": round(seconds, 1), "change": [mutant.original, mutant.text], "diff": mutant.diff, "area": group.area,
            "tests": len(selected) if selected else "all", "tail": tail if outcome == "no tests" else ""}


def load_results() -> dict[str, dict[str, object]]:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}


def save_result(name: str, result: dict[str, object]) -> None:
    """Add one mutant's result to the stored ones (under a lock: runs of other modules may share the file)."""
    RESULTS.parent.mkdir(exist_ok=True)
    with open(RESULTS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = load_results()
        results[name] = result
        RESULTS.with_suffix(".tmp").write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
        RESULTS.with_suffix(".tmp").replace(RESULTS)


def unchanged(group: Group, slots: Queue[Path], with_coverage: bool) -> tuple[float, Covered | None] | None:
    """Run the group's tests on the unchanged code: their time, and which test ran which line;
    None when they fail (its mutants are then not judged). Kept in `mutants/ast-coverage/`: a
    stale map only changes which tests run first, since a mutant they miss meets all the group's tests."""
    stored = COVERAGE / f"{hashlib.sha256(repr(group).encode()).hexdigest()[:16]}.json"
    if with_coverage and stored.exists():
        seconds, lines = json.loads(stored.read_text(encoding="utf-8"))
        return seconds, {path: {int(n): set(tests) for n, tests in by_line.items()} for path, by_line in lines.items()}
    slot = slots.get()
    try:
        code, seconds, tail = run_tests(slot, group.arguments, None, coverage=with_coverage)
        if code != 0:
            print(f"NOT JUDGED: the tests of {', '.join(group.modules)} fail on the unchanged code:\n{tail}", flush=True)
            return None
        print(f"{group.area}: {', '.join(group.modules)}: tests pass in {seconds:.0f} s", flush=True)
        if not with_coverage:
            return seconds, None
        lines = covered(slot)
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(json.dumps([seconds, {path: {n: sorted(t) for n, t in by_line.items()} for path, by_line in lines.items()}]), encoding="utf-8")
        return seconds, lines
    finally:
        slots.put(slot)


def run(drawn: list[Mutant], groups: dict[str, Group], jobs: int, with_mypy: bool, with_coverage: bool) -> None:
    """Judge every mutant in `drawn` (first the unchanged code of each group: its tests must pass)."""
    with copies(jobs) as slots, ThreadPoolExecutor(jobs) as pool:
        needed = list(dict.fromkeys(groups[m.path] for m in drawn))
        measured = dict(zip(needed, pool.map(lambda g: unchanged(g, slots, with_coverage), needed), strict=True))
        if with_mypy and rejected_by_mypy(REPO):
            raise SystemExit("mypy rejects the unchanged code")
        judged = [(m, found) for m in drawn if (found := measured[groups[m.path]]) is not None]
        futures = {m.name: pool.submit(judge, m, groups[m.path], slots, 3 * found[0] + 30, with_mypy, found[1]) for m, found in judged}
        for done, (name, future) in enumerate(futures.items(), 1):
            result = future.result()
            print(f"[{done}/{len(futures)}] {result['outcome']:8} {result['seconds']:6} s  tests {result['tests']:>3}  {name}", flush=True)
            save_result(name, result)


def judged(drawn: list[Mutant]) -> dict[str, dict[str, object]]:
    """The stored result of each drawn mutant that was judged on its present change."""
    results = load_results()
    return {m.name: results[m.name] for m in drawn if m.name in results and results[m.name]["change"] == [m.original, m.text]}


def outcome(name: str, result: dict[str, object], equivalents: dict[str, str]) -> str:
    found = str(result["outcome"])
    if found in ("survived", "no tests") and (name in equivalents or any("*" in e and fnmatch.fnmatchcase(name, e) for e in equivalents)):
        return "equivalent"
    return found


def report(drawn: list[Mutant], groups: dict[str, Group], equivalents: dict[str, str], survivors: bool) -> float | None:
    """Tables per module and per area; returns the overall detection rate."""
    results = judged(drawn)
    columns = ("killed", "timeout", "mypy", "survived", "no tests", "equivalent")
    by_module: dict[str, dict[str, int]] = {}
    by_area: dict[str, dict[str, int]] = {}
    for m in drawn:
        if m.name not in results:
            continue
        found = outcome(m.name, results[m.name], equivalents)
        for table, key in ((by_module, m.path), (by_area, groups[m.path].area), (by_area, "all")):
            counts = table.setdefault(key, dict.fromkeys(columns, 0))
            counts[found] += 1
    missing = [m.name for m in drawn if m.name not in results]
    for title, table in (("module", by_module), ("area", by_area)):
        print(f"| {title} | sampled | " + " | ".join(columns) + " | detected | 95% interval |")
        print("| --- | ---: | " + " | ".join("---:" for _ in columns) + " | ---: | --- |")
        for key, counts in sorted(table.items(), key=lambda item: (item[0] == "all", item[0])):
            print(f"| {'**all**' if key == 'all' else key} | {sum(counts.values())} | " + " | ".join(str(counts[c]) for c in columns) + f" | {_rate(counts)} |")
        print()
    if missing:
        print(f"{len(missing)} sampled mutants not judged yet (run without --report)")
    if survivors:
        for m in drawn:
            if m.name in results and outcome(m.name, results[m.name], equivalents) in ("survived", "no tests"):
                print(f"{results[m.name]['outcome']:8}  {m.name}\n          {m.diff}")
    total = by_area.get("all")
    counted = sum(total[c] for c in columns if c != "equivalent") if total else 0
    return sum(total[c] for c in DETECTED) / counted if total and counted else None


def _rate(counts: dict[str, int]) -> str:
    detected = sum(counts[c] for c in DETECTED)
    counted = sum(counts.values()) - counts["equivalent"]
    return f"{detected / counted:.1%} | {interval(detected, counted)}" if counted else "n/a | n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-module", type=int, default=6, help="mutants drawn from each module")
    parser.add_argument("--seed", type=int, default=1, help="the seed of the draw")
    parser.add_argument("--jobs", type=int, default=1, help="mutants judged at once (one repository copy each)")
    parser.add_argument("--modules", nargs="*", default=[], help="only modules matching these globs")
    parser.add_argument("--only", nargs="*", default=[], help="judge only these sampled mutants (names or globs)")
    parser.add_argument("--mypy", action="store_true", help="check survivors with mypy --strict")
    parser.add_argument("--all-tests", action="store_true", help="judge each mutant by all its group's tests at once (no coverage run first)")
    parser.add_argument("--list", action="store_true", help="list the sample, judge nothing")
    parser.add_argument("--report", action="store_true", help="only report the stored results")
    parser.add_argument("--survivors", action="store_true", help="list the survivors with their change")
    parser.add_argument("--fail-under", type=float, default=90.0, help="exit 1 below this detection rate (percent)")
    args = parser.parse_args(argv)
    groups = read_groups()
    drawn = sample(groups, args.per_module, args.seed)
    if args.modules:
        drawn = [m for m in drawn if any(fnmatch.fnmatchcase(m.path, p) for p in args.modules)]
    if args.only:
        drawn = [m for m in drawn if any(fnmatch.fnmatchcase(m.name, p) for p in args.only)]
    if args.list:
        for m in drawn:
            print(f"{m.name}\n    {m.diff}")
        return 0
    equivalents = read_equivalents()
    if not args.report:
        started = time.monotonic()
        done = judged(drawn)
        rank = {m.name: n for n, m in enumerate(drawn)}
        order = sorted(drawn, key=lambda m: (sum(1 for o in drawn[: rank[m.name]] if o.path == m.path), rank[m.name]))  # every module's first mutant, then every second one...
        run([m for m in order if args.only or m.name not in done], groups, args.jobs, args.mypy, not (args.all_tests or args.only))
        print(f"wall time {time.monotonic() - started:.0f} s")
    rate = report(sample(groups, args.per_module, args.seed) if args.only else drawn, groups, equivalents, args.survivors)
    return 0 if rate is not None and rate * 100 >= args.fail_under else 1


if __name__ == "__main__":
    sys.exit(main())
