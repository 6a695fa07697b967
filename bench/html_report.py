"""How fast the HTML report opens and filters in a real headless Chromium, measured in the browser.

    .venv/bin/python bench/html_report.py [--tests 1000] [--output-chars 1500] [--runs 5]

Writes a report of N compared tests (regressions, fixes, known failures, errors, changed outputs;
each output padded to about --output-chars characters), opens it in the system's Chromium
(`tests/browser.py`: Debian's package, driven by Playwright) and prints, as medians over --runs
page loads: the time from navigation to the rows listed and filterable (`performance.mark` at the
end of the page's script) and to the first frame drawn after it (an upper bound: it includes the
driver's round trip), and the time each filter takes to apply with the layout it causes
(`performance.now()` around a click, then a forced layout), plus the file's size.
The goal (issue 26): 1,000 tests open and filter in under 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_grade.report.html import render_html
from tests.browser import chromium, open_file
from tests.html_report_data import sample

FILTER = """(selector) => {
  const started = performance.now();
  document.querySelector(selector).click();
  void document.body.offsetHeight;
  return performance.now() - started;
}"""
FRAME = "new Promise((done) => requestAnimationFrame(() => setTimeout(() => done(performance.now()))))"
SEARCH = """(text) => {
  const box = document.getElementById("search");
  const started = performance.now();
  box.value = text;
  box.dispatchEvent(new Event("input"));
  void document.body.offsetHeight;
  return performance.now() - started;
}"""
STEPS = [
    ("Failing", ".chips label:has(input[value=failing])"),
    ("Regressed", ".chips label:has(input[value=regressed])"),
    ("Changed", ".chips label:has(input[value=changed])"),
    ("All", ".chips label:has(input[value=all])"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--output-chars", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    doc = sample(args.tests)

    def padded(text: str) -> str:
        return (text + " ") * max(1, args.output_chars // (len(text) + 1))

    for part in doc.parts:  # outputs and the baseline's alike, so that the same ones differ
        for row in part.run.results:
            row.output = padded(str(row.output))
        for case in part.comparison.tests if part.comparison else []:
            case.base_output = padded(case.base_output) if case.base_output is not None else None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        path.write_text(render_html(doc), encoding="utf-8")
        size = path.stat().st_size
        opened_ms: list[float] = []
        painted_ms: list[float] = []
        filters: dict[str, list[float]] = {name: [] for name, _ in [*STEPS, ("Search", "")]}
        with chromium() as browser:
            for _ in range(args.runs):
                opened = open_file(browser, path)
                page = opened.page
                page.wait_for_function("performance.getEntriesByName('ci-grade:rendered').length > 0")
                opened_ms.append(page.evaluate("performance.getEntriesByName('ci-grade:rendered')[0].startTime"))
                painted_ms.append(page.evaluate(FRAME))
                for name, selector in STEPS:
                    filters[name].append(page.evaluate(FILTER, selector))
                filters["Search"].append(page.evaluate(SEARCH, "refund"))
                assert opened.problems == [] and len(opened.requests) == 1, (opened.problems, opened.requests)
                page.close()
    print(f"{args.tests} tests, outputs of ~{args.output_chars} characters: {size / 1e6:.1f} MB")
    print(f"  open: rows listed {statistics.median(opened_ms):.0f} ms, first frame drawn {statistics.median(painted_ms):.0f} ms after navigation (medians of {args.runs})")
    for name, times in filters.items():
        print(f"  filter {name}: {statistics.median(times):.0f} ms")


if __name__ == "__main__":
    main()
