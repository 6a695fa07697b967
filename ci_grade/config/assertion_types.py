"""promptfoo's documented assertion types, and what config reading is told about them.

The names tell "not supported by ci-grade" from "unknown"; a test keeps the grading registry
complete against them. Config reading runs before grading, so the registry hands it an
`AssertionVocabulary` (names, CSV default thresholds) instead of being imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PROMPTFOO_ASSERTION_TYPES: frozenset[str] = frozenset(
    {
        "agent-rubric",
        "answer-relevance",
        "assert-set",
        "bleu",
        "classifier",
        "contains",
        "contains-all",
        "contains-any",
        "contains-html",
        "contains-json",
        "contains-sql",
        "contains-xml",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "conversation-relevance",
        "cost",
        "equals",
        "factuality",
        "finish-reason",
        "g-eval",
        "gleu",
        "guardrails",
        "human",
        "icontains",
        "icontains-all",
        "icontains-any",
        "is-html",
        "is-json",
        "is-refusal",
        "is-sql",
        "is-valid-function-call",
        "is-valid-openai-function-call",
        "is-valid-openai-tools-call",
        "is-xml",
        "javascript",
        "latency",
        "levenshtein",
        "llm-rubric",
        "max-score",
        "meteor",
        "model-graded-closedqa",
        "model-graded-factuality",
        "moderation",
        "perplexity",
        "perplexity-score",
        "pi",
        "python",
        "regex",
        "rouge-n",
        "ruby",
        "search-rubric",
        "select-best",
        "similar",
        "similar:cosine",
        "similar:dot",
        "similar:euclidean",
        "skill-used",
        "starts-with",
        "tool-call-f1",
        "trace-error-spans",
        "trace-span-count",
        "trace-span-duration",
        "trajectory:goal-success",
        "trajectory:step-count",
        "trajectory:tool-args-match",
        "trajectory:tool-sequence",
        "trajectory:tool-used",
        "webhook",
        "word-count",
    }
)


REFUSED_ASSERTION_TYPES: dict[str, str] = {
    "agent-rubric": "it needs an agentic grading provider (a coding agent that inspects the workspace), which ci-grade does not run",
    "human": "it is graded by a person in promptfoo's web viewer, and a CI run has no one to ask",
}
"""promptfoo types ci-grade refuses by design, with why (the config exits 2 before any call)."""


@dataclass(frozen=True)
class AssertionVocabulary:
    """What config reading needs to know about assertion types."""

    names: frozenset[str] = PROMPTFOO_ASSERTION_TYPES
    """Every type name a CSV `__expected` cell may start with."""
    csv_thresholds: Mapping[str, float] = field(default_factory=dict)
    """Types whose CSV form gets a default threshold when the cell names none."""
