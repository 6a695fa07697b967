"""A monorepo: several configs, each run (one sharded, one not) and merged into one report with a
section per config, one JUnit document, a results file and a baseline per config, one verdict."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from tests.conftest import FIXTURES, run_cli, write

SUPPORT = """
description: support bot
prompts: ['Reply: {{q}}']
providers: [echo]
tests:
  - description: greets
    vars: {q: hello there}
    assert: [{type: contains, value: hello}]
  - description: thanks
    vars: {q: [thanks a lot, many thanks]}
    assert: [{type: contains, value: thanks}]
  - description: same name in both configs
    vars: {q: common}
    assert: [{type: contains, value: common}]
"""
TRIAGE = """
description: triage
prompts: ['Label: {{ticket}}']
providers: [echo]
tests:
  - description: bug
    vars: {ticket: crash bug}
    assert: [{type: contains, value: bug}]
  - description: same name in both configs
    vars: {q: common}
    assert: [{type: contains, value: Label}]
"""
SECTIONS = ["evals/support/promptfooconfig.yaml", "evals/triage/promptfooconfig.yaml"]
SLUGS = ["evals-support-promptfooconfig", "evals-triage-promptfooconfig"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write(tmp_path / SECTIONS[0], SUPPORT)
    write(tmp_path / SECTIONS[1], TRIAGE)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


def run_all(repo: Path) -> None:
    """The matrix: support in two shards, triage whole; run from inside each config's folder."""
    for k in (1, 2):
        result = run_cli("eval", "--no-progress", "--shard", f"{k}/2", "-o", f"../../shards/support-{k}.json", cwd=repo / "evals" / "support")
        assert result.code == 0, result.err
    assert run_cli("eval", "--no-progress", "-o", "../../shards/triage.json", cwd=repo / "evals" / "triage").code in (0, 1)


def test_each_config_merged_on_its_own_into_one_report(repo: Path) -> None:
    run_all(repo)
    merged = run_cli("merge", "shards/*.json", "-o", "out/report.md", "-o", "out/all.junit.xml", "-o", "out/merged.json", "-o", "out/{config}.csv", "--save-baseline", "base/b.json", cwd=repo)
    assert merged.code == 0, merged.out + merged.err
    assert f"== {SECTIONS[0]}\nmerged 2 file(s)" in merged.out and f"== {SECTIONS[1]}\nmerged 1 file(s)" in merged.out
    for slug, rows in zip(SLUGS, (4, 2), strict=True):
        data = json.loads((repo / "out" / f"merged-{slug}.json").read_text())
        assert len(data["results"]["results"]) == rows and data["ciGrade"]["info"]["shard"] is None
        assert (repo / "out" / f"{slug}.csv").read_text().count("\n") == rows + 1
        assert json.loads((repo / "base" / f"b-{slug}.json").read_text())["info"]["config_name"] in SECTIONS
    report = (repo / "out" / "report.md").read_text()
    assert report.startswith("## ci-grade\n\n✓ **Passed**: all 2 configs passed")
    assert f"| {SECTIONS[0]} | ✓ **Passed** | 100.0% (4/4) | 1.00 | – |" in report
    assert f"\n**{SECTIONS[0]}**: support bot" in report and f"\n**{SECTIONS[1]}**: triage" in report
    junit = (repo / "out" / "all.junit.xml").read_text()
    xmlschema.XMLSchema(str(FIXTURES / "junit-10-file-line.xsd")).validate(junit)
    suites = [s.get("name") for s in ET.fromstring(junit).iter("testsuite")]
    assert suites == [f"{SECTIONS[0]}: [echo] Reply: {{{{q}}}}", f"{SECTIONS[1]}: [echo] Label: {{{{ticket}}}}"]


def test_one_verdict_with_a_baseline_per_config(repo: Path) -> None:
    run_all(repo)
    assert run_cli("merge", "shards/*.json", "--save-baseline", "base/{config}.json", cwd=repo).code == 0
    support = repo / SECTIONS[0]
    support.write_text(support.read_text().replace("q: hello there", "q: hi there"))
    run_all(repo)
    merged = run_cli("merge", "shards/*.json", "--baseline", "base/{config}.json", "-o", "report.md", cwd=repo)
    assert merged.code == 1
    report = (repo / "report.md").read_text()
    assert report.startswith(f"## ci-grade\n\n✗ **Regressed**: {SECTIONS[0]}: 1 test regressed beyond tolerance")
    assert f"| {SECTIONS[1]} | ✓ **Passed** | 100.0% (2/2) | 1.00 | +0.00 |" in report
    support_part, triage_part = report.split(f"**{SECTIONS[1]}**")
    assert "Regressions and new failures (1)" in support_part and "Compared with the baseline" in triage_part
    assert "Regressions" not in triage_part
    never = run_cli("merge", "shards/*.json", "--baseline", "base/{config}.json", "--fail-on", "never", cwd=repo)
    assert never.code == 0


def test_a_config_without_its_baseline_is_judged_on_thresholds_with_a_warning(repo: Path) -> None:
    run_all(repo)
    run_cli("merge", "shards/support-*.json", "--save-baseline", "base.json", cwd=repo)
    assert (repo / "base.json").exists()  # one config: the path as given
    merged = run_cli("merge", "shards/*.json", "--baseline", "base.json", cwd=repo)
    assert merged.code == 0
    for slug, name in zip(SLUGS, SECTIONS, strict=True):
        assert f"warning: no baseline at base-{slug}.json for {name}: base-{slug}.json does not exist" in merged.err


def test_an_incomplete_config_fails_the_whole_merge(repo: Path) -> None:
    run_all(repo)
    result = run_cli("merge", "shards/support-1.json", "shards/triage.json", "-o", "report.md", cwd=repo)
    assert result.code == 2 and f"{SECTIONS[0]}: missing shard 2/2 (have 1/2 from shards/support-1.json)" in result.err
    assert not (repo / "report.md").exists()


@pytest.mark.parametrize(
    ("path", "several", "expected"),
    [
        ("out/merged.json", False, "out/merged.json"),
        ("out/merged.json", True, "out/merged-evals-support.json"),
        ("out/all.junit.xml", True, "out/all-evals-support.junit.xml"),
        ("out/{config}/results.json", False, "out/evals-support/results.json"),
        ("git:origin/main:.ci-grade/base.json", True, "git:origin/main:.ci-grade/base-evals-support.json"),
        ("baseline", True, "baseline-evals-support"),
    ],
)
def test_per_config_paths(path: str, several: bool, expected: str) -> None:
    from ci_grade.merging import for_config
    from ci_grade.results.models import EvalRun
    from ci_grade.results.pooling import Pooled

    assert for_config(path, Pooled("evals/support.yaml", EvalRun(), {}, []), several) == expected


def test_config_names_as_file_name_parts() -> None:
    from ci_grade.results.models import EvalRun
    from ci_grade.results.pooling import Pooled

    def slug(name: str) -> str:
        return Pooled(name, EvalRun(), {}, []).slug

    assert slug("evals/support/promptfooconfig.yaml") == "evals-support-promptfooconfig"
    assert slug("a.yaml + b.yml") == "a-b"
    assert slug("/abs/path with spaces/x.json") == "abs-path-with-spaces-x"
