"""The results spool: the contract every stage after a run reads the rows through.

Rows arrive in any order and are read back in plan order, as often as wanted; the spool file has
no name (nothing is left in the temporary folder); what it stores is masked; a row the file cannot
take stays in memory; a stopped run still stores every row once; results files written from the
spool are byte for byte the ones written from the same rows in memory.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pytest

from ci_grade import redact
from ci_grade.evaluate import EvalOptions, evaluate
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.redact import Redactor
from ci_grade.report import console, outputs
from ci_grade.results import spool as spool_module
from ci_grade.results.models import EvalRun
from ci_grade.results.spool import RowSpool
from ci_grade.results.summary import summaries_of
from ci_grade.run.collect import store
from ci_grade.run.stop import Stop
from tests.conftest import write
from tests.results_factory import render, row, run_of
from tests.servers.llm_server import LLMServer

SECRET = "sk-live-0123456789abcdef"
EXPORTED_AT = re.compile(r'"exportedAt": ?"[^"]*"|exportedAt: \S+')


def spool_of(*positions: int) -> RowSpool:
    """A spool of len(positions) rows named `t<position>`, stored in the order given."""
    spool = RowSpool(len(positions))
    for position in positions:
        store(spool, position, row(f"t{position}", score=0.25 * position, output=f"output {position}"))
    return spool


def test_rows_stored_in_any_order_read_back_in_plan_order_any_number_of_times() -> None:
    spool = spool_of(2, 0, 3, 1)
    assert len(spool) == 4
    assert [r.description for r in spool] == ["t0", "t1", "t2", "t3"]
    assert [r.description for r in spool] == ["t0", "t1", "t2", "t3"]  # a second pass reads the same
    assert spool[-1].output == "output 3" and [r.description for r in spool[1:3]] == ["t1", "t2"]
    assert [s.test_id for s in spool.summaries()] == [r.test_id for r in spool]
    assert [s.score for s in spool.summaries()] == [0.0, 0.25, 0.5, 0.75]
    assert json.loads(spool.text(2))["response"]["output"] == "output 2"
    with pytest.raises(IndexError):
        spool[4]


def test_a_row_is_stored_once_and_a_missing_row_is_an_error() -> None:
    spool = RowSpool(2)
    store(spool, 0, row("a"))
    with pytest.raises(ValueError, match="already stored"):
        store(spool, 0, row("a"))
    with pytest.raises(LookupError, match="1 rows were never stored"):
        spool.summaries()
    with pytest.raises(LookupError):
        spool.text(1)


def test_the_spool_file_has_no_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spool = spool_of(0, 1)
    assert list(tmp_path.iterdir()) == []  # nothing to clean up, whatever ends the process
    assert spool[1].description == "t1"
    spool.close()


def test_rows_the_file_cannot_take_stay_in_memory() -> None:
    spool = RowSpool(3)
    store(spool, 0, row("on disk"))
    assert spool[0].description == "on disk"  # a read writes the pending rows first
    spool.close()  # writes fail from now on, as on a full disk
    store(spool, 1, row("in memory", output="kept"))
    store(spool, 2, row("also in memory"))
    assert spool[1].description == "in memory" and spool[1].output == "kept"
    assert json.loads(spool.text(2))["description"] == "also in memory"
    assert [s.description for s in spool.summaries()] == ["on disk", "in memory", "also in memory"]


def test_rows_reach_the_file_in_batches_and_a_read_writes_what_is_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[int] = []
    real = os.pwrite

    def counted(fd: int, data: bytes, offset: int) -> int:
        writes.append(len(data))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", counted)
    monkeypatch.setattr(spool_module, "BATCH_BYTES", 4096)
    spool = RowSpool(40)
    for position in range(40):
        store(spool, position, row(f"t{position}", output="x" * 500))
    batches = len(writes)
    assert 0 < batches < 40 and all(size >= 4096 for size in writes)
    assert [r.description for r in spool] == [f"t{p}" for p in range(40)]
    assert len(writes) == batches + 1  # the rest, written by the first read
    assert os.fstat(spool._fd).st_size == sum(writes)


def test_stored_rows_are_masked_and_results_files_mask_secrets_learned_later(tmp_path: Path) -> None:
    spool = RowSpool(2)
    with redact.use(Redactor([SECRET])):
        store(spool, 0, row("leaky", output=f"the key is {SECRET}", reason=f"quoted {json.dumps(SECRET)}"))
    later = "learned-after-the-row-0001"
    with redact.use(Redactor()):
        store(spool, 1, row("late", output=f"and {later}"))
    assert SECRET not in spool.text(0) and "***" in spool.text(0)
    raw = os.pread(spool._fd, 1 << 20, 0).decode()  # the file itself, not only what is read back
    assert SECRET not in raw and later in raw
    run = EvalRun(results=spool, stats=run_of().stats)
    with redact.use(Redactor([SECRET, later])):
        for name in ("r.json", "r.jsonl"):
            text = render(tmp_path / name, run, {"providers": [{"id": "x", "config": {"apiKey": SECRET}}]})
            assert SECRET not in text and later not in text and text.count("***") >= 2


@pytest.fixture
def outcome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, object]:
    """An eval on the echo provider with passing, failing, erroring and structured rows."""
    write(tmp_path / "promptfooconfig.yaml", """
description: spool
prompts: ['{{q}}', 'again {{q}}']
providers: [echo]
tests:
  - {description: passes, vars: {q: hello}, assert: [{type: contains, value: hello, metric: greeting}]}
  - {description: fails, vars: {q: bye}, assert: [{type: contains, value: hello}, {type: assert-set, assert: [{type: icontains, value: BYE}]}]}
  - {description: errors, vars: {q: x}, assert: [{type: python, value: "__import__('os')._exit(3)"}]}
  - {description: structured, vars: {q: '{"a": 1}'}, assert: [{type: is-json}]}
""")
    monkeypatch.chdir(tmp_path)
    with redact.use(Redactor()):
        return tmp_path, evaluate(EvalOptions(progress=False, cache=False))


def test_an_eval_keeps_its_rows_in_a_spool_and_writes_the_same_files_as_from_memory(outcome: tuple[Path, object]) -> None:
    folder, result = outcome
    run = result.run  # type: ignore[attr-defined]
    assert isinstance(run.results, RowSpool) and len(run.results) == 8
    in_memory = run.model_copy(update={"results": list(run.results)})
    config = result.config_for_output  # type: ignore[attr-defined]

    def rendered(name: str, source: EvalRun, limit: int = outputs.DEFAULT_MAX_OUTPUT_CHARS) -> str:
        return EXPORTED_AT.sub("", render(folder / name, source, config, max_output_chars=limit))  # the time of writing differs

    for name in ("r.json", "r.jsonl", "r.csv", "r.md", "r.junit.xml", "r.yaml"):
        assert rendered(name, run) == rendered(name, in_memory), name
    for limit in (3, 0):
        assert rendered("r.json", run, limit) == rendered("r.json", in_memory, limit)
    assert "output cut" in rendered("r.json", run, 3)
    assert console.summary(run) == console.summary(in_memory)
    assert [s.status for s in summaries_of(run.results)] == [r.status for r in in_memory.results]
    whole = EvalRun.summarize(in_memory.results)
    assert run.stats.model_copy(update={"duration_ms": 0.0}) == whole and (whole.successes, whole.failures, whole.errors) == (3, 3, 2)


def test_the_gate_lists_only_what_reports_show_and_judges_alike(outcome: tuple[Path, object]) -> None:
    run = outcome[1].run  # type: ignore[attr-defined]
    every = compare(run, None, GatePolicy())
    listed = compare(run, None, GatePolicy(), every_test=False)
    assert len(every.tests) == 8  # 4 tests x 2 prompts
    assert listed.tests == [t for t in every.tests if t.head_status != "pass"]
    assert {(t.name, t.head_status) for t in listed.tests} >= {("fails", "fail"), ("errors", "error")} and len(listed.tests) < len(every.tests)
    assert all(t.output and t.reason for t in listed.tests)
    assert (listed.verdict, listed.reason, listed.error_rows) == (every.verdict, every.reason, every.error_rows)
    assert listed.mean_score == every.mean_score and listed.metrics == every.metrics and listed.pass_rate_head == every.pass_rate_head
    assert listed.head_scores == [t.head_score for t in every.tests if t.head_score is not None]


def test_a_stopped_run_stores_every_row_once(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    openai_env.on_chat("stuck", hang=True).on_chat("quick", "quick answer")
    tests = "\n".join(f"  - {{description: {kind} {i}, vars: {{q: {kind} {i}}}, assert: [{{type: contains, value: quick}}]}}" for i in range(3) for kind in ("quick", "stuck"))
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['{{{{q}}}}']\nproviders: [openai:chat:target-model]\ntests:\n{tests}\n")
    monkeypatch.chdir(tmp_path)
    with redact.use(Redactor()):
        run = evaluate(EvalOptions(progress=False, cache=False, stop=Stop(1.5))).run
    assert isinstance(run.results, RowSpool)
    rows = list(run.results)
    assert [r.description for r in rows] == [f"{kind} {i}" for i in range(3) for kind in ("quick", "stuck")]
    assert {r.description: r.status for r in rows if r.description.startswith("quick")} == dict.fromkeys(("quick 0", "quick 1", "quick 2"), "pass")
    stuck = [r for r in rows if r.description.startswith("stuck")]
    assert all(r.status == "error" and "time limit of 1.5s before this row finished" in (r.error or "") for r in stuck)
    assert (run.stats.successes, run.stats.errors) == (3, 3)
    assert "3 of 6 rows did not finish" in " ".join(run.warnings)
