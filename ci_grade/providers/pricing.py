"""Estimated cost of a call from its token counts, priced from promptfoo's tables.

`prices.json` (next to this module) holds promptfoo's per-model prices in USD per token, grouped
by provider family, with its source and retrieval date; it is read on the first lookup. Names
match as promptfoo matches them: the exact id (dated snapshots and `-latest` ids are listed
themselves), an alias, `openai/gpt-4o` as `gpt-4o` and `ft:<base>:...` as `ft:<base>` for
OpenAI. A provider's `config.cost`, `config.inputCost` or `config.outputCost` (USD per token)
override the table. An unknown model has an unknown cost (None), never a made-up one.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

PRICES = Path(__file__).with_name("prices.json")


@functools.cache
def _families() -> dict[str, Any]:
    """prices.json's families: {family: {match, ..., models: {id: prices}}}."""
    data: dict[str, Any] = json.loads(PRICES.read_text(encoding="utf-8"))["families"]
    return data


@functools.cache
def _index(family: str) -> dict[str, dict[str, Any]]:
    table = _families()[family]["models"]
    index = {alias: entry for entry in table.values() for alias in entry.get("aliases", [])}
    return {**index, **table}


def _prices(model: str | None, family: str, region: str | None = None) -> dict[str, Any] | None:
    spec = _families().get(family)
    if not model or spec is None:
        return None
    if spec["match"] == "substring":
        name = model.lower()
        tables = [spec.get("regions", {}).get(region or "", {}), spec["models"]]
        entry = next((e for table in tables for key, e in table.items() if key in name), None)
    else:
        name = model.rsplit("/", 1)[-1] if spec["match"] == "last-path-segment" else model
        entry = _index(family).get(name)
        prefix = spec.get("fineTunedPrefix")
        if entry is None and prefix and name.startswith(prefix):
            entry = _index(family).get(":".join(name.split(":", 2)[:2]))
    return entry if entry is not None and "input" in entry else None


def price_entry(model: str | None, family: str = "openai") -> dict[str, Any] | None:
    """The model's prices in the family's table (every field, audio and image rates included), or None."""
    return _prices(model, family)


def price_per_token(model: str | None, family: str = "openai") -> tuple[float, float] | None:
    """(input, output) USD per token from the family's table, or None for an unknown model."""
    entry = _prices(model, family)
    return None if entry is None else (float(entry["input"]), float(entry.get("output", 0.0)))


def price_of(model: str | None, config: dict[str, Any], family: str | None) -> tuple[float, float] | None:
    """(input, output) USD per token as calls are billed: the config's `inputCost`/`outputCost`
    (or `cost` for both), else the family's table; None when either price is unknown."""
    table = price_per_token(model, family) if family else None
    input_price = config.get("inputCost", config.get("cost"))
    output_price = config.get("outputCost", config.get("cost"))
    if input_price is None and table is not None:
        input_price = table[0]
    if output_price is None and table is not None:
        output_price = table[1]
    if not isinstance(input_price, int | float) or not isinstance(output_price, int | float):
        return None
    return float(input_price), float(output_price)


def estimate_cost(
    model: str | None,
    config: dict[str, Any],
    prompt_tokens: int,
    completion_tokens: int,
    *,
    family: str = "openai",
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    region: str | None = None,
) -> float | None:
    """Cost of one call, or None when the price is unknown.

    `prompt_tokens` counts every prompt token, including the `cached_tokens` read from and the
    `cache_write_tokens` written to the provider's prompt cache. A family with prices per region
    (Bedrock) looks in `region`'s table first.
    """
    spec = _families().get(family, {})
    entry = _prices(model, family, region)
    input_override = config.get("inputCost", config.get("cost"))
    output_override = config.get("outputCost", config.get("cost"))
    if entry is None:
        if input_override is None or output_override is None:
            return None
        entry = {}
    long_context = entry.get("longContext")
    if long_context is not None:
        inclusive = spec.get("longContextInclusive", False)
        if prompt_tokens > long_context["threshold"] or (inclusive and prompt_tokens == long_context["threshold"]):
            entry = {**entry, **long_context}
    input_price = float(input_override if input_override is not None else entry["input"])
    output_price = float(output_override if output_override is not None else entry.get("output", 0.0))

    def cache_price(field: str, factor_field: str) -> float:
        factor = entry.get(factor_field, spec.get(factor_field))
        if factor is not None:
            return input_price * float(factor)
        return input_price if input_override is not None else float(entry.get(field, input_price))

    cached = min(max(cached_tokens, 0), prompt_tokens)
    written = min(max(cache_write_tokens, 0), prompt_tokens - cached)
    return (
        (prompt_tokens - cached - written) * input_price
        + cached * cache_price("cachedInput", "cacheReadFactor")
        + written * cache_price("cacheWrite", "cacheWriteFactor")
        + completion_tokens * output_price
        + float(entry.get("perRequest", 0.0))
    )
