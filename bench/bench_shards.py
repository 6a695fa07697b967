"""Shards and merge at scale: N tests (echo provider, one `contains` each, 2 prompts) run whole, then
as K shards, then merged. Reports each process's wall time, the shard sizes, and whether the merged
results equal the whole run's (apart from times and latencies).

    .venv/bin/python bench/bench_shards.py --tests 4000 --shards 4
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def config(tests: int) -> str:
    lines = ["prompts: ['Say {{q}}', 'Shout {{q}}']", "providers: [echo]", "tests:"]
    lines += [f"  - {{description: t{i}, vars: {{q: item{i}}}, assert: [{{type: contains, value: item{i % 97}}}]}}" for i in range(tests)]
    return "\n".join(lines) + "\n"


def ci_grade(folder: Path, *args: str) -> float:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "ci_grade", *args], cwd=folder, capture_output=True, text=True, check=False)
    if result.returncode not in (0, 1):
        raise SystemExit(f"ci-grade {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return time.perf_counter() - started


def comparable(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [{k: v for k, v in row.items() if k != "latencyMs"} for row in data["results"]["results"]]
    stats = {k: v for k, v in data["results"]["stats"].items() if k != "durationMs"}
    return {"rows": rows, "stats": stats, "plan": data["ciGrade"]["info"]["plan_hash"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=4000)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "promptfooconfig.yaml").write_text(config(args.tests), encoding="utf-8")
        whole = ci_grade(folder, "eval", "--no-progress", "-o", "whole.json")
        print(f"whole run: {args.tests} tests, {2 * args.tests} rows: {whole:.2f} s")
        for k in range(1, args.shards + 1):
            seconds = ci_grade(folder, "eval", "--no-progress", "--shard", f"{k}/{args.shards}", "-o", f"shard-{k}.json")
            rows = len(json.loads((folder / f"shard-{k}.json").read_text())["results"]["results"])
            print(f"shard {k}/{args.shards}: {rows} rows: {seconds:.2f} s")
        merged = ci_grade(folder, "merge", *[f"shard-{k}.json" for k in range(1, args.shards + 1)], "-o", "merged.json", "-o", "merged.junit.xml")
        print(f"merge: {merged:.2f} s")
        print(f"merged results equal the whole run's: {comparable(folder / 'merged.json') == comparable(folder / 'whole.json')}")


if __name__ == "__main__":
    main()
