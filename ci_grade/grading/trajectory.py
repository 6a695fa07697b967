"""Agent trajectory checks: `trajectory:tool-used`, `trajectory:tool-sequence`,
`trajectory:tool-args-match` and `trajectory:step-count` (steps as `tracing.steps` reads them).

Values, `not-` forms and reasons are promptfoo's:
- tool-used: a name or glob, a list of them (all must be used; `not-`: none may be), or
  `{name|pattern, min (1), max}` counting matching tool calls;
- tool-sequence: a list, or `{mode: in_order|exact, steps}`; in order allows other tools between;
- tool-args-match: `{name|pattern, args|arguments, mode: partial|exact, defaults, ignore}`: some
  call of the tool has these arguments (partial: every expected key, recursively; lists whole);
  `ignore` drops argument keys (globs allowed), `defaults` drops actual arguments equal to them;
- step-count: `{type, name|pattern, min, max}` over all steps (type: tool, command, search,
  reasoning, message, span, or a list of them).
A failing trajectory's steps are kept in the result's metadata (`trajectory`) for the reports.
"""

from __future__ import annotations

from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import MAPPING, ValueSpec, assertion
from ci_grade.templating.nunjucks import js_string
from ci_grade.tracing.steps import Step, glob_matches, matches, shown_args, steps

MAX_SHOWN_STEPS = 50


def _tool_steps(ctx: AssertionContext) -> list[Step]:
    return [step for step in steps(ctx.require_trace()) if step.type == "tool"]


def _listed(found: list[Step]) -> str:
    return ", ".join(step.label for step in found) or "(none)"


def _grade(ctx: AssertionContext, passed: bool, reason: str, shown: list[Step]) -> Grade:
    metadata = {} if passed else {"trajectory": [{"type": s.type, "name": s.name, **({"args": shown_args(s.args)} if s.has_args else {})} for s in shown[:MAX_SHOWN_STEPS]]}
    return Grade(passed, 1.0 if passed else 0.0, reason, metadata=metadata)


def _matcher(item: Any, what: str) -> tuple[str | None, list[str] | None]:
    """(pattern, types) of a step matcher: text is a pattern; a mapping has name/pattern and type."""
    if isinstance(item, str):
        return item, ["tool"]
    if not isinstance(item, dict):
        raise GraderError(f"{what} must be a tool name or an object with a name or pattern")
    pattern = item.get("pattern") or item.get("name")
    kind = item.get("type") or "tool"
    return (str(pattern) if pattern else None), [str(k) for k in kind] if isinstance(kind, list) else [str(kind)]


@assertion("trajectory:tool-used", uses_trace=True, handles_inverse=True)
async def tool_used(ctx: AssertionContext) -> Grade:
    tools = _tool_steps(ctx)
    value = ctx.value
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        expected = [value] if isinstance(value, str) else list(value)
        if not expected:
            raise GraderError(f"{ctx.base_type} assertion requires at least one expected tool")
        used = [p for p in expected if any(matches(s, p, ["tool"]) for s in tools)]
        missing = [p for p in expected if p not in used]
        passed = not used if ctx.inverse else not missing
        if ctx.inverse:
            reason = f"Forbidden tool(s) were not used: {', '.join(expected)}" if passed else f"Forbidden tool(s) were used: {', '.join(used)}. Actual tools: {_listed(tools)}"
        elif passed:
            reason = f"Observed required tool(s): {', '.join(expected)}. Actual tools: {_listed(tools)}"
        else:
            reason = f"Missing required tool(s): {', '.join(missing)}. Actual tools: {_listed(tools)}"
        return _grade(ctx, passed, reason, tools)
    if not isinstance(value, dict):
        raise GraderError(f"{ctx.base_type} assertion must have a string, string array, or object value")
    pattern, types = _matcher(value, ctx.base_type)
    if not pattern:
        raise GraderError(f"{ctx.base_type} assertion object must include a name or pattern property")
    low: float = value["min"] if isinstance(value.get("min"), int | float) else 1
    high: float | None = value["max"] if isinstance(value.get("max"), int | float) else None
    found = [s for s in tools if matches(s, pattern, types)]
    within = len(found) >= low and (high is None or len(found) <= high)
    passed = within != ctx.inverse
    reason = f'Matched tool "{pattern}" {len(found)} time(s)' + (f" (expected at least {js_string(low)})" if high is None else f" (expected {js_string(low)}-{js_string(high)})")
    if found:
        reason += f". Matches: {_listed(found)}"
    if ctx.inverse:
        reason = f'Tool "{pattern}" matched {len(found)} time(s), which violates the inverse assertion' if within else f'Tool "{pattern}" did not satisfy the forbidden match condition'
    return _grade(ctx, passed, reason, tools)


@assertion("trajectory:tool-sequence", uses_trace=True, handles_inverse=True)
async def tool_sequence(ctx: AssertionContext) -> Grade:
    tools = _tool_steps(ctx)
    value = ctx.value
    if isinstance(value, list):
        mode, wanted = "in_order", value
    elif isinstance(value, dict):
        mode, wanted = str(value.get("mode") or "in_order"), value.get("steps") or []
    else:
        raise GraderError(f"{ctx.base_type} assertion must have an array or object value")
    matchers = []
    for index, item in enumerate(wanted if isinstance(wanted, list) else []):
        pattern, types = _matcher(item, f"{ctx.base_type} step {index + 1}")
        if not pattern:
            raise GraderError(f"{ctx.base_type} assertion step {index + 1} must include a name or pattern property")
        matchers.append((pattern, types))
    if not matchers:
        raise GraderError(f"{ctx.base_type} assertion requires at least one expected step")
    if mode == "exact":
        ok = len(tools) == len(matchers) and all(matches(s, p, t) for s, (p, t) in zip(tools, matchers, strict=True))
        reason = f"Observed exact tool sequence: {_listed(tools)}" if ok else f"Expected exact tool sequence of {', '.join(p for p, _ in matchers)}, but actual tools were {_listed(tools)}"
    else:
        position, seen = 0, []
        for step in tools:
            if position < len(matchers) and matches(step, *matchers[position]):
                seen.append(step)
                position += 1
        ok = position == len(matchers)
        reason = f"Observed tool sequence in order: {_listed(seen)}. Actual tools: {_listed(tools)}" if ok else f'Expected tool "{matchers[position][0]}" was not observed in order. Actual tools: {_listed(tools)}'
    if ctx.inverse:
        reason = f"Forbidden tool sequence was observed. Actual tools: {_listed(tools)}" if ok else "Forbidden tool sequence was not observed"
    return _grade(ctx, ok != ctx.inverse, reason, tools)


def _partial(actual: Any, expected: Any) -> bool:
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(_partial(a, e) for a, e in zip(actual, expected, strict=True))
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(key in actual and _partial(actual[key], item) for key, item in expected.items())
    return _same(actual, expected)


def _same(left: Any, right: Any) -> bool:
    """Deep equality that keeps true apart from 1 (as JavaScript's strict equality)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    return bool(type(left) is type(right) or (isinstance(left, int | float) and isinstance(right, int | float))) and left == right


def _without(value: Any, ignore: list[str]) -> tuple[Any, list[str]]:
    if not ignore or not isinstance(value, dict):
        return value, []
    dropped = [k for k in value if any(k == entry or (("*" in entry or "?" in entry) and glob_matches(k, entry)) for entry in ignore)]
    return {k: v for k, v in value.items() if k not in dropped}, dropped


def _without_defaults(value: Any, defaults: dict[str, Any] | None) -> tuple[Any, list[str]]:
    if not defaults or not isinstance(value, dict):
        return value, []
    dropped = [k for k, v in value.items() if k in defaults and _same(v, defaults[k])]
    return {k: v for k, v in value.items() if k not in dropped}, dropped


def _args_options(ctx: AssertionContext) -> tuple[str, list[str] | None, Any, str, dict[str, Any] | None, list[str]]:
    value = ctx.value
    pattern, types = _matcher(value, ctx.base_type)
    if not pattern:
        raise GraderError(f"{ctx.base_type} assertion object must include a name or pattern property")
    expected = value["args"] if "args" in value else value.get("arguments")
    if expected is None:
        raise GraderError(f"{ctx.base_type} assertion must include an args or arguments property")
    mode = value.get("mode") or "partial"
    if mode not in ("partial", "exact"):
        raise GraderError(f'{ctx.base_type} assertion mode must be "partial" or "exact"')
    defaults = value.get("defaults")
    if defaults is not None and not isinstance(defaults, dict):
        raise GraderError(f"{ctx.base_type} assertion defaults must be an object mapping argument names to default values")
    ignore = value.get("ignore")
    entries = [] if ignore is None else ignore if isinstance(ignore, list) else [ignore]
    if any(not isinstance(e, str) or not e.strip() for e in entries):
        raise GraderError(f"{ctx.base_type} assertion ignore must be a non-empty string or an array of non-empty strings")
    return pattern, types, expected, mode, defaults, entries


@assertion("trajectory:tool-args-match", uses_trace=True, handles_inverse=True, value=ValueSpec("{base} assertion must have an object value", MAPPING, at_load=True))
async def tool_args_match(ctx: AssertionContext) -> Grade:
    tools = _tool_steps(ctx)
    pattern, types, expected, mode, defaults, ignore = _args_options(ctx)
    calls = [s for s in tools if matches(s, pattern, types)]
    with_args = [s for s in calls if s.has_args]
    wanted, _ = _without(expected, ignore)

    def fits(step: Step) -> bool:
        actual, _ = _without_defaults(_without(step.args, ignore)[0], defaults)
        return _same(actual, wanted) if mode == "exact" else _partial(actual, wanted)

    hit = next((s for s in with_args if fits(s)), None)
    observed = ", ".join(shown_args(s.args) for s in with_args) or "(none)"
    if ctx.inverse:
        if hit:
            reason = f'Forbidden argument match for tool "{pattern}" was observed on {hit.label}. Args: {shown_args(hit.args)}'
        elif not calls:
            reason = f'Forbidden argument match for tool "{pattern}" was not observed because no tool call matched it'
        else:
            reason = f'Forbidden argument match for tool "{pattern}" was not observed. Observed args: {observed}'
    elif hit:
        ignored = _without(hit.args, ignore)[1]
        ignored_defaults = _without_defaults(_without(hit.args, ignore)[0], defaults)[1]
        reason = f'Tool "{pattern}" matched expected arguments ({mode}) on {hit.label}. Args: {shown_args(hit.args)}'
        reason += f". Ignored argument(s): {', '.join(ignored)}" if ignored else ""
        reason += f". Ignored default argument(s): {', '.join(ignored_defaults)}" if ignored_defaults else ""
    elif not calls:
        reason = f'No tool call matched "{pattern}". Actual tools: {_listed(tools)}'
    elif not with_args:
        reason = f'Tool "{pattern}" was observed but no arguments were captured. Actual tools: {_listed(tools)}'
    else:
        reason = f'No call to tool "{pattern}" matched expected arguments ({mode}): {shown_args(expected)}. Observed args: {observed}'
    return _grade(ctx, (hit is not None) != ctx.inverse, reason, tools)


@assertion("trajectory:step-count", uses_trace=True, handles_inverse=True, value=ValueSpec("{base} assertion must have an object value", MAPPING, at_load=True))
async def step_count(ctx: AssertionContext) -> Grade:
    everything = steps(ctx.require_trace())
    value = ctx.value
    low = value.get("min") if isinstance(value.get("min"), int | float) else None
    high = value.get("max") if isinstance(value.get("max"), int | float) else None
    if low is None and high is None:
        raise GraderError(f"{ctx.base_type} assertion must include a min or max property")
    kind = value.get("type")
    types = None if not kind else [str(k) for k in kind] if isinstance(kind, list) else [str(kind)]
    pattern = value.get("pattern") or value.get("name")
    found = [s for s in everything if matches(s, str(pattern) if pattern else None, types)]
    within = (low is None or len(found) >= low) and (high is None or len(found) <= high)
    filters = ([f"type={'|'.join(types)}"] if types else []) + ([f"pattern={pattern}"] if pattern else [])
    reason = f"Matched {len(found)} trajectory step(s)" + (f" for {', '.join(filters)}" if filters else "")
    if low is not None and high is not None:
        reason += f" (expected {js_string(low)}-{js_string(high)})"
    elif low is not None:
        reason += f" (expected at least {js_string(low)})"
    else:
        reason += f" (expected at most {js_string(high)})"
    if found:
        reason += f". Matches: {_listed(found)}"
    if ctx.inverse:
        reason = "Trajectory step count satisfied the forbidden range" if within else "Trajectory step count did not satisfy the forbidden range"
    return _grade(ctx, within != ctx.inverse, reason, everything)
