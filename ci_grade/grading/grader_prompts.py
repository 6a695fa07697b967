"""Grader prompts as data: built-in templates and users' `rubricPrompt` overrides.

Built-in templates are YAML files in `grading/prompts/` holding `messages` (chat messages whose
`content` is a jinja2 template), optionally a `response_schema` (the JSON reply the grader is
asked for, used for structured output), and for the prompt that decides an assertion's verdict a
`scoring` section: how replies map to scores (`choices`, `scale`) and which pass rule applies.
Each template's hash goes into the results, so a changed grader prompt or scoring rule is visible
next to a changed score.

Overrides follow promptfoo: a string, a chat-message list, or `file://...`; text that parses as
JSON (after dropping `//` comments) is rendered string by string and re-serialised, anything else
is rendered as one template. Variables holding objects are JSON-stringified first.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ci_grade.config import files, yaml12
from ci_grade.errors import GraderError, TemplateError, VerdictError, VerdictProblem
from ci_grade.grading.scoring import PassRule
from ci_grade.grading.verdicts import strip_comments
from ci_grade.js_values import js_json
from ci_grade.templating import nunjucks


class Scoring(BaseModel):
    """How a grader's replies become a verdict (the `scoring:` section of a template)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: PassRule
    """How the score (and the grader's own pass/fail) becomes pass or fail."""
    choices: dict[str, float] = Field(default_factory=dict)
    """The score of each choice the grader may reply with (a category, a Y/N letter, yes/no)."""
    scale: float = 1.0
    """The top of the grader's own score range; scores are divided by it (e.g. 10 for a 0-10 scale)."""
    relation: tuple[str, str] = (">=", "<")
    """How a reason says the score reached the threshold, or did not."""

    def choice(self, name: str) -> float:
        """The score of the choice `name` (a VerdictError for a choice the template does not list)."""
        if name not in self.choices:
            raise VerdictError(f"grader chose {name!r}, which is not one of {', '.join(self.choices)}", VerdictProblem.INVALID)
        return self.choices[name]


@dataclass(frozen=True)
class GraderTemplate:
    name: str
    messages: tuple[tuple[str, str], ...]
    response_schema: dict[str, Any] | None
    hash: str
    scoring: Scoring | None = None

    def render(self, variables: dict[str, Any]) -> str:
        """The chat messages as a JSON array string (what chat providers accept as a prompt)."""
        rendered = [{"role": role, "content": nunjucks.render(content, variables)} for role, content in self.messages]
        return json.dumps(rendered, ensure_ascii=False)


@lru_cache(maxsize=64)
def load_template(name: str) -> GraderTemplate:
    """A built-in grader template by name (`grading/prompts/<name>.yaml`)."""
    source = resources.files("ci_grade.grading").joinpath("prompts", f"{name}.yaml")
    raw = source.read_bytes()
    data = yaml12.loads(raw.decode("utf-8"))
    messages = tuple((str(m["role"]), str(m["content"])) for m in data["messages"])
    scoring = Scoring.model_validate(data["scoring"]) if data.get("scoring") is not None else None
    return GraderTemplate(name, messages, data.get("response_schema"), hashlib.sha256(raw).hexdigest()[:12], scoring)


def fence(text: str, tag: str = "output") -> str:
    """Wrap untrusted text in a tag whose id is derived from the text itself.

    The closing tag carries the same id, which the text cannot know in advance, so an output
    that contains a fake closing tag or a fake verdict cannot end the data block early.
    """
    nonce = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f'<{tag} id="{nonce}">\n{text}\n</{tag} id="{nonce}">'


_JSON_STARTS = frozenset('{["-0123456789tfnNI \t\n\r')
"""The characters JSON text (as Python's parser reads it: NaN and Infinity too) can begin with."""


def try_parse(value: Any) -> Any:
    """promptfoo's tryParse for template variables: JSON text becomes data, other text stays."""
    if isinstance(value, str) and value[:1] in _JSON_STARTS:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def template_vars(variables: dict[str, Any]) -> dict[str, Any]:
    """Objects become JSON text; arrays keep primitives and stringify object elements."""
    out: dict[str, Any] = {}
    for key, value in variables.items():
        if isinstance(value, dict):
            out[key] = js_json(value)
        elif isinstance(value, list):
            out[key] = [js_json(v) if isinstance(v, dict | list) else v for v in value]
        else:
            out[key] = value
    return out


def load_override(raw: Any, base_dir: Path, env_overrides: dict[str, str] | None = None) -> str:
    """A `rubricPrompt` value as template text (files read raw, structures serialised)."""
    if isinstance(raw, str) and raw.startswith("file://"):
        path = files.resolve(nunjucks.render(raw, {}, env_overrides), base_dir)
        if not path.is_file():
            raise GraderError(f"rubricPrompt file not found: {path}")
        return files.read_text(path)
    if isinstance(raw, list | dict):
        return json.dumps(raw, ensure_ascii=False)
    if isinstance(raw, str):
        return raw
    raise GraderError(f"rubricPrompt must be a string, a list of messages or file://, got {type(raw).__name__}")


def render_override(template: str, variables: dict[str, Any], env_overrides: dict[str, str] | None = None) -> str:
    """Render override text with promptfoo's JSON-aware rules (and `//` comments tolerated)."""
    values = template_vars(variables)
    stripped = template.strip()
    if stripped[:1] in "[{":
        try:
            parsed = json.loads(strip_comments(stripped))
        except ValueError:
            parsed = None
        if isinstance(parsed, list | dict):
            try:
                return json.dumps(nunjucks.render_value(parsed, values, env_overrides), ensure_ascii=False)
            except TemplateError:
                pass
    try:
        return nunjucks.render(template, values, env_overrides)
    except TemplateError as exc:
        raise GraderError(f"rubricPrompt: {exc}") from None
