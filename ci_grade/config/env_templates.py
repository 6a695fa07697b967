"""`{{ env.NAME }}` in a provider's id and config, filled in when the provider is made, as promptfoo does.

Only expressions that read `env` are rendered, and only when the variable is set (or the
expression has a filter, such as `| default('x')`); anything else stays as written, so a
provider's own templates (an HTTP body's `{{ prompt }}`) are left for the call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from ci_grade.config.models import ProviderSpec, env_strings
from ci_grade.config.sources import SourceMap, format_path
from ci_grade.errors import ConfigError, TemplateError
from ci_grade.templating import nunjucks

T = TypeVar("T")

_EXPRESSION = re.compile(r"\{\{(?:[^}]|\}(?!\}))*\}\}")
_READS_ENV = re.compile(r"\benv\.|env\[")
_NAME = re.compile(r"""env\.(\w+)|env\[['"]([^'"]+)['"]\]""")


def render_env(value: T, env: Mapping[str, str]) -> T:
    """`value` (text, or lists and mappings of it) with its `{{ env.X }}` expressions rendered."""
    if isinstance(value, str):
        return _EXPRESSION.sub(lambda match: _render(match.group(), env), value) if "{{" in value else value  # type: ignore[return-value]
    if isinstance(value, list):
        return [render_env(item, env) for item in value]  # type: ignore[return-value]
    if isinstance(value, dict):
        return {key: item if key == "_conversation" else render_env(item, env) for key, item in value.items()}  # type: ignore[return-value]
    return value


def _render(expression: str, env: Mapping[str, str]) -> str:
    if not _READS_ENV.search(expression):
        return expression
    found = _NAME.search(expression)
    name = found and (found.group(1) or found.group(2))
    if "|" not in expression and not (name and env.get(name) is not None):
        return expression
    try:
        return nunjucks.render(expression, {"env": dict(env)})
    except TemplateError:
        return expression


def provider_env(spec: ProviderSpec, env: Mapping[str, str]) -> Mapping[str, str]:
    """The environment a provider sees: the run's, under the provider's own `env:` block."""
    own = env_strings(spec.env)
    return {**env, **own} if own else env


def render_spec(spec: ProviderSpec, env: Mapping[str, str]) -> ProviderSpec:
    """`spec` with `{{ env.X }}` in its id and config filled in from `env` (its label stays as written)."""
    provider_id, config = render_env(spec.id, env), render_env(spec.config, env)
    return spec if provider_id == spec.id and config == spec.config else spec.model_copy(update={"id": provider_id, "config": config})


def unset_env_warnings(raw: Any, env: Mapping[str, str], sources: SourceMap) -> list[str]:
    """One warning per variable a `{{ env.NAME }}` in the config reads that is not set (an
    expression with a filter, such as `| default('x')`, decides for itself): promptfoo renders it
    as empty text, and so does ci-grade, but a typo or a missing secret should not pass unseen."""
    own = {name for spec in (raw.get("providers") if isinstance(raw, dict) else None) or [] if isinstance(spec, dict) for name in env_strings(spec.get("env"))}
    unset = {name for text in _templated(raw) for name in _names_read(text)} - set(env) - own
    if not unset:
        return []
    found: dict[str, str] = {}
    pending: list[tuple[Any, Any, tuple[Any, ...]]] = [(None, raw, ())]  # (holder, value, path), in file order
    while pending:
        holder, node, path = pending.pop()
        if isinstance(node, dict | list):
            items = list(node.items() if isinstance(node, dict) else enumerate(node))
            pending.extend((node, value, (*path, key)) for key, value in reversed(items))
        elif isinstance(node, str) and "env" in node and "{{" in node:
            for name in _names_read(node):
                if name in unset and name not in found:
                    shown = path[:-1] if path[:1] == ("prompts",) and path[-1] in ("raw", "label") else path
                    where = ConfigError.at("", sources.location(holder, path[-1]), format_path(shown)).format().removesuffix(": ")
                    found[name] = f"{where}: {{{{ env.{name} }}}} reads {name}, which is not set (it renders as empty text, as in promptfoo)"
    return list(found.values())


def _templated(raw: Any) -> Iterator[str]:
    """Every text in `raw` that may read the environment (a quick walk: containers, no paths)."""
    pending = [raw]
    while pending:
        node = pending.pop()
        for value in node.values() if isinstance(node, dict) else node:
            if type(value) is str:
                if "{{" in value and "env" in value:
                    yield value
            elif isinstance(value, dict | list):
                pending.append(value)


def _names_read(text: str) -> list[str]:
    """The variables `text`'s expressions read from `env` (not those with a filter such as `default`)."""
    return [match.group(1) or match.group(2) for expression in _EXPRESSION.findall(text) if "|" not in expression for match in _NAME.finditer(expression)]
