"""gleu, tool-call-f1, skill-used, guardrails, perplexity and perplexity-score, end to end.

Expected scores and reasons are promptfoo 0.123.1's for the same inputs (its handlers, read from
its source: `gleu.ts`, `toolCallF1.ts`, `skill.ts`, `guardrails.ts`, `perplexity.ts`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ci_grade.grading.metrics import gleu, gleu_tokens
from ci_grade.grading.tool_calls import json_blocks, tool_names
from tests.assertion_runs import evaluate, first, grade_outputs
from tests.conftest import write
from tests.servers.llm_server import LLMServer


def test_gleu_tokens_and_scores() -> None:
    assert gleu_tokens("  The CAT sat...  on mat. ") == ["the", "cat", "sat", "on", "mat"]
    assert gleu_tokens("a ... b") == ["a", "", "b"]  # a lone run of dots stays an empty token
    assert gleu_tokens("...") == []
    assert gleu("The cat sat.", ["the cat sat"]) == 1.0
    # candidate "the cat sat on the mat" (6+5+4+3 = 18 n-grams), reference "the cat sat" (3+2+1 = 6):
    # all 6 reference n-grams match -> min(6/18, 6/6)
    assert gleu("the cat sat on the mat", ["the cat sat"]) == pytest.approx(6 / 18)
    # against "the cat sat on a mat": 5 + 3 + 2 + 1 matches of 18 n-grams each side; "dog" scores 0
    assert gleu("the cat sat on the mat", ["dog", "the cat sat on a mat"]) == pytest.approx(11 / 18)
    assert gleu("", ["x"]) == 0.0


def test_gleu_assertion(tmp_path: Path) -> None:
    r = grade_outputs(tmp_path, {
        "identical": ("The quick brown fox.", {"type": "gleu", "value": "the quick brown fox"}),
        "partial fails": ("the cat sat on the mat", {"type": "gleu", "value": "the cat sat"}),
        "partial passes lower threshold": ("the cat sat on the mat", {"type": "gleu", "value": "the cat sat", "threshold": 0.3}),
        "list of references": ("hello world", {"type": "gleu", "value": ["goodbye", "hello world"]}),
        "not-gleu": ("apples", {"type": "not-gleu", "value": "oranges and pears"}),
        "not-gleu fails": ("same words", {"type": "not-gleu", "value": "same words"}),
        "number value": ("1", {"type": "gleu", "value": 1}),
    })  # fmt: skip
    assert {k: v.status for k, v in r.items()} == {
        "identical": "pass", "partial fails": "fail", "partial passes lower threshold": "pass", "list of references": "pass",
        "not-gleu": "pass", "not-gleu fails": "fail", "number value": "error",
    }  # fmt: skip
    assert r["partial fails"].reason == "GLEU score 0.3333 is less than threshold 0.5"
    assert r["partial fails"].score == pytest.approx(1 / 3)
    assert r["not-gleu fails"].reason == "GLEU score 1.0000 is greater than or equal to threshold 0.5"
    assert r["not-gleu fails"].score == 0.0
    assert r["number value"].reason == '"gleu" assertion must have a string or array of strings value'


def test_tool_names_from_every_shape() -> None:
    assert tool_names({"tool_calls": [{"function": {"name": "a"}}, {"name": "b"}]}) == {"a", "b"}
    assert tool_names([{"type": "tool_use", "name": "x"}, {"functionCall": {"name": "y"}}, {"function": {"name": "z"}}, {"name": "w"}]) == {"x", "y", "z", "w"}
    assert tool_names({"type": "function_call", "name": "f"}) == {"f"}
    assert tool_names({"toolCall": {"functionCalls": [{"name": "g"}, {"name": "h"}]}}) == {"g", "h"}
    assert tool_names(json.dumps([{"name": "s"}])) == {"s"}
    text = 'I will call:\n{"type": "tool_use", "name": "search"}\nand inline {"name": "ignored"} text\n```\n{"name": "fenced"}\n```\n'
    assert tool_names(text) == {"search"}
    assert list(json_blocks('[{"name": "a"}, {"name": "b"} broken\n')) == []


def test_tool_call_f1_assertion(tmp_path: Path) -> None:
    calls = {"tool_calls": [{"function": {"name": "search"}}, {"function": {"name": "book"}}]}
    r = grade_outputs(tmp_path, {
        "exact": (calls, {"type": "tool-call-f1", "value": ["search", "book"]}),
        "comma list": (calls, {"type": "tool-call-f1", "value": "search, book"}),
        "partial": (calls, {"type": "tool-call-f1", "value": ["search", "weather"]}),
        "partial threshold": (calls, {"type": "tool-call-f1", "value": ["search", "weather"], "threshold": 0.5}),
        "none called": ("no tools", {"type": "tool-call-f1", "value": "search"}),
        "inverse": (calls, {"type": "not-tool-call-f1", "value": ["weather"]}),
        "empty value": (calls, {"type": "tool-call-f1", "value": " , "}),
    })  # fmt: skip
    assert {k: v.status for k, v in r.items()} == {
        "exact": "pass", "comma list": "pass", "partial": "fail", "partial threshold": "pass", "none called": "fail",
        "inverse": "pass", "empty value": "error",
    }  # fmt: skip
    assert r["exact"].reason == "Tool Call F1: 1.000 (precision=1.000, recall=1.000). Expected: [book, search], Called: [book, search]"
    assert r["partial"].reason == ("Tool Call F1 score 0.500 is below threshold 1. Expected: [search, weather], Called: [book, search]. "
                                   "Precision=0.500, Recall=0.500")
    assert r["none called"].reason.endswith("Called: [(none)]. Precision=0.000, Recall=0.000")
    assert r["inverse"].score == 0.0
    assert r["empty value"].reason == '"tool-call-f1" assertion requires at least one expected tool name'


PROVIDER = '''
import json

def call_api(prompt, options, context):
    return json.loads(prompt)
'''


def _provider_rows(tmp_path: Path, cases: dict[str, tuple[dict[str, object], dict[str, object]]]) -> dict[str, object]:
    """Each case's provider response (a Python provider returns it) graded by its assertion."""
    write(tmp_path / "provider.py", PROVIDER)
    tests = [{"description": name, "vars": {"reply": json.dumps(reply)}, "assert": [check]} for name, (reply, check) in cases.items()]
    rows = evaluate(tmp_path, {"prompts": ["{{reply}}"], "providers": ["file://provider.py"], "tests": tests})
    return {row["description"]: first(row) for row in rows}


def test_skill_used_assertion(tmp_path: Path) -> None:
    skills = {"output": "done", "metadata": {"skillCalls": [
        {"name": "pdf", "source": "project", "path": ".claude/skills/pdf"},
        {"name": "review-code"}, {"name": "review-docs"}, {"name": "broken", "is_error": True},
    ]}}  # fmt: skip
    r = _provider_rows(tmp_path, {
        "one name": (skills, {"type": "skill-used", "value": "pdf"}),
        "list missing": (skills, {"type": "skill-used", "value": ["pdf", "broken"]}),
        "forbidden unused": (skills, {"type": "not-skill-used", "value": ["excel"]}),
        "pattern count": (skills, {"type": "skill-used", "value": {"pattern": "REVIEW-*", "min": 2, "max": 2}}),
        "pattern too many": (skills, {"type": "skill-used", "value": {"pattern": "review-*", "max": 1}}),
        "inverse with min": (skills, {"type": "not-skill-used", "value": {"name": "pdf", "min": 1}}),
        "no skills": ({"output": "x"}, {"type": "skill-used", "value": "pdf"}),
    })  # fmt: skip
    assert {k: v.status for k, v in r.items()} == {  # type: ignore[attr-defined]
        "one name": "pass", "list missing": "fail", "forbidden unused": "pass", "pattern count": "pass",
        "pattern too many": "fail", "inverse with min": "error", "no skills": "fail",
    }  # fmt: skip
    actual = "pdf (project, .claude/skills/pdf), review-code, review-docs"
    assert r["one name"].reason == f"Observed required skill(s): pdf. Actual skills: {actual}"  # type: ignore[attr-defined]
    assert r["list missing"].reason == f"Missing required skill(s): broken. Actual skills: {actual}"  # type: ignore[attr-defined]
    assert r["pattern too many"].reason == 'Matched skill "review-*" 2 time(s) (expected 0-1). Matches: review-code, review-docs'  # type: ignore[attr-defined]
    assert r["no skills"].reason == "Missing required skill(s): pdf. Actual skills: (none)"  # type: ignore[attr-defined]


def test_guardrails_assertion(tmp_path: Path) -> None:
    blocked = {"output": "I cannot help", "guardrails": {"flagged": True, "flaggedInput": True}}
    r = _provider_rows(tmp_path, {
        "clean": ({"output": "fine"}, {"type": "guardrails"}),
        "blocked input": (blocked, {"type": "guardrails"}),
        "own reason": ({"output": "x", "guardrails": {"flagged": True, "reason": "PII found"}}, {"type": "guardrails"}),
        "expected block": (blocked, {"type": "not-guardrails"}),
        "expected block missing": ({"output": "fine"}, {"type": "not-guardrails"}),
        "red-team history": ({"output": "x", "metadata": {"redteamHistory": [{"guardrails": {"flagged": True, "flaggedOutput": True}}]}}, {"type": "guardrails"}),
    })  # fmt: skip
    got = {k: (v.status, v.reason) for k, v in r.items()}  # type: ignore[attr-defined]
    assert got == {
        "clean": ("pass", "Content passed safety checks"),
        "blocked input": ("fail", "Prompt failed safety checks"),
        "own reason": ("fail", "PII found"),
        "expected block": ("pass", "Guardrail correctly blocked: Prompt failed safety checks"),
        "expected block missing": ("fail", "Content was not blocked by guardrails (expected to be blocked)"),
        "red-team history": ("fail", "Output failed safety checks"),
    }


def test_perplexity_asks_openai_for_logprobs(tmp_path: Path, openai_env: LLMServer) -> None:
    logprobs = [-0.1, -0.5, -0.3]
    openai_env.on_chat(None, "Paris is the capital.", logprobs=logprobs)
    mean = sum(logprobs) / 3
    config = {
        "prompts": ["Capital of {{country}}?"],
        "providers": ["openai:chat:gpt-4o-mini"],
        "tests": [
            {"description": "perplexity", "vars": {"country": "France"}, "assert": [
                {"type": "perplexity", "threshold": 1.2},
                {"type": "perplexity-score", "threshold": 0.4},
                {"type": "not-perplexity-score", "threshold": 0.4},
                {"type": "perplexity"},
            ]},
            {"description": "plain", "vars": {"country": "Spain"}, "assert": [{"type": "contains", "value": "Paris"}]},
        ],
    }  # fmt: skip
    rows = {row["description"]: row for row in evaluate(tmp_path, config)}
    bodies = [r.json for r in openai_env.requests_to("/v1/chat/completions")]
    assert sorted(b.get("logprobs") is True for b in bodies) == [False, True]  # asked for only where graded
    results = rows["perplexity"]["gradingResult"]["componentResults"]
    assert [c["pass"] for c in results] == [False, True, False, True]
    assert results[0]["reason"] == f"Perplexity {math.exp(-mean):.2f} is greater than threshold 1.2"
    assert results[1]["score"] == pytest.approx(1 / (1 + math.exp(-mean)))
    assert results[2]["reason"] == f"Perplexity score {1 / (1 + math.exp(-mean)):.2f} is greater than or equal to threshold 0.4"


def test_perplexity_without_logprobs_is_an_error(tmp_path: Path) -> None:
    r = grade_outputs(tmp_path, {"recorded output": ("text", {"type": "perplexity", "threshold": 2})})
    assert r["recorded output"].status == "error"
    assert r["recorded output"].reason == "Perplexity assertion does not support providers that do not return logProbs"
