"""`extensions` hooks and `transformVars` from a Python file, as promptfoo calls them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import write
from tests.test_config_loader import eval_config, outputs

HOOKS_PY = """
import json
import os

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hooks.log")


def note(*parts):
    with open(LOG, "a") as f:
        f.write(json.dumps(parts) + "\\n")


def extension_hook(hook_name, context):
    if hook_name == "beforeAll":
        note(hook_name, len(context["suite"]["tests"]), [p["label"] for p in context["suite"]["prompts"]])
        context["suite"]["tests"].append({"vars": {"topic": "added"}})
        context["suite"]["defaultTest"]["assert"].append({"type": "contains", "value": "about"})
        return context
    if hook_name == "beforeEach":
        context["test"]["vars"]["topic"] = context["test"]["vars"]["topic"].upper()
        return context
    if hook_name == "afterEach":
        note(hook_name, context["test"]["vars"]["topic"], context["result"]["success"], context["result"]["response"]["output"])
    if hook_name == "afterAll":
        note(hook_name, len(context["results"]), context["prompts"][0]["metrics"]["testPassCount"])


def afterAll(context, extra):
    note("only-after-all", extra["hookName"])


def beforeEach(context, extra):
    raise RuntimeError("hook broke")
"""


def test_hooks_run_in_order_and_change_the_suite_and_tests(tmp_path: Path) -> None:
    write(tmp_path / "hooks.py", HOOKS_PY)
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['about {{topic}}']
        providers: [echo]
        extensions: [file://hooks.py:extension_hook, file://hooks.py:afterAll]
        tests: [{vars: {topic: cats}}]
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["about CATS", "about ADDED"]
    assert all(row["gradingResult"]["componentResults"][0]["assertion"]["type"] == "contains" for row in rows)
    log = [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]
    assert log[0] == ["beforeAll", 1, ["about {{topic}}"]]
    assert sorted(entry[1:] for entry in log[1:3]) == [["ADDED", True, "about ADDED"], ["CATS", True, "about CATS"]]
    assert log[3:] == [["afterAll", 2, 2], ["only-after-all", "afterAll"]]


def test_a_failing_hook_is_an_error_row_and_a_missing_one_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "hooks.py", HOOKS_PY)
    result, rows = eval_config(tmp_path, "prompts: ['{{topic}}']\nproviders: [echo]\nextensions: [file://hooks.py:beforeEach]\ntests: [{vars: {topic: a}}]\n")
    assert result.code == 1
    assert rows[0]["error"].startswith("beforeEach: extension hook beforeEach failed for file://hooks.py:beforeEach: RuntimeError: hook broke")
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\nextensions: [file://nope.py:hook]\n")
    assert result.code == 2 and "promptfooconfig.yaml:3 extensions[0]: file not found: nope.py" in result.err
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\nextensions: [file://hooks.js:hook]\n")
    assert result.code == 2 and "ci-grade runs Python extension hooks" in result.err


def test_transform_vars_from_a_python_file(tmp_path: Path) -> None:
    write(
        tmp_path / "transform.py",
        """
        def get_transform(vars, context):
            assert set(context) == {"prompt", "uuid"} and context["prompt"] == {}
            return {"shout": vars["name"].upper()}

        def named(vars, context):
            return {"name": vars["name"][::-1]}
        """,
    )
    result, rows = eval_config(
        tmp_path,
        """
        prompts: ['{{name}} {{shout}}']
        providers: [echo]
        defaultTest: {options: {transformVars: file://transform.py}}
        tests:
          - vars: {name: ada}
          - vars: {name: bob, shout: x}
            options: {transformVars: 'file://transform.py:named'}
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows) == ["ada ADA", "bob x"]
