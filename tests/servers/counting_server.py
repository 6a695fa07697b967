"""An LLMServer that reports how many TCP connections clients opened (to see client reuse on the wire)."""

from __future__ import annotations

from tests.servers.llm_server import LLMServer


class CountingServer(LLMServer):
    """`connections` is how many TCP connections clients have opened so far (see LLMServer)."""
