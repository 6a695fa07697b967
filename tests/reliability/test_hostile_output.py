"""Reliability: whatever text a provider returns travels safely into every output.

A model reply cut mid-emoji (a lone UTF-16 surrogate, valid JSON), NUL, ANSI and C1 escape
sequences and invalid UTF-8 go through a real run: the results JSON keeps them exactly (escaped),
JUnit, Markdown, the job summary, the PR comment and the terminal get well-formed text with the
control characters neutralised, and the grader is sent valid UTF-8.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import xmlschema
import yaml

from tests.conftest import run_cli_process, write
from tests.runner_env import TOKEN, model_env
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import run_action

JUNIT_XSD = Path(__file__).resolve().parent.parent / "fixtures" / "junit-10-file-line.xsd"
REPLIES: dict[str, str | bytes] = {
    "surrogate": "cut mid-emoji \ud83d",
    "nul": "before \x00 after",
    "ansi": "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 done\rX",
    "c1": "csi \x9b2J here",
    "badutf8": b"bad \xff\xfe utf8",
}
STORED = {**REPLIES, "badutf8": "bad \ufffd\ufffd utf8"}  # invalid bytes arrive as U+FFFD
GRADER_REASON = "grader saw \ud83d and \x1b[2J and \x00"
CONFIG = """
description: hostile replies
prompts: ['{{kind}}']
providers: [openai:chat:target-model]
tests:
  - vars: {kind: surrogate}
  - vars: {kind: nul}
  - vars: {kind: ansi}
  - vars: {kind: c1}
  - vars: {kind: badutf8}
  - vars: {kind: apierror}
defaultTest:
  assert:
    - {type: javascript, value: "({pass: false, score: 0, reason: 'saw ' + output})"}
    - {type: llm-rubric, value: 'judge the {{kind}} reply'}
"""
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


@pytest.fixture
def hostile(llm_server: LLMServer) -> LLMServer:
    """Target replies for each kind, a grader whose reasons are hostile too, an API error quoting escapes."""
    llm_server.on_chat("judge the", {"pass": False, "score": 0, "reason": GRADER_REASON})
    for kind, reply in REPLIES.items():
        llm_server.on_chat(kind, reply)
    llm_server.on_chat("apierror", {"error": {"message": "boom \x1b[2J \ud83d"}}, status=500)
    return llm_server


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, repository="octo/demo") as server:
        yield server


def assert_clean(text: str, where: str) -> None:
    """Well-formed, no control characters but newline/tab/CR-free line ends."""
    found = UNSAFE.findall(text.replace("\r\n", "\n"))
    assert not found, f"{where} holds {found!r}"


def rows_by_kind(results: dict) -> dict[str, dict]:
    return {row["vars"]["kind"]: row for row in results["results"]["results"]}


def test_results_keep_the_text_exactly_and_every_format_is_valid(tmp_path: Path, hostile: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    outs = ["out.json", "out.jsonl", "out.junit.xml", "out.md", "out.csv", "out.yaml"]
    result = run_cli_process("eval", "--no-progress", *(arg for out in outs for arg in ("-o", out)), cwd=tmp_path, env=model_env(hostile))
    assert result.code == 1, result.err
    assert "Traceback" not in result.err and "internal error" not in result.err
    assert_clean(result.out, "stdout")
    assert_clean(result.err, "stderr")
    assert "\\x1b[2J" in result.out  # the grader's escape sequence is shown, inert
    raw = {name: (tmp_path / name).read_bytes().decode("utf-8") for name in outs}  # strict UTF-8 everywhere

    rows = rows_by_kind(json.loads(raw["out.json"]))
    for kind, text in STORED.items():
        assert rows[kind]["response"]["output"] == text  # the results JSON keeps the reply exactly
        reasons = [c["reason"] for c in rows[kind]["gradingResult"]["componentResults"]]
        assert reasons == [f"saw {text}", GRADER_REASON]
        assert rows[kind]["metadata"]["ciGrade"]["status"] == "fail"
    assert "\\ud83d" in raw["out.json"] and not re.search("[\ud800-\udfff]", raw["out.json"])
    assert rows["apierror"]["metadata"]["ciGrade"]["status"] == "error" and "boom" in rows["apierror"]["error"]
    jsonl = [json.loads(line) for line in raw["out.jsonl"].splitlines()]
    assert {row["vars"]["kind"]: row["response"]["output"] for row in jsonl if row["vars"]["kind"] in STORED} == STORED
    assert {k: v["response"]["output"] for k, v in rows_by_kind(yaml.safe_load(raw["out.yaml"])).items() if k in STORED} == STORED

    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(raw["out.junit.xml"])
    assert_clean(raw["out.junit.xml"].replace("\t", " "), "JUnit")
    assert "cut mid-emoji \ufffd" in raw["out.junit.xml"]
    assert_clean(raw["out.md"], "Markdown")
    table = list(csv.reader(io.StringIO(raw["out.csv"])))
    assert len(table) == 7 and not re.search("[\ud800-\udfff]", raw["out.csv"])

    grader_bodies = [r.body.decode("utf-8") for r in hostile.requests_to("/v1/chat/completions") if b"judge the" in r.body]
    assert len(grader_bodies) == 5  # every grader request was valid UTF-8 JSON
    surrogate_call = next(json.loads(body) for body in grader_bodies if "judge the surrogate" in body)
    assert "cut mid-emoji \ufffd" in json.dumps(surrogate_call, ensure_ascii=False)


def test_action_reports_comment_and_log_stay_well_formed(tmp_path: Path, hostile: LLMServer, gh: GitHubServer) -> None:
    ws = tmp_path / "workspace"
    write(ws / "evals" / "promptfooconfig.yaml", CONFIG)
    run = run_action(ws, gh, process=True, baseline="", env_extra=model_env(hostile))
    assert run.code == 1, run.result.err
    assert "Traceback" not in run.result.err
    assert_clean(run.result.out, "the step log")
    assert run.outputs["errors"] == "1" and run.outputs["failures"] == "5" and run.outputs["passed"] == "false"
    assert_clean(run.summary, "the job summary")
    assert "grader saw \ufffd and \\[2J and" in run.summary
    (comment,) = gh.comments[7]
    assert_clean(comment["body"], "the PR comment")
    assert "grader saw \ufffd" in comment["body"]
    results = json.loads((ws / "evals" / "ci-grade-results" / "results.json").read_bytes().decode("utf-8"))
    assert rows_by_kind(results)["surrogate"]["response"]["output"] == "cut mid-emoji \ud83d"
    junit = (ws / "evals" / "ci-grade-results" / "results.junit.xml").read_bytes().decode("utf-8")
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(junit)
    annotations = [message for line in run.result.out.splitlines() if line.startswith(("::error", "::warning")) for message in [line]]
    assert annotations and all("\x1b" not in line for line in annotations)
