"""`is-xml` and `contains-xml`: well-formed XML (expat; DTDs refused) with optional required element paths."""

from __future__ import annotations

import re
from typing import Any
from xml.etree import ElementTree

from ci_grade.errors import GraderError, InputRejected
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion


def parse_xml(text: str) -> ElementTree.Element:
    """Parse a whole XML document with expat; DTD internal subsets and entity declarations are refused.

    Raises InputRejected for refused features and ValueError (with expat's message) when not well-formed.
    """
    from xml.parsers import expat

    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def doctype(name: str, system_id: str | None, public_id: str | None, has_internal_subset: bool) -> None:
        if has_internal_subset:
            raise InputRejected("DTD internal subsets are not supported")

    def entity(*_args: Any) -> None:
        raise InputRejected("entity declarations are not supported")

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise ValueError(expat.errors.messages.get(exc.code, str(exc)) + f" (line {exc.lineno}, column {exc.offset + 1})") from None
    return builder.close()


def has_element_path(root: ElementTree.Element, path: str) -> bool:
    """Whether a dotted path such as `root.child.0.leaf` exists; the first part names the root.

    A numeric part picks one of the elements matched so far (as in fast-xml-parser's arrays),
    and a final `@_name` part names an attribute.
    """
    parts = [p.strip() for p in path.split(".")]
    if not parts or parts[0] != root.tag:
        return False
    current = [root]
    for index, part in enumerate(parts[1:], start=1):
        if part.startswith("@_") and index == len(parts) - 1:
            return any(part[2:] in element.attrib for element in current)
        if part.isdigit():
            position = int(part)
            current = [current[position]] if position < len(current) else []
        else:
            current = [child for element in current for child in element if child.tag == part]
        if not current:
            return False
    return True


def required_elements(ctx: AssertionContext) -> list[str]:
    value = ctx.value
    if value is None or value == "" or value == {} or value == []:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list):
        return [str(p).strip() for p in value if str(p).strip()]
    if isinstance(value, dict) and isinstance(value.get("requiredElements"), list):
        return [str(p).strip() for p in value["requiredElements"] if str(p).strip()]
    raise GraderError(f"{ctx.type} value must be {{requiredElements: [paths]}}, a list of paths or a comma-separated string")


def _check_xml(text: str, paths: list[str]) -> tuple[bool, bool, str]:
    """(valid, well_formed, reason) for one XML document against required element paths."""
    try:
        root = parse_xml(text)
    except InputRejected as exc:
        return False, False, str(exc)
    except ValueError as exc:
        return False, False, f"XML parsing failed: {exc}"
    missing = [p for p in paths if not has_element_path(root, p)]
    if missing:
        return False, True, f"XML is missing required elements: {', '.join(missing)}"
    return True, True, "XML is valid and contains all required elements"


_XML_TAG = re.compile(r"""<(/?)([A-Za-z_][\w.:\-]*)((?:[^<>"']|"[^"]*"|'[^']*')*?)(/?)>""")


def xml_fragments(text: str) -> list[tuple[int, int]]:
    """Spans of balanced elements found in text, outermost (then leftmost) first."""
    stack: list[tuple[str, int]] = []
    spans: list[tuple[int, int]] = []
    for tag in _XML_TAG.finditer(text):
        closing, name, self_closing = tag.group(1), tag.group(2), tag.group(4)
        if closing:
            if stack and stack[-1][0] == name:
                spans.append((stack.pop()[1], tag.end()))
            else:
                stack.clear()
        elif self_closing:
            spans.append((tag.start(), tag.end()))
        else:
            stack.append((name, tag.start()))
    return sorted(spans, key=lambda s: (s[0], -s[1]))


@assertion("is-xml", handles_inverse=True)
async def is_xml(ctx: AssertionContext) -> Grade:
    paths = required_elements(ctx)
    text = ctx.output_text.strip()
    if not text:
        return ctx.verdict(False, "Output is empty", "be an XML document")
    valid, _, reason = _check_xml(text, paths)
    return ctx.verdict(valid, reason, "be an XML document" + (" with the required elements" if paths else ""))


@assertion("contains-xml", handles_inverse=True)
async def contains_xml(ctx: AssertionContext) -> Grade:
    paths = required_elements(ctx)
    text = ctx.output_text
    fragments = xml_fragments(text)
    if not fragments:
        return ctx.verdict(False, "No XML content found in the output", "contain XML")
    well_formed: list[tuple[int, int]] = []
    reason = "No well-formed XML content found in the output"
    for start, end in fragments:
        if any(outer_start <= start and end <= outer_end for outer_start, outer_end in well_formed):
            continue
        valid, ok, why = _check_xml(text[start:end], paths)
        if valid:
            return ctx.verdict(True, why, "contain XML" + (" with the required elements" if paths else ""))
        if ok:
            well_formed.append((start, end))
            reason = why
    return ctx.verdict(False, reason, "contain XML" + (" with the required elements" if paths else ""))
