"""`-p/--prompts`, `-r/--providers`, `-t/--tests` (`-v/--vars`) in place of the config's own.

Expected rows are promptfoo 0.123.1's, run from the same folder with the same flags.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, write

CONFIG = """
prompts: ["Inner {{x}}"]
providers:
  - id: echo
    label: mirror
  - id: python:prov.py
    label: py
tests: [{vars: {x: config}}]
"""
PROVIDER = 'def call_api(prompt, options, context):\n    return {"output": "P:" + prompt}\n'


def rows(folder: Path, *flags: str) -> tuple[int, list[tuple[str, str, str, str]], str]:
    write(folder / "sub" / "promptfooconfig.yaml", CONFIG)
    write(folder / "sub" / "prov.py", PROVIDER)  # relative to the config, which names it
    write(folder / "top.txt", "Top {{x}}")  # relative to the working folder, as the command line names them
    write(folder / "t.csv", "x\nhi\nyo\n")
    result = run_cli("eval", "-c", "sub/promptfooconfig.yaml", "-o", "out.json", "--no-progress", *flags, cwd=folder)
    out = folder / "out.json"
    data = json.loads(out.read_text())["results"]["results"] if out.exists() else []
    found = sorted((r["prompt"]["raw"], r["prompt"]["label"], r["provider"]["label"], r["response"]["output"]) for r in data)
    return result.code, found, result.err


def test_prompts_from_the_command_line(tmp_path: Path) -> None:
    code, found, err = rows(tmp_path, "-p", "top.txt")
    assert code == 0, err
    assert found == [("Top config", "top.txt: Top {{x}}", "mirror", "Top config"), ("Top config", "top.txt: Top {{x}}", "py", "P:Top config")]


def test_tests_from_the_command_line(tmp_path: Path) -> None:
    for flag in ("-t", "--tests", "-v", "--vars"):
        code, found, err = rows(tmp_path, flag, "t.csv")
        assert code == 0, err
        assert found == sorted([
            ("Inner hi", "Inner {{x}}", "mirror", "Inner hi"), ("Inner hi", "Inner {{x}}", "py", "P:Inner hi"),
            ("Inner yo", "Inner {{x}}", "mirror", "Inner yo"), ("Inner yo", "Inner {{x}}", "py", "P:Inner yo"),
        ])


def test_providers_named_on_the_command_line_keep_the_configs_settings(tmp_path: Path) -> None:
    for name, expected in (("mirror", ("mirror", "Inner config")), ("py", ("py", "P:Inner config")), ("echo", ("mirror", "Inner config"))):
        code, found, err = rows(tmp_path, "-r", name)
        assert code == 0, err
        assert [(label, output) for _, _, label, output in found] == [expected]


def test_all_three_together_and_a_provider_the_config_lacks(tmp_path: Path) -> None:
    code, found, err = rows(tmp_path, "-p", "top.txt", "-r", "echo", "-t", "t.csv")
    assert code == 0, err
    assert found == [("Top hi", "top.txt: Top {{x}}", "mirror", "Top hi"), ("Top yo", "top.txt: Top {{x}}", "mirror", "Top yo")]
    write(tmp_path / "sub" / "other.py", PROVIDER.replace("P:", "O:"))  # as in promptfoo: relative to the config
    code, found, err = rows(tmp_path, "-r", "file://other.py")
    assert code == 0, err
    assert [output for *_, output in found] == ["O:Inner config"]


def test_a_missing_file_on_the_command_line_exits_2(tmp_path: Path) -> None:
    code, found, err = rows(tmp_path, "-p", "nowhere.txt")
    assert code == 2 and not found
    assert "prompts[0]: file not found: nowhere.txt" in err and "Traceback" not in err
    code, found, err = rows(tmp_path, "-t", "nowhere.csv")
    assert code == 2 and "nowhere.csv" in err
