"""`javascript` and `python` assertions: user code that returns a bool, a number or a result.

Return values are normalised as promptfoo does: a boolean passes or fails; a number is the score
and passes when `>= threshold` (or `> 0` without one); a mapping gives pass, score, reason,
named scores and component results (Python's snake_case keys are accepted).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ci_grade.config import files
from ci_grade.errors import GraderError, ScriptError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.results.models import AssertionResult
from ci_grade.scripting import js, python


def script_context(ctx: AssertionContext) -> dict[str, Any]:
    """The `context` argument scripts receive."""
    provider = {"id": ctx.provider.id, "label": ctx.provider.label} if ctx.provider else None
    response = {
        "output": ctx.response.output,
        "tokenUsage": ctx.response.token_usage.model_dump(by_alias=True),
        "cost": ctx.response.cost,
        "cached": ctx.response.cached,
        "finishReason": ctx.response.finish_reason,
        "metadata": ctx.response.metadata,
    }
    return {
        "prompt": ctx.prompt,
        "vars": ctx.vars,
        "test": {"description": ctx.test.description, "vars": ctx.vars, "metadata": ctx.test.metadata or {}, "options": ctx.test.options.model_dump(exclude_none=True)},
        "config": ctx.config,
        "provider": provider,
        "providerResponse": response,
    }


@assertion("javascript", handles_inverse=True, value=ValueSpec("{type} needs code (an expression, a function body or file://x.js[:fn])", STRING))
async def javascript(ctx: AssertionContext) -> Grade:
    code = ctx.value
    args = [ctx.output, script_context(ctx)]
    try:
        if code.startswith("file://"):
            path_text, function = files.split_function(code)
            path = files.resolve(path_text, ctx.run.base_dir)
            if not path.is_file():
                raise GraderError(f"file not found: {path}")
            value, returned = await js.acall_js_file_function(path, function, args), True
        else:
            returned, value = await js.arun_inline(js.assertion_body(code), ("output", "context"), args)
    except ScriptError as exc:
        raise GraderError(f"JavaScript error: {exc}") from None
    return normalize(value if returned else None, ctx)


@assertion("python", handles_inverse=True, value=ValueSpec("{type} needs code (an expression, a function body or file://x.py[:fn])", STRING))
async def python_assert(ctx: AssertionContext) -> Grade:
    code = ctx.value
    try:
        if code.startswith("file://"):
            path_text, function = files.split_function(code)
            path = files.resolve(path_text, ctx.run.base_dir)
            if not path.is_file():
                raise GraderError(f"file not found: {path}")
            fn = python.load_function(path, function or "get_assert")
        else:
            fn = python.compile_inline(code)
        value = await python.call(fn, ctx.output, script_context(ctx))
    except GraderError:
        raise
    except ScriptError as exc:
        raise GraderError(str(exc)) from None
    except SyntaxError as exc:
        raise GraderError(f"Python syntax error: {exc.msg} (line {exc.lineno})") from None
    except Exception as exc:
        raise GraderError(f"Python error: {type(exc).__name__}: {exc}") from None
    return normalize(value, ctx)


def normalize(value: Any, ctx: AssertionContext) -> Grade:
    """A script's return value -> Grade, with threshold and `not-` applied as promptfoo does."""
    if isinstance(value, str):
        stripped = value.strip()
        try:
            value = json.loads(stripped)
        except ValueError:
            if stripped.lower() in ("true", "false"):
                value = stripped.lower() == "true"
            else:
                raise GraderError(f"script returned a string that is not a result: {stripped[:100]!r}") from None
    if isinstance(value, bool):
        passed = value != ctx.inverse
        return Grade(passed, 1.0 if passed else 0.0, "Assertion passed" if passed else f"Custom function returned {str(value).lower()}")
    if isinstance(value, int | float):
        score = float(value)
        if not math.isfinite(score):
            raise GraderError(f"script returned a non-finite score: {value}")
        passed = score >= ctx.threshold if ctx.threshold is not None else score > 0
        if ctx.inverse:
            passed, score = not passed, 1.0 - score
        reason = "Assertion passed" if passed else f"Custom function returned {value:g}" + (f" (threshold {ctx.threshold:g})" if ctx.threshold is not None else "")
        return Grade(passed, score, reason)
    if isinstance(value, dict):
        return _from_mapping(value, ctx)
    raise GraderError(f"script must return a boolean, a number or {{pass, score, reason}}; got {type(value).__name__ if value is not None else 'nothing'}")


def _pick(mapping: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def _from_mapping(value: dict[str, Any], ctx: AssertionContext) -> Grade:
    passed = _pick(value, "pass", "pass_", "passed")
    if not isinstance(passed, bool):
        raise GraderError(f"script result needs a boolean 'pass', got {passed!r}")
    raw_score = _pick(value, "score")
    if raw_score is not None and (isinstance(raw_score, bool) or not isinstance(raw_score, int | float)):
        raise GraderError(f"script result has a non-numeric score: {raw_score!r}")
    score = (1.0 if passed else 0.0) if raw_score is None else float(raw_score)
    reason = str(_pick(value, "reason") or "")
    if ctx.threshold is not None and score < ctx.threshold:
        passed = False
        reason = f"score {score:g} is less than threshold {ctx.threshold:g}" + (f": {reason}" if reason else "")
    if ctx.inverse:
        passed, score = not passed, 1.0 - score
        reason = "Assertion passed" if passed else reason or "Custom function returned pass: true"
    elif not reason:
        reason = "Assertion passed" if passed else "Custom function returned pass: false"
    children = [_component(c) for c in (_pick(value, "componentResults", "component_results") or []) if isinstance(c, dict)]
    return Grade(passed, score, reason, _named_scores(_pick(value, "namedScores", "named_scores")), children=children)


def _named_scores(named: Any) -> dict[str, float]:
    if not named:
        return {}
    if not isinstance(named, dict) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in named.values()):
        raise GraderError(f"script result's namedScores must map names to numbers, got {named!r}")
    return {str(k): float(v) for k, v in named.items()}


def _component(item: dict[str, Any]) -> AssertionResult:
    passed = bool(_pick(item, "pass", "pass_", "passed"))
    score = _pick(item, "score")
    return AssertionResult(
        type=str(((item.get("assertion") or {}).get("type")) or "component"),
        status="pass" if passed else "fail",
        score=float(score) if isinstance(score, int | float) else (1.0 if passed else 0.0),
        reason=str(item.get("reason") or ""),
        named_scores={str(k): float(v) for k, v in (_pick(item, "namedScores", "named_scores") or {}).items()},
        weight=0.0,
    )
