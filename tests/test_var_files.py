"""`file://` variables as promptfoo renders them, and var loader scripts run per row.

Data files: text trimmed, `.yaml` as compact JSON text, `.json` as its own text, images as data
URLs, one trailing newline stripped from every string variable. Scripts: Python `get_var` in-process,
JavaScript modules in V8; what cannot run (a failing loader, a JavaScript file provider) is an
ERROR row per affected test with the reason, never a refused config.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli, write

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def run(folder: Path, config: str) -> tuple[int, dict[str, Any]]:
    write(folder / "promptfooconfig.yaml", config)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=folder)
    assert result.code in (0, 1), result.err
    return result.code, json.loads((folder / "out.json").read_text())


def rows_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(data["results"]["results"], key=lambda r: (r["testIdx"], r["promptIdx"], r["metadata"]["ciGrade"]["providerIndex"]))


def test_data_files_render_as_promptfoo_renders_them(tmp_path: Path) -> None:
    write(tmp_path / "doc.txt", "\n  The policy.\n\n\n")
    write(tmp_path / "cfg.yaml", "name: Ada\nscore: 1.0\ntags: [a, b]\n")
    write(tmp_path / "data.json", '{\n  "k": [1, 2]\n}\n')
    (tmp_path / "pixel.png").write_bytes(PNG)
    (tmp_path / "photo.jpg").write_bytes(PNG)  # a PNG named .jpg: the bytes decide the type
    _, data = run(
        tmp_path,
        """
        prompts: ['[{{doc}}] [{{cfg}}] [{{data}}] [{{ (cfg | load).name }}] [{{block}}] [{{twice}}]']
        providers: [echo]
        tests:
          - vars:
              doc: file://doc.txt
              cfg: file://cfg.yaml
              data: file://data.json
              img: file://pixel.png
              photo: file://photo.jpg
              block: |
                one line
              twice: "two newlines\\n\\n"
            assert:
              - type: javascript
                value: "context.vars.cfg === '{\\"name\\":\\"Ada\\",\\"score\\":1,\\"tags\\":[\\"a\\",\\"b\\"]}' && context.vars.doc === 'The policy.'"
        """,
    )
    (row,) = rows_of(data)
    assert row["response"]["output"] == (
        '[The policy.] [{"name":"Ada","score":1,"tags":["a","b"]}] [{\n  "k": [1, 2]\n}] [Ada] [one line] [two newlines\n]'
    )
    png = base64.b64encode(PNG).decode()
    assert png not in json.dumps(row)  # the results record the variables as written, as promptfoo does
    assert (row["vars"]["img"], row["vars"]["photo"], row["vars"]["block"]) == ("file://pixel.png", "file://photo.jpg", "one line\n")
    assert row["success"] is True, row["gradingResult"]["reason"]


LOADERS = '''
def get_var(var_name, prompt, other_vars):
    template = prompt.replace("{{", "<").replace("}}", ">")
    return {"output": f"  {var_name} for {other_vars['topic']} in [{template}] after {other_vars.get('first')}\\n"}


def listing(var_name, prompt, other_vars):
    return {"output": "A, B"}


def broken(var_name, prompt, other_vars):
    return {"error": "database is down"}


def empty(var_name, prompt, other_vars):
    return {"output": ""}


def not_text(var_name, prompt, other_vars):
    return {"output": ["a", "b"]}


def crash(var_name, prompt, other_vars):
    raise KeyError("topic")
'''

JS_LOADERS = """
module.exports = function (varName, prompt, otherVars) {
  return { output: varName.toUpperCase() + ' from ' + otherVars.topic };
};
module.exports.later = async function (varName) { return { output: 'async ' + varName }; };
module.exports.node = function () { return { output: require('fs').readFileSync('x', 'utf8') }; };
"""


def test_python_and_javascript_var_loaders_run_per_row_and_failures_are_error_rows(tmp_path: Path) -> None:
    write(tmp_path / "vars.py", LOADERS)
    write(tmp_path / "vars.js", JS_LOADERS)
    code, data = run(
        tmp_path,
        """
        prompts: ['Q about {{topic}}: {{ctx}} | {{summary}}']
        providers: [echo]
        tests:
          - description: loaded
            vars: {topic: tea, first: file://vars.py:listing, ctx: file://vars.py, summary: 'see {{first}}', keep: "kept\\n\\n"}
          - description: javascript
            vars: {topic: jam, first: x, ctx: file://vars.js, summary: file://vars.js:later}
          - description: loader error
            vars: {topic: cake, first: x, ctx: file://vars.py:broken, summary: s}
          - description: no output
            vars: {topic: cake, first: x, ctx: file://vars.py:empty, summary: s}
          - description: not text
            vars: {topic: cake, first: x, ctx: file://vars.py:not_text, summary: s}
          - description: exception
            vars: {topic: cake, first: x, ctx: file://vars.py:crash, summary: s}
          - description: node modules
            vars: {topic: cake, first: x, ctx: file://vars.js:node, summary: s}
        """,
    )
    assert code == 1
    rows = {row["description"]: row for row in rows_of(data)}
    loaded = rows["loaded"]
    # get_var saw the unrendered prompt and the variables so far; its text is trimmed, and a later
    # variable's {{first}} reference is filled in.
    assert loaded["response"]["output"] == "Q about tea: ctx for tea in [Q about <topic>: <ctx> | <summary>] after A, B | see A, B"
    assert (loaded["vars"]["ctx"], loaded["vars"]["keep"]) == ("file://vars.py", "kept\n\n")  # the results: as written
    assert loaded["success"] is True
    assert rows["javascript"]["response"]["output"] == "Q about jam: CTX from jam | async summary"
    errors = {
        "loader error": "var 'ctx' (file://vars.py:broken): database is down",
        "no output": "var 'ctx' (file://vars.py:empty): returned no output",
        "not text": "var 'ctx' (file://vars.py:not_text): the output must be text, got list",
        "exception": "var 'ctx' (file://vars.py:crash): KeyError: 'topic' (vars.py:23 in crash)",
    }
    for name, reason in errors.items():
        row = rows[name]
        assert (row["failureReason"], row["error"]) == (2, reason), (name, row["error"])
    node = rows["node modules"]
    assert node["failureReason"] == 2 and node["error"].startswith("var 'ctx' (file://vars.js:node): ")
    assert node["error"].endswith("ReferenceError: require is not defined (ci-grade runs JavaScript in an embedded V8 without Node.js modules or I/O)")
    assert data["results"]["stats"] == {**data["results"]["stats"], "successes": 2, "errors": 5}


def test_results_record_a_loader_variable_as_written_while_the_row_uses_its_output(tmp_path: Path) -> None:
    write(tmp_path / "vars.py", LOADERS)
    _, data = run(
        tmp_path,
        """
        prompts: ['Items: {{items}}']
        providers: [echo]
        tests:
          - vars: {items: file://vars.py:listing}
            assert: [{type: equals, value: 'Items: {{items}}'}, {type: javascript, value: "context.vars.items === 'A, B'"}]
        """,
    )
    (row,) = rows_of(data)
    assert row["response"]["output"] == "Items: A, B"
    assert row["success"] is True, row["gradingResult"]["reason"]  # assertions see the loaded value
    assert row["vars"] == {"items": "file://vars.py:listing"}
    assert row["testCase"]["vars"] == {"items": "file://vars.py:listing"}


def test_javascript_file_provider_runs_next_to_the_others(tmp_path: Path) -> None:
    write(tmp_path / "provider.js", "module.exports = class { id() { return 'js'; } async callApi(prompt) { return { output: `js: ${prompt}` }; } };\n")
    code, data = run(
        tmp_path,
        """
        prompts: ['Hello {{name}}']
        providers:
          - echo
          - id: file://provider.js
            label: js bot
        tests:
          - vars: {name: Ada}
            assert: [{type: contains, value: Ada}]
          - vars: {name: Bo}
            assert: [{type: contains, value: Bo}]
        """,
    )
    assert code == 0
    rows = rows_of(data)
    by_provider = {(row["vars"]["name"], row["provider"]["label"] or row["provider"]["id"]): row for row in rows}
    assert all(row["success"] for row in rows) and len(rows) == 4
    assert by_provider[("Bo", "js bot")]["response"]["output"] == "js: Hello Bo"
    assert data["ciGrade"]["warnings"] == []


def test_variables_are_rendered_as_templates_before_the_prompt(tmp_path: Path) -> None:
    write(tmp_path / "letter.txt", "Dear {{ name | upper }},{% if vip %} welcome back{% endif %}\n")
    _, data = run(
        tmp_path,
        """
        prompts: ['{{ letter }} | {{ greeting }} | {{ unknown }} | {{ partial }}']
        providers: [echo]
        tests:
          - vars:
              name: ada
              vip: true
              letter: file://letter.txt
              greeting: 'Hi {{ name }}!'
              unknown: 'left as written: {{ nobody | upper }}'
              partial: 'an unclosed {{ tag'
        """,
    )
    (row,) = rows_of(data)
    assert row["response"]["output"] == "Dear ADA, welcome back | Hi ada! | left as written: {{ nobody | upper }} | an unclosed {{ tag"
    # The rendering is for the prompt only; the results record the variables as written, as promptfoo does.
    assert (row["vars"]["letter"], row["vars"]["greeting"]) == ("file://letter.txt", "Hi {{ name }}!")
