"""`tool-call-f1`: the F1 of the tool names an output called against the names expected.

Tool names are read as promptfoo 0.123.1 reads them: from OpenAI (`tool_calls`, Responses
`function_call`), Anthropic (`tool_use`), Google (`functionCall`, Live `toolCall`) shapes and
plain `[{name}]` lists, or from text holding JSON, where each JSON block that starts its line and
ends its line counts (blocks in fenced Markdown code and unbalanced delimiters are skipped).
Unordered sets: only which tools were called matters, not how often.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.grading.structured.json import parse_json
from ci_grade.js_values import JS_WHITESPACE, js_fixed
from ci_grade.safe_text import utf16_units
from ci_grade.templating.nunjucks import js_string

MAX_UNMATCHED_DELIMITERS = 65536
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-+*]|\d+[.)])[ \t]+")
_NOT_SPACE = re.compile(f"[^{re.escape(JS_WHITESPACE)}]")


class ToolCallParseError(ValueError):
    """Malformed text beyond the parser's work limits (a failure of the assertion, not an error)."""


@dataclass(frozen=True)
class _Delimiter:
    char: str
    index: int
    starts_line: bool
    ends_line: bool


def _column_width(text: str) -> int:
    column = 0
    for char in text:
        column += 4 - column % 4 if char == "\t" else 1
    return column


def _delimiters(text: str) -> Iterator[_Delimiter | None]:
    """Brackets outside JSON strings and fenced code, line by line; None marks a break (a fence,
    or a string left open at the end of its line) that no block may span."""
    in_string = escaped = False
    fence, fence_container = "", 0
    containers: list[int] = []
    line_start = 0
    while line_start < len(text):
        offset = line_start
        newline = text.find("\n", line_start)
        line_end = len(text) if newline < 0 else newline
        content = text[line_start:line_end].rstrip(JS_WHITESPACE)
        line_start = line_end + 1
        first = _NOT_SPACE.search(content)
        first_content = first.start() if first else -1
        indent = _column_width(content[: max(0, first_content)])
        if fence and content and indent < fence_container:
            fence = ""
            yield None
        if fence:
            marker = _FENCE.match(content)
            if marker and indent <= fence_container + 3 and marker[1][0] == fence[0] and len(marker[1]) >= len(fence) and not content[marker.end() :].strip(JS_WHITESPACE):
                fence = ""
            continue
        while content and containers and indent < containers[-1]:
            containers.pop()
        item = _LIST_ITEM.match(content)
        if item:
            containers.append(_column_width(item[0]))
        container = containers[-1] if containers else 0
        fence_text = content[len(item[0]) :] if item else content
        marker = _FENCE.match(fence_text)
        if marker and (item or indent <= container + 3) and (marker[1][0] != "`" or "`" not in fence_text[marker.end() :]):
            fence, fence_container = marker[1], container
            yield None
            continue
        for column, char in enumerate(content):
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
                continue
            if char == '"':
                in_string = True
            elif char in "{[]}":
                yield _Delimiter(char, offset + column, column == first_content, column == len(content) - 1)
        if in_string:
            in_string = escaped = False
            yield None


def _json_blocks(text: str, skip_root: bool = False) -> Iterator[tuple[str, bool]]:
    """Balanced `{...}`/`[...]` spans (with whether each starts its line) that end their line."""
    unmatched: list[int] = []
    stack_start = 0
    for token in _delimiters(text):
        if token is None:
            stack_start = len(unmatched)
        elif token.char in "{[":
            unmatched.append(token.index)
        elif len(unmatched) > stack_start and text[unmatched[-1]] == ("{" if token.char == "}" else "["):
            unmatched.pop()
        else:
            unmatched.append(token.index)
            stack_start = len(unmatched)
        if len(unmatched) > MAX_UNMATCHED_DELIMITERS:
            raise ToolCallParseError(f"Tool Call F1 exceeded its delimiter limit ({MAX_UNMATCHED_DELIMITERS})")
    skipped = set(unmatched)
    depth, start, start_depth, starts_line = 0, -1, 0, False
    for token in _delimiters(text):
        if token is None or token.index in skipped:
            continue
        if token.char in "{[":
            if start < 0 and depth == (1 if skip_root else 0):
                start, start_depth, starts_line = token.index, depth, token.starts_line
            depth += 1
            continue
        depth -= 1
        if start >= 0 and depth == start_depth:
            if token.ends_line:
                yield text[start : token.index + 1], starts_line
            start = -1


def json_blocks(text: str) -> Iterator[Any]:
    """The JSON values of text that start their line; a block that does not parse is searched
    for blocks one level inside it. Work is bounded by four times the text's length."""
    pending = [_json_blocks(text)]
    remaining = 4 * len(utf16_units(text))
    while pending:
        found = next(pending[-1], None)
        if found is None:
            pending.pop()
            continue
        block, starts_line = found
        size = len(utf16_units(block))
        if size > remaining:
            raise ToolCallParseError("Tool Call F1 could not finish parsing malformed output within its work limit")
        remaining -= size
        ok, parsed = parse_json(block)
        if not ok:
            pending.append(_json_blocks(block, True))
        elif starts_line:
            yield parsed


def tool_names(output: Any) -> set[str]:
    """The names of the tools an output called (see the module's docstring for the shapes)."""
    names: set[str] = set()
    if output is None:
        return names
    if isinstance(output, str):
        ok, parsed = parse_json(output)
        if ok:
            return tool_names(parsed)
        for block in json_blocks(output):
            names |= tool_names(block)
        return names
    if isinstance(output, dict):
        return _names_in_object(output)
    if isinstance(output, list):
        for block in output:
            if isinstance(block, dict):
                _add_block_name(block, names)
    return names


def _name(value: Any) -> str | None:
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def _names_in_object(obj: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    if isinstance(obj.get("tool_calls"), list):
        for call in obj["tool_calls"]:
            if isinstance(call, dict):
                names.update(n for n in (_name(call.get("function")), _name(call)) if n is not None)
        return names
    if obj.get("type") in ("tool_use", "function_call") and (name := _name(obj)) is not None:
        return {name}
    if isinstance(obj.get("functionCall"), dict):
        return {n for n in (_name(obj["functionCall"]),) if n is not None}
    if isinstance(obj.get("toolCall"), dict):
        calls = obj["toolCall"].get("functionCalls")
        return {n for n in map(_name, calls if isinstance(calls, list) else []) if n is not None}
    return names


def _add_block_name(block: dict[str, Any], names: set[str]) -> None:
    """The name one array item carries (Anthropic, Google, OpenAI or plain), the first shape that fits."""
    if block.get("type") == "tool_use" and (name := _name(block)) is not None:
        names.add(name)
    elif isinstance(block.get("functionCall"), dict):
        if (name := _name(block["functionCall"])) is not None:
            names.add(name)
    elif isinstance(block.get("function"), dict):
        if (name := _name(block["function"])) is not None:
            names.add(name)
    elif (name := _name(block)) is not None:
        names.add(name)


def _expected_tools(value: Any) -> set[str]:
    if isinstance(value, list):
        expected = [js_string(v).strip() for v in value]
    elif isinstance(value, str):
        expected = [name.strip() for name in value.split(",")]
    else:
        raise GraderError('"tool-call-f1" assertion requires a value: array of tool names or comma-separated string')
    if not any(expected):
        raise GraderError('"tool-call-f1" assertion requires at least one expected tool name')
    return {name for name in expected if name}


@assertion("tool-call-f1", handles_inverse=True, default_threshold=1)
async def tool_call_f1(ctx: AssertionContext) -> Grade:
    """promptfoo's reasons; the score is the F1 itself, under `not-` too."""
    expected = _expected_tools(ctx.value)
    try:
        actual = tool_names(ctx.output)
    except ToolCallParseError as exc:
        return Grade(False, 0.0, str(exc))
    hits = len(expected & actual)
    precision = hits / len(actual) if actual else 0.0
    recall = hits / len(expected)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    threshold = ctx.effective_threshold
    assert threshold is not None, "tool-call-f1 has a default threshold"
    passed = (f1 >= threshold) != ctx.inverse
    wanted, called = ", ".join(sorted(expected, key=utf16_units)), ", ".join(sorted(actual, key=utf16_units)) or "(none)"
    p, r = js_fixed(precision, 3), js_fixed(recall, 3)
    if passed:
        reason = f"Tool Call F1: {js_fixed(f1, 3)} (precision={p}, recall={r}). Expected: [{wanted}], Called: [{called}]"
    else:
        reason = (f"Tool Call F1 score {js_fixed(f1, 3)} is {'above' if ctx.inverse else 'below'} threshold {js_string(threshold)}. "
                  f"Expected: [{wanted}], Called: [{called}]. Precision={p}, Recall={r}")
    return Grade(passed, f1, reason)
