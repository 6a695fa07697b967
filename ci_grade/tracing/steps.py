"""An agent's trajectory read from its spans, with promptfoo's conventions.

Spans are ordered by start time (then end time, then arrival). Each becomes one step:
- `command`: a shell command (`codex.command`/`command` attributes, a command tool's `cmd`
  argument, or an `exec <cmd>` span name);
- `tool`: a tool call, named by the first of the tool-name attributes (OpenTelemetry GenAI's
  `gen_ai.tool.name`, `tool.name`, `function.name`, `ai.toolCall.name`, `agent.tool_name`, ...),
  else any attribute whose key says tool or function name, else an `mcp .../<tool>` span name;
  its arguments from `gen_ai.tool.call.arguments`, `tool.arguments` and kin, else any
  `*args*`/`*arguments*`/`*input*` attribute (JSON text is parsed);
- `search`: a search query; `reasoning`; `message` (an agent's reply); else `span`.
A step matches a glob (`*`, `?`, case-insensitive) when its span name, its name or one of its
aliases (tool name, command, executable) does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ci_grade.results.traces import Span, Trace

_FAMILIES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    # prefix, name suffixes, argument suffixes, extra name keys, extra argument keys
    ("tool", (".name", "_name"), (".args", ".arguments", ".input", "_args", "_arguments", "_input"), ("tool",), ()),
    ("function", (".name", "_name"), (".args", ".arguments", ".input", "_args", "_arguments"), (), ()),
    ("ai.toolCall", (".name",), (".args", ".arguments", ".input"), (), ()),
    ("gen_ai.tool", (".name",), (".args", ".arguments", ".input"), (), ("gen_ai.tool.call.args", "gen_ai.tool.call.arguments")),
    ("agent.tool", ("_name",), (".args", ".arguments", ".input"), ("agent.tool", "agent.toolName"), ()),
    ("codex.mcp", (), (".args", ".arguments", ".input"), ("codex.mcp.tool",), ()),
)
TOOL_NAME_KEYS = tuple(key for prefix, names, _, extra, _ in _FAMILIES for key in (*(prefix + s for s in names), *extra))
TOOL_ARGUMENT_KEYS = (*(key for prefix, _, args, _, extra in _FAMILIES for key in (*(prefix + s for s in args), *extra)), "args", "arguments", "input")
COMMAND_KEYS = ("codex.command", "command", "command.name", "command_name")
SEARCH_KEYS = ("codex.search.query", "search.query", "search_query")
DEFAULT_COMMAND_TOOLS = ("exec_command", "local_shell", "shell")

_TOOL_NAME_KEY = re.compile(r"tool.?name|function.?name", re.I)
_TOOL_KEY = re.compile(r"(^|[._])tool($|[._])", re.I)
_NOT_TOOL_KEY = re.compile(r"result|output|definition", re.I)
_ARGS_KEY = re.compile(r"(^|[._])(arguments|args|input)($|[._])", re.I)
_NOT_ARGS_KEY = re.compile(r"result|output|error|status", re.I)
_COMMAND_KEY = re.compile(r"command", re.I)
_NOT_COMMAND_KEY = re.compile(r"output|result", re.I)
_SEARCH_NAME = re.compile(r"(^|[\s._:/-])(search|find|lookup|retriev(?:e|al))($|[\s._:/-])", re.I)
_SEARCH_KEY = re.compile(r"(^|[._])(search|lookup|retriev(?:e|al))($|[._])", re.I)
_REASONING_NAME = re.compile(r"^reasoning([_\s]|$)", re.I)
_MISSING = object()


@dataclass
class Step:
    type: str
    name: str
    span: Span
    aliases: list[str] = field(default_factory=list)
    args: Any = _MISSING

    @property
    def has_args(self) -> bool:
        return self.args is not _MISSING

    @property
    def label(self) -> str:
        """`type:name`, as reasons show a step."""
        return f"{self.type}:{self.name}"


def glob_matches(name: str, pattern: str) -> bool:
    """promptfoo's span-name glob: `*` any run, `?` one character, whole name, any case."""
    escaped = re.sub(r"[.+^${}()|\[\]\\]", lambda m: "\\" + m.group(0), pattern).replace("*", ".*").replace("?", ".")
    return re.fullmatch(escaped, name, re.I | re.S) is not None


def steps(trace: Trace) -> list[Step]:
    """The trajectory: one step per span, in start order."""
    command_tools = set(DEFAULT_COMMAND_TOOLS)
    command_tools.update(str(n).strip().lower() for n in trace.metadata.get("commandToolNames") or [] if isinstance(n, str) and n.strip())
    ordered = sorted(enumerate(trace.spans), key=lambda item: (item[1].start_time, item[1].end_time if item[1].end_time is not None else item[1].start_time, item[0]))
    return [_step(span, command_tools) for _, span in ordered]


def _step(span: Span, command_tools: set[str]) -> Step:
    tool = tool_name(span)
    args = tool_args(span)
    command = _command(span, tool, args, command_tools)
    aliases = [span.name]
    is_command_tool = tool is not None and tool.strip().lower() in command_tools
    if command and is_command_tool:
        step = Step("command", command, span, args=args)
        aliases += [command, tool or "", _executable(command)]
    elif tool:
        step = Step("tool", tool, span, args=args)
        aliases.append(tool)
    elif command:
        step = Step("command", command, span)
        aliases += [command, _executable(command)]
    elif query := _search_query(span):
        step = Step("search", query, span)
        aliases.append(query)
    elif span.attributes.get("codex.item.type") == "reasoning" or _REASONING_NAME.match(span.name):
        step = Step("reasoning", span.name, span)
        aliases.append("reasoning")
    elif span.attributes.get("codex.item.type") == "agent_message" or span.name in ("agent response", "send input"):
        step = Step("message", span.name, span)
        aliases.append("message")
    else:
        step = Step("span", span.name, span)
    step.aliases = list(dict.fromkeys(a for a in aliases if a))
    return step


def _first_text(attributes: dict[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def tool_name(span: Span) -> str | None:
    attributes = span.attributes
    if found := _first_text(attributes, TOOL_NAME_KEYS):
        return found
    for key, value in attributes.items():
        if not isinstance(value, str) or not value.strip():
            continue
        text = value.strip()
        if text[:1] in "[{" and isinstance(_json(text), list | dict):
            continue
        if _TOOL_NAME_KEY.search(key) or (_TOOL_KEY.search(key) and not _NOT_TOOL_KEY.search(key)):
            return text
    if span.name.startswith("mcp ") and 0 <= (slash := span.name.rfind("/")) < len(span.name) - 1:
        return span.name[slash + 1 :].strip()
    return None


def tool_args(span: Span) -> Any:
    """The call's arguments (parsed when JSON text), or the missing marker."""
    attributes = span.attributes
    for key in TOOL_ARGUMENT_KEYS:
        value = _structured(attributes.get(key))
        if value is not _MISSING:
            return value
    for key, raw in attributes.items():
        if _NOT_ARGS_KEY.search(key) or not _ARGS_KEY.search(key):
            continue
        value = _structured(raw)
        if value is not _MISSING:
            return value
    return _MISSING


def _structured(value: Any) -> Any:
    if value is None:
        return _MISSING
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return _MISSING
        parsed = _json(text)
        return text if parsed is _MISSING else parsed
    return value


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _MISSING


def _command(span: Span, tool: str | None, args: Any, command_tools: set[str]) -> str | None:
    attributes = span.attributes
    if found := _first_text(attributes, COMMAND_KEYS):
        return found
    for key, value in attributes.items():
        if isinstance(value, str) and value.strip() and _COMMAND_KEY.search(key) and not _NOT_COMMAND_KEY.search(key):
            return value.strip()
    if tool and tool.strip().lower() in command_tools and isinstance(args, dict):
        for key, separator in (("cmd", " "), ("command", " "), ("commands", "; ")):
            if key in args:
                command = args[key]
                if isinstance(command, str) and command.strip():
                    return command.strip()
                if isinstance(command, list):
                    joined = separator.join(p for p in (str(part).strip() for part in command) if p)
                    if joined:
                        return joined
                break
    if span.name.startswith("exec "):
        return span.name[5:].strip()
    return None


def _search_query(span: Span) -> str | None:
    attributes = span.attributes
    if found := _first_text(attributes, SEARCH_KEYS):
        return found
    query = _first_text(attributes, ("query",))
    searchy = _SEARCH_NAME.search(span.name) or span.name.startswith("search ") or any(k != "query" and _SEARCH_KEY.search(k) for k in attributes)
    if query and searchy:
        return query
    if span.name.startswith("search "):
        return span.name[7:].strip().removeprefix('"').removesuffix('"').strip()
    return None


def _executable(command: str) -> str:
    parts = command.strip().split()
    return parts[0] if parts else ""


def matches(step: Step, pattern: str | None, types: list[str] | None) -> bool:
    """Whether `step` is of one of `types` (None: any) and an alias matches `pattern` (None: any)."""
    if types is not None and step.type not in types:
        return False
    return not pattern or any(glob_matches(alias, pattern) for alias in step.aliases)


def shown_args(args: Any) -> str:
    """Arguments as reasons show them: compact JSON ("(none)" when there are none)."""
    if args is _MISSING:
        return "(none)"
    try:
        return json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(args)


def judge_summary(trace: Trace) -> str:
    """The trajectory as the goal-success grader reads it (promptfoo's summary: repeated steps
    folded, at most 24 shown: the first 12 and the last 12)."""
    raw: list[dict[str, Any]] = []
    for index, step in enumerate(steps(trace), 1):
        item: dict[str, Any] = {"index": index, "type": step.type, "name": step.name}
        if step.span.name != step.name:
            item["spanName"] = step.span.name
        if step.span.status_code:
            item["status"] = {"code": step.span.status_code, **({"message": step.span.status_message} if step.span.status_message else {})}
        raw.append(item)
    folded: list[dict[str, Any]] = []
    for item in raw:
        last = folded[-1] if folded else None
        if last and all(last.get(k) == item.get(k) for k in ("type", "name", "spanName", "status")):
            last["collapsedCount"] = last.get("collapsedCount", 1) + 1
        else:
            folded.append(item)
    shown: list[dict[str, Any]] = folded if len(folded) <= 24 else [*folded[:12], {"omittedCount": len(folded) - 24}, *folded[-12:]]
    return json.dumps({"traceId": trace.trace_id, "stepCount": len(raw), "compactedStepCount": len(folded), "steps": shown}, indent=2, ensure_ascii=False)
