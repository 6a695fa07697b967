"""Census: which of a folder's promptfoo configs ci-grade loads and runs, and why the others not.

    python bench/census.py bench/.corpus/examples [--jobs 2] [--timeout 120] [--json census.json]

Every `promptfooconfig*.yaml|yml|json` under the folder (red-team-only configs, with `redteam:` and
no `tests`, are left out) is run with `ci-grade eval` in its own folder, with every model call
pointed at a closed loopback port: each `*_BASE_URL` / API host variable ci-grade or promptfoo
reads and every proxy variable name that port, and each API key variable holds a dummy value, so
no call leaves the machine and every call fails fast (no retries). Each outcome is classified:

- `ran`: exit 0 or 1 (rows may be ERRORs: the calls fail), no row refused for lack of support;
- `ran, rows unsupported`: it ran, but some rows were ERRORs that say ci-grade does not run them;
- `refused`: exit 2 before any call for lack of support, with its cause (a provider, a feature, ...);
- `refused, not runnable here`: exit 2 for a reason promptfoo shares on this machine: a file the
  example does not ship, an assertion type promptfoo 0.123.1 does not have either, no providers, a
  download (datasets, sheets, PDFs) the closed port blocks, a Python package the example needs, a
  Go module this machine's Go cannot build (a newer Go version, dependencies to download);
- `crashed`: any other exit, a traceback, or the timeout.

Prints the shares, the share of the runnable configs that ran (the goal's measure), and the causes
ranked (by configs they block).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ci_grade.providers.compatible_families import FAMILIES  # noqa: E402

CONFIG_NAME = re.compile(r"^promptfooconfig[^/]*\.(ya?ml|json)$")
URL_VARS = (
    "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST", "ANTHROPIC_BASE_URL", "OLLAMA_BASE_URL", "HF_API_BASE_URL",
    "AZURE_OPENAI_API_BASE_URL", "AZURE_API_BASE_URL", "AZURE_OPENAI_API_HOST", "AZURE_API_HOST", "AZURE_OPENAI_ENDPOINT",
    "VOYAGE_API_BASE_URL", "GOOGLE_API_BASE_URL", "REPLICATE_API_BASE_URL", "COHERE_API_BASE_URL", "WATSONX_URL",
    "CI_GRADE_HF_DATASETS_URL", "CI_GRADE_GOOGLE_SHEETS_URL", "LLAMA_BASE_URL", "FAL_QUEUE_RUN_HOST",
)
KEY_VARS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_API_KEY", "HF_TOKEN", "HF_API_TOKEN", "GEMINI_API_KEY",
    "GOOGLE_API_KEY", "REPLICATE_API_TOKEN", "COHERE_API_KEY", "VOYAGE_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "FAL_KEY",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
NOT_RUNNABLE = (
    (re.compile(r"file not found"), "a file the example does not ship"),
    # promptfoo 0.123.1 fails these rows too: "Unknown assertion type: max-length".
    (re.compile(r"unknown assertion type '(min-length|max-length|json-schema-valid|not-empty)'"), "an assertion type promptfoo does not have"),
    (re.compile(r"no providers"), "no providers (promptfoo refuses it too)"),
    # promptfoo 0.123.1 refuses it at load: 'Invalid model type "anthropic"'.
    (re.compile(r"invalid model type"), "a SageMaker model type promptfoo refuses too"),
    (re.compile(r"cannot reach the datasets server|cannot read the sheet"), "a download the closed port blocks"),
    (re.compile(r"ModuleNotFoundError"), "a Python package the example needs"),
    # promptfoo's own `go list` fails alike: the module's Go version is newer, or its dependencies are a download away.
    (re.compile(r"Go file provider .*`go (list|build)` failed: .*(invalid go version|dial tcp|module lookup disabled|missing go\.sum entry)"), "a Go module this machine's Go cannot build (a newer Go or a download)"),
)
"""Refusals promptfoo shares here, so they say nothing about ci-grade's support."""
UNSUPPORTED_ROW = re.compile(r"not supported|cannot run in ci-grade|not yet supported", re.I)


@dataclass
class Outcome:
    config: str
    kind: str  # ran | ran, rows unsupported | refused | refused, not runnable here | crashed
    cause: str = ""
    seconds: float = 0.0


def closed_port() -> int:
    """A loopback port nothing listens on (bound then released: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dead_env(port: int) -> dict[str, str]:
    dead = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN", "_BASE_URL", "_HOST")) and k not in PROXY_VARS}
    urls = set(URL_VARS) | {v for f in FAMILIES for v in (*f.url_vars, *f.host_vars, *(e for p in f.params for e in p.env))}
    env.update({name: f"127.0.0.1:{port}" if name.endswith("_HOST") else dead for name in urls})
    env.update({name: dead for name in PROXY_VARS})
    env.update({name: "dummy-key-for-census" for name in {*KEY_VARS, *(k for f in FAMILIES for k in f.keys)}})
    env.update({"NO_PROXY": "", "no_proxy": "", "CI_GRADE_MAX_RETRIES": "0", "CI_GRADE_CALL_TIMEOUT_SECONDS": "10", "PROMPTFOO_CACHE_ENABLED": "false"})
    return env


def find_configs(root: Path) -> tuple[list[Path], int]:
    """The eval configs under `root`, and how many red-team-only ones were left out."""
    configs, redteam = [], 0
    for path in sorted(root.rglob("*")):
        if not CONFIG_NAME.match(path.name) or "node_modules" in path.parts:
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError, ValueError):
            data = None
        if isinstance(data, dict) and "redteam" in data and not data.get("tests"):
            redteam += 1
            continue
        configs.append(path)
    return configs, redteam


def cause_of(stderr: str) -> str:
    """The refusal's cause, without file, line and values, so that equal causes count together."""
    line = next((ln for ln in stderr.splitlines() if re.search(r"error|unknown|not supported|cannot|no such|missing", ln, re.I)), stderr.strip()[:200])
    if m := re.search(r"unknown provider '([^':]+[:/]*)", line):
        return f"provider {m.group(1)}"
    if m := re.search(r"'?([\w.-]+:[\w-]+)'? is not supported by ci-grade|(\S+?:[\w-]+) is not supported", line):
        return f"provider {m.group(1) or m.group(2)}"
    if m := re.search(r"assertion type '([^']+)' is not yet supported", line):
        return f"assertion {m.group(1)}"
    if m := re.search(r"unknown assertion type '([^']+)'", line):
        return f"unknown assertion {m.group(1)}"
    line = re.sub(r"^ci-grade: error:\s*", "", line.strip())
    line = re.sub(r"^\S+:\d+(:\d+)?:?\s+(\S+:\s)?", "", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S+", "…", line)
    return re.sub(r"\d+", "N", line)[:120]


def run_one(path: Path, root: Path, env: dict[str, str], timeout: float) -> Outcome:
    name = str(path.relative_to(root))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, "-m", "ci_grade", "eval", "-c", path.name, "-o", str(out), "--no-progress", "--cache-dir", tmp, "-j", "4"]
        try:
            proc = subprocess.run(cmd, cwd=path.parent, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Outcome(name, "crashed", "timeout", time.perf_counter() - started)
        seconds = time.perf_counter() - started
        if "Traceback (most recent call last)" in proc.stderr or proc.returncode not in (0, 1, 2):
            return Outcome(name, "crashed", f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or ''}", seconds)
        if proc.returncode == 2:
            shared = next((why for pattern, why in NOT_RUNNABLE if pattern.search(proc.stderr)), None)
            if shared:
                return Outcome(name, "refused, not runnable here", shared, seconds)
            return Outcome(name, "refused", cause_of(proc.stderr), seconds)
        try:
            rows = json.loads(out.read_text(encoding="utf-8"))["results"]["results"]
        except (OSError, ValueError, KeyError, TypeError):
            return Outcome(name, "crashed", "no results file", seconds)
        unsupported = [str(r.get("error") or "") for r in rows if UNSUPPORTED_ROW.search(str(r.get("error") or ""))]
        if unsupported:
            return Outcome(name, "ran, rows unsupported", cause_of(unsupported[0]), seconds)
        return Outcome(name, "ran", "", seconds)


def report(outcomes: list[Outcome], redteam: int) -> str:
    total = len(outcomes)
    kinds = Counter(o.kind for o in outcomes)
    lines = [f"{total} eval configs ({redteam} red-team-only left out)"]
    for kind in ("ran", "ran, rows unsupported", "refused", "refused, not runnable here", "crashed"):
        lines.append(f"  {kind:<26} {kinds[kind]:>4}  {100 * kinds[kind] / max(total, 1):5.1f}%")
    runnable = total - kinds["refused, not runnable here"]
    lines.append(f"ran, of the {runnable} configs runnable here: {100 * kinds['ran'] / max(runnable, 1):.1f}%")
    causes = Counter(o.cause for o in outcomes if o.kind != "ran")
    if causes:
        lines.append("causes (configs):")
        lines.extend(f"  {count:>4}  {cause}" for cause, count in causes.most_common())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per config")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    args = parser.parse_args(argv)
    root = args.folder.resolve()
    configs, redteam = find_configs(root)
    env = dead_env(closed_port())
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda p: run_one(p, root, env, args.timeout), configs))
    print(report(outcomes, redteam))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
