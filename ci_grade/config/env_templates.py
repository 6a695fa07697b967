"""`{{ env.NAME }}` in a provider's id and config, filled in when the provider is made, as promptfoo does.

Only expressions that read `env` are rendered, and only when the variable is set (or the
expression has a filter, such as `| default('x')`); anything else stays as written, so a
provider's own templates (an HTTP body's `{{ prompt }}`) are left for the call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar

from ci_grade.config.models import ProviderSpec, env_strings
from ci_grade.errors import TemplateError
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
