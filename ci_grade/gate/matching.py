"""Matching the tests of a run with the baseline's: by stable id, by what promptfoo's files record, by fingerprint."""

from __future__ import annotations

from ci_grade.gate.baseline import BaselineTest


def portable_matches(head: dict[str, BaselineTest], base: dict[str, BaselineTest], same: dict[str, str]) -> dict[str, str]:
    """head id -> base id by what both tools record (test name, prompt label, provider).

    Ids differ between ci-grade and promptfoo's own results files (promptfoo keys prompts by
    label, ci-grade by position or file), so a baseline written by promptfoo still matches.
    """
    def portable(test: BaselineTest) -> tuple[str, str, str]:
        return (" ".join(test.name.split()), " ".join(test.prompt_label.split()), test.provider)

    def unique(tests: dict[str, BaselineTest], taken: set[str]) -> dict[tuple[str, str, str], str]:
        seen: dict[tuple[str, str, str], list[str]] = {}
        for test_id, test in tests.items():
            if test_id not in taken:
                seen.setdefault(portable(test), []).append(test_id)
        return {key: ids[0] for key, ids in seen.items() if len(ids) == 1}

    heads, bases = unique(head, set(same)), unique(base, set(same.values()))
    return {head_id: bases[key] for key, head_id in heads.items() if key in bases}


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
