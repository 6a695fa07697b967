"""Provider ids that are file paths, read as promptfoo's `loadApiProvider` reads them, and which
mistake an unknown provider's config reports first."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, write

JS_PROVIDER = "module.exports = class { id() { return 'js'; } async callApi(prompt) { return { output: 'js: ' + prompt }; } };\n"


def test_a_javascript_path_without_file_prefix_is_a_file_provider(tmp_path: Path) -> None:
    write(tmp_path / "customProvider.js", JS_PROVIDER)
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['Hello {{name}}']
        providers: [./customProvider.js, file://customProvider.js, echo]
        tests:
          - vars: {name: Ada}
        """,
    )
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code in (0, 1), result.err  # loaded, not refused as an unknown provider
    assert "unknown provider" not in result.err
    rows = {r["provider"]["id"]: r for r in json.loads((tmp_path / "out.json").read_text())["results"]["results"]}
    assert set(rows) == {"./customProvider.js", "file://customProvider.js", "echo"}  # recorded as written
    bare, prefixed = rows["./customProvider.js"], rows["file://customProvider.js"]
    # Served exactly as the `file://` spelling is: the same output, or the same reason for an ERROR.
    assert (bare["success"], bare["response"] and bare["response"].get("output")) == (prefixed["success"], prefixed["response"] and prefixed["response"].get("output"))
    assert (bare.get("error") or "").replace("./customProvider.js", "X") == (prefixed.get("error") or "").replace("file://customProvider.js", "X")
    assert rows["echo"]["success"] is True


def test_a_python_path_without_file_prefix_is_refused_with_the_spelling_that_loads_it(tmp_path: Path) -> None:
    write(tmp_path / "customProvider.py", "def call_api(prompt, options, context):\n    return {'output': prompt}\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders: [./customProvider.py]\ntests: [{vars: {}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:2 providers[0]: unknown provider './customProvider.py'; to load a Python file provider, write file://./customProvider.py" in result.err


def test_an_unknown_provider_is_reported_before_a_missing_file_in_its_config(tmp_path: Path) -> None:
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: [hi]
        providers:
          - echo
          - id: mystery:model
            config:
              schema: file://missing.json
        tests: [{vars: {}}]
        """,
    )
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:4 providers[1]: unknown provider 'mystery:model'" in result.err, result.err
    assert "missing.json" not in result.err
    # A known provider's missing file is still reported, with its key path and line.
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders:\n  - id: echo\n    config:\n      schema: file://missing.json\ntests: [{vars: {}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:5 providers[0].config.schema: file not found: missing.json" in result.err, result.err
