"""promptfoo's own example configs (deterministic ones) run unchanged against the loopback server.

Each folder of promptfoo's example corpus (tests/fixtures/promptfoo/compat) is copied as is; OpenAI is the scripted loopback server with
plausible replies. Every test row must appear, every assertion must be graded (pass or fail, no
error, nothing 'not yet supported'), and the verdicts must be the ones the replies imply.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import COMPAT, run_cli
from tests.servers.llm_server import LLMServer, last_user_text


def run_folder(name: str, tmp_path: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    folder = tmp_path / name
    shutil.copytree(COMPAT / name, folder)
    result = run_cli("eval", "--no-progress", "-o", "out.json", *args, cwd=folder)
    assert result.code in (0, 1), result.err
    rows = json.loads((folder / "out.json").read_text())["results"]["results"]
    for row in rows:
        assert row["failureReason"] != 2, row["error"]
        for component in row["gradingResult"]["componentResults"]:
            assert "not yet supported" not in component["reason"]
            assert component["metadata"]["ciGrade"]["status"] in ("pass", "fail"), component["reason"]
    return result.code, rows, result.out


def verdicts(rows: list[dict[str, Any]], key: str) -> list[tuple[Any, bool]]:
    return [(row["vars"][key], row["success"]) for row in rows]


def test_getting_started(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Hello world", "Bonjour le monde")
    openai_env.on_chat("library", "¿DÓNDE ESTÁ LA BIBLIOTECA?")
    code, rows, out = run_folder("getting-started", tmp_path)
    assert code == 0, out
    assert len(rows) == 8  # 2 prompts x 2 providers x 2 tests
    assert sorted({r["provider"]["id"] for r in rows}) == ["openai:gpt-4.1", "openai:o4-mini"]
    assert {r["prompt"]["raw"] for r in rows} >= {"Convert this English to French: Hello world", "Translate to Spanish: Where is the library?"}
    assert all(r["success"] for r in rows)
    models = sorted({request.json["model"] for request in openai_env.requests_to("/v1/chat/completions")})
    assert models == ["gpt-4.1", "o4-mini"]


def test_simple_csv(tmp_path: Path, openai_env: LLMServer) -> None:
    def reply(request: dict[str, Any]) -> str:
        text = last_user_text(request)
        language = "French" if "French" in text else "Pirate"
        hungry = "hungry" in text
        return {("French", False): "Bonjour le monde", ("French", True): "J'ai faim", ("Pirate", False): "Ahoy, world!", ("Pirate", True): "Where be the grub?"}[(language, hungry)]

    openai_env.on_chat(None, reply)
    code, rows, out = run_folder("simple-csv", tmp_path)
    assert code == 0, out
    assert len(rows) == 8  # 4 CSV rows x 2 prompts from one .txt file
    assert all(r["success"] for r in rows)
    first = [r for r in rows if r["vars"]["body"] == "Hello world" and r["vars"]["language"] == "French"]
    assert "- Tone: formal\n- Length: brief" in first[0]["prompt"]["raw"]  # the `load` filter
    assert [c["assertion"] for c in first[0]["gradingResult"]["componentResults"]] == [{"type": "icontains", "value": "bonjour"}]
    assert {r["metadata"]["ciGrade"]["location"]["file"] for r in rows} == {"tests.csv"}


def test_config_jsonl_test_cases(tmp_path: Path) -> None:
    code, rows, out = run_folder("config-jsonl-test-cases", tmp_path)
    assert code == 0, out
    assert verdicts(rows, "target_language") == [("French", True), ("Spanish", True)]


def test_config_tests_per_prompt(tmp_path: Path) -> None:
    code, rows, out = run_folder("config-tests-per-prompt", tmp_path)
    assert code == 0, out
    runs = [(r["description"], r["prompt"]["label"]) for r in rows]
    assert runs == [
        ("Math question - factual only", "Factual Assistant"),
        ("Geography question - factual only", "Factual Assistant"),
        ("Story prompt - creative only", "Creative Writer"),
        ("Poetry prompt - creative only", "Creative Writer"),
        ("Programming question - technical only", "Technical Expert"),
        ("General question - factual and technical", "Factual Assistant"),
        ("General question - factual and technical", "Technical Expert"),
        ("Universal test - all prompts", "Factual Assistant"),
        ("Universal test - all prompts", "Creative Writer"),
        ("Universal test - all prompts", "Technical Expert"),
    ]
    assert all(r["success"] for r in rows)


def test_eval_json_output(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Banana", json.dumps({"color": "yellow", "countries": ["Ecuador", "Philippines"]}))
    openai_env.on_chat("Passion fruit", json.dumps({"color": "purple", "countries": ["Brazil", "India"]}))
    code, rows, out = run_folder("eval-json-output", tmp_path)
    assert code == 0, out
    assert verdicts(rows, "item") == [("Banana", True), ("Passion fruit", True)]
    assert [c["assertion"]["type"] for c in rows[1]["gradingResult"]["componentResults"]] == ["is-json", "javascript", "contains-any"]
    requests = openai_env.requests_to("/v1/chat/completions")
    assert len(requests) == 2 and all(r.json["response_format"] == {"type": "json_object"} for r in requests)


def test_eval_json_output_catches_a_wrong_answer(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Banana", json.dumps({"color": "green", "countries": ["Ecuador"]}))
    openai_env.on_chat("Passion fruit", json.dumps({"color": "purple", "countries": ["Brazil"]}))
    code, rows, _ = run_folder("eval-json-output", tmp_path)
    assert code == 1
    assert verdicts(rows, "item") == [("Banana", False), ("Passion fruit", False)]
    passion = rows[1]["gradingResult"]["componentResults"]
    assert [(c["assertion"]["type"], c["pass"]) for c in passion] == [("is-json", True), ("javascript", True), ("contains-any", False)]


def test_eval_python_assert_external(tmp_path: Path, openai_env: LLMServer) -> None:
    replies = {
        "yellow fruits": "Bananas are yellow",
        "potassium": "banana, avocado, spinach",
        "long and skinny": "Bananas: long, yellow",
        "smell bad": "Durian smells terrible",
        "south america": "Passion fruit, pineapple, guava",
    }
    for needle, answer in replies.items():
        openai_env.on_chat(needle, answer)
    code, rows, out = run_folder("eval-python-assert", tmp_path, "-c", "promptfooconfig-external.yaml")
    assert code == 1, out
    assert [r["success"] for r in rows] == [True, True, True, False, False]
    assert [r["score"] for r in rows[:3]] == [pytest.approx(0.75), pytest.approx(0.5), pytest.approx(0.75)]
    assert rows[0]["gradingResult"]["componentResults"][0]["reason"] == "Good banana content"
    assert rows[0]["namedScores"]["banana_quality"] == pytest.approx(0.8)
    last = rows[4]["gradingResult"]["componentResults"]
    assert [c["pass"] for c in last] == [True, False]  # fruitList from each assertion's config


def test_eval_python_assert_inline(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("bananas", "Go bananas for bananas! #fruit")
    openai_env.on_chat("potatoes", "Expected output")
    code, rows, out = run_folder("eval-python-assert", tmp_path, "-c", "promptfooconfig-inline.yaml")
    assert code == 0, out
    assert verdicts(rows, "topic") == [("bananas", True), ("potatoes", True)]
    assert rows[1]["score"] == pytest.approx(0.5)
    assert rows[1]["gradingResult"]["componentResults"][0]["reason"] == "Looks good to me"
