"""The config's `commandLineOptions`: the keys ci-grade reads, and a warning for the ones it does not."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, write

CONFIG = """
description: from the config
prompts: ['{{greeting}}, {{name}}']
providers: [echo]
tests:
  - vars: {greeting: Hello}
    assert: [{type: contains, value: Hello}]
commandLineOptions:
"""


def run(folder: Path, options: str, *args: str) -> tuple[int, dict, str]:
    write(folder / "promptfooconfig.yaml", CONFIG + options)
    result = run_cli("eval", "-o", "out.json", *args, cwd=folder)
    data = json.loads((folder / "out.json").read_text()) if (folder / "out.json").exists() else {}
    return result.code, data, result.err


def test_var_description_and_progress_bar_are_read(tmp_path: Path) -> None:
    code, data, err = run(tmp_path, "  var: {name: Ada}\n  description: from commandLineOptions\n  progressBar: false\n")
    assert code == 0, err
    row = data["results"]["results"][0]
    assert row["prompt"]["raw"] == "Hello, Ada" and row["vars"]["name"] == "Ada"
    assert data["ciGrade"]["info"]["description"] == "from commandLineOptions"
    assert "rows done" not in err  # no progress lines
    code, data, err = run(tmp_path, "  var: {name: Ada}\n", "--var", "name=Grace", "--description", "flag")
    assert data["results"]["results"][0]["prompt"]["raw"] == "Hello, Grace" and data["ciGrade"]["info"]["description"] == "flag"


def test_keys_that_would_change_the_run_but_are_not_read_are_warned_about(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "  table: false\n  envPath: .env.ci\n  prompts: [other.txt]\n", "--no-progress")
    assert code == 0, err
    assert "promptfooconfig.yaml:9: commandLineOptions.envPath is not read by ci-grade" in err
    assert "promptfooconfig.yaml:10: commandLineOptions.prompts is not read by ci-grade" in err
    assert "commandLineOptions.table" not in err  # promptfoo's own table: nothing to do, nothing to say


def test_a_bad_var_mapping_names_its_line(tmp_path: Path) -> None:
    code, data, err = run(tmp_path, "  var: name=Ada\n", "--no-progress")
    assert code == 2 and not data
    assert "promptfooconfig.yaml:8 commandLineOptions.var: must be a mapping of variable names to values, got 'name=Ada'" in err


def test_bad_values_exit_2_naming_their_line_never_a_crash(tmp_path: Path) -> None:
    cases = {
        "  maxConcurrency: .inf\n": "promptfooconfig.yaml:8 commandLineOptions.maxConcurrency: must be a whole number of at least 1, got inf",
        "  repeat: abc\n": "promptfooconfig.yaml:8 commandLineOptions.repeat: must be a whole number of at least 1, got 'abc'",
        "  delay: -5\n": "promptfooconfig.yaml:8 commandLineOptions.delay: must be a whole number of at least 0, got -5",
        "  grader: [x]\n": "promptfooconfig.yaml:8 commandLineOptions.grader: must be text, got ['x']",
        "  output: [a.json, 3]\n": "promptfooconfig.yaml:8 commandLineOptions.output: must be text or a list of texts, got ['a.json', 3]",
    }
    for options, message in cases.items():
        code, data, err = run(tmp_path, options, "--no-progress")
        assert (code, data) == (2, {}), err
        assert message in err and "internal error" not in err
    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("commandLineOptions:", "commandLineOptions: 5"))
    whole = run_cli("eval", "-o", "out.json", cwd=tmp_path)
    assert whole.code == 2 and "promptfooconfig.yaml:7 commandLineOptions: expected a mapping, got 5" in whole.err


def test_numbers_as_text_and_outputs_are_read(tmp_path: Path) -> None:
    code, data, err = run(tmp_path, "  maxConcurrency: '8'\n  repeat: '2'\n", "--no-progress")
    assert code == 0, err
    assert [r["repeatIndex"] for r in data["results"]["results"]] == [0, 1]
    write(tmp_path / "promptfooconfig.yaml", CONFIG + "  output: [default.json]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 0 and (tmp_path / "default.json").exists()
