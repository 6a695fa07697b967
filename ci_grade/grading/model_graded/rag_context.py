"""Where the context-* assertions get their context and query from.

The context is `vars.context` (a string, or a list of strings = chunks), replaced by the
assertion's `contextTransform` when it has one: a JavaScript expression (or `file://` script)
over `output` and `context` = `{vars, prompt: {label}, metadata}` (the provider response's
metadata). It runs on the provider's output after the provider's `transformResponse` but before
the test's and the assertion's `transform`, and must return a non-empty string or list of strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ci_grade.errors import GraderError, TransformError
from ci_grade.grading.context import AssertionContext
from ci_grade.grading.transforms import run_script


@dataclass(frozen=True)
class Context:
    """The resolved context: its chunks (one for a plain string) and where it came from."""

    chunks: tuple[str, ...]
    source: str
    is_list: bool

    @property
    def text(self) -> str:
        """What grader prompts show: chunks separated by blank lines."""
        return "\n\n".join(self.chunks)


def _as_chunks(value: Any, origin: str) -> tuple[tuple[str, ...], bool]:
    if isinstance(value, str):
        return (value,), False
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise GraderError(f"{origin} must be a string or a list of strings, but item {index} is {_kind(item)}")
        return tuple(value), True
    raise GraderError(f"{origin} must be a string or a list of strings, got {_kind(value)}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", bool: "a boolean", int: "a number", float: "a number", list: "a list"}.get(type(value), type(value).__name__)


def _label(code: str) -> str:
    text = " ".join(code.split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


async def transformed_context(ctx: AssertionContext, code: str) -> Any:
    """Run `contextTransform` on the provider output (before test and assertion transforms); its
    `context.prompt.label` is the rendered prompt, as promptfoo passes it."""
    context = {"vars": ctx.vars, "prompt": {"label": ctx.prompt}, "metadata": ctx.response.metadata or {}}
    try:
        returned, value = await run_script(code, [ctx.provider_output, context], ctx.run.base_dir, ("output", "context"), "get_context")
    except TransformError as exc:
        raise GraderError(f"contextTransform {_label(code)} failed: {exc}") from None
    except Exception as exc:
        raise GraderError(f"contextTransform {_label(code)} failed: {type(exc).__name__}: {exc}") from None
    if not returned or value is None:
        hint = " (the output is text here: parse it first, e.g. JSON.parse(output).context)" if isinstance(ctx.provider_output, str) else ""
        raise GraderError(f"contextTransform {_label(code)} returned no value; it must return a non-empty string or list of strings{hint}")
    return value


async def resolve_context(ctx: AssertionContext, *, fallback: str | None = None) -> Context:
    """The context for a context-* assertion, or a GraderError saying what is missing."""
    code = ctx.assertion.contextTransform
    if code:
        value = await transformed_context(ctx, code)
        chunks, is_list = _as_chunks(value, f"the result of contextTransform {_label(code)}")
        source = "contextTransform"
    elif ctx.vars.get("context") not in (None, "", []):
        chunks, is_list = _as_chunks(ctx.vars["context"], "vars.context")
        source = "vars.context"
    elif fallback is not None and fallback.strip():
        chunks, is_list, source = (fallback,), False, "prompt"
    else:
        raise GraderError(f"{ctx.type} needs a context: set vars.context (a string or a list of strings) or the assertion's contextTransform")
    if not chunks or not all(chunk.strip() for chunk in chunks):
        empty = "an empty list" if not chunks else ("an empty string" if not is_list else "an empty chunk")
        raise GraderError(f"{ctx.type} needs a non-empty context, but {source} gave {empty}")
    return Context(chunks, source, is_list)


def required_query(ctx: AssertionContext) -> str:
    query = ctx.vars.get("query")
    if not isinstance(query, str) or not query.strip():
        found = "is missing" if query is None else f"is {_kind(query)}" if not isinstance(query, str) else "is empty"
        raise GraderError(f"{ctx.type} needs vars.query (the question the output answers) as a string; vars.query {found}")
    return query
