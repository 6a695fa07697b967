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


ASSERTIONS = """
- type: contains
  value: Paris
- type: javascript
  value: output.length < 40
"""
OUTPUTS = '["The capital is Paris.", {"output": "It is Lyon, I think, definitely Lyon, surely.", "tags": ["geo", "fr"]}, "Paris!"]'


def test_standalone_grading_of_recorded_outputs(tmp_path: Path) -> None:
    write(tmp_path / "asserts.yaml", ASSERTIONS)
    write(tmp_path / "outputs.json", OUTPUTS)
    result = run_cli("eval", "--assertions", "asserts.yaml", "--model-outputs", "outputs.json", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 1, result.err  # the Lyon answer fails, no config file needed
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    # promptfoo 0.123.1 on the same files: these variables, prompts, labels and verdicts
    assert [(r["vars"], r["prompt"]["raw"], r["prompt"]["label"], r["success"]) for r in rows] == [
        ({"output": "The capital is Paris."}, "The capital is Paris.", "{{output}}", True),
        ({"output": "It is Lyon, I think, definitely Lyon, surely.", "tags": "geo, fr"}, "It is Lyon, I think, definitely Lyon, surely.", "{{output}}", False),
        ({"output": "Paris!"}, "Paris!", "{{output}}", True),
    ]
    assert [len(r["gradingResult"]["componentResults"]) for r in rows] == [2, 2, 2]


def test_standalone_problems_exit_2(tmp_path: Path) -> None:
    write(tmp_path / "asserts.yaml", ASSERTIONS)
    alone = run_cli("eval", "--model-outputs", "outputs.json", "-o", "out.json", cwd=tmp_path)
    assert alone.code == 2 and "--assertions and --model-outputs go together" in alone.err
    missing = run_cli("eval", "-a", "asserts.yaml", "--model-outputs", "outputs.json", "-o", "out.json", cwd=tmp_path)
    assert missing.code == 2 and "file not found: outputs.json" in missing.err
    write(tmp_path / "outputs.json", '{"output": "not a list"}')
    shaped = run_cli("eval", "-a", "asserts.yaml", "--model-outputs", "outputs.json", "-o", "out.json", cwd=tmp_path)
    assert shaped.code == 2 and "outputs.json:1: expected a list of outputs" in shaped.err
    assert not (tmp_path / "out.json").exists()


def test_prompts_and_providers_alone_need_no_config(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "Hi {{x}}")
    write(tmp_path / "t.csv", "x,__expected\nyo,contains:yo\n")
    result = run_cli("eval", "-p", "a.txt", "-r", "echo", "-t", "t.csv", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    data = json.loads((tmp_path / "out.json").read_text())
    assert [r["prompt"]["raw"] for r in data["results"]["results"]] == ["Hi yo"]
    assert data["ciGrade"]["info"]["config_name"] == "command line"
    half = run_cli("eval", "-p", "a.txt", "-o", "out2.json", cwd=tmp_path)
    assert half.code == 2 and "pass -c CONFIG (or -p and -r)" in half.err
