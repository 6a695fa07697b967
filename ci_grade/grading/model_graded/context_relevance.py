"""`context-relevance`: how much of the context is needed to answer `vars.query`.

One text call: the grader copies, verbatim and one per line, the parts of the context needed to
answer the query, or replies `Insufficient Information`. The context is cut into units (the
chunks of a list; the lines of a multi-line string; else its sentences) and the score is the
share of units the grader quoted (default threshold 0.5). Only quotes count: lines that do not
appear in the context are ignored, a reply that quotes nothing is a grader error, and so is a
reply that both quotes the context and says `Insufficient Information`. Template variables:
`context` and `query` only.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.grading.context import AssertionContext, Measure, output_as_text
from ci_grade.grading.grader_prompts import fence
from ci_grade.grading.model_graded.rag_context import Context, required_query, resolve_context
from ci_grade.grading.registry import assertion
from ci_grade.grading.session import GraderSession, excerpt

INSUFFICIENT = "insufficient information"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ENUMERATION = re.compile(r"^\d+[.)]$")
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_SHORT_QUOTE = 12


def normalize(text: str) -> str:
    return " ".join(text.lower().split())


def sentences(text: str) -> list[str]:
    parts = (part.strip() for part in _SENTENCE_END.split(text))
    return [part for part in parts if part and not _ENUMERATION.match(part)]


def context_units(context: Context) -> tuple[list[str], bool]:
    """The units the score counts, and whether they are lines (pre-segmented) or sentences."""
    if context.is_list:
        return [chunk.strip() for chunk in context.chunks if chunk.strip()], True
    lines = [line.strip() for line in context.text.splitlines() if line.strip()]
    if len(lines) >= 2:
        return lines, True
    return sentences(context.text), False


def extracts(reply: str, by_line: bool) -> list[str]:
    """The grader's quotes, segmented like the context, without list markers and quotes."""
    pieces = reply.splitlines() if by_line else [s for line in reply.splitlines() for s in sentences(line)]
    cleaned = (_LIST_MARKER.sub("", piece).strip().strip("\"'“”").strip() for piece in pieces)
    return [piece for piece in cleaned if piece]


def quoted_units(units: list[str], quotes: list[str]) -> set[int]:
    """Indexes of the units that some quote copies (whole, or a substantial part of it)."""
    found: set[int] = set()
    for quote in map(normalize, quotes):
        for index, unit in enumerate(map(normalize, units)):
            if quote == unit or (quote in unit and len(quote) >= _SHORT_QUOTE) or unit in quote:
                found.add(index)
    return found


@assertion("context-relevance", grader="text", prompt="context-relevance", default_threshold=0.5, csv_threshold=0.75)
async def context_relevance(ctx: AssertionContext, grader: GraderSession) -> Measure:
    query = required_query(ctx)
    context = await resolve_context(ctx)
    variables = {"context": context.text, "query": query}
    builtin = {"context_block": fence(context.text, "context"), "query_block": fence(query, "query")}
    prompt, _ = grader.prompt("context-relevance", variables, builtin)
    reply = output_as_text(await grader.ask(prompt, what="context-relevance"))
    units, by_line = context_units(context)
    quotes = extracts(reply, by_line)
    relevant = quoted_units(units, quotes)
    insufficient = INSUFFICIENT in normalize(reply)
    metadata: dict[str, Any] = {"context": context.text, "contextSource": context.source, "graderReply": excerpt(reply, 1000)}
    if insufficient and relevant:
        raise grader.error("grader reply both quotes the context and says 'Insufficient Information'", metadata)
    if not insufficient and not relevant:
        raise grader.error("grader reply does not quote the provided context (and does not say 'Insufficient Information')", metadata)
    score = len(relevant) / len(units) if units else 0.0
    metadata.update(
        {
            "extractedSentences": quotes,
            "contextUnits": units,
            "totalContextUnits": len(units),
            "relevantSentenceCount": len(relevant),
            "insufficientInformation": insufficient,
            "score": score,
        }
    )
    return Measure(score, f"Context relevance {score:.2f} is {{relation}} {{threshold}}", metadata=metadata)
