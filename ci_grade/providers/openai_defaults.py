"""promptfoo's sampling defaults for OpenAI calls (providers under test and graders alike).

What the config leaves out, promptfoo 0.123.1 sends as `temperature: 0` and 1024 tokens at most
(`OPENAI_TEMPERATURE`, `OPENAI_MAX_TOKENS` change them; `omitDefaults: true` keeps only those
variables); a reasoning model (o1, o3, o4, gpt-5, ...) gets neither, only `max_completion_tokens`
when the config or `OPENAI_MAX_COMPLETION_TOKENS` gives one. `OPENAI_TOP_P`,
`OPENAI_PRESENCE_PENALTY` and `OPENAI_FREQUENCY_PENALTY` apply when set. The legacy Completions
API always gets each sampling field (`completion_defaults`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_REASONING_PARTS = ("deepseek-r1", "deepseek_r1", "phi-4-reasoning", "phi-4-mini-reasoning", "mai-thinking", "mai-ds-r1", "mai-reasoning")
_ENV_OPTIONS = (("top_p", "OPENAI_TOP_P"), ("presence_penalty", "OPENAI_PRESENCE_PENALTY"), ("frequency_penalty", "OPENAI_FREQUENCY_PENALTY"))
# The legacy Completions API's sampling fields: (body field, variable, type, promptfoo's default).
_COMPLETION_OPTIONS: tuple[tuple[str, str, type[int] | type[float], int | float], ...] = (
    ("max_tokens", "OPENAI_MAX_TOKENS", int, 1024),
    ("temperature", "OPENAI_TEMPERATURE", float, 0),
    ("top_p", "OPENAI_TOP_P", float, 1),
    ("presence_penalty", "OPENAI_PRESENCE_PENALTY", float, 0),
    ("frequency_penalty", "OPENAI_FREQUENCY_PENALTY", float, 0),
    ("best_of", "OPENAI_BEST_OF", int, 1),
)


def is_reasoning_model(model: str, config: Mapping[str, Any]) -> bool:
    """promptfoo's test: the config says so (`isReasoningModel`, `o1`), or the model's name does."""
    if config.get("isReasoningModel") or config.get("o1"):
        return True
    name = model.lower()
    if any(name.startswith(prefix) or f"-{prefix}" in name for prefix in _REASONING_PREFIXES):
        return True
    return any(part in name for part in _REASONING_PARTS) or ("grok" in name and "reasoning" in name)


def chat_defaults(model: str, config: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(what to add to a Chat Completions body, keys to leave out of it) for `model` and `config`."""
    if is_reasoning_model(model, config):
        added = _first({"max_completion_tokens": (config.get("max_completion_tokens"), _number(env, "OPENAI_MAX_COMPLETION_TOKENS", int))})
        return {**added, **_env_options(config, env)}, ("temperature", "max_tokens")
    omit = bool(config.get("omitDefaults"))
    added = _first({
        "max_tokens": (config.get("max_tokens"), _number(env, "OPENAI_MAX_TOKENS", int), None if omit else 1024),
        "temperature": (config.get("temperature"), _number(env, "OPENAI_TEMPERATURE", float), None if omit else 0),
    })
    return {**added, **_env_options(config, env)}, ()


def responses_defaults(model: str, config: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(what to add to a Responses API body, keys to leave out of it) for `model` and `config`."""
    reasoning = is_reasoning_model(model, config)
    omit = bool(config.get("omitDefaults"))
    tokens = (_number(env, "OPENAI_MAX_COMPLETION_TOKENS", int), _number(env, "OPENAI_MAX_TOKENS", int)) if reasoning else (_number(env, "OPENAI_MAX_TOKENS", int), None if omit else 1024)
    added = _first({"max_output_tokens": (config.get("max_output_tokens"), *tokens)})
    if reasoning:
        return {**added, **_env_options(config, env)}, ("temperature",)
    added |= _first({"temperature": (config.get("temperature"), _number(env, "OPENAI_TEMPERATURE", float), None if omit else 0)})
    return {**added, **_env_options(config, env)}, ()


def completion_defaults(config: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The Completions API's sampling fields: the config's, else the variable's, else promptfoo's default."""
    return _first({field: (config.get(field), _number(env, name, kind), default) for field, name, kind, default in _COMPLETION_OPTIONS})


def _first(choices: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """Each key with the first of its candidate values that is set."""
    out = {}
    for key, candidates in choices.items():
        value = next((candidate for candidate in candidates if candidate is not None), None)
        if value is not None:
            out[key] = value
    return out


def _env_options(config: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    return {key: value for key, name in _ENV_OPTIONS if config.get(key) is None and (value := _number(env, name, float)) is not None}


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> int | float | None:
    """A variable as promptfoo's getEnvInt/getEnvFloat read it: unset or unreadable is no value."""
    text = (env.get(name) or "").strip()
    try:
        return kind(float(text)) if text else None
    except (ValueError, OverflowError):
        return None
