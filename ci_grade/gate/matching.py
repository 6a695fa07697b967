"""Matching the tests of a run with the baseline's: by stable id, by what promptfoo's files record, by fingerprint."""

from __future__ import annotations

from ci_grade.gate.baseline import BaselineTest
from ci_grade.results.promptfoo import portable_provider


def portable_matches(head: dict[str, BaselineTest], base: dict[str, BaselineTest], taken: dict[str, str], *, in_order: bool = False) -> dict[str, str]:
    """head id -> base id by what both tools record (test name, prompt label, provider), for the
    tests `taken` (head id -> base id) does not hold yet: where each side has one such test, or,
    `in_order`, where both have as many (tests sharing a description), paired in the order they ran.

    Ids differ between ci-grade and promptfoo's own results files (promptfoo keys prompts by
    label, ci-grade by position or file), so a baseline written by promptfoo still matches.
    """
    def portable(test: BaselineTest) -> tuple[str, str, str]:
        return (" ".join(test.name.split()), " ".join(test.prompt_label.split()), portable_provider(test.provider))

    def grouped(tests: dict[str, BaselineTest], skip: set[str]) -> dict[tuple[str, str, str], list[str]]:
        seen: dict[tuple[str, str, str], list[str]] = {}
        for test_id, test in tests.items():
            if test_id not in skip:
                seen.setdefault(portable(test), []).append(test_id)
        return seen

    heads, bases = grouped(head, set(taken)), grouped(base, set(taken.values()))
    matches: dict[str, str] = {}
    for key, ids in heads.items():
        others = bases.get(key, [])
        if len(ids) == len(others) and (in_order or len(ids) == 1):
            matches.update(zip(ids, others, strict=True))
    return matches


def renames(head: dict[str, BaselineTest], base: dict[str, BaselineTest]) -> dict[str, str]:
    """head id -> base id, for unmatched tests whose fingerprint is unique on both sides."""
    def by_fingerprint(tests: dict[str, BaselineTest], others: dict[str, BaselineTest]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for test_id, test in tests.items():
            if test_id not in others and test.fingerprint:
                found.setdefault(test.fingerprint, []).append(test_id)
        return found

    heads, bases = by_fingerprint(head, base), by_fingerprint(base, head)
    return {ids[0]: bases[fp][0] for fp, ids in heads.items() if len(ids) == 1 and len(bases.get(fp, [])) == 1}
