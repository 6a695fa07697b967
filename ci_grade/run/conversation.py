"""Multi-turn tests: the `_conversation` variable, `storeOutputAs`, and the order their rows run in.

A prompt that reads `_conversation` sees the turns that ran before it in its conversation: the
rows of one provider and one prompt (and one repeat), split further by `metadata.conversationId`
(each scenario config is its own conversation unless it sets one). Tests that name a
`metadata.conversationId` are a conversation too, whatever their prompt reads: a provider may keep
the conversation itself (`openai:realtime`), so its turns must come in order. A turn is promptfoo's
`{prompt, input, output, metadata}`: the rendered prompt (parsed when it is JSON), the last
message's content for a chat prompt, and the provider's output. The rows of one conversation run
one after another in config order; every other row stays concurrent. `options.disableConversationVar`
(or `PROMPTFOO_DISABLE_CONVERSATION_VAR`) hides the variable; the turn is still recorded.

A test with `options.storeOutputAs: name` stores its final output (after transforms) as the
variable `name` of every row after it in config order (in the same repeat), which therefore waits
for it. Rows of tests with `options.runSerially` run one at a time, in config order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ci_grade.plan.build import PlannedRow
from ci_grade.providers.base import ProviderResponse
from ci_grade.templating import nunjucks

VARIABLE = "_conversation"
_TRUE = ("1", "true", "yes", "on")

Key = tuple[int, int, int, str]


def template_of(row: PlannedRow) -> str:
    """The prompt template a row renders (test prefix and suffix included)."""
    options = row.test.options
    return (options.prefix or "") + row.prompt.raw + (options.suffix or "")


class Conversations:
    """The conversations of one run: which rows belong to one, their order, and the turns so far."""

    def __init__(self, rows: list[PlannedRow], env: Mapping[str, str]):
        disabled = env.get("PROMPTFOO_DISABLE_CONVERSATION_VAR", "").strip().lower() in _TRUE
        self._visible = not disabled
        self._keys: dict[int, Key] = {}
        self._before: dict[int, list[int]] = {}
        self._finished: dict[int, asyncio.Event] = {}
        self._turns: dict[Key, list[dict[str, Any]]] = {}
        self._stored: dict[int, dict[str, Any]] = {}
        last: dict[Key, int] = {}
        last_store: dict[int, int] = {}
        last_serial: int | None = None
        uses: dict[str, bool] = {}
        for row in rows:
            before = [last_store[row.repeat_index]] if row.repeat_index in last_store else []
            if row.test.options.storeOutputAs:
                last_store[row.repeat_index] = row.index
            if row.test.options.runSerially:
                if last_serial is not None:
                    before.append(last_serial)
                last_serial = row.index
            template = template_of(row)
            if template not in uses:
                uses[template] = VARIABLE in nunjucks.references(template)
            conversation_id = (row.test.metadata or {}).get("conversationId")
            if uses[template] or conversation_id is not None:  # a provider may keep the conversation itself (`openai:realtime`)
                key = (row.provider_index, row.prompt_index, row.repeat_index, "" if conversation_id is None else str(conversation_id))
                self._keys[row.index] = key
                if key in last:
                    before.append(last[key])
                last[key] = row.index
            if before:
                self._before[row.index] = before
                for index in before:
                    self._finished.setdefault(index, asyncio.Event())

    def ordered(self, row: PlannedRow) -> bool:
        """Whether the row waits for others or others wait for it (else `turn` has nothing to do)."""
        return row.index in self._before or row.index in self._finished

    @contextlib.asynccontextmanager
    async def turn(self, row: PlannedRow) -> AsyncIterator[None]:
        """Wait until the rows this one depends on have finished; the row runs inside the block."""
        for index in self._before.get(row.index, []):
            await self._finished[index].wait()
        try:
            yield
        finally:
            if row.index in self._finished:
                self._finished[row.index].set()

    def store(self, row: PlannedRow, output: Any) -> None:
        """Keep a finished row's output for the rows after it, if its test says `storeOutputAs`."""
        name = row.test.options.storeOutputAs
        if name and _truthy(output):
            self._stored.setdefault(row.repeat_index, {})[name] = output[:-1] if isinstance(output, str) and output.endswith("\n") else output

    def variables(self, row: PlannedRow) -> dict[str, Any]:
        """The row's variables with `_conversation` (the turns so far) where its prompt reads it, and
        the outputs stored by earlier rows."""
        key = self._keys.get(row.index)
        stored = self._stored.get(row.repeat_index, {})
        if key is None or not self._reads_history(row, key):
            return {**row.vars, **stored} if stored else row.vars
        return {**row.vars, VARIABLE: [dict(turn) for turn in self._turns.get(key, [])], **stored}

    def graded_variables(self, row: PlannedRow) -> dict[str, Any]:
        """The variables the row's assertions see once its turn is recorded. As in promptfoo, whose
        `_conversation` is the live history: a conversation with earlier turns now holds this one
        too (`conversation-relevance` judges the reply under test); on a first turn it stays empty."""
        key = self._keys.get(row.index)
        earlier = row.vars.get(VARIABLE)
        if key is None or not earlier or not self._reads_history(row, key):
            return row.vars
        return {**row.vars, VARIABLE: [*earlier, dict(self._turns[key][-1])]}

    def _reads_history(self, row: PlannedRow, key: Key | None) -> bool:
        return key is not None and self._visible and not row.test.options.disableConversationVar

    def record(self, row: PlannedRow, prompt: str, response: ProviderResponse) -> None:
        """Add the row's turn (its rendered prompt and the provider's reply) to its conversation."""
        key = self._keys.get(row.index)
        if key is None:
            return
        parsed = _parse_json(prompt)
        rendered = parsed if _truthy(parsed) else prompt
        last = parsed[-1] if isinstance(parsed, list) and parsed else None
        last_input = last.get("content") if isinstance(last, dict) and _truthy(last.get("content")) else last
        turn: dict[str, Any] = {
            "prompt": rendered,
            "input": last_input if _truthy(last_input) else rendered,
            "output": response.output if _truthy(response.output) else "",
        }
        if response.metadata:
            turn["metadata"] = response.metadata
        self._turns.setdefault(key, []).append(turn)


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _truthy(value: Any) -> bool:
    """JavaScript truthiness (an empty list or object is true)."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and value == value
    return True
