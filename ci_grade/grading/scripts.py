"""`javascript` and `python` assertions: user code that returns a bool, a number or a result.

Return values are read as promptfoo reads them, each language by its own rules: a boolean passes
or fails; a number is the score and passes when `>= threshold` (or `> 0` without one); an object
with a boolean `pass`, a number `score` and a text `reason` is the result. Python's threshold also
applies to objects, and Python may return text (true/false, JSON, a number) and snake_case keys.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import GraderError, ScriptAborted, ScriptError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.structured.json import parse_json
from ci_grade.results.models import AssertionResult
from ci_grade.scripting import js
from ci_grade.templating.nunjucks import js_string
from ci_grade.workers import calls, node


def script_context(ctx: AssertionContext, *, javascript: bool = False) -> dict[str, Any]:
    """The `context` argument scripts receive, with promptfoo's keys (its `test` reduced to the
    description, variables, metadata and options; no `logProbs`), and `trace` when the config
    enables tracing (`Trace.for_scripts`)."""
    response = {
        "output": ctx.response.output,
        "tokenUsage": ctx.response.token_usage.model_dump(by_alias=True),
        "cost": ctx.response.cost,
        "cached": ctx.response.cached,
        "finishReason": ctx.response.finish_reason,
        "metadata": ctx.response.metadata,
        **({"audio": ctx.response.audio} if ctx.response.audio is not None else {}),
    }
    context = {
        "prompt": ctx.prompt,
        "vars": ctx.vars,
        "test": {"description": ctx.test.description, "vars": ctx.vars, "metadata": ctx.test.metadata or {}, "options": ctx.test.options.model_dump(exclude_none=True)},
        "provider": _provider(ctx.provider, javascript),
        "providerResponse": response,
    }
    if ctx.assertion.config is not None:  # as promptfoo: `config` only when the assertion has one
        context["config"] = ctx.config
    if ctx.response.metadata:  # and `metadata` when the provider's response has some
        context["metadata"] = ctx.response.metadata
    if ctx.trace is not None:
        context["trace"] = ctx.trace.for_scripts()
    return context


def _provider(spec: ProviderSpec | None, javascript: bool) -> dict[str, Any] | None:
    """The provider as promptfoo passes it: its object to JavaScript (`id()` a method, `label` text,
    `config`), that object as JSON to Python (no `id`)."""
    if spec is None:
        return None
    provider = {"label": spec.label or "", "config": spec.config}
    return {"id": js.method(spec.id), **provider} if javascript else provider


@assertion("javascript", handles_inverse=True, value=ValueSpec("{type} needs code (an expression, a function body or file://x.js[:fn])", STRING))
async def javascript(ctx: AssertionContext) -> Grade:
    """Code that throws is a failure of this assertion, as in promptfoo; code stopped by a time or
    memory limit is an ERROR."""
    code = ctx.value
    args = [ctx.output, script_context(ctx, javascript=True)]
    try:
        if code.startswith("file://"):
            path, function = _script_file(code, ctx)
            value, returned = await node.call_file(path, function, args), True  # in Node.js, as promptfoo
        else:
            returned, value = await js.arun_inline(js.assertion_body(code), ("output", "context"), args)
    except ScriptAborted as exc:
        raise GraderError(str(exc)) from None
    except ScriptError as exc:
        return Grade(False, 0.0, f"Custom function threw error: {exc}\n{code.rstrip()}")
    _check_finite(value if returned else None)
    try:
        return _javascript_result(value if returned else None, ctx)
    except ScriptError as exc:
        return Grade(False, 0.0, f"Custom function threw error: {exc}")


@assertion("python", handles_inverse=True, value=ValueSpec("{type} needs code (an expression, a function body or file://x.py[:fn])", STRING))
async def python_assert(ctx: AssertionContext) -> Grade:
    """In a worker process (`ci_grade.workers`). Code that raises, a missing function or a result
    of the wrong shape is a failure of this assertion with promptfoo's reason; code that did not
    finish (it exited, crashed, timed out or ran out of memory) is an ERROR naming why."""
    code = ctx.value
    args = [ctx.output, script_context(ctx)]
    if code.startswith("file://"):
        path, function = _script_file(code, ctx)
        return await _script_grade(calls.call_file(path, function or "get_assert", args, base_dir=ctx.run.base_dir), ctx, "Python", file=True)
    return await _script_grade(calls.call_inline(code, ("output", "context"), args, base_dir=ctx.run.base_dir), ctx, "Python", file=False)


@assertion("ruby", handles_inverse=True, value=ValueSpec("{type} needs code (an expression, a method body or file://x.rb[:fn])", STRING))
async def ruby_assert(ctx: AssertionContext) -> Grade:
    """One `ruby` process per call (`ci_grade.scripting.ruby`), read by Python's rules as promptfoo
    reads Ruby's. Code that raises fails this assertion; code that timed out or died is an ERROR."""
    from ci_grade.scripting import ruby

    code = ctx.value
    args = [ctx.output, script_context(ctx)]
    if code.startswith("file://"):
        path, function = _script_file(code, ctx)
        return await _script_grade(ruby.call(path, function or "get_assert", args), ctx, "Ruby", file=True)
    return await _script_grade(ruby.call_inline(code, args), ctx, "Ruby", file=False)


async def _script_grade(call: Coroutine[Any, Any, Any], ctx: AssertionContext, language: str, *, file: bool) -> Grade:
    """A Python or Ruby assertion's result read by promptfoo's Python rules: code that raises fails
    with promptfoo's wording; code that did not finish is an ERROR."""
    try:
        value = await call
    except ScriptAborted as exc:
        raise GraderError(str(exc)) from None
    except ScriptError as exc:
        running = f"Error running {language} script" if file else f"{language} code execution failed"
        return Grade(False, 0.0, f"{running}: {exc}")
    _check_finite(value)
    try:
        return _python_result(value, ctx, language)
    except ScriptError as exc:
        return Grade(False, 0.0, f"{language} code execution failed: {exc}")


@dataclass(frozen=True)
class _Language:
    """How promptfoo words a script's result: who returned it, and the code it adds to a failure."""

    code: str
    """`Custom function` (JavaScript) or `Python code`."""
    shown: str
    """The code, after a failing boolean or number (JavaScript: as rendered, Python: as written)."""
    threshold: str | None = None
    """The language whose threshold also applies to result objects (Python's)."""


def _javascript_result(value: Any, ctx: AssertionContext) -> Grade:
    """promptfoo's JavaScript rules: a boolean, a number or a result object, whose verdict stands
    whatever the threshold (it applies to numbers only)."""
    language = _Language("Custom function", str(ctx.value).rstrip())
    if isinstance(value, dict) and _is_result(value):
        return _from_mapping(value, ctx, language)
    if isinstance(value, bool | int | float):
        return _from_scalar(value, ctx, language)
    raise ScriptError(f"Custom function must return a boolean, number, or GradingResult object; got {_shown(value)}")


def _python_result(value: Any, ctx: AssertionContext, language: str = "Python") -> Grade:
    """promptfoo's Python (and Ruby) rules: also text reading true or false (any case), holding a
    JSON object or starting with a number; snake_case keys are mapped; objects below the threshold fail."""
    raw = ctx.assertion.value
    labels = _Language(f"{language} code", raw if isinstance(raw, str) else "", language)
    if isinstance(value, str):
        value = _from_text(value, language)
    if isinstance(value, dict):
        value = _camel_case(value)
        if _is_result(value):
            return _from_mapping(value, ctx, labels)
    elif isinstance(value, bool | int | float):
        return _from_scalar(value, ctx, labels)
    raise ScriptError(f"{language} assertion must return a boolean, number, or {{pass, score, reason}} object; got {_shown(value)}")


_NUMBER_PREFIX = re.compile(r"\s*([+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))")
"""What JavaScript's parseFloat reads."""


def _from_text(text: str, language: str = "Python") -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.startswith("{"):
        ok, parsed = parse_json(text)
        if not ok:
            raise ScriptError(f"{language} assertion returned invalid JSON: {text[:100]!r}")
        return parsed
    number = _NUMBER_PREFIX.match(text)
    return float(number.group(1)) if number else text


def _camel_case(value: dict[str, Any]) -> dict[str, Any]:
    """Python's snake_case result keys as promptfoo maps them (in component results too)."""
    mapped = dict(value)
    for snake, camel in (("pass_", "pass"), ("named_scores", "namedScores"), ("component_results", "componentResults"), ("tokens_used", "tokensUsed")):
        if snake in mapped and camel not in mapped:
            mapped[camel] = mapped[snake]
    if isinstance(mapped.get("componentResults"), list | tuple):
        mapped["componentResults"] = [_camel_case(c) if isinstance(c, dict) else c for c in mapped["componentResults"]]
    return mapped


def _is_result(value: dict[str, Any]) -> bool:
    """promptfoo's `isGradingResult`: a boolean `pass`, a number `score`, a text `reason`, and any
    optional fields of the right kinds."""
    score = value.get("score")
    return (
        isinstance(value.get("pass"), bool)
        and isinstance(score, int | float)
        and not isinstance(score, bool)
        and isinstance(value.get("reason"), str)
        and all(value.get(k) is None or isinstance(value[k], dict | list | tuple) for k in ("namedScores", "namedScoreWeights", "tokensUsed", "assertion"))
        and isinstance(value.get("componentResults", []), list | tuple)
        and isinstance(value.get("comment", ""), str)
    )


def _script_file(code: str, ctx: AssertionContext) -> tuple[Path, str | None]:
    """The file (relative to the config's folder) and function a `file://x[:fn]` value names."""
    path_text, function = files.split_function(code)
    path = files.resolve(path_text, ctx.run.base_dir)
    if not path.is_file():
        raise GraderError(f"file not found: {path}")
    return path, function


def _check_finite(value: Any) -> None:
    """A NaN or infinite score is no verdict at all: an ERROR of the assertion, never a pass or a
    failure (whatever its weight, so `weight: 0` cannot hide it)."""
    score = value.get("score") if isinstance(value, dict) else value
    if isinstance(score, float) and not math.isfinite(score):
        raise GraderError(f"script returned a non-finite score ({_shown(value)}): a score must be a finite number")


def _shown(value: Any) -> str:
    return "nothing" if value is None else json.dumps(value, default=str)[:200]


def _from_scalar(value: bool | float, ctx: AssertionContext, language: _Language) -> Grade:
    """A boolean is the verdict; a number is the score (kept as it is under `not-`) and passes when
    it reaches the threshold, or is above 0 without one. A failure names the verdict and the code."""
    if isinstance(value, bool):
        verdict, score = value, None
    else:
        score = float(value)
        if not math.isfinite(score):
            raise ScriptError(f"script returned a non-finite score: {value}")
        verdict = score >= ctx.threshold if ctx.threshold is not None else score > 0
    passed = verdict != ctx.inverse
    if score is None:
        score = 1.0 if passed else 0.0
    reason = "Assertion passed" if passed else f"{language.code} returned {js_string(verdict)}" + (f"\n{language.shown}" if language.shown else "")
    return Grade(passed, score, reason)


def _from_mapping(value: dict[str, Any], ctx: AssertionContext, language: _Language) -> Grade:
    """A result object: its score stands (under `not-` too) and its reason while its verdict does."""
    passed, score, reason = value["pass"], float(value["score"]), value["reason"]
    if language.threshold and ctx.threshold is not None and score < ctx.threshold:
        passed = False
        reason = f"{language.threshold} score {js_string(value['score'])} is less than threshold {js_string(ctx.threshold)}" + (f": {reason}" if reason else "")
    if ctx.inverse:
        reason = "Assertion passed" if not passed else f"{language.code} returned true"
        passed = not passed
    elif not reason:
        reason = "Assertion passed" if passed else f"{language.code} returned false"
    children = [_component(c) for c in value.get("componentResults") or [] if isinstance(c, dict)]
    return Grade(passed, score, reason, _named_scores(value.get("namedScores")), children=children)


def _named_scores(named: Any) -> dict[str, float]:
    if not named:
        return {}
    if not isinstance(named, dict) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in named.values()):
        raise ScriptError(f"script result's namedScores must map names to numbers, got {named!r}")
    return {str(k): float(v) for k, v in named.items()}


def _component(item: dict[str, Any]) -> AssertionResult:
    passed = bool(item.get("pass"))
    score, assertion = item.get("score"), item.get("assertion")
    return AssertionResult(
        type=str((assertion.get("type") if isinstance(assertion, dict) else None) or "component"),
        status="pass" if passed else "fail",
        score=float(score) if isinstance(score, int | float) else (1.0 if passed else 0.0),
        reason=str(item.get("reason") or ""),
        named_scores=_named_scores(item.get("namedScores")),
        weight=0.0,
    )
