"""`examples/rag/` runs as documented, with the chat model and the graders on the loopback server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli
from tests.servers import rag_script
from tests.servers.llm_server import LLMServer, last_user_text

EXAMPLE = REPO / "examples" / "rag"


def run(tmp_path: Path, config: str) -> list[dict[str, Any]]:
    folder = tmp_path / "rag"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    result = run_cli("eval", "-c", config, "-o", "out.json", "--no-progress", cwd=folder)
    assert result.code in (0, 1), result.err
    return sorted(json.loads((folder / "out.json").read_text())["results"]["results"], key=lambda r: r["testIdx"])


def graded(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["assertion"]["type"]: c for c in row["gradingResult"]["componentResults"]}


def test_static_context_config(tmp_path: Path, openai_env: LLMServer) -> None:
    rag_script.install(openai_env)
    rows = run(tmp_path, "promptfooconfig.yaml")
    assert len(rows) == 2
    for row in rows:
        components = graded(row)
        for name, (status, score) in rag_script.EXPECTED[row["testIdx"]].items():
            assert (components[name]["metadata"]["ciGrade"]["status"], components[name]["score"]) == (status, pytest.approx(score)), name
        assert components["context-relevance"]["metadata"]["contextSource"] == "vars.context"


def _bot(request: dict[str, Any]) -> str:
    text = last_user_text(request)
    return rag_script.REIMBURSEMENT_ANSWER if "max purchase" in text else rag_script.MATERNITY_ANSWER


def test_context_transform_config(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(lambda r: "Policy excerpts:" in last_user_text(r), _bot)
    openai_env.on_chat(lambda r: "Reference answer:" in last_user_text(r), "1. the reference sentence | stated in the excerpts [Attributed]")
    rag_script.install(openai_env)
    rows = run(tmp_path, "promptfooconfig.transform.yaml")
    assert len(rows) == 2
    for row in rows:
        assert row["success"] is True, row["gradingResult"]["reason"]
        assert row["response"]["metadata"]["retrieved_docs"], "the bot reports what it retrieved"
        components = graded(row)
        assert {name: c["metadata"]["ciGrade"]["status"] for name, c in components.items()} == dict.fromkeys(components, "pass")
        relevance = components["context-relevance"]
        assert relevance["metadata"]["contextSource"] == "contextTransform"
        assert relevance["metadata"]["contextUnits"] == [d["content"] for d in row["response"]["metadata"]["retrieved_docs"]]
        assert relevance["score"] == pytest.approx(0.5)  # one of the two retrieved sections answers the query
        assert components["context-recall"]["metadata"]["context"] == "\n\n".join(relevance["metadata"]["contextUnits"])
    reimbursement = rows[0]
    assert reimbursement["response"]["output"] == rag_script.REIMBURSEMENT_ANSWER  # options.transform: output.answer
    sources = [d["source"] for d in reimbursement["response"]["metadata"]["retrieved_docs"]]
    assert "docs/reimbursement.md" in sources
    bot_calls = [r for r in openai_env.requests_to("/v1/chat/completions") if r.json["model"] == "gpt-4.1-mini"]
    assert len(bot_calls) == 2 and "Expenses exceeding $500" in json.dumps(bot_calls[0].json) + json.dumps(bot_calls[1].json)
