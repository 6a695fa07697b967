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
