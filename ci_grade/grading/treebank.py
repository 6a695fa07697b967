"""The Penn Treebank word tokenizer of promptfoo's `rouge-n`: js-rouge 3.2's `treeBankTokenize`, ported.

Rule for rule from js-rouge (MIT licence), itself adapted from Titus Wormer's port of the Penn
Treebank tokenizer: paired double quotes become `` `` `` and `''`, punctuation, brackets and a
sentence-final period stand alone (numeric separators and `U.S.` do not split), and
contractions split (`do n't`, `they 're`, `can not`). Not lower-cased.

JavaScript reads the text as UTF-16 code units where a rule looks at the one unit before a quote;
half of an astral character matches none of those tests, so here an astral character matches none.
After the first rule the only whitespace left is U+0020, so later rules write JavaScript's `\\s`
as a space.
"""

from __future__ import annotations

import re
import unicodedata

from ci_grade.js_values import JS_WHITESPACE

_SPACES = re.compile(f"[{JS_WHITESPACE}\x85]+")
_QUOTE = re.compile(r"``|''|\"")
_SENTENCE_END = re.compile(r"([^.])(?<!\b[A-Za-z]\.[A-Za-z])(\.)([\])}>' ]*)\Z", re.ASCII)
_OTHER_ID_CONTINUE = set("\u00b7\u0387\u1369\u136a\u136b\u136c\u136d\u136e\u136f\u1370\u1371\u19da\u1885\u1886\u2118\u212e\u309b\u309c\u30fb\uff65\u200c\u200d")
_RULES = (
    (re.compile(r"\.{3}"), " ... "),
    (re.compile(r"[:,](?!\d)"), r" \g<0> "),  # `\d` is Unicode's Nd, as `\p{Decimal_Number}`
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (_SENTENCE_END, r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"[\]\[(){}<>]"), r" \g<0> "),
    (re.compile("--"), " -- "),
)
_APOSTROPHES = (
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"'([sSmMdD]) "), r" '\1 "),
    (re.compile(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r" \1 "),
)


def _folded(word: str) -> str:
    """`word` matched as JavaScript's `iu` flags do: each letter in either case (`s` also as U+017F)."""
    return "".join(f"[{c}{c.upper()}{'ſ' if c == 's' else ''}]" if c.isalpha() else c for c in word)


_CONTRACTIONS = tuple(
    re.compile(f"({_folded(a)})({_folded(b)}){tail}")
    for a, b, tail in (
        ("can", "not", ""), ("d", "'ye", ""), ("gim", "me", ""), ("gon", "na", ""), ("got", "ta", ""),
        ("lem", "me", ""), ("more", "'n", ""), ("wan", "na", "(?= )"), ("'t", "is", ""), ("'t", "was", ""),
    )
)  # fmt: skip


def tokenize(text: str) -> list[str]:
    """The tokens of `text`, as js-rouge's `treeBankTokenize` returns them."""
    text = _SPACES.sub(" ", text).strip(" ")
    if not text:
        return []
    inside = False

    def quote(match: re.Match[str]) -> str:
        nonlocal inside
        mark, at = match.group(), match.start()
        before = _unit_before(text, at)
        inside = mark == "``" or (
            (at + len(mark) < len(text) or at == 0 or before in (" ", "<") or _category(before) == "Ps")
            and not inside
            and _opens_quote(text, at)
            and before not in (".", "!", "?")
            and (mark == '"' or (at > 0 and _word_start(text[at + 2 : at + 3]) and _next_quote(text, at + 2) == "''"))
        )
        return " `` " if inside else " '' "

    parse = _QUOTE.sub(quote, text)
    for pattern, replacement in _RULES:
        parse = pattern.sub(replacement, parse)
    parse = f" {parse} "
    for pattern, replacement in _APOSTROPHES:
        parse = pattern.sub(replacement, parse)
    for pattern in _CONTRACTIONS:
        parse = pattern.sub(_split_contraction, parse)
    return re.sub(" {2,}", " ", parse).strip(" ").split(" ")


def _category(char: str) -> str:
    return unicodedata.category(char) if char else ""


def _unit_before(text: str, at: int) -> str:
    """`text[at - 1]` as JavaScript reads it for these tests: '' at the start or for an astral character."""
    char = text[at - 1] if at else ""
    return char if char <= "\uffff" else ""


def _opens_quote(text: str, at: int) -> bool:
    """js-rouge's `quoteOpeningContext`: a `"` here may open a quotation."""
    before = _unit_before(text, at)
    return (
        at == 0
        or before in (" ", "<")
        or _category(before).startswith("P")
        or (at >= 2 and text[at - 2 : at] == "``")
        or _follows_quoted_modifier(text, at)
    )


def _follows_quoted_modifier(text: str, at: int) -> bool:
    """A compatibility modifier letter (a footnote mark such as `ᵃ`), optionally numbered, right
    after a closed quotation (`."ᵃ`) marks the end of one, not the start of a word."""
    modifier = text[at - 1] if at else ""
    if _category(modifier) != "Lm" or modifier == unicodedata.normalize("NFKC", modifier):
        return False
    start = at - 1
    while start > 0 and _category(text[start - 1]).startswith("N"):
        start -= 1
    return re.fullmatch("[.!?][\"'”’]", text[max(0, start - 2) : start]) is not None


def _word_start(char: str) -> bool:
    category = _category(char)
    return category[:1] in ("L", "N") or category in ("Sc", "Ps")


def _next_quote(text: str, start: int) -> str:
    found = _QUOTE.search(text, start)
    return found.group() if found else ""


def _split_contraction(match: re.Match[str]) -> str:
    """` a b ` unless a word character touches the contraction (JavaScript's `\\p{ID_Continue}` lookarounds)."""
    text, start, end = match.string, match.start(), match.end()
    if (start and _id_continue(text[start - 1])) or (end < len(text) and _id_continue(text[end])):
        return match.group()
    return f" {match.group(1)} {match.group(2)} "


def _id_continue(char: str) -> bool:
    """Unicode's ID_Continue (or a zero-width joiner), from the character's general category."""
    category = unicodedata.category(char)
    return (category[0] == "L" and char != "\u2e2f") or category in ("Nl", "Mn", "Mc", "Nd", "Pc") or char in _OTHER_ID_CONTINUE
