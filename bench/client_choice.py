"""Which maintained HTTP client the providers run on: CPU and wall per call of each candidate.

    python bench/client_choice.py --calls 2000 -j 32 --latency-ms 100 --rounds 3

Each candidate sends `--calls` chat requests, `-j` at once, to the loopback grader
(`tests/servers/llm_server.py` in its own process, answering after `--latency-ms`) in a fresh
process of its own, after 64 unmeasured calls that open the connections and warm the imports;
the process's CPU over the measured calls (user + system) divided by the calls is its CPU per
call. Candidates run in turn, round after round (A B C D, A B C D, ...), so a busy spell on a
shared machine hits all of them alike; the table gives each one's median and range.

Candidates, all through public APIs:
- `sdk-httpx2`: the OpenAI SDK's `AsyncOpenAI` on its default client (`DefaultAsyncHttpxClient`);
- `sdk-aiohttp`: the same on its documented aiohttp client (`DefaultAioHttpClient`, `openai[aiohttp]`);
- `httpx`: `httpx.AsyncClient` on its own transport (HTTP API providers);
- `httpx-aiohttp`: `httpx_aiohttp.HttpxAiohttpClient` (httpx on aiohttp).
The SDK candidates call `client.post(..., cast_to=bytes)` as the OpenAI provider does; the httpx
ones `client.post(url, json=...)` and read the JSON, as the HTTP API providers do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from grader_costs import grader
from runner import REPO

CANDIDATES = ("sdk-httpx2", "sdk-aiohttp", "httpx", "httpx-aiohttp")
BODY = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "Grade this output. " * 40}], "temperature": 0}
WARM_UP = 64


def make_client(candidate: str, base_url: str) -> tuple[Any, Any]:
    """(send one request, close) for `candidate`."""
    if candidate.startswith("sdk-"):
        import openai

        http_client = openai.DefaultAioHttpClient(timeout=30) if candidate == "sdk-aiohttp" else openai.DefaultAsyncHttpxClient(timeout=30)
        client = openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0, timeout=30, http_client=http_client)

        async def send_sdk() -> None:
            json.loads(await client.post("/chat/completions", cast_to=bytes, body=BODY))

        return send_sdk, client.close
    import httpx

    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    if candidate == "httpx-aiohttp":
        from httpx_aiohttp import HttpxAiohttpClient

        plain: httpx.AsyncClient = HttpxAiohttpClient(timeout=30, limits=limits)
    else:
        plain = httpx.AsyncClient(timeout=30, limits=limits)

    async def send_httpx() -> None:
        reply = await plain.post(f"{base_url}/chat/completions", json=BODY)
        reply.raise_for_status()
        reply.json()

    return send_httpx, plain.aclose


async def measure(candidate: str, base_url: str, calls: int, concurrency: int) -> dict[str, float]:
    send, close = make_client(candidate, base_url)

    async def batch(count: int) -> None:
        left = count

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await send()

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    await batch(WARM_UP)
    started, cpu = time.perf_counter(), time.process_time()
    await batch(calls)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    await close()
    import resource

    return {"wall": wall, "cpu_per_call": cpu / calls, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child(args: argparse.Namespace) -> int:
    print(json.dumps(asyncio.run(measure(args.child, args.base_url, args.calls, args.concurrency))))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("-j", "--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=CANDIDATES, action="append")
    parser.add_argument("--child", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    candidates = args.only or list(CANDIDATES)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in candidates}
    with grader(args.latency_ms) as env:
        for _ in range(args.rounds):
            for name in candidates:
                command = [sys.executable, __file__, "--child", name, "--base-url", env["OPENAI_BASE_URL"], "--calls", str(args.calls), "-j", str(args.concurrency)]
                done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
                results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"  {name}: {results[name][-1]}", file=sys.stderr)
    floor = args.calls * args.latency_ms / 1000 / args.concurrency
    print(f"{args.calls} chat calls, -j {args.concurrency}, {args.latency_ms:g} ms latency (floor {floor:.2f} s), {args.rounds} rounds")
    print("| candidate | CPU per call, median (range) | wall, median | peak RSS |")
    print("| --- | ---: | ---: | ---: |")
    for name, runs in results.items():
        per_call = [r["cpu_per_call"] * 1e6 for r in runs]
        print(
            f"| `{name}` | {statistics.median(per_call):.0f} µs ({min(per_call):.0f}-{max(per_call):.0f}) "
            f"| {statistics.median(r['wall'] for r in runs):.2f} s | {max(r['peak_rss_mb'] for r in runs):.0f} MB |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
