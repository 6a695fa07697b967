"""Estimated cost of a call from its token counts.

Prices are USD per million tokens (input, output) for common models; a provider's
`config.cost`, `config.inputCost` or `config.outputCost` (USD per token, as in promptfoo)
override them. An unknown model has an unknown cost (None), never a made-up one.
"""

from __future__ import annotations

import re
from typing import Any

_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-3.5-turbo": (0.5, 1.5),
    "gpt-4": (30.0, 60.0),
    "gpt-4-turbo": (10.0, 30.0),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.4),
    "o1": (15.0, 60.0),
    "o1-mini": (1.1, 4.4),
    "o3": (2.0, 8.0),
    "o3-mini": (1.1, 4.4),
    "o4-mini": (1.1, 4.4),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.1, 0.0),
    "omni-moderation-latest": (0.0, 0.0),
    "text-moderation-latest": (0.0, 0.0),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.8, 4.0),
    "claude-3-5-sonnet": (3.0, 15.0),
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-opus-4-1": (15.0, 75.0),
}

_DATED = re.compile(r"^(?P<base>.+?)(?:-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


def price_per_token(model: str | None) -> tuple[float, float] | None:
    if not model:
        return None
    name = model.split("/")[-1]
    if name in _PER_MILLION:
        input_price, output_price = _PER_MILLION[name]
    else:
        match = _DATED.match(name)
        if not match or match.group("base") not in _PER_MILLION:
            return None
        input_price, output_price = _PER_MILLION[match.group("base")]
    return input_price / 1e6, output_price / 1e6


def estimate_cost(model: str | None, config: dict[str, Any], prompt_tokens: int, completion_tokens: int) -> float | None:
    """Cost of one call, or None when the price is unknown."""
    per_token = price_per_token(model)
    input_price = config.get("inputCost", config.get("cost"))
    output_price = config.get("outputCost", config.get("cost"))
    if input_price is None or output_price is None:
        if per_token is None:
            return None
        input_price = per_token[0] if input_price is None else input_price
        output_price = per_token[1] if output_price is None else output_price
    return float(input_price) * prompt_tokens + float(output_price) * completion_tokens
