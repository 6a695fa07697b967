"""The quick YAML reader (`config/yaml_events.py`) gives exactly what the full reader gives.

For every input it takes, the data (types included) and every registered line are those of the
node-based reader; what it does not take (anchors, merge keys, tags, duplicate keys, keys whose
text does not name them, several documents, syntax errors) it declines without touching the
source map, so the full reader's data and error messages stand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ci_grade.config import yaml12, yaml_events
from ci_grade.config.sources import SourceMap
from tests.conftest import COMPAT, REPO

TAKEN = [
    "a: 1\nb: 01\nc: 0x1F\nd: 0o17\ne: 1e3\nf: .inf\ng: -.inf\nh: .nan\ni: yes\nj: on\nk: ~\nl: null\nm: true\nn: False\n"
    "o: 2021-01-01\np: '1'\nq: \"x\\ty\"\nr: |\n  block\ns: >\n  folded\nt: -.5\nu: +12e-3\n",
    "true: x\n2: y\n'': empty\n",
    "[1, 2, {a: b}]\n",
    "---\n",
    "",
    "just text\n",
    "a:\n  - b: 1\n    c: [1, 2]\n  - {d: e}\n  -\n    - nested\n",
    "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert:\n      - type: contains\n        value: hi\n",
]
DECLINED = [
    "x: &a 1\ny: *a\n",
    "base: &b {a: 1}\nother:\n  <<: *b\n  c: 2\n",
    "a: 1\na: 2\n",
    "'a': 1\n\"a\": 2\n",
    "a: !!str 1\n",
    "? [1]\n: x\n",
    "1: a\n1.0: b\n",
    "01: x\n",
    "null: z\n",
    "a: b\n---\nc: d\n",
    "a: [1, 2\n",
    "a: b: c\n",
]


def full(text: str) -> tuple[Any, SourceMap]:
    sources = SourceMap()
    return yaml12.load_composed(text, "f.yaml", sources), sources


def lines(data: Any, sources: SourceMap) -> list[tuple[tuple[Any, ...], str | None, list[tuple[str, str | None]]]]:
    """Every registered container along its path: its location and its keys' or items' lines."""
    found = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        where = sources.location(node)
        if where is not None:
            keys = node if isinstance(node, dict) else range(len(node))
            found.append((path, str(where), [(repr(k), str(sources.location(node, k))) for k in keys]))
        for key, value in (node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()):
            walk(value, (*path, key))

    walk(data, ())
    return found


def config_texts() -> list[str]:
    paths = [*sorted(COMPAT.rglob("*.yaml"))[:60], *sorted((REPO / "tests" / "fixtures").rglob("*.yaml"))[:40]]
    return [path.read_text(encoding="utf-8", errors="replace") for path in paths]


@pytest.mark.parametrize("text", TAKEN)
def test_the_quick_reader_takes_plain_configs_and_matches_the_full_reader(text: str) -> None:
    sources = SourceMap()
    taken, data = yaml_events.load(text, "f.yaml", sources, yaml12.Yaml12Loader.yaml_implicit_resolvers, yaml12.MAX_DEPTH)
    assert taken
    expected, expected_sources = full(text)
    assert repr(data) == repr(expected)  # types too: 1 and 1.0, True and 'true', nan
    assert lines(data, sources) == lines(expected, expected_sources)


@pytest.mark.parametrize("text", DECLINED)
def test_the_quick_reader_declines_the_rest_and_leaves_no_lines(text: str) -> None:
    sources = SourceMap()
    assert yaml_events.load(text, "f.yaml", sources, yaml12.Yaml12Loader.yaml_implicit_resolvers, yaml12.MAX_DEPTH) == (False, None)
    assert sources.location(None) is None and not sources._entries


def test_real_configs_read_alike() -> None:
    texts = config_texts()
    taken = 0
    for text in texts:
        sources = SourceMap()
        ok, data = yaml_events.load(text, "f.yaml", sources, yaml12.Yaml12Loader.yaml_implicit_resolvers, yaml12.MAX_DEPTH)
        if ok:
            taken += 1
            expected, expected_sources = full(text)
            assert repr(data) == repr(expected) and lines(data, sources) == lines(expected, expected_sources)
    assert taken >= len(texts) * 3 // 4


def test_errors_come_from_the_full_reader(tmp_path: Path) -> None:
    from ci_grade.config.files import parse_structured
    from ci_grade.errors import ConfigError

    path = tmp_path / "c.yaml"
    with pytest.raises(ConfigError) as duplicated:
        parse_structured("tests:\n  - a: 1\n    a: 2\n", path, SourceMap())
    assert "key 'a' is written twice in this mapping" in str(duplicated.value) and ":3" in str(duplicated.value)
    with pytest.raises(ConfigError, match="invalid YAML"):
        parse_structured("a: [1, 2\n", path, SourceMap())
