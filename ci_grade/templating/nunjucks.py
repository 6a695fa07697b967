"""Jinja2 set up to render promptfoo's nunjucks templates the way nunjucks does.

Undefined variables render empty, nothing is HTML-escaped, values print as JavaScript would print
them (`true`, `1`, `a,b`), `env` is a global, and nunjucks' `dump` and promptfoo's `load` filters
exist. A prompt that is itself JSON (a chat-message array) has each string rendered separately and
is re-serialised, so interpolated values are JSON-escaped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.meta

from ci_grade.errors import TemplateError
from ci_grade.js_values import js_json
from ci_grade.templating import builtin_filters, javascript
from ci_grade.templating.jinja_overrides import NunjucksEnvironment, NunjucksSyntax, Undefined


def js_string(value: Any) -> str:
    """Format a value the way JavaScript's String() would, as a template prints it: null and
    undefined print nothing (`javascript.to_string` spells them out, as `+` does)."""
    if value is None or isinstance(value, jinja2.Undefined):
        return ""
    return javascript.to_string(value)


def _dump(value: Any, indent: int | str | None = None) -> Any:
    if isinstance(value, jinja2.Undefined):
        return value  # JSON.stringify(undefined) is undefined: it prints nothing, and compares as undefined
    return js_json(value, indent)


def _load(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _finalize(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, jinja2.runtime.Undefined):
        return ""
    if isinstance(value, Iterator):
        value = list(value)  # what a user filter or a jinja global returned lazily: an array in nunjucks
    return js_string(value)


class _EnvView(Mapping[str, str]):
    """The `env` global: the config's `env:` overrides over the live process environment."""

    def __init__(self, overrides: dict[str, str]):
        self._overrides = overrides

    def __getitem__(self, key: str) -> str:
        if key in self._overrides:
            return self._overrides[key]
        return os.environ[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**os.environ, **self._overrides})

    def __len__(self) -> int:
        return len({**os.environ, **self._overrides})


class _UserFilters:
    """promptfoo's `nunjucksFilters` of the config being run (each config load replaces them)."""

    filters: dict[str, Callable[..., Any]] = {}
    version = 0


def use_filters(filters: Mapping[str, Callable[..., Any]]) -> None:
    """Make `filters` available to every template rendered from now on (in place of earlier ones)."""
    if dict(filters) != _UserFilters.filters:
        _UserFilters.filters = dict(filters)
        _UserFilters.version += 1


def _make_env(extra_env: tuple[tuple[str, str], ...]) -> jinja2.Environment:
    env = NunjucksEnvironment(
        autoescape=False,
        undefined=Undefined,
        finalize=_finalize,
        keep_trailing_newline=True,
        optimized=False,  # constants are computed at render time, by JavaScript's rules
        extensions=["jinja2.ext.loopcontrols", NunjucksSyntax],
    )
    for name in builtin_filters.LISTING:
        env.filters[name] = builtin_filters.listed(env.filters[name])
    env.filters.update(builtin_filters.FILTERS)
    for name in builtin_filters.SEQUENCES:
        env.filters[name] = builtin_filters.sequences_only(name, env.filters[name])
    env.tests.update(builtin_filters.TESTS)
    env.filters["js_loop_items"] = javascript.loop_items
    env.filters["dump"] = _dump
    env.filters["load"] = _load
    env.filters["json"] = _dump
    env.globals["env"] = _EnvView(dict(extra_env))
    env.globals["null"] = None  # a literal in nunjucks
    env.filters.update(_UserFilters.filters)
    return env


@lru_cache(maxsize=8)
def _environment(extra_env: tuple[tuple[str, str], ...], filters_version: int = 0) -> jinja2.Environment:
    return _make_env(extra_env)


_TAG = re.compile(r"\{[{%#]")
"""Where a template tag, expression or comment opens: text without one renders as itself."""
_TEMPLATE_CACHE: dict[tuple[str, tuple[tuple[str, str], ...], int], jinja2.Template] = {}


def _compile(template: str, key: tuple[tuple[str, str], ...]) -> jinja2.Template:
    cache_key = (template, key, _UserFilters.version)
    compiled = _TEMPLATE_CACHE.get(cache_key)
    if compiled is None:
        try:
            compiled = _environment(key, _UserFilters.version).from_string(template)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from exc
        if len(_TEMPLATE_CACHE) > 4096:
            _TEMPLATE_CACHE.clear()
        _TEMPLATE_CACHE[cache_key] = compiled
    return compiled


def check(template: str) -> None:
    """Raise TemplateError if `template` (a chat-message JSON prompt included) does not parse."""
    parsed = _json_prompt(template)
    texts = _strings(parsed) if parsed is not None else [template]
    for text in texts:
        if "{" in text:
            _compile(text, ())


def references(template: str) -> set[str]:
    """The variables `template` reads (a chat-message JSON prompt's strings included); a template
    that does not parse reads nothing."""
    parsed = _json_prompt(template)
    names: set[str] = set()
    for text in _strings(parsed) if parsed is not None else [template]:
        if "{" in text:
            try:
                names |= jinja2.meta.find_undeclared_variables(_environment((), _UserFilters.version).parse(text))
            except jinja2.TemplateSyntaxError:
                continue
    return names


def render(template: str, variables: dict[str, Any], env_overrides: dict[str, str] | None = None) -> str:
    """Render one nunjucks-style template string with `variables`."""
    if not _TAG.search(template) and "\r" not in template:
        return template  # nothing to render (jinja would only normalise line ends)
    pieces = _substitutions(template)
    if pieces is not None and all(type(variables.get(name)) is str for name in pieces[1::2]):
        return "".join(variables[piece] if i % 2 else piece for i, piece in enumerate(pieces))
    compiled = _compile(template, tuple(sorted((env_overrides or {}).items())))
    try:
        return compiled.render(variables)
    except jinja2.TemplateError as exc:
        raise TemplateError(f"template error: {exc}") from exc
    except Exception as exc:  # a filter raising on bad input, e.g. `load` on invalid JSON
        raise TemplateError(f"template error: {type(exc).__name__}: {exc}") from exc


_SUBSTITUTION = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NOT_PLAIN_NAMES = frozenset({"true", "false", "none", "True", "False", "None", "self", "caller", "varargs", "kwargs", "loop"})


@lru_cache(maxsize=1024)
def _substitutions(template: str) -> tuple[str, ...] | None:
    """A template that only prints variables by name (`Hi {{ name }}`) as text and names in turn
    (text, name, text, ...); None for any other template (filters, tags, comments, a `\r`)."""
    pieces = _SUBSTITUTION.split(template)
    if "\r" in template or any(_TAG.search(text) for text in pieces[::2]) or any(name in _NOT_PLAIN_NAMES for name in pieces[1::2]):
        return None
    return tuple(pieces)


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
    """Render a prompt; a prompt that parses as JSON is rendered string by string and re-serialised.

    As in promptfoo, a text prompt sees its string variables rendered as templates first (with the
    variables), except those that read a variable that is not defined."""
    parsed = _json_prompt(template)
    if parsed is not None:
        return js_json(render_value(parsed, variables, env_overrides), 2)  # JSON.stringify(..., null, 2)
    return render(template, _rendered_vars(variables, env_overrides), env_overrides)


_PARTIAL_TAG = re.compile(r"({%[^%]*$|{{[^}]*$|{#[^#]*$)", re.M)


def _rendered_vars(variables: dict[str, Any], env_overrides: dict[str, str] | None) -> dict[str, Any]:
    out = dict(variables)
    for name, value in variables.items():
        if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
            continue
        if _PARTIAL_TAG.search(value) and not ("{% raw %}" in value and "{% endraw %}" in value):
            continue  # promptfoo wraps a variable with an unclosed tag in {% raw %}: it prints as written
        try:
            names = jinja2.meta.find_undeclared_variables(_environment((), _UserFilters.version).parse(value))
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"variable {name!r}: template syntax error on line {exc.lineno}: {exc.message}") from None
        if all(n == "env" or n in variables for n in names):
            try:
                out[name] = render(value, variables, env_overrides)
            except TemplateError as exc:
                raise TemplateError(f"variable {name!r}: {exc}") from None
    return out


def _json_prompt(template: str) -> list[Any] | dict[str, Any] | None:
    """The JSON array or object `template` is, if it is one."""
    if template.lstrip()[:1] not in ("[", "{"):
        return None
    try:
        parsed = json.loads(template)
    except ValueError:
        return None
    return parsed if isinstance(parsed, list | dict) else None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def resolve_references(variables: dict[str, Any], rounds: int = 5) -> dict[str, Any]:
    """Fill `{{ other }}` in string variables with the other variables' values (a few rounds deep)."""
    out = dict(variables)
    for _ in range(rounds):
        changed = False
        for key, value in out.items():
            if not isinstance(value, str) or "{{" not in value:
                continue

            def fill(match: re.Match[str], key: str = key) -> str:
                name = match.group(1)
                if name == key or name not in out:
                    return match.group(0)
                other = out[name]
                if isinstance(other, str):
                    return other
                return js_string(other) if isinstance(other, int | float | bool) else match.group(0)

            new = _REFERENCE.sub(fill, value)
            if new != value:
                out[key] = new
                changed = True
        if not changed:
            break
    return out
