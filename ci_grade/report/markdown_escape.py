"""Untrusted text (outputs, grader reasons, vars, descriptions, labels) made inert for Markdown.

Every piece of untrusted text is rendered inline, never in code spans, fences or HTML: secrets
are masked, lone surrogates replaced (U+FFFD), control and bidi characters dropped, all whitespace (newlines too) collapsed to one
space, the text clipped, `&`, `<` and `>` turned into entities (no HTML can open or close,
including `<details>`), Markdown punctuation backslash-escaped (no code spans, emphasis, links,
math or table cells can start), and `@name` / `#123` split with a zero-width joiner so nobody is
pinged and no issue is cross-referenced.
"""

from __future__ import annotations

import html
import re

from markupsafe import Markup

from ci_grade import redact
from ci_grade.safe_text import well_formed

ZWJ = "\u200d"
_INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_SPACE = re.compile(r"\s+")
_PUNCTUATION = re.compile(r"([\\`*_\[\]|~$^])")
_REFERENCE = re.compile(r"(@|#(?=\d)|\bGH-(?=\d))(?=[A-Za-z0-9])", re.I)


class Md(Markup):
    """Markdown we produced ourselves: trusted, passed through templates unchanged.

    A `Markup` subclass so the template engine's autoescaping treats it (and macro output) as
    trusted; everything else a template prints goes through `Escaper.inline`.
    """

    __slots__ = ()


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


class Escaper:
    """Escapes untrusted text for one report, masking the secrets of the running command first."""

    def __init__(self) -> None:
        self.redactor = redact.current()

    def inline(self, value: object, limit: int = 300) -> Md:
        """`value` as one line of inert Markdown text of at most `limit` visible characters."""
        text = value if isinstance(value, str) else "" if value is None else str(value)
        text = well_formed(self.redactor.text(text))
        text = self.redactor.text(_SPACE.sub(" ", _INVISIBLE.sub("", text)).strip())  # again: dropping invisibles can join a secret
        text = clip(text, limit)
        text = html.escape(text, quote=False)
        text = _PUNCTUATION.sub(r"\\\1", text)
        return Md(_REFERENCE.sub(lambda m: m.group(1) + ZWJ, text))

    @staticmethod
    def marker(marker: str) -> Md:
        """A hidden HTML comment: a well-formed one-line `<!-- ... -->` is kept verbatim (so a
        publisher can search for it), anything else is made into one."""
        text = marker.strip()
        inner = text[4:-3] if text.startswith("<!--") and text.endswith("-->") and len(text) >= 7 else None
        if inner is not None and "--" not in inner and ">" not in inner and not inner.endswith("-") and not _SPACE.search(inner.replace(" ", "")):
            return Md(text)
        body = _SPACE.sub(" ", text).replace("--", "- -").replace(">", "&gt;").replace("<", "&lt;").strip(" -")
        return Md(f"<!-- {body} -->")
