"""Benchmark: N tests, each with one model-graded assertion, against a loopback grader with fixed latency.

Starts the project's OpenAI-compatible test server in a separate process (so it does not share
the GIL with ci-grade), writes a config with N echo tests each carrying one `llm-rubric`, runs
`ci-grade eval -j CONCURRENCY` as a child process, and reports wall time and peak memory
(max RSS of the ci-grade process), plus the cold start of `ci-grade --version`.

    python bench/bench_eval.py --tests 1000 --latency-ms 100 --concurrency 32

The bar (2-core machine): 1000 tests / 1000 grader calls at 100 ms and -j 32 in under 4 s with
under 150 MB peak memory; `ci-grade --version` under 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERDICT = json.dumps({"reason": "meets the rubric", "pass": True, "score": 1.0})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_config(folder: Path, tests: int) -> Path:
    lines = [
        "description: benchmark",
        "prompts: ['Answer the customer: {{question}}']",
        "providers: [echo]",
        "tests:",
    ]
    for i in range(tests):
        lines += [
            f"  - description: case {i}",
            f"    vars: {{question: 'question number {i} about billing'}}",
            "    assert:",
            "      - type: llm-rubric",
            "        value: answers the billing question politely",
        ]
    path = folder / "promptfooconfig.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_child(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, peak RSS in MB (of this child) and the completed process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) / 1024, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.llm_server", "--port", str(port), "--latency-ms", str(args.latency_ms), "--reply", VERDICT],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_config(folder, args.tests)
            cli = [sys.executable, "-m", "ci_grade"]
            version_times = []
            for _ in range(5):
                elapsed, _, proc = run_child([*cli, "--version"], env, folder)
                assert proc.returncode == 0, proc.stderr
                version_times.append(elapsed)
            results = []
            for _ in range(args.runs):
                # Each run in a fresh child so max RSS is per run: measure via /proc in a wrapper.
                wrapper = [sys.executable, str(Path(__file__).with_name("peak_rss.py")), *cli, "eval", "-j", str(args.concurrency), "--no-progress", "--no-cache", "-o", "out.json"]
                elapsed, _, proc = run_child(wrapper, env, folder)
                if proc.returncode not in (0, 1):
                    print(proc.stdout, proc.stderr, file=sys.stderr)
                    return 1
                peak_mb = float(proc.stderr.strip().splitlines()[-1].split("=")[1])
                data = json.loads((folder / "out.json").read_text())
                stats = data["results"]["stats"]
                assert stats["successes"] == args.tests, stats
                results.append((elapsed, peak_mb))
    finally:
        server.terminate()
        server.wait(timeout=10)
    best = min(r[0] for r in results)
    peak = max(r[1] for r in results)
    print(f"tests={args.tests} latency={args.latency_ms:g}ms concurrency={args.concurrency}")
    print(f"eval wall time: best {best:.2f}s, all {[round(r[0], 2) for r in results]}")
    print(f"eval peak RSS: {peak:.0f} MB")
    print(f"ci-grade --version: best {min(version_times):.3f}s, median {sorted(version_times)[2]:.3f}s")
    floor = args.tests * args.latency_ms / 1000 / args.concurrency
    print(f"(latency floor: {floor:.2f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
