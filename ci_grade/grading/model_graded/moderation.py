"""`moderation`: the moderation grader (OpenAI's moderation API by default) must not flag the output.

`value` optionally lists the categories that count (e.g. `[harassment/threatening, hate]`); other
flags are ignored. An empty output passes without a call. Confidence scores are reported but not
thresholded. `not-moderation` passes when a (counted) flag is raised.
"""

from __future__ import annotations

from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.grading.scoring import inverted
from ci_grade.grading.session import GraderSession
from ci_grade.providers.base import parse_chat_messages


def categories(ctx: AssertionContext) -> list[str] | None:
    value = ctx.value
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise GraderError(f"moderation value must be a list of category names (e.g. [harassment, hate/threatening]), got {value!r}")
    return value


def user_prompt(prompt: str) -> str:
    """The text of the last user message of a chat prompt (the prompt itself otherwise)."""
    messages = parse_chat_messages(prompt, strict=False)
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
            return str(content or "")
    return prompt


@assertion("moderation", grader="moderation", handles_inverse=True)
async def moderation(ctx: AssertionContext) -> Grade:
    wanted = categories(ctx)
    output = ctx.output_text
    if not output.strip():
        passed, score = inverted(True, 1.0, ctx.inverse)
        return Grade(passed, score, "No output to moderate")
    tally = GraderSession(ctx)
    provider = tally.provider("moderation")
    response = await provider.moderate(user_prompt(ctx.prompt), output)
    tally.add(response.token_usage, None, provider.describe())
    if response.error:
        raise tally.error(f"Moderation API error from {provider.describe()}: {response.error}")
    flags = response.flags
    if flags is None:  # nothing was checked: never "no flags detected"
        raise tally.error(f"Moderation API error from {provider.describe()}: the reply holds no moderation results")
    counted = [flag for flag in flags if wanted is None or flag.code in wanted]
    metadata: dict[str, Any] = {"flags": [{"code": f.code, "description": f.description, "confidence": f.confidence} for f in flags]}
    if wanted is not None:
        metadata["categories"] = wanted
    if counted:
        passed, score = False, 0.0
        reason = "Moderation flags detected: " + ", ".join(flag.description for flag in counted)
    else:
        passed, score = True, 1.0
        reason = "No relevant moderation flags detected" if flags else "No moderation flags detected"
    passed, score = inverted(passed, score, ctx.inverse)
    return tally.grade(passed, score, reason, metadata=metadata)
