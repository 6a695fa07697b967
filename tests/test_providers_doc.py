"""docs/providers.md lists every provider family the registry takes, and the OpenAI-compatible
table as `compatible_families` holds it (so the page a refusal points to stays true)."""

from __future__ import annotations

from ci_grade.providers.compatible_families import FAMILIES, Family
from ci_grade.providers.registry import SUPPORTED_PREFIXES
from tests.conftest import REPO

DOC = (REPO / "docs" / "providers.md").read_text(encoding="utf-8")


def row(family: Family) -> str:
    """The family's line in the page's table."""
    keys = ", ".join(f"`{k}`" for k in family.keys) or "none"
    if family.default_key is not None:
        keys += " (optional)"
    over = ", ".join(f"`{v}`" for v in (*family.url_vars, *family.host_vars, *(e for p in family.params for e in p.env)))
    config = ", ".join(f"`{p.config_key}`" for p in family.params if p.config_key)
    if config:
        over = ", ".join(x for x in (over, "config " + config) if x)
    prefixes = ", ".join(f"`{p}:`" for p in family.prefixes)
    calls = "chat, embeddings" if family.embeddings else "chat"
    return f"| {family.docs} | {prefixes} | `{family.base_url}` | {keys} | {over or '—'} | {calls} |"


def test_every_registered_prefix_is_listed() -> None:
    missing = [p for p in SUPPORTED_PREFIXES if f"`{p}:" not in DOC and f"`{p}`" not in DOC and f"`{p}://" not in DOC]
    assert missing == []


def test_the_compatible_table_is_the_families_table() -> None:
    assert [row(f) for f in FAMILIES if not f.retired and row(f) not in DOC] == []
    assert all(f"`{f.prefixes[0]}:...`: {f.docs} was retired" in DOC for f in FAMILIES if f.retired)


def test_refusals_point_to_the_page() -> None:
    from ci_grade.preflight import PROVIDERS_DOC

    assert PROVIDERS_DOC.startswith("docs/providers.md") and (REPO / "docs" / "providers.md").is_file()
