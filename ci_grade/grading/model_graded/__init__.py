"""Model-graded assertions: each module registers its types when imported."""

from ci_grade.grading.model_graded import (  # noqa: F401
    classifier,
    closedqa,
    comparison,
    context_faithfulness,
    context_recall,
    context_relevance,
    conversation,
    factuality,
    geval,
    moderation,
    pi,
    relevance,
    rubric,
    search,
    similarity,
)
