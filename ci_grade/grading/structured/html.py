"""`is-html` and `contains-html`: a whole HTML document, or enough HTML signals in the text."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


HTML_ELEMENTS = _names(
    """
    a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption
    cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset
    figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins
    kbd label legend li link main map mark math menu meta meter nav noscript object ol optgroup option
    output p param picture pre progress q rp rt ruby s samp script search section select slot small
    source span strong style sub summary sup svg table tbody td template textarea tfoot th thead time
    title tr track u ul var video wbr
    """
)
VOID_ELEMENTS = _names("area base br col embed hr img input link meta param source track wbr")
COMMON_ELEMENTS = _names(
    "html head body div span p a img h1 h2 h3 h4 h5 h6 ul ol li table tr td th form input button script style link meta br hr"
)
_ENTITY = re.compile(r"&(?:([A-Za-z][A-Za-z0-9]*)|#[0-9]+|#[xX][0-9A-Fa-f]+);")


class _HtmlScan(HTMLParser):
    """Collects what an HTML check needs: tags, attributes, comments, doctype, top-level text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.start_tags: list[str] = []
        self.end_tags: list[str] = []
        self.self_closing: list[str] = []
        self.attributes = 0
        self.comments = 0
        self.doctype_html = False
        self.top_level_text = False
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.start_tags.append(tag)
        self.attributes += sum(1 for _, value in attrs if value is not None)
        if tag not in VOID_ELEMENTS:
            self._open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.self_closing.append(tag)
        self.attributes += sum(1 for _, value in attrs if value is not None)

    def handle_endtag(self, tag: str) -> None:
        self.end_tags.append(tag)
        if tag in self._open:
            while self._open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self._open and data.strip():
            self.top_level_text = True

    def handle_comment(self, data: str) -> None:
        self.comments += 1

    def handle_decl(self, decl: str) -> None:
        if re.match(r"doctype\s+html\b", decl, re.I):
            self.doctype_html = True

    @property
    def tags(self) -> list[str]:
        return self.start_tags + self.self_closing + self.end_tags


def _scan_html(text: str) -> _HtmlScan:
    scan = _HtmlScan()
    scan.feed(text)
    scan.close()
    return scan


def html_indicators(text: str) -> int:
    """How strongly text looks like HTML: tags, entities, attributes, comments, doctype."""
    from html.entities import html5

    scan = _scan_html(text)
    score = 0
    if scan.start_tags and scan.end_tags:
        score += 2
    elif scan.start_tags or scan.end_tags:
        score += 1
    if scan.self_closing:
        score += 1
    if any(m.group(1) is None or f"{m.group(1)};" in html5 for m in _ENTITY.finditer(text)):
        score += 1
    if scan.doctype_html:
        score += 2
    if scan.comments:
        score += 1
    if scan.attributes:
        score += 1
    if any(tag in COMMON_ELEMENTS for tag in scan.tags):
        score += 2
    return score


def html_document_problem(text: str) -> str | None:
    """Why the whole text is not HTML, or None when it is."""
    text = text.strip()
    if not text:
        return "Output is empty"
    if re.match(r"<\?xml", text, re.I):
        return "Output appears to be XML, not HTML"
    if not re.match(r"<(?:!doctype\s+html\b|[a-z])", text, re.I):
        return "Output does not start with an HTML tag or DOCTYPE"
    if not text.endswith(">"):
        return "Output does not end with an HTML tag"
    scan = _scan_html(text)
    if scan.top_level_text:
        return "Output contains text outside of HTML tags"
    if not any(tag in HTML_ELEMENTS or "-" in tag for tag in scan.tags):
        return "Output does not contain recognized HTML elements"
    return None


@assertion("is-html", handles_inverse=True)
async def is_html(ctx: AssertionContext) -> Grade:
    problem = html_document_problem(ctx.output_text)
    return ctx.verdict(problem is None, problem or "", "be HTML")


@assertion("contains-html", handles_inverse=True)
async def contains_html(ctx: AssertionContext) -> Grade:
    return ctx.check(html_indicators(ctx.output_text) >= 2, "contain HTML content")
