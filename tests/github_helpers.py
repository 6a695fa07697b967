"""Readers that mimic the Actions runner: step-output files and workflow-command lines."""

from __future__ import annotations

import re
from pathlib import Path


def parse_outputs(path: Path) -> dict[str, str]:
    """Parse a `$GITHUB_OUTPUT` file as the runner does (`name=value` and `name<<DELIM` heredocs)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    values: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            while lines[index] != delimiter:
                body.append(lines[index])
                index += 1
            index += 1
            values[name] = "\n".join(body)
        else:
            name, _, value = line.partition("=")
            values[name] = value
    return values


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """One `::name k=v,k=v::message` line, unescaped as the runner does."""
    match = re.fullmatch(r"::([a-z-]+)(?: ([^:]*))?::(.*)", line)
    assert match, line
    props = {}
    if match[2]:
        for pair in match[2].split(","):
            key, _, value = pair.partition("=")
            props[key] = unescape_property(value)
    return match[1], props, unescape_data(match[3])


def commands_in(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    """Every workflow command the runner would act on (honouring stop-commands)."""
    found = []
    stopped: str | None = None
    for line in stdout.splitlines():
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        if not line.startswith("::"):
            continue
        name, props, message = parse_command(line)
        if name == "stop-commands":
            stopped = message
            continue
        found.append((name, props, message))
    return found
