"""`echo`: returns the rendered prompt as the output (for grading canned replies offline)."""

from __future__ import annotations

from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.results.usage import TokenUsage


class EchoProvider(Provider):
    def price(self) -> tuple[float, float] | None:
        """Free: no model is called."""
        return 0.0, 0.0

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        return ProviderResponse(output=prompt, token_usage=TokenUsage(), cost=0.0, finish_reason="stop")
