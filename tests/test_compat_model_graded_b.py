"""promptfoo's own example configs (eval-rag, simple-test) run unchanged, graders on the loopback server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import COMPAT, run_cli
from tests.servers import rag_script
from tests.servers.llm_server import LLMServer, last_user_text


def run_example(name: str, tmp_path: Path) -> tuple[int, list[dict[str, Any]]]:
    folder = tmp_path / name
    shutil.copytree(COMPAT / name, folder)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=folder)
    assert result.code in (0, 1), result.err
    rows = json.loads((folder / "out.json").read_text())["results"]["results"]
    return result.code, sorted(rows, key=lambda r: (r["testIdx"], r["promptIdx"]))


def by_type(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["assertion"]["type"]: c for c in row["gradingResult"]["componentResults"]}


def test_eval_rag(tmp_path: Path, openai_env: LLMServer) -> None:
    rag_script.install(openai_env)
    code, rows = run_example("eval-rag", tmp_path)
    assert code == 1 and len(rows) == 2
    for row in rows:
        assert row["provider"]["id"] == "openai:gpt-4.1-mini"
        graded = by_type(row)
        assert set(graded) == {*rag_script.EXPECTED[row["testIdx"]], "context-relevance"}
        for name, (status, score) in rag_script.EXPECTED[row["testIdx"]].items():
            component = graded[name]
            assert (component["metadata"]["ciGrade"]["status"], component["score"]) == (status, pytest.approx(score)), (name, component["reason"])
        relevance = graded["context-relevance"]
        assert relevance["score"] == pytest.approx(1 / relevance["metadata"]["totalContextUnits"])
        assert relevance["metadata"]["ciGrade"]["status"] == "fail"
        assert row["metadata"]["ciGrade"]["status"] == "fail"
        usage = row["gradingResult"]["tokensUsed"]
        # factuality 1 + answer-relevance 3 chat/4 embeddings + recall 1 + relevance 1 + faithfulness 2
        assert usage["numRequests"] == 12
    chats = [r.json for r in openai_env.requests_to("/v1/chat/completions")]
    assert sum(1 for c in chats if c["model"] == "gpt-4.1-mini") == 2
    assert len(openai_env.requests_to("/v1/embeddings")) == 8


def _pirate(request: dict[str, Any]) -> str:
    body = last_user_text(request).rsplit(": ", 1)[1]
    return {
        "Yes": "Yarr",
        "I'm hungry": "Arr, I be needin' some grub!",
        "Output the story of your life in JSON": '{"name": "Cap\'n", "life": "sailin\' the seas"}',
        "Hello world": "Ahoy, world",
        "The quick brown fox jumps over the lazy dog": "Arrr, the quick brown fox be leapin' over the lazy dog",
    }[body]


def test_simple_test(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Is spoken like a pirate", {"reason": "Pirate speech throughout.", "pass": True, "score": 1})
    openai_env.on_chat(lambda r: "Pirate: " in last_user_text(r) or "speak these words: " in last_user_text(r), _pirate)
    code, rows = run_example("simple-test", tmp_path)
    assert code == 1
    assert [(r["testIdx"], r["promptIdx"]) for r in rows] == [(t, p) for t in range(5) for p in range(2)]
    for row in rows:
        graded = by_type(row)
        statuses = {name: c["metadata"]["ciGrade"]["status"] for name, c in graded.items()}
        if row["description"] == "Check for semantic similarity":
            # python returns max(0, len(output) - 300) = 0 for a short output: promptfoo fails it
            assert statuses == {"javascript": "pass", "python": "fail", "similar": "pass"}
            assert graded["similar"]["score"] == pytest.approx(1.0)
            assert graded["similar"]["metadata"]["ciGrade"]["grader"] == "openai:embedding:text-embedding-3-large"
            assert row["success"] is False
        else:
            assert set(statuses.values()) == {"pass"}, (row["description"], statuses)
            assert row["success"] is True
    rubric = by_type(rows[-1])["llm-rubric"]
    assert rubric["reason"] == "Pirate speech throughout."
    assert len(openai_env.requests_to("/v1/embeddings")) == 4  # output + value, for each prompt
