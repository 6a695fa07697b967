"""Multi-turn `_conversation`: earlier turns of one provider and prompt, in config order, while other
rows stay concurrent; `metadata.conversationId`, scenarios, repeats and `disableConversationVar`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli, write

BOT = '''
import time
from pathlib import Path

# Rows run in worker processes: the solo row leaves a mark beside this file for the waiting turn.
_MARK = Path(__file__).parent / "solo-started"


def call_api(prompt, options, context):
    label = context["prompt"]["label"]
    question = context["vars"]["question"]
    if label == "solo":
        _MARK.touch()
    elif context["vars"].get("wait"):
        # The first turn waits until a row of the other prompt has started: rows outside the
        # conversation must run alongside it, not after it.
        deadline = time.monotonic() + 20
        while not _MARK.exists():
            if time.monotonic() > deadline:
                return {"output": "the other rows did not run concurrently"}
            time.sleep(0.01)
    return {"output": f"reply to {question}", "metadata": {"turn": question}}
'''

CHAT = """
prompts:
  - label: chat
    raw: |
      {% for turn in _conversation %}Earlier answer: {{ turn.output }}
      {% endfor %}Question: {{ question }}
  - label: solo
    raw: 'Solo: {{ question }}'
providers: [file://bot.py]
tests:
  - vars: {question: Hi, wait: true}
  - vars: {question: Where is Paris?}
  - vars: {question: And Rome?}
"""


def run(folder: Path, config: str, *args: str) -> list[dict[str, Any]]:
    write(folder / "bot.py", BOT)
    write(folder / "promptfooconfig.yaml", config)
    result = run_cli("eval", "-o", "out.json", "--no-progress", *args, cwd=folder)
    assert result.code == 0, result.out + result.err
    rows = json.loads((folder / "out.json").read_text())["results"]["results"]
    return sorted(rows, key=lambda r: (r["repeatIndex"], r["testIdx"], r["promptIdx"], r["metadata"]["ciGrade"]["providerIndex"]))


def test_turns_run_in_order_and_see_the_earlier_ones_while_other_rows_run_concurrently(tmp_path: Path) -> None:
    rows = run(tmp_path, CHAT)
    chat = [r for r in rows if r["prompt"]["label"] == "chat"]
    solo = [r for r in rows if r["prompt"]["label"] == "solo"]
    assert [r["response"]["output"] for r in chat] == ["reply to Hi", "reply to Where is Paris?", "reply to And Rome?"]
    assert chat[2]["prompt"]["raw"] == "Earlier answer: reply to Hi\nEarlier answer: reply to Where is Paris?\nQuestion: And Rome?\n"
    # A text prompt's input is the whole rendered prompt, as in promptfoo.
    assert chat[2]["vars"]["_conversation"] == [
        {"prompt": "Question: Hi\n", "input": "Question: Hi\n", "output": "reply to Hi", "metadata": {"turn": "Hi"}},
        {
            "prompt": "Earlier answer: reply to Hi\nQuestion: Where is Paris?\n",
            "input": "Earlier answer: reply to Hi\nQuestion: Where is Paris?\n",
            "output": "reply to Where is Paris?",
            "metadata": {"turn": "Where is Paris?"},
        },
    ]
    assert chat[0]["vars"]["_conversation"] == []
    assert len(solo) == 3 and all("_conversation" not in r["vars"] for r in solo)


CHAT_JSON = """
prompts:
  - label: chat
    raw: |
      [
      {% for turn in _conversation %}
        {"role": "user", "content": {{ turn.input | dump }}},
        {"role": "assistant", "content": {{ turn.output | dump }}},
      {% endfor %}
        {"role": "user", "content": {{ question | dump }}}
      ]
providers:
  - {id: file://bot.py, label: one}
  - {id: file://bot.py, label: two}
tests:
  - vars: {question: Hi}
  - vars: {question: Second}
    metadata: {conversationId: other}
  - vars: {question: Third}
    options: {disableConversationVar: true}
  - vars: {question: Fourth}
scenarios:
  - config: [{vars: {question: S1}}, {vars: {question: S2}}]
    tests: [{description: first, metadata: {}}, {description: second, metadata: {}}]
"""


def test_chat_prompts_providers_conversation_ids_scenarios_and_repeats_keep_separate_histories(tmp_path: Path) -> None:
    rows = run(tmp_path, CHAT_JSON, "--repeat", "2")

    def history(row: dict[str, Any]) -> list[str]:
        return [turn["input"] for turn in row["vars"]["_conversation"]] if "_conversation" in row["vars"] else ["hidden"]

    for repeat in (0, 1):
        for provider in ("one", "two"):
            mine = [r for r in rows if r["repeatIndex"] == repeat and r["provider"]["label"] == provider]
            by_question = {r["vars"]["question"]: r for r in mine if not r["description"]}
            scenario = {(r["vars"]["question"], r["description"]): r for r in mine if r["description"]}
            assert history(by_question["Hi"]) == []
            assert history(by_question["Second"]) == []  # its own conversationId
            assert history(by_question["Third"]) == ["hidden"]  # disabled for this test...
            assert history(by_question["Fourth"]) == ["Hi", "Third"]  # ...but its turn is still recorded
            # Each scenario config is its own conversation, in order.
            assert history(scenario[("S1", "first")]) == [] and history(scenario[("S1", "second")]) == ["S1"]
            assert history(scenario[("S2", "first")]) == [] and history(scenario[("S2", "second")]) == ["S2"]
            assert scenario[("S1", "second")]["metadata"]["conversationId"] == "__scenario_0__"
            assert scenario[("S2", "first")]["metadata"]["conversationId"] == "__scenario_1__"
    fourth = next(r for r in rows if r["vars"]["question"] == "Fourth")
    messages = json.loads(fourth["prompt"]["raw"])
    assert [m["content"] for m in messages] == ["Hi", "reply to Hi", "Third", "reply to Third", "Fourth"]
    first_turn = fourth["vars"]["_conversation"][0]
    assert first_turn["prompt"] == [{"role": "user", "content": "Hi"}] and first_turn["output"] == "reply to Hi"


STORE = """
prompts: ['{{ message }}']
providers:
  - id: file://slow.py
tests:
  - vars: {message: 'Before: {{ name }}'}
  - vars: {message: Ada}
    options: {storeOutputAs: name, transform: 'output + "!"'}
  - vars: {message: 'Nice to meet you, {{name}}'}
  - vars: {message: 'Still {{ name | upper }}'}
"""

SLOW = '''
import asyncio


async def call_api(prompt, options, context):
    if prompt == "Ada":
        await asyncio.sleep(0.2)  # a slow turn: the rows after it must still wait for it
    return {"output": prompt}
'''


def test_store_output_as_feeds_later_rows_which_wait_for_it(tmp_path: Path) -> None:
    write(tmp_path / "slow.py", SLOW)
    rows = run(tmp_path, STORE, "--repeat", "2")
    for repeat in (0, 1):
        outputs = [r["response"]["output"] for r in rows if r["repeatIndex"] == repeat]
        assert outputs == ["Before: {{ name }}", "Ada!", "Nice to meet you, Ada!", "Still ADA!"]
    third = [r for r in rows if r["testIdx"] // 2 == 2]  # as in promptfoo, a test's repeats are numbered together
    assert len(third) == 2 and all(r["vars"] == {"message": "Nice to meet you, Ada!", "name": "Ada!"} for r in third)
    first = [r for r in rows if r["testIdx"] // 2 == 0]
    assert len(first) == 2 and all("name" not in r["vars"] for r in first)


SERIAL = '''
import asyncio

running = []
overlaps = []


async def call_api(prompt, options, context):
    if context["vars"].get("serial"):
        if running:
            overlaps.append(prompt)
        running.append(prompt)
        await asyncio.sleep(0.05)
        running.remove(prompt)
    return {"output": f"{prompt} (overlapped: {sorted(overlaps)})"}
'''


def test_run_serially_rows_run_one_at_a_time_in_config_order(tmp_path: Path) -> None:
    write(tmp_path / "serial.py", SERIAL)
    tests = "\n".join(f"  - vars: {{n: {i}, serial: true}}\n    options: {{runSerially: true}}" for i in range(4))
    rows = run(tmp_path, f"prompts: ['s{{{{n}}}}', 't{{{{n}}}}']\nproviders: [file://serial.py]\ntests:\n{tests}\n")
    assert [r["response"]["output"] for r in rows] == [f"{p}{i} (overlapped: [])" for i in range(4) for p in "st"]


KEPT = '''
import asyncio
from pathlib import Path


async def call_api(prompt, options, context):
    # a provider that keeps each conversation itself, as openai:realtime does (in a file: calls may
    # reach different worker processes); the first turn is slow
    if prompt.endswith("1"):
        await asyncio.sleep(0.2)
    log = Path(__file__).with_name(context["vars"]["conversation"] + ".log")
    with log.open("a") as file:
        file.write(prompt + "\\n")
    return {"output": " > ".join(log.read_text().split())}
'''


def test_tests_naming_a_conversation_id_run_in_order_though_the_prompt_never_reads_it(tmp_path: Path) -> None:
    write(tmp_path / "kept.py", KEPT)
    tests = "\n".join(f"  - vars: {{conversation: {c}, turn: {c}{i}}}\n    metadata: {{conversationId: {c}}}" for c in "ab" for i in (1, 2, 3))
    rows = run(tmp_path, f"prompts: ['{{{{turn}}}}']\nproviders: [file://kept.py]\ntests:\n{tests}\n")
    assert [r["response"]["output"] for r in rows] == [" > ".join(f"{c}{j}" for j in range(1, i + 1)) for c in "ab" for i in (1, 2, 3)]
