"""Reliability: a hostile or unlucky config cannot hang, exhaust memory or crash the load.

An alias bomb, a file that is a directory, a device or a FIFO, a file over the size limit, and
references or files that name each other in a loop each stop the load with one line naming the
file, the line and the key path (exit 2) before any model is called; a SIGTERM or SIGINT during
a load stops it at once (exit 143 / 130) without a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ci_grade.config import yaml12
from tests.conftest import run_cli, run_cli_process, write
from tests.servers.llm_server import LLMServer

HEAD = "prompts: ['{{q}}']\nproviders: [openai:chat:gpt-4.1-mini]\n"


@pytest.fixture
def model(openai_env: LLMServer) -> LLMServer:
    openai_env.on_chat("", "hi")
    return openai_env


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["  a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "x-bomb:\n" + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_exit_2_naming_file_and_line(tmp_path: Path, model: LLMServer) -> None:
    """9 levels of 9 aliases stand for 387 million values: the load walked them for minutes."""
    write(tmp_path / "promptfooconfig.yaml", HEAD + _alias_bomb() + "tests:\n  - vars: {q: hi}\n")
    started = time.monotonic()
    result = run_cli_process("eval", "--no-progress", cwd=tmp_path, timeout=60)
    assert result.code == 2, result.err
    assert result.err.startswith("ci-grade: error: promptfooconfig.yaml:10: invalid YAML: aliases expand to more than 1,000,000 values")
    assert "Traceback" not in result.err and model.requests == []
    assert time.monotonic() - started < 30  # a bound against a hang, not a benchmark


def test_aliases_in_a_tests_file_and_a_structure_that_contains_itself(tmp_path: Path, model: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", HEAD + "tests: file://tests.yaml\n")
    write(tmp_path / "tests.yaml", "- vars: {q: hi}\n  metadata: &m\n    again: *m\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert (result.code, result.err) == (2, "ci-grade: error: tests.yaml:3: invalid YAML: alias *m repeats the collection it is inside (a structure that contains itself)\n")
    assert model.requests == []


def test_ordinary_aliases_still_load(tmp_path: Path, model: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", HEAD + """
        x-checks: &checks
          - {type: contains, value: hi}
        tests:
          - {vars: {q: one}, assert: *checks}
          - {vars: {q: two}, assert: *checks}
        """.replace("        ", ""))
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    assert len(model.requests) == 2


def test_alias_limits_on_the_parser_events() -> None:
    """Aliases counted and expanded from the parser's events: how many, how much, how deep."""
    with pytest.raises(yaml.MarkedYAMLError, match="more than 5 levels deep") as deep:
        yaml12.loads("a: &a [[[1]]]\nb: [[*a]]\n", max_depth=5)
    assert deep.value.problem_mark is not None and deep.value.problem_mark.line == 1
    many = "a: &a 1\nb: [" + ", ".join(["*a"] * (yaml12.MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(yaml.MarkedYAMLError, match="more than 100,000 aliases"):
        yaml12.loads(many)
    assert yaml12.loads("a: &a {k: [1, 2]}\nb: *a\nc: [*a, *a]\n") == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": [{"k": [1, 2]}] * 2}


@pytest.mark.parametrize("kind", ["directory", "device", "fifo"])
@pytest.mark.parametrize("use", ["variable", "tests", "prompt", "value"])
def test_a_file_that_is_not_a_regular_file_is_named_as_such(kind: str, use: str, tmp_path: Path, model: LLMServer) -> None:
    """A directory, /dev/zero or a FIFO was "file not found", or read forever; a FIFO must never block."""
    if kind == "directory":
        (tmp_path / "data").mkdir()
        ref, expected = "data", "data is a directory, not a regular file"
    elif kind == "device":
        ref, expected = "/dev/zero", "/dev/zero is a character device, not a regular file"
    else:
        os.mkfifo(tmp_path / "data")
        ref, expected = "data", "data is a FIFO (named pipe), not a regular file"
    config, where = {
        "variable": (HEAD + f"tests:\n  - vars:\n      q: file://{ref}\n", "promptfooconfig.yaml:4 tests[0].vars.q"),
        "tests": (HEAD + f"tests: file://{ref}\n", "promptfooconfig.yaml:3 tests"),
        "prompt": (f"prompts: [file://{ref}]\nproviders: [echo]\ntests:\n  - vars: {{q: hi}}\n", None),
        "value": (HEAD + f"tests:\n  - vars: {{q: hi}}\n    assert:\n      - {{type: equals, value: file://{ref}}}\n", "promptfooconfig.yaml:6 tests[0].assert[0].value"),
    }[use]
    write(tmp_path / "promptfooconfig.yaml", config)
    # a FIFO in a process of its own: were it opened for waiting, the test would time out, not hang
    result = run_cli_process("eval", "--no-progress", cwd=tmp_path, timeout=60) if kind == "fifo" else run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    assert expected in result.err and "file not found" not in result.err and "Traceback" not in result.err
    if where:
        assert result.err.startswith(f"ci-grade: error: {where}: "), result.err
    assert model.requests == []


def test_a_file_over_the_size_limit_names_its_size_the_limit_and_the_setting(tmp_path: Path, model: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "promptfooconfig.yaml", HEAD + "tests:\n  - vars:\n      q: file://big.txt\n")
    (tmp_path / "big.txt").write_bytes(b"a" * (3 * 1024 * 1024 // 2))
    monkeypatch.setenv("CI_GRADE_MAX_FILE_MB", "1")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert (result.code, result.err) == (2, "ci-grade: error: promptfooconfig.yaml:4 tests[0].vars.q: big.txt is 1.5 MiB, over the limit of 1 MiB "
                                            "for a file a config reads (set CI_GRADE_MAX_FILE_MB to raise it)\n")
    assert model.requests == []
    monkeypatch.setenv("CI_GRADE_MAX_FILE_MB", "2")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).code == 0
    monkeypatch.setenv("CI_GRADE_MAX_FILE_MB", "0")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).err == "ci-grade: error: CI_GRADE_MAX_FILE_MB must be a finite number of at least 1, got '0'\n"


LOOPS: dict[str, tuple[dict[str, str], str]] = {
    "assertion templates that contain each other": (
        {"promptfooconfig.yaml": HEAD + """
assertionTemplates:
  a:
    type: assert-set
    assert:
      - $ref: '#/assertionTemplates/b'
  b:
    type: assert-set
    assert:
      - $ref: '#/assertionTemplates/a'
tests:
  - vars: {q: hi}
    assert:
      - $ref: '#/assertionTemplates/a'
"""},
        "promptfooconfig.yaml:8 assertionTemplates.a.assert[0].assert[0].assert[0]: $ref '#/assertionTemplates/b' forms a loop: "
        "promptfooconfig.yaml#/assertionTemplates/b -> promptfooconfig.yaml#/assertionTemplates/a -> promptfooconfig.yaml#/assertionTemplates/b",
    ),
    "files that refer to each other": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars:\n      $ref: a.yaml\n", "a.yaml": "x:\n  $ref: b.yaml\n", "b.yaml": "y:\n  $ref: a.yaml\n"},
        "b.yaml:2 tests[0].vars.x.y: $ref 'a.yaml' forms a loop: a.yaml# -> b.yaml# -> a.yaml#",
    ),
    "providers files that name each other": (
        {"promptfooconfig.yaml": "prompts: ['{{q}}']\nproviders: [file://p.yaml]\ntests:\n  - vars: {q: hi}\n", "p.yaml": "- file://q.yaml\n", "q.yaml": "- file://p.yaml\n"},
        "p.yaml:1 providers[0]: providers files name each other in a loop: p.yaml -> q.yaml -> p.yaml",
    ),
    "scenarios files that name each other": (
        {"promptfooconfig.yaml": HEAD + "scenarios: [file://s.yaml]\ntests:\n  - vars: {q: hi}\n", "s.yaml": "- file://t.yaml\n", "t.yaml": "- file://s.yaml\n"},
        "s.yaml:1 scenarios[0]: scenarios files name each other in a loop: s.yaml -> t.yaml -> s.yaml",
    ),
    "tests files that name each other": (
        {"promptfooconfig.yaml": HEAD + "tests: file://a.yaml\n", "a.yaml": "- vars: {q: a}\n- b.yaml\n", "b.yaml": "- a.yaml\n"},
        "a.yaml:1 tests > a.yaml[1] > b.yaml[0]: tests files name each other in a loop: a.yaml -> b.yaml -> a.yaml",
    ),
}


@pytest.mark.parametrize("case", sorted(LOOPS))
def test_a_reference_loop_is_reported_with_its_chain(case: str, tmp_path: Path, model: LLMServer) -> None:
    """Two assertion templates holding each other through $ref ended in a RecursionError (exit 3)."""
    files, expected = LOOPS[case]
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert (result.code, result.err) == (2, f"ci-grade: error: {expected}\n")
    assert model.requests == []


def test_references_repeating_references_are_bounded(tmp_path: Path, model: LLMServer) -> None:
    levels = "".join(f"  l{i}: [" + ", ".join([f"{{$ref: '#/defs/l{i - 1}'}}"] * 10) + "]\n" for i in range(1, 9))
    write(tmp_path / "promptfooconfig.yaml", HEAD + "defs:\n  l0: [x, y]\n" + levels + "tests:\n  - vars: {q: hi}\n")
    result = run_cli_process("eval", "--no-progress", cwd=tmp_path, timeout=60)
    assert result.code == 2 and "references copy more than 1,000,000 values" in result.err, result.err
    assert "defs.l8[0]: $ref '#/defs/l7'" in result.err  # refused before copying, at the largest share
    assert model.requests == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_the_first_signal_stops_a_load_at_once(signum: int, code: int, tmp_path: Path) -> None:
    """Provider config computed by user code at load (here, code that takes a minute)."""
    write(tmp_path / "slow.py", "import pathlib, time\n\ndef config():\n    pathlib.Path('loading').touch()\n    time.sleep(60)\n    return {}\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders:\n  - id: echo\n    config:\n      extra: file://slow.py:config\ntests:\n  - vars: {}\n")
    process = subprocess.Popen([sys.executable, "-m", "ci_grade", "eval", "--no-progress", "-o", "out.json"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "loading").exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signum)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == code, err
    assert err == f"ci-grade: stopped by {signal.Signals(signum).name} while loading the config: nothing was run\n"
    assert not (tmp_path / "out.json").exists() and out == ""
