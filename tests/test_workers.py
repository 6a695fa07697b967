"""User Python in worker processes: every way out of a worker costs one call, never the run."""

from __future__ import annotations

import asyncio
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ci_grade.errors import ScriptAborted, ScriptError
from ci_grade.workers import calls
from ci_grade.workers.pool import WorkerPool, pool
from tests.conftest import run_cli, run_cli_process, write

WAYS_OUT = '''
import asyncio, ctypes, json, os, signal, sys, time

import helper  # a sibling of the config


def call_api(prompt, options, context):
    how = context["vars"]["how"]
    if how == "os._exit":
        os._exit(0)
    if how == "sys.exit":
        sys.exit(0)
    if how == "segfault":
        ctypes.string_at(0)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "hang":
        time.sleep(60)
    print("a print goes to stderr, not into the protocol")
    return {"output": helper.greet(how)}


async def later(value):
    await asyncio.sleep(0)
    return {"value": value, "cwd": os.getcwd(), "env": os.environ.get("CI_GRADE_TEST_VALUE")}


def opaque():
    return {1, 2}


def boom(text):
    raise ValueError(f"bad {text}")
'''


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    write(tmp_path / "helper.py", "def greet(how):\n    return f'fine: {how}'\n")
    write(tmp_path / "provider.py", WAYS_OUT)
    write(tmp_path / "exits_at_import.py", "import sys\nsys.exit(0)\n\ndef call_api(prompt, options, context):\n    return {'output': 'never'}\n")
    return tmp_path


def test_every_way_out_is_an_error_row_and_the_gate_decides_the_exit(suite: Path) -> None:
    """Through `ci-grade eval` as a real process: each way a worker can end costs its own row an
    ERROR naming the cause; every row reaches every report; the exit code is the gate's."""
    write(
        suite / "promptfooconfig.yaml",
        """
        prompts: ['{{how}}']
        providers: [file://provider.py]
        tests:
          - vars: {how: os._exit}
          - vars: {how: sys.exit}
          - vars: {how: segfault}
          - vars: {how: sigkill}
          - vars: {how: hang}
          - vars: {how: at import}
            provider: file://exits_at_import.py
          - vars: {how: assertion exits}
            assert: [{type: python, value: "__import__('os')._exit(0)"}]
          - vars: {how: fine}
            assert: [{type: equals, value: "fine: fine"}]
          - vars: {how: failing}
            assert: [{type: python, value: "output == 'something else'"}]
        """,
    )
    result = run_cli_process("eval", "-o", "results.json", "-o", "junit.xml", "--no-progress", cwd=suite, env={"CI_GRADE_CALL_TIMEOUT_SECONDS": "3"})
    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    rows = {r["vars"]["how"]: r for r in json.loads((suite / "results.json").read_text())["results"]["results"]}
    assert len(rows) == 9
    errors = {how: row["error"] for how, row in rows.items() if row["failureReason"] == 2}  # ERROR rows
    assert errors == {
        "os._exit": "the Python worker exited with status 0 (os._exit, or an exit from native code)",
        "sys.exit": "called sys.exit(0) in call_api()",
        "segfault": "the Python worker was killed by SIGSEGV (Segmentation fault)",
        "sigkill": "the Python worker was killed by SIGKILL (Killed)",
        "hang": "timed out after 3s",
        "at import": "called sys.exit(0) importing exits_at_import.py",
        "assertion exits": "python could not be graded: the Python worker exited with status 0 (os._exit, or an exit from native code)",
    }
    assert rows["fine"]["success"] is True
    assert rows["failing"]["success"] is False and rows["failing"]["failureReason"] == 1
    assert "a print goes to stderr" in result.err
    cases = ET.parse(suite / "junit.xml").getroot().iter("testcase")
    assert len(list(cases)) == 9


def test_a_dead_worker_is_replaced_and_the_next_call_works(suite: Path) -> None:
    workers = WorkerPool(size=1)
    provider = suite / "provider.py"
    context = {"vars": {"how": "os._exit"}}

    async def go() -> list[object]:
        outcomes: list[object] = []
        for how in ("os._exit", "segfault", "fine", "sys.exit", "fine"):
            context["vars"]["how"] = how
            try:
                outcomes.append(await workers.acall({"file": str(provider), "function": "call_api", "args": ["p", {}, context], "path": [str(suite)]}, 10))
            except ScriptAborted as exc:
                outcomes.append(type(exc).__name__)
        return outcomes

    try:
        assert asyncio.run(go()) == ["ScriptAborted", "ScriptAborted", {"output": "fine: fine"}, "ScriptAborted", {"output": "fine: fine"}]
        assert workers.started == 4  # one to begin with, one after each way out
    finally:
        workers.close()


def test_calls_await_coroutines_see_the_current_folder_and_environment_and_return_plain_data(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = suite / "provider.py"
    monkeypatch.chdir(suite)
    monkeypatch.setenv("CI_GRADE_TEST_VALUE", "first")
    assert calls.call_file_sync(provider, "later", [1]) == {"value": 1, "cwd": str(suite), "env": "first"}
    monkeypatch.setenv("CI_GRADE_TEST_VALUE", "second")  # a run's `env:` values are set while it runs
    assert asyncio.run(calls.call_file(provider, "later", [2])) == {"value": 2, "cwd": str(suite), "env": "second"}
    with pytest.raises(ScriptError, match=r"^opaque\(\) in provider.py returned a value that is not JSON data: Object of type set is not JSON serializable$"):
        calls.call_file_sync(provider, "opaque", [])
    with pytest.raises(ScriptError, match=r"^ValueError: bad x \(provider.py:\d+ in boom\)$") as raised:
        calls.call_file_sync(provider, "boom", ["x"])
    assert not isinstance(raised.value, ScriptAborted)
    assert asyncio.run(calls.call_inline("output * 2", ("output", "context"), ["ab", {}])) == "abab"


def test_a_call_that_runs_too_long_is_killed_and_a_cancelled_one_too(suite: Path) -> None:
    write(suite / "slow.py", "import time\n\ndef wait(seconds):\n    time.sleep(seconds)\n    return seconds\n")
    workers = WorkerPool(size=1)

    async def go() -> None:
        request = {"file": str(suite / "slow.py"), "function": "wait", "args": [30]}
        with pytest.raises(ScriptAborted, match=r"^timed out after 0.5s$"):
            await workers.acall(request, 0.5)
        task = asyncio.create_task(workers.acall(request, 30))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await workers.acall({**request, "args": [0]}, 10) == 0  # the one slot is free again

    try:
        asyncio.run(go())
        assert workers.started == 3
    finally:
        workers.close()


def test_memory_limit_is_an_abort(tmp_path: Path) -> None:
    write(tmp_path / "hog.py", "def hog():\n    return len(bytearray(4 * 1024 ** 3))\n")
    workers = WorkerPool(size=1, memory_mb=300)
    try:
        with pytest.raises(ScriptAborted, match=r"^ran out of memory in hog\(\)$"):
            workers.call({"file": str(tmp_path / "hog.py"), "function": "hog", "args": []}, 30)
    finally:
        workers.close()


def test_the_pool_is_bounded(tmp_path: Path) -> None:
    write(tmp_path / "pid.py", "import os, time\n\ndef pid():\n    time.sleep(0.05)\n    return os.getpid()\n")
    workers = WorkerPool(size=2)

    async def go() -> set[int]:
        request = {"file": str(tmp_path / "pid.py"), "function": "pid", "args": []}
        return set(await asyncio.gather(*[workers.acall(request, 30) for _ in range(12)]))

    try:
        assert len(asyncio.run(go())) == 2
        assert workers.started == 2
    finally:
        workers.close()


@pytest.mark.parametrize(
    ("files", "assertion_or_provider", "message"),
    [
        ({"provider.py": "def call_api(prompt, options, context)\n    return {}\n"}, {"providers": ["file://provider.py"]}, "promptfooconfig.yaml:2 providers[0]: SyntaxError: expected ':' (provider.py:1)"),
        ({"provider.py": "def call_api(prompt, options, context)\n    return {}\n"}, {"providers": ["python:provider.py:call_api"]}, "promptfooconfig.yaml:2 providers[0]: SyntaxError: expected ':' (provider.py:1)"),
        ({"check.py": "def get_assert(output, context):\n    return (\n"}, {"assert": {"type": "python", "value": "file://check.py"}}, "tests[0].assert[0].value: SyntaxError: '(' was never closed (check.py:2)"),
        ({}, {"assert": {"type": "python", "value": "x = 1\nif x\n    return True\n"}}, "tests[0].assert[0].value: python assertion: SyntaxError: expected ':' (line 2 of the code)"),
        ({}, {"assert": {"type": "javascript", "value": "return output === 'x'"}}, "tests[0].assert[0].value: javascript assertion: SyntaxError: Unexpected token 'return' (line 1 of the code)"),
        ({"vars.py": "def get_var(name, prompt, other)\n    return {}\n"}, {"vars": {"topic": "file://vars.py"}}, "tests[0].vars.topic: SyntaxError: expected ':' (vars.py:1)"),
    ],
)
def test_script_syntax_errors_exit_2_before_any_call(tmp_path: Path, files: dict[str, str], assertion_or_provider: dict[str, object], message: str) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    test: dict[str, object] = {"vars": assertion_or_provider.get("vars", {"topic": "x"})}
    if "assert" in assertion_or_provider:
        test["assert"] = [assertion_or_provider["assert"]]
    config = {"prompts": ["{{topic}}"], "providers": assertion_or_provider.get("providers", ["echo"]), "tests": [test]}
    write(tmp_path / "promptfooconfig.yaml", "\n".join(f"{key}: {json.dumps(value)}" for key, value in config.items()) + "\n")
    started = pool().started
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    assert message in result.err, result.err
    assert "Traceback" not in result.err
    assert not (tmp_path / "out.json").exists()
    assert pool().started == started  # nothing ran


def test_a_config_value_from_a_python_function_runs_in_a_worker(tmp_path: Path) -> None:
    write(tmp_path / "settings.py", "import os\n\ndef settings():\n    return {'pid': os.getpid()}\n\ndef broken():\n    raise KeyError('model')\n")
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['hi']
        providers:
          - id: echo
            config: {extra: file://settings.py:settings}
        tests:
          - assert: [{type: contains, value: hi}]
        """,
    )
    assert run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path).code == 0
    (tmp_path / "promptfooconfig.yaml").write_text((tmp_path / "promptfooconfig.yaml").read_text().replace(":settings}", ":broken}"))
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "settings.py: broken() failed: KeyError: 'model' (settings.py:7 in broken)" in result.err
    assert os.getpid() != 0
