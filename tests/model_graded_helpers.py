"""Helpers for the model-graded assertion tests: run a config, read results, inspect grader requests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import CliResult, run_cli, write
from tests.servers.llm_server import LLMServer, Recorded


@dataclass
class Eval:
    cli: CliResult
    data: dict[str, Any]

    @property
    def code(self) -> int:
        return self.cli.code

    @property
    def rows(self) -> list[dict[str, Any]]:
        rows = self.data["results"]["results"]
        return sorted(rows, key=lambda r: (r["testIdx"], r["promptIdx"], r["metadata"]["ciGrade"]["providerIndex"]))

    @property
    def stats(self) -> dict[str, Any]:
        return self.data["results"]["stats"]

    def component(self, row: int = 0, index: int = 0) -> dict[str, Any]:
        return self.rows[row]["gradingResult"]["componentResults"][index]


def run_eval(tmp_path: Path, config: str, *args: str) -> Eval:
    """Write `config` to tmp_path and run `ci-grade eval` on it (in-process)."""
    write(tmp_path / "promptfooconfig.yaml", config)
    return run_in(tmp_path, *args)


def run_in(folder: Path, *args: str) -> Eval:
    cli = run_cli("eval", "-o", "out.json", "--no-progress", *args, cwd=folder)
    assert cli.code in (0, 1), f"exit {cli.code}\n{cli.out}\n{cli.err}"
    return Eval(cli, json.loads((folder / "out.json").read_text()))


def status(component: dict[str, Any]) -> str:
    return component["metadata"]["ciGrade"]["status"]


def grader_calls(server: LLMServer, path: str = "/v1/chat/completions") -> list[dict[str, Any]]:
    """Bodies of the requests that reached `path` (in arrival order)."""
    return [r.json for r in server.requests_to(path)]


def calls_matching(server: LLMServer, needle: str, path: str = "/v1/chat/completions") -> list[dict[str, Any]]:
    return [body for body in grader_calls(server, path) if needle in all_text(body)]


def all_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages") or body.get("input") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if isinstance(body.get("system"), str):
        parts.append(body["system"])
    return "\n".join(parts)


def fenced_blocks(text: str, tag: str = "output") -> list[tuple[str, str]]:
    """(id, content) of each `<tag id="...">...</tag id="...">` block whose opening and closing ids match."""
    pattern = re.compile(rf'<{tag} id="([0-9a-f]+)">\n(.*?)\n</{tag} id="\1">', re.S)
    return [(m.group(1), m.group(2)) for m in pattern.finditer(text)]


def recorded(server: LLMServer, path: str) -> list[Recorded]:
    return server.requests_to(path)
