"""Scripted replies for the seeds' corporate-chatbot RAG example (reimbursement and maternity leave).

Installs chat rules on an LLMServer for the model under test and for every grader the example
uses (factuality, answer-relevance, context-recall, context-relevance, context-faithfulness),
recognising each call by the shape of its user message. The replies make the verdicts known in
advance:

- the chatbot answers from the policy; answer-relevance regenerates the query (cosine 1: pass);
- factuality says the answer has the same facts (C: pass);
- context-recall attributes the first ground-truth sentence and not the rest
  (reimbursement 1/2, maternity 0/1: both below 0.9);
- context-relevance quotes the one line of the document that answers the query (1/lines: fail);
- context-faithfulness finds every statement supported (1.0: pass).
"""

from __future__ import annotations

import re
from typing import Any

from tests.servers.llm_server import LLMServer, last_user_text

REIMBURSEMENT_QUERY = "What is the max purchase that doesn't require approval?"
MATERNITY_QUERY = "How many weeks is maternity leave?"
REIMBURSEMENT_ANSWER = "Purchases up to $500 need no approval. Above $500, your manager must pre-approve the expense."
MATERNITY_ANSWER = "Maternity leave is 4 months (16 weeks)."


def _user(request: dict[str, Any]) -> str:
    return last_user_text(request)


def _is_reimbursement(text: str) -> bool:
    return "$500" in text or "max purchase" in text


def _answer(request: dict[str, Any]) -> str:
    return REIMBURSEMENT_ANSWER if "max purchase" in _user(request) else MATERNITY_ANSWER


def _question(request: dict[str, Any]) -> str:
    return REIMBURSEMENT_QUERY if _is_reimbursement(_user(request)) else MATERNITY_QUERY


def _recall(request: dict[str, Any]) -> str:
    reference = _user(request).split("Reference answer:", 1)[1]
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", reference.split("\n", 2)[2].rsplit("\n</", 1)[0].strip()) if s]
    if len(sentences) == 1:
        return f"1. {sentences[0]} | the context does not mention elephants [Not Attributed]"
    lines = [f"1. {sentences[0]} | stated in the policy [Attributed]"]
    lines += [f"{i}. {s} | not in the context [Not Attributed]" for i, s in enumerate(sentences[1:], 2)]
    return "\n".join(lines)


def _relevant_line(request: dict[str, Any]) -> str:
    context = _user(request).split("Context:", 1)[1]
    needle = "$500" if _is_reimbursement(_user(request)) else "16 weeks"
    return next(line.strip() for line in context.splitlines() if needle in line)


def _statements(request: dict[str, Any]) -> str:
    answer = REIMBURSEMENT_ANSWER if "$500" in _user(request) else MATERNITY_ANSWER
    return "\n".join(s for s in re.split(r"(?<=\.)\s+", answer) if s)


def _verdicts(request: dict[str, Any]) -> str:
    count = int(re.search(r"Statements \((\d+)\)", _user(request)).group(1))  # type: ignore[union-attr]
    return "Final verdict for each statement in order: " + " ".join(["Yes."] * count)


def install(server: LLMServer) -> LLMServer:
    """Script the chatbot and all its graders on `server` (the factuality call quotes the chatbot's prompt, so it goes first)."""
    rules = [
        (lambda r: "Expert answer:" in _user(r), {"category": "C", "reason": "The submission states the same facts."}),
        (lambda r: "internal corporate chatbot" in _user(r), _answer),
        (lambda r: _user(r).lstrip().startswith("<answer id="), _question),
        (lambda r: "Reference answer:" in _user(r), _recall),
        (lambda r: _user(r).startswith("Question:") and "\nContext:\n" in _user(r), _relevant_line),
        (lambda r: _user(r).startswith("Question:") and "\nAnswer:\n" in _user(r), _statements),
        (lambda r: _user(r).startswith("Context:") and "Statements (" in _user(r), _verdicts),
    ]
    for match, reply in rules:
        server.on_chat(match, reply)
    return server


# (status, score) each assertion gets from these replies, by test index; context-relevance scores
# 1 / (number of lines of the document), so it is checked against the result's own unit count.
EXPECTED: dict[int, dict[str, tuple[str, float]]] = {
    0: {
        "contains": ("pass", 1.0),
        "factuality": ("pass", 1.0),
        "answer-relevance": ("pass", 1.0),
        "context-recall": ("fail", 0.5),
        "context-faithfulness": ("pass", 1.0),
    },
    1: {
        "factuality": ("pass", 1.0),
        "answer-relevance": ("pass", 1.0),
        "context-recall": ("fail", 0.0),
        "context-faithfulness": ("pass", 1.0),
    },
}
