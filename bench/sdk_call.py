"""CPU per grader call on the OpenAI provider's own path, without a network: the provider and the
SDK's client as a run uses them, over an in-memory transport that answers every request at once
with a passing verdict.

    python bench/sdk_call.py --calls 3000 --rounds 3

Prints CPU per `provider.call` (prompt in, typed response out) and per bare `client.post` (the
SDK's share). Where the loopback benchmarks add sockets and the event loop's waits, this isolates
the request building and reply reading the SDK does for each call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import httpx2

from ci_grade.config.models import ProviderSpec
from ci_grade.providers import openai as openai_provider
from ci_grade.providers.base import CallContext

VERDICT = json.dumps({"reason": "meets the rubric", "pass": True, "score": 1.0})
BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
}).encode()
PROMPT = "You are grading output according to a user-specified rubric. " * 40


class Answering(httpx2.AsyncBaseTransport):
    """An httpx2 transport that answers every request with `BODY`."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]
        return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(BODY))


async def measure(calls: int, rounds: int) -> None:
    openai_provider.sdk_http_client = lambda timeout: httpx2.AsyncClient(transport=Answering(), timeout=timeout)  # type: ignore[assignment]
    env = {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    provider: Any = openai_provider.create(ProviderSpec(id="openai:gpt-4.1-mini"), env, 32)
    context = CallContext(response_schema={"type": "object"})
    first = await provider.call(PROMPT, context)
    assert first.output == VERDICT, first.error
    body = provider.chat_body(PROMPT, context)
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(calls):
            await provider.call(PROMPT, context)
        per_call = (time.process_time() - started) / calls
        started = time.process_time()
        for _ in range(calls):
            await provider.client().post("/chat/completions", cast_to=str, body=body)
        per_post = (time.process_time() - started) / calls
        print(f"provider.call {per_call * 1e6:.0f} µs CPU; client.post {per_post * 1e6:.0f} µs CPU")
    await provider.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(measure(args.calls, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
