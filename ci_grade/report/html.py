"""The HTML report: one self-contained file a reviewer opens offline and drills into.

Rendered by jinja2 (autoescape) from `templates/report.html.j2`: the summary and the verdict as
markup, every row as JSON in a `<script type="application/json">` block (jinja2's `tojson`
escapes `<`, `>`, `&` and `'`, so no `</script>` in an output can end it), listed, filtered and
expanded by a small inline script that only ever sets text. A Content-Security-Policy allows that
one script (by its hash) and inline styles, and nothing else: the page fetches nothing. Every
string is masked before it is written; outputs and prompts keep `max_output_chars` characters.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from ci_grade import __version__, redact
from ci_grade.gate.models import CaseDelta, Comparison, GateNote, MetricDelta
from ci_grade.report.console import format_cost, format_duration
from ci_grade.results.models import AssertionResult, TestResult
from ci_grade.safe_text import json_dumps

if TYPE_CHECKING:
    from ci_grade.report.document import Document, Part

TEMPLATES = Path(__file__).parent / "templates"
VERDICTS = {"passed": "Passed", "regressed": "Regressed", "failed": "Failed", "cancelled": "Cancelled"}
_SEVERITY = {"regressed": 0, "error": 1, "fail": 2, "changed": 3, "pass": 4}


@cache
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


@cache
def _inline(name: str) -> tuple[Markup, str]:
    """Our own stylesheet or script (no data in it) and its CSP hash."""
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return Markup(text), f"'sha256-{digest}'"


def render_html(doc: Document) -> str:
    """The report of every part (config) of `doc` as one HTML page."""
    style, style_hash = _inline("report.css")
    script, script_hash = _inline("report.js")
    rows = [row for index, part in enumerate(doc.parts) for row in _rows(part, index, doc.max_output_chars)]
    rows.sort(key=lambda row: (_SEVERITY[row["kind"]], row["order"]))
    configs = [_config(part) for part in doc.parts]
    data = redact.data({"configs": [c["name"] for c in configs], "rows": rows})
    verdicts: list[str] = [c.verdict for c in (part.comparison for part in doc.parts) if c is not None]
    verdict = max(verdicts, key=list(VERDICTS).index) if verdicts else None
    page = _environment().get_template("report.html.j2").render(
        title=doc.title,
        verdict=verdict,
        verdict_label=VERDICTS.get(verdict or "", "Not judged"),
        configs=redact.data(configs),
        data=data,
        style=style,
        script=script,
        csp=f"default-src 'none'; style-src {style_hash}; script-src {script_hash}; img-src data:",
        version=__version__,
    )
    return redact.text(page)


def _config(part: Part) -> dict[str, Any]:
    """One config's summary: counts, cost and, once judged, the verdict and the measures the gate tested."""
    run, c = part.run, part.comparison
    stats = run.stats
    summary: dict[str, Any] = {
        "name": part.name or run.info.description or "results",
        "rows": stats.total,
        "passed": stats.successes,
        "failed": stats.failures,
        "errors": stats.errors,
        "pass_rate": f"{stats.pass_rate:.1%}",
        "cost": format_cost(stats.cost + stats.grading_cost),
        "duration": format_duration(stats.duration_ms),
        "verdict": VERDICTS[c.verdict] if c else None,
        "verdict_key": c.verdict if c else "none",
        "reason": c.reason if c else "",
        "baseline": bool(c and c.has_baseline),
        "measures": [_measure(m, c) for m in c.measures] if c and c.has_baseline else [],
        "regressions": len(c.regressions) if c else 0,
        "fixes": len(c.fixes) if c else 0,
        "known": len(c.known_failures) if c else 0,
    }
    return summary


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _measure(m: MetricDelta, c: Comparison) -> dict[str, str]:
    """A measure as the gate tested it, named with the measures that are the same quantity."""
    name = " = ".join([c.label(m), *(c.label(r) for r in c.repeats(m))])
    p = m.p_adjusted if m.p_adjusted is not None else m.p_value
    interval = f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]" if m.ci_low is not None and m.ci_high is not None else "–"
    judged = "regressed" if m.regressed else "inconclusive" if m.inconclusive else "significant" if m.significant else "no evident change"
    return {"name": name, "base": _number(m.base), "head": _number(m.head), "delta": _number(m.delta, signed=True), "interval": interval, "p": "–" if p is None else f"{p:.3g}", "judged": judged}


def _rows(part: Part, config: int, limit: int) -> list[dict[str, Any]]:
    c: Comparison | None = part.comparison
    cases = {case.test_id: case for case in c.tests} if c else {}
    notes = part.notes()
    return [_row(row, order, config, cases.get(row.test_id), notes.get(row.test_id), limit) for order, row in enumerate(part.run.results)]


def _cut(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text) - limit:,} more characters]"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json_dumps(value, indent=2, default=str)


def _row(row: TestResult, order: int, config: int, case: CaseDelta | None, note: GateNote | None, limit: int) -> dict[str, Any]:
    output = _cut(_text(row.output), limit)
    base = None if case is None or case.base_output is None else _cut(case.base_output, limit)
    regressed = note is not None and note.kind == "regression"
    changed = case is not None and case.change != "added" and (
        case.base_status != case.head_status or (base is not None and base != output) or bool(case.delta)
    )
    kind = "regressed" if regressed else row.status if row.status != "pass" else "changed" if changed else "pass"
    return {
        "order": order,
        "config": config,
        "kind": kind,
        "id": row.test_id,
        "name": row.name + (f" (repeat {row.repeat_index + 1})" if row.repeat_index else ""),
        "status": row.status,
        "score": round(row.score, 4),
        "provider": row.provider.display,
        "prompt_label": row.prompt.label,
        "prompt": _cut(row.prompt.raw, limit),
        "output": output,
        "base_output": base,
        "base_status": case.base_status if case else None,
        "base_score": None if case is None or case.base_score is None else round(case.base_score, 4),
        "added": case is not None and case.change == "added",
        "regressed": regressed,
        "changed": changed or regressed,
        "note": note.text if note else "",
        "note_kind": note.kind if note else "",
        "error": row.error or "",
        "reason": row.reason,
        "metrics": {name: round(score, 4) for name, score in row.named_scores.items()},
        "assertions": [_assertion(a, depth) for top in row.assertions for a, depth in _flat(top, 0)],
        "steps": _steps(row),
        "where": f"{row.location.file}:{row.location.line}" if row.location and row.location.line else row.location.file if row.location else "",
        "latency": round(row.latency_ms),
        "cost": format_cost(row.total_cost) if row.total_cost else "",
    }


def _flat(result: AssertionResult, depth: int) -> list[tuple[AssertionResult, int]]:
    return [(result, depth), *(item for child in result.children for item in _flat(child, depth + 1))]


def _assertion(a: AssertionResult, depth: int) -> dict[str, Any]:
    return {"type": a.type, "metric": a.metric or "", "status": a.status, "score": round(a.score, 4), "reason": a.reason, "depth": depth, "weight": a.weight}


def _steps(row: TestResult) -> list[str]:
    """A traced row's trajectory, as its trajectory assertions recorded it (`metadata.trajectory`)."""
    steps: list[str] = []
    for top in row.assertions:
        for a in top.flat():
            trajectory = a.metadata.get("trajectory")
            if not isinstance(trajectory, list) or steps:
                continue
            for step in trajectory:
                if isinstance(step, dict):
                    value = step.get("args")
                    args = value if isinstance(value, str) else "" if value is None else json_dumps(value, default=str)
                    steps.append(f"{step.get('type')}: {step.get('name')}" + (f"  {args}" if args else ""))
    return steps
