"""Mutation testing of the modules that hold ci-grade's promises, with a per-module report.

    pip install -e '.[test,mutation]'
    python bench/mutation.py --sample 10     # every tenth mutant of every function (see bench/README.md)
    python bench/mutation.py                 # every mutant: hours on 2 cores
    python bench/mutation.py --report        # the report of the last run, nothing re-run
    python bench/mutation.py --retest-survivors   # run the survivors again (after adding tests)
    python bench/mutation.py --ast --per-module 3 --seed 1   # a seeded sample, each mutant judged
                                 # by its area's tests only (bench/mutation_ast.py)

mutmut (configured in pyproject.toml, `[tool.mutmut]`: which modules, which tests) copies the
package to `mutants/`, makes every mutant of every function there, and runs only the tests that
cover the mutated function. This script runs it, then reads its results per module:

- killed: a test failed; mypy: `mypy --strict` (run in CI) rejects the mutant, so no test is run;
- timeout: the tests ran past mutmut's limit (an endless loop: detected);
- survived: every covering test passed; no tests: no test reaches the function;
- equivalent: a survivor listed in `bench/mutation_equivalents.txt` with a one-line reason why no
  test can tell it from the original (the list is applied only to mutants that survived or that
  no test reaches, e.g. code no caller runs).

The kill rate is (killed + mypy + timeout) / (all - listed equivalents). `--sample P` judges only the
mutants whose number ends in chosen digits (P = 10: 7; 20: 2 and 7; 50: odd), a systematic sample of
every function, and reports the rate with its 95% Wilson interval. Nothing is installed here: a
missing mutmut is reported with the command that installs it.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DIGITS = {10: "7", 20: "27", 50: "13579"}
EQUIVALENTS = Path(__file__).resolve().parent / "mutation_equivalents.txt"
KILLED = {1, 3}
TYPE_CHECK = {37}
TIMEOUT = {36, -24, 24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}


@dataclass
class ModuleCounts:
    """What became of one module's mutants."""

    killed: int = 0
    mypy: int = 0
    timeout: int = 0
    survived: list[str] = field(default_factory=list)
    no_tests: list[str] = field(default_factory=list)
    equivalent: int = 0
    other: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return self.killed + self.mypy + self.timeout + len(self.survived) + len(self.no_tests) + self.equivalent + sum(self.other.values())

    @property
    def rate(self) -> float | None:
        counted = self.total - self.equivalent
        return (self.killed + self.mypy + self.timeout) / counted if counted else None


def read_equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """`mutant-name  reason` per line (the name may be a glob, e.g. every mutant of a function that
    runs only at import time); blank lines and `#` comments are skipped. A line without a reason is
    refused: an equivalent mutant must say why no test can kill it."""
    listed: dict[str, str] = {}
    if not path.exists():
        return listed
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path.name}:{number}: {name} needs a one-line reason")
        listed[name] = reason.strip()
    return listed


def sample_patterns(percent: int | None) -> list[str]:
    """mutmut name patterns for the systematic sample (every mutant when `percent` is None)."""
    if percent is None:
        return []
    return [f"ci_grade.*__mutmut_*{digit}" for digit in SAMPLE_DIGITS[percent]]


def read_results(root: Path, equivalents: dict[str, str], patterns: list[str] | None = None) -> tuple[dict[str, ModuleCounts], list[str]]:
    """Per module, from mutmut's `.meta` files (only mutants matching `patterns`, when given); also
    the listed equivalents that name a judged mutant but no longer survive."""
    modules: dict[str, ModuleCounts] = {}
    applied: set[str] = set()
    judged: list[str] = []
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        codes: dict[str, int | None] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        if not codes:
            continue
        counts = modules.setdefault(str(meta.relative_to(root / "mutants"))[: -len(".meta")], ModuleCounts())
        for name, code in codes.items():
            if patterns and not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                continue
            judged.append(name)
            if code in KILLED:
                counts.killed += 1
            elif code in TYPE_CHECK:
                counts.mypy += 1
            elif code in TIMEOUT:
                counts.timeout += 1
            elif code in SURVIVED | NO_TESTS and (listed := _listed(name, equivalents)):
                counts.equivalent += 1
                applied.add(listed)
            elif code in SURVIVED:
                counts.survived.append(name)
            elif code in NO_TESTS:
                counts.no_tests.append(name)
            else:
                counts.other["not run" if code is None else f"exit {code}"] += 1
    stale = [entry for entry in set(equivalents) - applied if any(fnmatch.fnmatchcase(name, entry) for name in judged)]
    return modules, sorted(stale)


def _listed(mutant: str, equivalents: dict[str, str]) -> str | None:
    """The entry of the equivalents list that names `mutant`, if any."""
    if mutant in equivalents:
        return mutant
    return next((pattern for pattern in equivalents if "*" in pattern and fnmatch.fnmatchcase(mutant, pattern)), None)


def report(modules: dict[str, ModuleCounts], stale: list[str]) -> str:
    """The per-module table, the totals, and the listed equivalents that did not apply."""
    rows = [("module", "mutants", "killed", "mypy", "timeout", "survived", "no tests", "equivalent", "kill rate")]
    total = ModuleCounts()
    for name, c in sorted(modules.items()):
        rows.append((name, str(c.total), str(c.killed), str(c.mypy), str(c.timeout), str(len(c.survived)), str(len(c.no_tests)), str(c.equivalent), _percent(c.rate)))
        total.killed += c.killed
        total.mypy += c.mypy
        total.timeout += c.timeout
        total.survived += c.survived
        total.no_tests += c.no_tests
        total.equivalent += c.equivalent
        total.other += c.other
    rows.append(("all", str(total.total), str(total.killed), str(total.mypy), str(total.timeout), str(len(total.survived)), str(len(total.no_tests)), str(total.equivalent), _percent(total.rate)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    if total.other:
        lines.append("not counted as killed: " + ", ".join(f"{n} {k}" for k, n in sorted(total.other.items())))
    if stale:
        lines.append(f"listed as equivalent but not surviving (remove from {EQUIVALENTS.name}): " + ", ".join(stale))
    return "\n".join(lines)


def interval(detected: int, counted: int) -> str:
    """The 95% Wilson interval of a sampled kill rate."""
    from ci_grade.gate.statistics import wilson

    low, high = wilson(detected, counted)
    return f"{low:.1%} to {high:.1%}"


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def mutmut_command() -> Path:
    """The `mutmut` next to this interpreter; a clear message when it is not installed."""
    command = Path(sys.executable).parent / "mutmut"
    if not command.exists():
        found = shutil.which("mutmut")
        if found is None:
            raise SystemExit("mutmut is not installed: pip install -e '.[test,mutation]'")
        command = Path(found)
    return command


def run_mutmut(args: list[str]) -> None:
    """Run mutmut in the repository; its progress goes to the terminal. The interpreter's own
    scripts come first on PATH, so the type check runs this environment's mypy."""
    command = mutmut_command()
    env = {**os.environ, "PATH": os.pathsep.join([str(command.parent), os.environ.get("PATH", "")])}
    code = subprocess.run([str(command), *args], cwd=REPO, env=env, check=False).returncode
    if code != 0:
        raise SystemExit(f"mutmut {' '.join(args)} exited with {code}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--ast" in argv:
        import mutation_ast

        return mutation_ast.main([a for a in argv if a != "--ast"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--report", action="store_true", help="only report the last run")
    parser.add_argument("--retest-survivors", action="store_true", help="run the surviving mutants again")
    parser.add_argument("--survivors", action="store_true", help="list every surviving mutant by module")
    parser.add_argument("--max-children", type=int, help="parallel mutant runs (default: one per core)")
    parser.add_argument("--sample", type=int, choices=sorted(SAMPLE_DIGITS), help="judge a systematic sample of this percent of the mutants")
    parser.add_argument("--fail-under", type=float, default=90.0, help="exit 1 when the overall kill rate is below this percent")
    args = parser.parse_args(argv)
    equivalents = read_equivalents()
    started = time.monotonic()
    extra = ["--max-children", str(args.max_children)] if args.max_children else []
    patterns = sample_patterns(args.sample)
    if args.retest_survivors:
        modules, _ = read_results(REPO, equivalents, patterns)
        survivors = [name for c in modules.values() for name in c.survived + c.no_tests]
        if survivors:
            run_mutmut(["run", *extra, *survivors])
    elif not args.report:
        run_mutmut(["run", *extra, *patterns])
    modules, stale = read_results(REPO, equivalents, patterns)
    if not modules:
        print("no mutation results: run without --report first", file=sys.stderr)
        return 2
    print(report(modules, stale))
    if not args.report:
        print(f"wall time {time.monotonic() - started:.0f} s")
    if args.survivors:
        for c in modules.values():
            for mutant in c.survived:
                print(f"survived  {mutant}")
            for mutant in c.no_tests:
                print(f"no tests  {mutant}")
    everything = ModuleCounts(
        killed=sum(c.killed for c in modules.values()), mypy=sum(c.mypy for c in modules.values()), timeout=sum(c.timeout for c in modules.values()),
        survived=[m for c in modules.values() for m in c.survived], no_tests=[m for c in modules.values() for m in c.no_tests],
        equivalent=sum(c.equivalent for c in modules.values()), other=sum((c.other for c in modules.values()), Counter()),
    )
    if args.sample and everything.total > everything.equivalent:
        detected = everything.killed + everything.mypy + everything.timeout
        print(f"sample of {args.sample}%: kill rate {_percent(everything.rate)}, 95% interval {interval(detected, everything.total - everything.equivalent)}")
    return 0 if (everything.rate or 0.0) * 100 >= args.fail_under else 1


if __name__ == "__main__":
    sys.exit(main())
