"""`--dry-run`'s plan, for the terminal and for the job summary: calls, cache, tokens, cost, time."""

from __future__ import annotations

from ci_grade import redact
from ci_grade.report.console import format_cost, format_duration
from ci_grade.report.markdown_escape import Escaper
from ci_grade.run.spending import Calls, SpendingPlan

_BASES = {"baseline": "the baseline's replies", "max_tokens": "max_tokens (an upper bound)", "assumed": "assumed"}


def _cost(calls: Calls | SpendingPlan) -> str:
    return "unknown price" if calls.cost is None else format_cost(calls.cost)


def _bases(calls: Calls) -> str:
    return ", ".join(_BASES[b] for b in sorted(calls.bases)) or "-"


def _headline(plan: SpendingPlan) -> list[str]:
    recorded = f" ({plan.recorded} with recorded outputs)" if plan.recorded else ""
    return [
        f"{plan.rows} rows{recorded}; {plan.calls('target')} provider calls ({plan.cached('target')} in the response cache); "
        f"{plan.calls('grader')} grader calls (one per model-graded assertion; cache hits are known once the outputs are)",
        f"estimated cost {_cost(plan)}; estimated time {format_duration(plan.seconds * 1000)} at concurrency {plan.concurrency}",
    ]


def text(plan: SpendingPlan) -> str:
    """The plan for the terminal."""
    lines = ["dry run: nothing was called", *(f"  {line}" for line in _headline(plan))]
    rows = [("provider", "role", "calls", "cached", "prompt tokens", "reply tokens", "cost", "reply tokens from")]
    rows += [
        (c.provider, c.role, str(c.calls), str(c.cached), f"{c.prompt_tokens:,}", f"{c.reply_tokens:,}", _cost(c), _bases(c))
        for c in plan.providers.values()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines += [f"  warning: {problem}" for problem in sorted(set(plan.ungraded))]
    return redact.text("\n".join(lines))


def markdown(plan: SpendingPlan, title: str = "ci-grade") -> str:
    """The plan for the job summary (text from the config escaped)."""
    escaper = Escaper()
    lines = [f"### {escaper.inline(title, 120)}: dry run", "", "Nothing was called.", ""]
    lines += [f"- {escaper.inline(line, 400)}" for line in _headline(plan)]
    lines += ["", "| Provider | Role | Calls | Cached | Prompt tokens | Reply tokens | Cost | Reply tokens from |", "| :-- | :-- | --: | --: | --: | --: | --: | :-- |"]
    lines += [
        f"| {escaper.inline(c.provider, 80)} | {c.role} | {c.calls} | {c.cached} | {c.prompt_tokens:,} | {c.reply_tokens:,} | {_cost(c)} | {_bases(c)} |"
        for c in plan.providers.values()
    ]
    problems = sorted(set(plan.ungraded))
    if problems:
        lines += ["", *(f"> **Warning:** {escaper.inline(problem, 300)}" for problem in problems[:10])]
    return "\n".join(lines) + "\n"
