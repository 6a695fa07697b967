"""Tokens spent by model calls: the accounting type every stage shares (providers count, results keep)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TokenUsage(BaseModel):
    """Token counts for one call or a sum of calls."""

    model_config = ConfigDict(populate_by_name=True)

    prompt: int = 0
    completion: int = 0
    total: int = 0
    cached: int = 0
    reasoning: int = 0
    num_requests: int = Field(default=0, alias="numRequests")

    def add(self, other: TokenUsage | None) -> TokenUsage:
        """Add `other` into this usage (in place) and return self."""
        if other is not None:
            self.prompt += other.prompt
            self.completion += other.completion
            self.total += other.total
            self.cached += other.cached
            self.reasoning += other.reasoning
            self.num_requests += other.num_requests
        return self

    @classmethod
    def of(cls, prompt: int | None = 0, completion: int | None = 0, total: int | None = None, cached: int | None = 0, reasoning: int | None = 0, requests: int = 1) -> TokenUsage:
        prompt, completion = prompt or 0, completion or 0
        return cls(prompt=prompt, completion=completion, total=total if total is not None else prompt + completion, cached=cached or 0, reasoning=reasoning or 0, num_requests=requests)
