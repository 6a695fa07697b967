"""Hostile text in the Markdown report stays inert, and the report stays within GitHub's limits.

The report is rendered by cmark-gfm (GitHub's own Markdown engine) with raw HTML allowed and
no tag filter, so any HTML, code span, heading or table cell an input managed to open shows up
in the HTML it produces.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from ci_grade import redact
from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.redact import Redactor
from ci_grade.report.markdown import render_markdown
from ci_grade.report.markdown_escape import ZWJ, Escaper
from ci_grade.results.models import AssertionResult
from tests.results_factory import row, run_of

HOSTILE = [
    "<script>alert('x')</script>",
    "</details></summary><details open><summary>owned",
    "@octocat and @github/security-team please look",
    "``` ``code`` ` `````` `",
    "cell | break || here \\| and \\\\| too",
    "line one\nline two\r\n# heading injection\n- list injection\n\n</details>\n\n## second heading",
    "[click](javascript:alert(1)) ![img](https://example.invalid/y.png) <https://example.invalid>",
    "$$\\LaTeX$$ and $x^2$ ~~strike~~ **bold** _em_",
    "&lt;b&gt;entity&lt;/b&gt; &#64;octocat &amp;",
    "\u202etxt.exe\u2028next\u2029para\x00nul\u200b@\u200boctocat",
    "<!-- comment --> <img src=x onerror=alert(1)> <a href='https://evil.invalid'>x</a>",
    "fixes #123 and GH-45 and owner/repo#7",
]
BIG = "A" * 100_000 + "<b>tail</b>"
ALLOWED_TAGS = {"h3", "h4", "p", "strong", "em", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "sub", "details", "summary", "blockquote", "br", "a"}


class _Html(HTMLParser):
    """Tags (checked for nesting), comments and text of rendered HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.stack: list[str] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.links: list[str] = []
        self.balanced = True

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")
        if tag not in ("br", "img"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.balanced = False

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def to_html(md: str) -> _Html:
    html = cmarkgfm.markdown_to_html_with_extensions(md, options=Options.CMARK_OPT_UNSAFE, extensions=["table", "autolink", "strikethrough"])
    parsed = _Html()
    parsed.feed(html)
    parsed.close()
    return parsed


def hostile_run(count: int = 1):
    rows = []
    for i in range(count):
        text = HOSTILE[i % len(HOSTILE)]
        assertions = [AssertionResult(type="llm-rubric", metric=text, status="fail", score=0.0, reason=text + " " + BIG)]
        rows.append(row(f"{text} #{i}", 0.0, "fail", reason=text, output=text + BIG, assertions=assertions, provider=text, prompt=text, metrics={text: 0.0}))
    rows.append(row(HOSTILE[5], 0.0, "error", error=HOSTILE[1] + BIG))
    return run_of(*rows, description=HOSTILE[0])


def hostile_comparison(count: int):
    head = hostile_run(count)
    base = run_of(*[r.model_copy(update={"score": 1.0, "status": "pass", "named_scores": dict.fromkeys(r.named_scores, 1.0)}) for r in head.results])
    return head, compare(head, baseline_from_run(base), GatePolicy())


def unescaped_pipes(line: str) -> int:
    count, i = 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        count += line[i] == "|"
        i += 1
    return count


def check_inert(md: str) -> _Html:
    parsed = to_html(md)
    assert set(parsed.tags) <= ALLOWED_TAGS | {"pre", "code"}, set(parsed.tags) - ALLOWED_TAGS
    # code only in our own fenced blocks (outputs' diffs, the trend chart): no text opens a code span
    fences = re.findall(r"^ *(`{3,})(?:diff|mermaid)$", md, re.M)
    assert parsed.tags.count("code") == parsed.tags.count("pre") == len(fences)
    assert parsed.balanced and not parsed.stack
    assert parsed.tags.count("em") == md.count("\n_… ")  # only our own notes are in italics
    # only our own blocks open and close (an output's "</details>" inside a code block is text)
    assert parsed.tags.count("details") == len(re.findall(r"^</details>$", md, re.M)) == len(re.findall(r"^<details><summary>", md, re.M))
    assert all(link.startswith(("https://", "http://", "mailto:")) for link in parsed.links), parsed.links  # bare URLs autolink, as anywhere on GitHub
    assert all(c.startswith(" ci-grade:sticky") for c in parsed.comments), parsed.comments
    text = "".join(parsed.text)
    assert not re.search(r"(?<![\w])@[A-Za-z0-9]", text), "an @-mention would ping someone"
    assert not re.search(r"#\d|GH-\d", text), "an issue reference would be linked"
    assert "\u202e" not in md and "\x00" not in md and "\u2028" not in md
    for line in md.splitlines():
        assert len(line) < 3000
        if line.startswith("#"):
            assert line.startswith(("### ", "#### "))
            assert "injection" not in line and "second heading" not in line
    return parsed


def test_hostile_text_is_inert_in_the_comment() -> None:
    head, comparison = hostile_comparison(len(HOSTILE))
    md = render_markdown(head, comparison, title="<b>@octocat</b> | `t`", marker="<!-- ci-grade:sticky-comment 0f -->")
    assert len(md) <= 65_536
    parsed = check_inert(md)
    text = "".join(parsed.text)
    # The text survives as text: what the user sees is what the model said.
    assert "<script>alert('x')</script>" in text
    assert "</details></summary><details open><summary>owned" in text
    assert "``` ``code`` ` `````` `" in text
    assert f"@{ZWJ}octocat and @{ZWJ}github/security-team" in text
    assert f"&lt;b&gt;entity&lt;/b&gt; &#{ZWJ}64;octocat &amp;" in text
    assert "cell | break || here \\| and \\\\| too" in text
    assert "line one line two # heading injection - list injection </details> ## second heading" in text
    assert parsed.tags.count("h3") == 1


def test_table_cells_are_not_broken_by_pipes_or_newlines() -> None:
    head, comparison = hostile_comparison(len(HOSTILE))
    md = render_markdown(head, comparison)
    statistics = md.split("<details><summary>Statistics", 1)[1].split("</details>", 1)[0]
    table = [line for line in statistics.splitlines() if line.startswith("|")]
    assert comparison.same_measure  # 0/1 scores: the mean score is the pass rate, one row
    assert len(table) == 3 + len(HOSTILE)  # header, alignment, pass rate + one per metric
    assert all(unescaped_pipes(line) == 7 for line in table), [line for line in table if unescaped_pipes(line) != 7]
    html = cmarkgfm.markdown_to_html_with_extensions("\n".join(table), options=Options.CMARK_OPT_UNSAFE, extensions=["table"])
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert len(rows) == len(table) - 1
    assert all(len(re.findall(r"<t[hd][ >]", r)) == 6 for r in rows)


def test_many_huge_failures_fit_the_comment_and_the_summary() -> None:
    head, comparison = hostile_comparison(240)
    comment = render_markdown(head, comparison, marker="<!-- ci-grade:sticky-comment 1 -->")
    assert len(comment) <= 65_536
    assert comment.rstrip().endswith("<!-- ci-grade:sticky-comment 1 -->")
    assert "not shown here (size limit)" in comment
    check_inert(comment)
    summary = render_markdown(head, comparison, max_chars=1_048_576, max_bytes=1_048_576)
    assert len(summary.encode()) <= 1_048_576
    assert summary.count("\n- **") > comment.count("\n- **")
    check_inert(summary)


def test_secrets_are_masked_before_escaping() -> None:
    head = run_of(row("k", 0.0, reason="key=sk-abc|def-123456 leaked", output="sk-abc|def-123456"))
    with redact.use(Redactor(["sk-abc|def-123456"])):
        md = render_markdown(head, compare(head, None, GatePolicy()))
    assert "sk-abc" not in md and "key=\\*\\*\\* leaked" in md


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a `b` c", "a \\`b\\` c"),
        ("x | y", "x \\| y"),
        ("<details>", "&lt;details&gt;"),
        ("@octocat", f"@{ZWJ}octocat"),
        ("mail me@example.com", f"mail me@{ZWJ}example.com"),
        ("#42", f"#{ZWJ}42"),
        ("#hashtag", "#hashtag"),
        ("a\n\n- b\r\n# c", "a - b # c"),
        ("[x](y)", "\\[x\\](y)"),
        ("$x$", "\\$x\\$"),
        ("back\\slash", "back\\\\slash"),
        ("*_~", "\\*\\_\\~"),
        ("\u202eevil\u200b", "evil"),
    ],
)
def test_inline_escaping(raw: str, escaped: str) -> None:
    assert Escaper().inline(raw) == escaped


def test_inline_clips_before_escaping() -> None:
    out = Escaper().inline("<" * 50, limit=10)
    assert out == "&lt;" * 9 + "…"


def test_hostile_provenance_from_results_files_is_escaped() -> None:
    """Results and baselines may come from another machine's artifact: their metadata is untrusted too."""
    base = run_of(row("a", 1.0), commit="<script>@octocat", created_at="`x` | </sub><details>")
    head = run_of(row("a", 1.0), ci_grade_version="<b>9</b> @admin", description="#1 </details>")
    md = render_markdown(head, compare(head, baseline_from_run(base), GatePolicy()))
    parsed = check_inert(md)
    text = "".join(parsed.text)
    assert "from commit <script>@\u200doct" in text and "(`x` | </sub><details>)" in text
    assert f"ci-grade <b>9</b> @{ZWJ}admin" in text and f"#{ZWJ}1 </details>" in text
