"""Run one config folder through promptfoo 0.123.1 and ci-grade and list where their rows differ.

    python bench/parity.py FOLDER [FOLDER ...] [-- EXTRA EVAL ARGS]

Each FOLDER holds a `promptfooconfig.yaml` (and whatever it names). Both tools run `eval` on it
with the same extra arguments, each writing its results JSON into the folder (`promptfoo.json`,
`ci-grade.json`); rows are paired by test, prompt x provider column and variables, and every
field that should agree is compared: the rendered prompt and label, the output, the test's
verdict and score, named scores, and each assertion's pass and score. Differences that
`docs/compatibility.md` lists are still printed: read them against it. Not a test: it needs
promptfoo from `bash bench/setup_promptfoo.sh`, and its output is for a person. The configs
that found each difference fixed so far are pinned in the unit tests with promptfoo's values.
A config with `tracing:` runs promptfoo with its database (kept under FOLDER/promptfoo-home);
Python providers that export spans need PROMPTFOO_PYTHON set to a Python with the OpenTelemetry SDK.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from runner import make_tool

FIELDS = ("label", "prompt", "output", "success", "score", "named", "assertions", "failureReason")


def _number(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) else value


def row_facts(row: dict[str, Any]) -> dict[str, Any]:
    output = (row.get("response") or {}).get("output")
    grading = row.get("gradingResult") or {}
    return {
        "label": (row.get("prompt") or {}).get("label"),
        "prompt": (row.get("prompt") or {}).get("raw"),
        "output": output if isinstance(output, str) else json.dumps(output, sort_keys=True),
        "success": row.get("success"),
        "score": _number(row.get("score")),
        "named": {k: _number(v) for k, v in (row.get("namedScores") or {}).items()},
        "assertions": [((c.get("assertion") or {}).get("type"), c.get("pass"), _number(c.get("score"))) for c in grading.get("componentResults") or []],
        "failureReason": row.get("failureReason"),
    }


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return row.get("testIdx"), row.get("promptIdx"), (row.get("provider") or {}).get("id"), json.dumps(row.get("vars"), sort_keys=True)


def run(folder: Path, extra: list[str]) -> dict[str, list[dict[str, Any]] | str]:
    """Each tool's rows, or what it said when it wrote none."""
    found: dict[str, list[dict[str, Any]] | str] = {}
    for name in ("promptfoo", "ci-grade"):
        tool = make_tool(name, folder, {})
        output = folder / f"{name}.json"
        output.unlink(missing_ok=True)
        flags = ["--no-progress", "--no-cache"] if name == "ci-grade" else ["--no-cache", "--no-table", "--no-progress-bar", "--no-share"]
        if name == "promptfoo" and "tracing:" not in (folder / "promptfooconfig.yaml").read_text():
            flags.append("--no-write")  # promptfoo reads a row's spans back from its database: it must write them
        done = subprocess.run([*tool.base, "eval", "-c", "promptfooconfig.yaml", "-o", str(output), *flags, *extra], cwd=folder, env=tool.env, capture_output=True, text=True, timeout=600)
        found[name] = json.loads(output.read_text())["results"]["results"] if output.exists() else f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-500:]}"
    return found


def compare(folder: Path, found: dict[str, list[dict[str, Any]] | str]) -> int:
    """Print the differences; how many rows differ (or 1 when a tool wrote nothing)."""
    print(f"== {folder}")
    theirs, ours = found["promptfoo"], found["ci-grade"]
    if isinstance(theirs, str) or isinstance(ours, str):
        print(f"  promptfoo: {theirs if isinstance(theirs, str) else f'{len(theirs)} rows'}\n  ci-grade: {ours if isinstance(ours, str) else f'{len(ours)} rows'}")
        return 1
    pairs = {row_key(r): [r, None] for r in theirs}
    for row in ours:
        pairs.setdefault(row_key(row), [None, None])[1] = row
    differing = 0
    for key, (a, b) in sorted(pairs.items(), key=lambda item: json.dumps(item[0])):
        if a is None or b is None:
            print(f"  {key}: only in {'ci-grade' if a is None else 'promptfoo'}")
            differing += 1
            continue
        fa, fb = row_facts(a), row_facts(b)
        changed = [name for name in FIELDS if fa[name] != fb[name]]
        if changed:
            differing += 1
            print(f"  test {key[0]}, column {key[1]}, {key[2]}:")
            for name in changed:
                print(f"    {name}: promptfoo {json.dumps(fa[name])[:300]}  ci-grade {json.dumps(fb[name])[:300]}")
    print(f"  {len(pairs) - differing} of {len(pairs)} rows agree")
    return differing


def main() -> int:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    folders = [Path(a).resolve() for a in (args[: args.index("--")] if "--" in args else args)]
    if not folders:
        print(__doc__)
        return 2
    return 1 if sum(compare(folder, run(folder, extra)) for folder in folders) else 0


if __name__ == "__main__":
    sys.exit(main())
