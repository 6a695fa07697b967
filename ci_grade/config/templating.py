"""Jinja2 set up to render promptfoo's nunjucks templates the way nunjucks does.

Undefined variables render empty, nothing is HTML-escaped, values print as JavaScript would print
them (`true`, `1`, `a,b`), `env` is a global, and nunjucks' `dump` and promptfoo's `load` filters
exist. A prompt that is itself JSON (a chat-message array) has each string rendered separately and
is re-serialised, so interpolated values are JSON-escaped.
"""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


class _Undefined(jinja2.ChainableUndefined):
    """Renders as '' and tolerates attribute access, like nunjucks with throwOnUndefined off."""

    def __str__(self) -> str:
        return ""


def js_string(value: Any) -> str:
    """Format a value the way JavaScript's String() would."""
    if value is None or isinstance(value, jinja2.Undefined):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, list | tuple):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _dump(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=None if indent else (",", ":"), default=str)


def _load(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _finalize(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, jinja2.runtime.Undefined):
        return ""
    return js_string(value)


def _make_env(extra_env: tuple[tuple[str, str], ...]) -> jinja2.Environment:
    env = ImmutableSandboxedEnvironment(
        autoescape=False,
        undefined=_Undefined,
        finalize=_finalize,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.loopcontrols"],
    )
    env.filters["dump"] = _dump
    env.filters["load"] = _load
    env.filters["json"] = _dump
    env.globals["env"] = {**os.environ, **dict(extra_env)}
    return env


@lru_cache(maxsize=8)
def _environment(extra_env: tuple[tuple[str, str], ...]) -> jinja2.Environment:
    return _make_env(extra_env)


class TemplateError(ValueError):
    """A template could not be parsed or rendered."""


_TEMPLATE_CACHE: dict[tuple[str, tuple], jinja2.Template] = {}


def render(template: str, variables: dict[str, Any], env_overrides: dict[str, str] | None = None) -> str:
    """Render one nunjucks-style template string with `variables`."""
    if "{" not in template:
        return template
    key = tuple(sorted((env_overrides or {}).items()))
    cache_key = (template, key)
    compiled = _TEMPLATE_CACHE.get(cache_key)
    if compiled is None:
        try:
            compiled = _environment(key).from_string(template)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from exc
        if len(_TEMPLATE_CACHE) > 4096:
            _TEMPLATE_CACHE.clear()
        _TEMPLATE_CACHE[cache_key] = compiled
    try:
        return compiled.render(variables)
    except jinja2.TemplateError as exc:
        raise TemplateError(f"template error: {exc}") from exc
    except Exception as exc:  # a filter raising on bad input, e.g. `load` on invalid JSON
        raise TemplateError(f"template error: {type(exc).__name__}: {exc}") from exc


def render_value(value: Any, variables: dict[str, Any], env_overrides: dict[str, str] | None = None) -> Any:
    """Render every string inside `value` (strings, lists and dicts), leaving other types alone."""
    if isinstance(value, str):
        return render(value, variables, env_overrides)
    if isinstance(value, list):
        return [render_value(v, variables, env_overrides) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v, variables, env_overrides) for k, v in value.items()}
    return value


def render_prompt(template: str, variables: dict[str, Any], env_overrides: dict[str, str] | None = None) -> str:
    """Render a prompt; a prompt that parses as JSON is rendered string by string and re-serialised."""
    stripped = template.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            parsed = json.loads(template)
        except ValueError:
            parsed = None
        if isinstance(parsed, list | dict):
            return json.dumps(render_value(parsed, variables, env_overrides), ensure_ascii=False, indent=2)
    return render(template, variables, env_overrides)
