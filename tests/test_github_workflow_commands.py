"""Workflow commands: escaping, masking, the annotation cap, stop-commands; annotation findings."""

from __future__ import annotations

import io
import re
from pathlib import Path

from ci_grade import redact
from ci_grade.gate.models import GateNote
from ci_grade.github.annotations import Finding, annotate, findings, workspace_path
from ci_grade.github.workflow_commands import WorkflowCommands, escape_data, escape_property, format_command
from ci_grade.redact import Redactor
from ci_grade.results.models import EvalRun, PromptInfo, ProviderInfo, SourceRef
from ci_grade.results.models import TestResult as Row
from tests.github_helpers import parse_command, unescape_data, unescape_property


def test_escaping_round_trips_and_keeps_commands_on_one_line() -> None:
    hostile = "100% sure\r\n::set-output name=x::pwned\n%0A literal"
    message = escape_data(hostile)
    assert "\n" not in message and "\r" not in message
    assert unescape_data(message) == hostile
    prop = escape_property("a:b,c=d%\n")
    assert ":" not in prop and "," not in prop and "\n" not in prop
    assert unescape_property(prop) == "a:b,c=d%\n"


def test_format_command_with_properties_parses_back() -> None:
    line = format_command("error", "line one\nline two: 50%", file="evals/my,file.yaml", line=12, title="ci-grade failed: a, b")
    assert "\n" not in line
    name, props, message = parse_command(line)
    assert name == "error"
    assert props == {"file": "evals/my,file.yaml", "line": "12", "title": "ci-grade failed: a, b"}
    assert message == "line one\nline two: 50%"


def test_add_mask_masks_each_line_of_a_multiline_secret() -> None:
    out = io.StringIO()
    WorkflowCommands(out).add_mask("-----BEGIN KEY-----\nabc123secret\n")
    masked = {parse_command(line)[2] for line in out.getvalue().splitlines()}
    assert masked == {"-----BEGIN KEY-----\nabc123secret\n", "-----BEGIN KEY-----", "abc123secret"}


def test_annotations_are_capped_per_level_and_the_rest_become_log_lines() -> None:
    out = io.StringIO()
    commands = WorkflowCommands(out)
    results = [commands.annotate("error", f"failure {i}", file="c.yaml", line=i + 1) for i in range(12)]
    results.append(commands.annotate("warning", "a warning"))
    assert results[:10] == [True] * 10 and results[10:12] == [False, False] and results[12] is True
    lines = out.getvalue().splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert "error: c.yaml:11: failure 10" in lines and "error: c.yaml:12: failure 11" in lines
    assert sum(line.startswith("::warning") for line in lines) == 1


def test_overflow_log_lines_and_plain_lines_are_masked() -> None:
    """Past the annotation cap a failure becomes a plain log line: it is masked like a command."""
    out = io.StringIO()
    commands = WorkflowCommands(out)
    redactor = Redactor()
    redactor.add(["sk-overflow-secret-123"])
    with redact.use(redactor):
        for i in range(11):
            commands.annotate("error", f"failure {i}: the reply quoted sk-overflow-secret-123", file="c.yaml", line=i + 1)
        commands.line("token sk-overflow-secret-123 in a log line")
    text = out.getvalue()
    assert "sk-overflow-secret-123" not in text
    assert "error: c.yaml:11: failure 10: the reply quoted ***" in text.splitlines()
    assert "token *** in a log line" in text.splitlines()


def test_commands_are_stopped_with_a_fresh_token_and_resumed() -> None:
    out = io.StringIO()
    commands = WorkflowCommands(out)
    with commands.commands_stopped():
        out.write("::add-mask::untrusted model output\n")
    with commands.commands_stopped():
        pass
    lines = out.getvalue().splitlines()
    first, second = lines[0].split("::")[2], lines[3].split("::")[2]
    assert lines[0] == f"::stop-commands::{first}" and lines[2] == f"::{first}::"
    assert re.fullmatch(r"[0-9a-f]{32}", first) and first != second


def test_group_wraps_output() -> None:
    out = io.StringIO()
    with WorkflowCommands(out).group("ci-grade: evaluate"):
        out.write("inside\n")
    assert out.getvalue() == "::group::ci-grade: evaluate\ninside\n::endgroup::\n"


def _row(test_id: str, status: str, line: int | None, file: str = "evals/c.yaml", provider: str = "echo", reason: str = "Expected output to contain 'hello'") -> Row:
    return Row(
        test_id=test_id, description=f"test {test_id}", prompt=PromptInfo(raw="{{q}}", label="{{q}}", key="p"),
        provider=ProviderInfo(id=provider), status=status, score=1.0 if status == "pass" else 0.0, reason=reason,
        error="provider timed out" if status == "error" else None, location=SourceRef(file=file, line=line),
    )


def test_findings_group_rows_per_test_definition_and_rank_regressions_first(tmp_path: Path) -> None:
    workspace = tmp_path
    cwd = tmp_path / "evals"
    cwd.mkdir()
    run = EvalRun(results=[
        _row("a", "fail", 5, file="c.yaml"),
        _row("a", "fail", 5, file="c.yaml", provider="openai:gpt"),
        _row("b", "error", 9, file="c.yaml"),
        _row("c", "pass", 14, file="cases.yaml"),
        _row("d", "pass", 20, file="c.yaml"),
        _row("e", "fail", 3, file="/elsewhere/outside.yaml"),
    ])
    items = findings(run, {"c": GateNote(kind="regression", text="score 0.90 -> 0.70 (-0.20)")}, cwd, workspace)
    assert [(f.kind, f.file, f.line) for f in items] == [
        ("regression", "evals/cases.yaml", 14),
        ("error", "evals/c.yaml", 9),
        ("failure", "evals/c.yaml", 5),
        ("failure", None, None),
    ]
    assert items[2].lines == ["[echo] {{q}}: Expected output to contain 'hello'", "[openai:gpt] {{q}}: Expected output to contain 'hello'"]
    assert items[0].title == "ci-grade regression: test c"
    assert workspace_path("../x.yaml", cwd, workspace) == "x.yaml"
    assert workspace_path("/elsewhere/outside.yaml", cwd, workspace) is None


def test_annotate_keeps_the_last_slot_for_an_overflow_note() -> None:
    out = io.StringIO()
    commands = WorkflowCommands(out)
    items = [Finding("failure", f"t{i}", "c.yaml", i + 1, [f"reason {i}"]) for i in range(15)]
    assert annotate(commands, items, "error") == 9
    parsed = [parse_command(line) for line in out.getvalue().splitlines()]
    assert len(parsed) == 10
    assert [p[1].get("line") for p in parsed[:9]] == [str(i + 1) for i in range(9)]
    assert parsed[9][2].startswith("6 more failing or regressed tests are not annotated")


def test_annotate_uses_every_slot_when_everything_fits() -> None:
    out = io.StringIO()
    items = [Finding("failure", f"t{i}", "c.yaml", i + 1, [f"reason {i}"]) for i in range(10)]
    assert annotate(WorkflowCommands(out), items, "warning") == 10
    assert "more failing" not in out.getvalue()
    assert [parse_command(line)[1].get("line") for line in out.getvalue().splitlines()] == [str(i + 1) for i in range(10)]


def test_commands_resumed_inside_a_stopped_stretch_then_stopped_again() -> None:
    import io

    from ci_grade.github.workflow_commands import WorkflowCommands
    from tests.github_helpers import commands_in

    out = io.StringIO()
    commands = WorkflowCommands(stream=out)
    with commands.commands_stopped():
        commands.warning("hidden while stopped")
        with commands.commands_resumed():
            commands.warning("seen")
        commands.warning("hidden again")
    commands.warning("seen after")
    assert [message for name, _, message in commands_in(out.getvalue()) if name == "warning"] == ["seen", "seen after"]


def test_a_long_title_is_cut_with_an_ellipsis() -> None:
    long = Finding("regression", "x" * 300, "c.yaml", 1, ["reason"])
    assert len(long.title) == 200 and long.title.endswith("x…") and long.title.startswith("ci-grade regression: xxx")
    short = Finding("failure", "y" * 179, "c.yaml", 1, ["reason"])
    assert short.title == "ci-grade failed: " + "y" * 179  # 196 characters: kept whole
