"""promptfoo's own example configs and the seeds' YAML examples, run unchanged against scripted graders.

Each compat folder is copied as it is; only OpenAI is pointed at the loopback server (via the
`openai_env` fixture). Grader replies are scripted per request, so every verdict below follows
from the scripted judgment and promptfoo's rules.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import COMPAT, write
from tests.model_graded_helpers import Eval, all_text, fenced_blocks, grader_calls, run_eval, run_in, status
from tests.servers.llm_server import LLMServer, request_text

SEEDS = COMPAT.parent / "seeds"


def copy_example(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(COMPAT / name, target)
    return target


def fenced_output(request: dict[str, Any]) -> str:
    blocks = fenced_blocks(all_text(request))
    return blocks[0][1] if blocks else ""


def components(row: dict[str, Any]) -> list[dict[str, Any]]:
    return row["gradingResult"]["componentResults"]


def assert_all_graded(result: Eval, rows: int) -> None:
    assert len(result.rows) == rows
    for row in result.rows:
        assert row["failureReason"] != 2, row["error"]
        assert components(row), row
        for component in components(row):
            assert status(component) in ("pass", "fail"), component["reason"]


# -- promptfoo example folders ---------------------------------------------------------------------


def test_eval_custom_grading_prompt(tmp_path: Path, openai_env: LLMServer) -> None:
    def grade(request: dict[str, Any]) -> str:
        output = request["messages"][-1]["content"]
        points = 3 if "brief primer on macroeconomics" in output else 1
        return f"{{pass: true, score: {points}, reason: '{points} points'}}"

    openai_env.on_chat("Grade the output by the following specifications", grade)
    result = run_in(copy_example("eval-custom-grading-prompt", tmp_path))
    assert_all_graded(result, 2)
    assert [components(r)[0]["score"] for r in result.rows] == [1, 3]
    assert all(r["success"] for r in result.rows)
    graders = [b for b in grader_calls(openai_env) if "Grade the output" in all_text(b)]
    assert len(graders) == 2
    system = graders[0]["messages"][0]
    assert system["role"] == "system" and "Did the output mention the Federal Reserve? +1 point" in system["content"]
    assert "Did the output ask to clarify the specific question the user wants to ask?" in system["content"]
    assert graders[0]["messages"][1]["content"].startswith("Output: echo: Talk about the economy.")
    assert {b["model"] for b in graders} == {"gpt-5.6-sol"}


SUPPORT_VERDICTS = {
    ("Quiero cancelar mi linea", "factually correct"): (False, 0.2),
    ("Quiero cancelar mi linea", "honest about what it can"): (False, 0.1),
    ("this includes the router", "same language"): (False, 0.3),
    ("Can I get a discount", "honest about what it can"): (False, 0.0),
    ("Mi wifi se corta", "resolves the customer"): (False, 0.2),
    ("My internet has been down", "resolves the customer"): (True, 0.8),
    ("switch my physical SIM", "offers a human handoff"): (True, 0.79),
}


def test_eval_customer_support_rubric(tmp_path: Path, openai_env: LLMServer) -> None:
    def grade(request: dict[str, Any]) -> dict[str, Any]:
        text = request["messages"][-1]["content"]
        for (ticket, dimension), (passed, score) in SUPPORT_VERDICTS.items():
            if ticket in text and dimension in text:
                return {"reason": f"{dimension}: {score}", "pass": passed, "score": score}
        return {"reason": "fine", "pass": True, "score": 1}

    openai_env.on_chat(None, grade)
    result = run_in(copy_example("eval-customer-support-rubric", tmp_path))
    assert_all_graded(result, 8)
    verdicts = {row["description"]: row["success"] for row in result.rows}
    assert verdicts == {
        "ES refund ticket answered in Spanish": True,
        "ES billing reply with an invented policy": False,
        "EN outage ticket answered in English": True,
        "ES tariff reply mixing languages": True,  # __threshold 0: the aggregate decides
        "EN upsell reply that overpromises": True,
        "EN honest handoff on a fraud report": True,
        "ES slow-fix reply that resolves nothing": True,
        "EN complete answer to a simple question": False,  # 0.79 is just below the 0.8 threshold
    }
    rows = {row["description"]: row for row in result.rows}
    invented = rows["ES billing reply with an invented policy"]
    assert invented["namedScores"] == pytest.approx({"correct": 0.2, "resolved": 1, "honest": 0.1, "handoff": 1, "language_fit": 1})
    outage = {c["assertion"]["metric"]: c for c in components(rows["EN outage ticket answered in English"])}
    assert outage["resolved"]["pass"] is True and outage["resolved"]["score"] == 0.8
    mixing = rows["ES tariff reply mixing languages"]
    assert {c["assertion"]["metric"]: c["pass"] for c in components(mixing)}["language_fit"] is False
    assert mixing["gradingResult"]["reason"].startswith("Aggregate score")
    assert len(grader_calls(openai_env)) == 40
    assert {b["model"] for b in grader_calls(openai_env)} == {"gpt-4.1-mini"}
    assert result.stats["tokenUsage"]["assertions"]["numRequests"] == 40


G_EVAL_SCORES = {"Coherence": 8, "Consistency": 6, "Fluency": 7, "Relevance": 9}


def test_eval_g_eval(tmp_path: Path, openai_env: LLMServer) -> None:
    def grade(request: dict[str, Any]) -> dict[str, Any]:
        text = request_text(request)
        name = next(n for n in G_EVAL_SCORES if f"{n} -" in text)
        if "Evaluation steps" in text:
            return {"score": G_EVAL_SCORES[name], "reason": f"{name} judged"}
        return {"steps": [f"Read for {name.lower()}.", "Score it."]}

    openai_env.on_chat(lambda r: "grading procedures" in request_text(r) or "Evaluation steps" in request_text(r), grade)
    result = run_in(copy_example("eval-g-eval", tmp_path))
    assert_all_graded(result, 5)
    scores = [components(r)[0]["score"] for r in result.rows]
    assert scores == pytest.approx([0.8, 0.6, 0.7, 0.9, 0.75])
    assert [r["success"] for r in result.rows] == [True, False, True, True, True]
    evaluations = [b for b in grader_calls(openai_env) if "Evaluation steps" in all_text(b)]
    assert len(evaluations) == 8
    assert all(fenced_blocks(all_text(b), "reply")[0][1] == "echo: Hello! How are you?" for b in evaluations)


def test_eval_select_best(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("choose the funniest tweet", {"reason": "The concise one is funnier.", "best": 1})
    openai_env.on_chat("choose the tweet that contains the most facts", "0")
    result = run_in(copy_example("eval-select-best", tmp_path))
    assert_all_graded(result, 4)
    assert [(r["vars"]["topic"], r["promptIdx"], r["success"]) for r in result.rows] == [
        ("bananas", 0, False),
        ("bananas", 1, True),
        ("nyc", 0, True),
        ("nyc", 1, False),
    ]
    selects = [b for b in grader_calls(openai_env) if "<output id=" in all_text(b)]
    assert len(selects) == 2
    assert [c for _, c in fenced_blocks(all_text(selects[0]))] in (
        ["echo: Write a tweet about bananas", "echo: Write a very concise, funny tweet about bananas"],
        ["echo: Write a tweet about nyc", "echo: Write a very concise, funny tweet about nyc"],
    )


def test_eval_conversation_relevance(tmp_path: Path, openai_env: LLMServer) -> None:
    def judge(request: dict[str, Any]) -> dict[str, Any]:
        ((_, block),) = fenced_blocks(all_text(request), "conversation")
        last = json.loads(block)[-1]["content"]
        if "stock market" in last or "different power outlet" in last:
            return {"verdict": "no", "reason": "The reply does not follow the user."}
        return {"verdict": "yes", "reason": "On topic."}

    openai_env.on_chat(lambda r: "<conversation id=" in request_text(r), judge)
    openai_env.on_chat("Relevance score", {"reason": "One reply went off topic."})
    result = run_in(copy_example("eval-conversation-relevance", tmp_path))
    assert_all_graded(result, 8)
    by_test = {(r["description"], r["provider"]["id"]): components(r)[0] for r in result.rows}
    for provider in ("openai:gpt-4o", "openai:gpt-4.1-mini"):
        assert by_test[("Single-turn travel question", provider)]["score"] == 1.0
        assert by_test[("Multi-turn travel conversation", provider)]["pass"] is True
        irrelevant = by_test[("Conversation with irrelevant response", provider)]
        assert (irrelevant["pass"], irrelevant["score"], irrelevant["reason"]) == (True, 0.75, "One reply went off topic.")
        support = by_test[("Technical support conversation", provider)]
        assert (support["pass"], support["score"]) == (False, 0.75)
    windows = [b for b in grader_calls(openai_env) if "<conversation id=" in all_text(b)]
    assert len(windows) == 2 * (1 + 4 + 4 + 4)
    assert {b["model"] for b in windows} == {"gpt-4o"}
    multi = [json.loads(fenced_blocks(all_text(b), "conversation")[0][1]) for b in windows if "planning a trip to Europe" in all_text(b) or "What about the weather?" in all_text(b)]
    assert max(len(w) for w in multi) == 6  # windowSize 3: three turns, six messages
    assert len([b for b in grader_calls(openai_env) if "Relevance score" in all_text(b)]) == 4


def test_config_csv_metadata(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Tell me about machine learning", "Machine learning fits an algorithm to data.")
    openai_env.on_chat("Tell me about quantum physics", "The quantum world is strange.")
    openai_env.on_chat("Tell me about climate change", "The average temperature keeps rising.")
    openai_env.on_chat("Does this describe machine learning accurately?", {"reason": "accurate", "pass": True, "score": 0.85})
    openai_env.on_chat("Does this describe quantum physics accurately?", {"reason": "thin", "pass": True, "score": 0.7})
    openai_env.on_chat("Does this describe climate change inaccurately?", {"reason": "borderline", "pass": True, "score": 0.675})
    result = run_in(copy_example("config-csv-metadata", tmp_path))
    assert_all_graded(result, 3)
    rubric = {r["vars"]["topic"]: next(c for c in components(r) if c["assertion"]["type"] == "llm-rubric") for r in result.rows}
    assert {topic: (c["pass"], c["assertion"]["threshold"]) for topic, c in rubric.items()} == {
        "machine learning": (True, 0.8),
        "quantum physics": (False, 0.75),
        "climate change": (True, 0.675),
    }
    assert [r["success"] for r in result.rows] == [True, False, True]
    assert all(components(r)[0]["pass"] for r in result.rows)  # the contains assertions


def test_provider_python_llm_rubric_asserts(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("funny tweet about bananas", "Bananamax: bananas that split the room.")
    openai_env.on_chat("funny tweet about fruits", "Fruit salad? Bananamax delivers \U0001F34D")
    openai_env.on_chat("funny tweet about turtles", "Turtles are slow. Bananamax is not.")

    def grade(request: dict[str, Any]) -> dict[str, Any]:
        output = fenced_output(request)
        if "includes at least one emoji" in request_text(request):
            has_emoji = bool(re.search(r"[\U0001F300-\U0001FAFF]", output))
            return {"reason": "emoji check", "pass": has_emoji, "score": float(has_emoji)}
        return {"reason": "Not funny.", "pass": False, "score": 0.2}

    openai_env.on_chat(lambda r: "<output id=" in request_text(r), grade)
    result = run_in(copy_example("provider-python", tmp_path))
    assert_all_graded(result, 12)
    by_topic: dict[str, set[bool]] = {}
    for row in result.rows:
        by_topic.setdefault(row["vars"]["topic"], set()).add(row["success"])
    assert by_topic == {"bananas": {True}, "fruits": {True}, "turtles": {False}}
    turtles = [components(r)[0] for r in result.rows if r["vars"]["topic"] == "turtles"]
    assert all((c["pass"], c["score"], c["reason"]) == (False, 0.2, "Not funny.") for c in turtles)
    assert len([b for b in grader_calls(openai_env) if "<output id=" in all_text(b)]) == 8


# -- the seeds' YAML examples ----------------------------------------------------------------------


def seed_block(marker: str, page: str = "model-graded-metrics-site.md") -> str:
    """The ```yaml block of a seed page that contains `marker`, exactly as written there."""
    text = (SEEDS / page).read_text(encoding="utf-8")
    blocks = [textwrap.dedent(m.group(2)) for m in re.finditer(r"^([ \t]*)```yaml\n(.*?)^\1```", text, re.S | re.M)]
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"{marker!r} is in {len(found)} yaml blocks of {page}"
    return found[0]


def as_test(fragment: str, vars_line: str) -> str:
    """A seed's `assert:` fragment placed, unchanged, inside one test."""
    return f"tests:\n  - vars: {vars_line}\n" + textwrap.indent(fragment, "    ")


def test_seed_closedqa_and_factuality_examples(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Is not apologetic", "The reply contains no apology.\nY")
    openai_env.on_chat("Sacramento is the capital of California", {"category": "B", "reason": "Adds the population."})
    closedqa = seed_block("type: model-graded-closedqa # or llm-rubric")
    factuality = seed_block("type: factuality\n    # Make sure the LLM output is consistent")
    header = "prompts: ['What is the capital of {{state}}?']\nproviders: [openai:gpt-4.1-mini]\n"
    result = run_eval(tmp_path, header + as_test(closedqa, "{state: California}") + as_test(factuality, "{state: California}").replace("tests:\n", ""))
    assert_all_graded(result, 2)
    (qa,), (fact,) = (components(r) for r in result.rows)
    assert (qa["assertion"]["type"], qa["pass"]) == ("model-graded-closedqa", True)
    assert (fact["assertion"]["type"], fact["pass"], fact["reason"]) == ("factuality", True, "Adds the population.")


def test_seed_german_rubric_prompt_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Kriterium: Antwortet hilfreich", {"reason": "Die Antwort ist hilfreich und klar.", "pass": True, "score": 1.0})
    openai_env.on_chat("Kriterium: Gibt direkte Antwort", {"reason": "Nicht direkt.", "pass": False, "score": 0.0})
    openai_env.on_chat(lambda r: "grading procedures" in request_text(r), {"steps": ["Lies die Antwort.", "Bewerte sie."]})
    openai_env.on_chat(lambda r: "Evaluation steps" in request_text(r), {"score": 9, "reason": "Klar."})
    block = seed_block("Du bewertest Ausgaben nach Kriterien")
    default_test, fragment = block.split("\nassert:", 1)
    config = "prompts: ['Erkläre {{thema}}']\nproviders: [openai:gpt-4.1-mini]\n" + default_test + "\n" + as_test("assert:" + fragment, "{thema: Photosynthese}")
    result = run_eval(tmp_path, config)
    assert_all_graded(result, 1)
    rubric, g_eval, closedqa = components(result.rows[0])
    assert (rubric["pass"], rubric["reason"]) == (True, "Die Antwort ist hilfreich und klar.")
    assert (g_eval["pass"], g_eval["score"]) == (True, 0.9)
    assert (closedqa["pass"], closedqa["reason"]) == (False, "The submission does not meet the criterion: Nicht direkt.")
    german = [b for b in grader_calls(openai_env) if "Du bewertest" in all_text(b)]
    assert len(german) == 2  # llm-rubric and closedqa use the override; g-eval keeps its own prompts
    assert german[0]["messages"][1]["content"].startswith("Ausgabe: echo: Erkläre Photosynthese\nKriterium: ")


def test_seed_variables_in_the_rubric_example(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "prompt1.txt", "Answer: {{question}}")
    write(tmp_path / "prompt2.txt", "Answer carefully: {{question}}")

    def grade(request: dict[str, Any]) -> dict[str, Any]:
        uncertain = "weather" in request_text(request)
        return {"reason": "checked", "pass": uncertain, "score": float(uncertain)}

    openai_env.on_chat(lambda r: "<output id=" in request_text(r), grade)
    result = run_eval(tmp_path, seed_block("Says that it is uncertain or unable to answer the question"))
    assert_all_graded(result, 4)
    assert [(r["vars"]["question"][:10], r["success"]) for r in result.rows] == [
        ("What's the", True),
        ("What's the", True),
        ("Who won th", False),
        ("Who won th", False),
    ]
    rubric_texts = {all_text(b).split("Rubric:\n", 1)[1].split("\n")[0] for b in grader_calls(openai_env) if "<output id=" in all_text(b)}
    assert 'Says that it is uncertain or unable to answer the question: "What\'s the weather in New York?"' in rubric_texts
    assert {b["model"] for b in grader_calls(openai_env) if "<output id=" not in all_text(b)} == {"gpt-5-mini"}


def test_seed_select_best_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("choose the funniest tweet", "1")
    openai_env.on_chat("choose the tweet that contains the most facts", {"reason": "facts", "best": 0})
    result = run_eval(tmp_path, seed_block("value: choose the funniest tweet"))
    assert_all_graded(result, 4)
    assert [r["success"] for r in result.rows] == [False, True, True, False]


def test_seed_max_score_example(tmp_path: Path, openai_env: LLMServer) -> None:
    for prefix, score in (("echo: Write a summary of", 0.5), ("echo: Write a detailed summary", 0.9), ("echo: Write a comprehensive summary", 0.6)):
        openai_env.on_chat(lambda r, p=prefix: fenced_output(r).startswith(p), {"reason": "ok", "pass": True, "score": score})
    result = run_eval(tmp_path, seed_block("type: max-score"))
    assert_all_graded(result, 3)
    maxes = [components(r)[-1] for r in result.rows]
    assert [c["metadata"]["maxScore"] for c in maxes] == pytest.approx([2.5 / 3, 2.9 / 3, 2.6 / 3])
    assert [r["success"] for r in result.rows] == [False, True, False]
    assert maxes[1]["reason"] == "Selected as highest scoring output (score: 0.967)"


def test_seed_grader_override_examples(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Is spoken like a pirate", {"reason": "Arr", "pass": True, "score": 1})
    header = "prompts: ['Say hi to {{name}}']\nproviders: [openai:gpt-4.1-nano]\n"
    by_test_options = seed_block("defaultTest:\n  options:\n    provider: openai:gpt-5-mini\ntests:")
    result = run_eval(tmp_path, header + by_test_options)
    assert_all_graded(result, 1)
    per_assertion = seed_block("value: Is spoken like a pirate\n        provider: openai:gpt-5-mini")
    second = run_eval(tmp_path, header + per_assertion)
    assert_all_graded(second, 1)
    assert second.rows[0]["success"] is True
    graders = [b["model"] for b in grader_calls(openai_env) if "Is spoken like a pirate" in all_text(b)]
    assert graders == ["gpt-5-mini", "gpt-5-mini"]


def test_seed_points_rubric_prompt_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("keeping track of the points scored", "{pass: true, score: 2, reason: mentions x and y}")
    block = seed_block("Calculate the score but always pass the test")
    config = "prompts: ['Talk about {{x}}']\nproviders: [openai:gpt-4.1-mini]\n" + block + as_test("assert:\n  - type: llm-rubric\n", "{x: rates, y: inflation, z: scope}")
    result = run_eval(tmp_path, config)
    assert_all_graded(result, 1)
    assert (components(result.rows[0])[0]["pass"], components(result.rows[0])[0]["score"]) == (True, 2)
    (body,) = [b for b in grader_calls(openai_env) if "points scored" in all_text(b)]
    assert "Did the output mention rates? +1 point" in body["messages"][0]["content"]


def test_seed_image_rubric_prompt_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Evaluate if the answer matches the image", {"reason": "matches", "pass": True, "score": 1})
    block = seed_block("Evaluate if the answer matches the image")
    config = "prompts: ['Describe the image']\nproviders: [echo]\n" + block + as_test(
        "assert:\n  - type: llm-rubric\n    value: describes a red square\n", "{image_url: 'https://example.com/square.png'}"
    )
    result = run_eval(tmp_path, config)
    assert_all_graded(result, 1)
    (body,) = grader_calls(openai_env)
    assert body["model"] == "gpt-5"
    assert body["messages"][1]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://example.com/square.png"}},
        {"type": "text", "text": "Output: Describe the image\nRubric: describes a red square"},
    ]


def test_seed_pass_versus_score_examples(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Return 0 if the response is incorrect", {"pass": True, "score": 0, "reason": "incorrect"})
    openai_env.on_chat('Return {"pass": false, "score": 0}', {"pass": False, "score": 0, "reason": "incorrect"})
    problem = seed_block("# No threshold set - always passes")
    solutions = seed_block("threshold: 1  # Only pass when score >= 1")
    option_a, option_b = (part.split("\n", 1)[1] for part in solutions.split("# ✅ Option ")[1:])
    header = "prompts: ['2 + 2 = {{answer}}']\nproviders: [echo]\n"
    rows = []
    for fragment in (problem, option_a, option_b):
        result = run_eval(tmp_path, header + as_test(fragment, "{answer: 5}"))
        assert_all_graded(result, 1)
        rows.append(result.rows[0]["success"])
    assert rows == [True, False, False]


def test_factuality_guide_score_overrides_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("<submission id=", lambda r: {"category": "A" if "Sacramento." in request_text(r) else "B", "reason": "r"})
    fragment = seed_block("differButFactual: 0", page="factuality-guide.md")
    config = "prompts: ['Capital of {{state}}? {{style}}']\nproviders:\n  - id: echo\n    transform: 'context.vars.style'\n"
    config += "tests:\n" + "".join(
        f"  - vars: {{state: California, style: '{style}'}}\n" + textwrap.indent(fragment, "    ") for style in ("Sacramento.", "Sacramento, pop. 500k.")
    )
    result = run_eval(tmp_path, config)
    assert_all_graded(result, 2)
    subset, superset = (components(r)[0] for r in result.rows)
    assert (subset["pass"], subset["score"]) == (True, 0.8)
    assert (superset["pass"], superset["score"]) == (False, 0.0)
