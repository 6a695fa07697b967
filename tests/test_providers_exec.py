"""`exec:` providers: real subprocesses with the prompt, options and context as arguments."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from ci_grade.providers.base import CallContext
from tests.conftest import write
from tests.provider_helpers import call, eval_rows

PY = shlex.quote(sys.executable)

ARGS_SCRIPT = """
import json, os, sys
prompt, options, context = sys.argv[1:]
print(json.dumps({"prompt": prompt, "options": json.loads(options), "context": json.loads(context),
                  "cwd": os.getcwd(), "token": os.environ.get("EXEC_TEST_TOKEN")}))
"""


def test_prompt_options_and_context_are_arguments_and_cwd_is_the_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXEC_TEST_TOKEN", "from-env")
    write(tmp_path / "show args.py", ARGS_SCRIPT)
    spec = {"id": f"exec: {PY} 'show args.py'", "config": {"mode": "fast"}}
    context = CallContext(vars={"topic": "owls"}, prompt_label="p1", prompt_raw="Tell me about {{topic}}")
    response = call(spec, "Tell me about owls", context, base_dir=tmp_path)
    assert response.error is None
    seen = json.loads(response.output)
    assert seen["prompt"] == "Tell me about owls"
    assert seen["options"] == {"id": spec["id"], "config": {"mode": "fast", "basePath": str(tmp_path)}}
    assert seen["context"] == {"vars": {"topic": "owls"}, "prompt": {"raw": "Tell me about {{topic}}", "label": "p1"}}
    assert Path(seen["cwd"]) == tmp_path
    assert seen["token"] == "from-env"
    assert response.cost == 0.0


def test_relative_executable_resolves_against_the_config_folder(tmp_path: Path) -> None:
    script = write(tmp_path / "bin" / "answer.sh", '#!/bin/sh\nprintf "\\033[32m  you said: %s  \\033[0m\\n" "$1"\n')
    script.chmod(0o755)
    response = call("exec:./bin/answer.sh", "it's \"quoted\" $HOME", base_dir=tmp_path)
    assert response.output == "you said: it's \"quoted\" $HOME"


def test_non_zero_exit_is_an_error_with_stderr(tmp_path: Path) -> None:
    write(tmp_path / "fail.py", "import sys\nprint('partial')\nprint('Traceback: model exploded', file=sys.stderr)\nsys.exit(3)\n")
    response = call(f"exec:{PY} fail.py", "q", base_dir=tmp_path)
    assert response.output is None
    assert response.error == "command exited with status 3: Traceback: model exploded"


def test_stderr_only_is_an_error_but_warnings_with_output_are_fine(tmp_path: Path) -> None:
    write(tmp_path / "warn.py", "import sys\nprint('warning: slow', file=sys.stderr)\nif sys.argv[1] == 'talk':\n    print('answer')\n")
    assert call(f"exec:{PY} warn.py", "talk", base_dir=tmp_path).output == "answer"
    assert call(f"exec:{PY} warn.py", "quiet", base_dir=tmp_path).error == "command wrote only to stderr: warning: slow"


def test_timeout_kills_the_process(tmp_path: Path) -> None:
    pid_file, finished = tmp_path / "pid", tmp_path / "finished"
    write(tmp_path / "slow.py", f"import os, time, pathlib\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
                                f"time.sleep(30)\npathlib.Path({str(finished)!r}).write_text('ran to the end')\n")
    started = time.perf_counter()
    response = call({"id": f"exec:{PY} slow.py", "config": {"timeout": 0.5}}, "q", base_dir=tmp_path)
    assert response.error == f"command timed out after 0.5s: {sys.executable} slow.py"
    assert time.perf_counter() - started >= 0.5
    assert pid_file.is_file() and not finished.exists(), "the command was stopped, not waited for"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")  # killed, not yet reaped by init


def test_timeout_stops_what_the_command_started(tmp_path: Path) -> None:
    # A wrapper script whose background job holds the output open: the timeout is still a bound.
    pid_file, finished = tmp_path / "pid", tmp_path / "finished"
    write(tmp_path / "wrapper.sh", f"#!/bin/sh\n(sleep 5; echo done > {finished}) &\necho $! > {pid_file}\nsleep 5\n")
    (tmp_path / "wrapper.sh").chmod(0o755)
    response = call({"id": "exec: ./wrapper.sh", "config": {"timeout": 0.5}}, "q", base_dir=tmp_path)
    assert response.error == "command timed out after 0.5s: ./wrapper.sh"
    assert not finished.exists(), "the background job was stopped with the command, not waited for"
    assert _gone(int(pid_file.read_text()))


def test_missing_program_and_bad_command(tmp_path: Path) -> None:
    missing = call("exec: ./does-not-exist.sh", "q", base_dir=tmp_path)
    assert missing.error == "cannot run './does-not-exist.sh': No such file or directory"
    assert call("exec: python 'unclosed", "q").error == "cannot parse command \"python 'unclosed\": No closing quotation"
    assert call("exec:   ", "q").error == "exec: needs a command, e.g. exec: python chain.py"


def test_eval_failing_command_is_an_error_row_and_other_tests_run(tmp_path: Path) -> None:
    write(tmp_path / "chain.py", "import sys\nif 'explode' in sys.argv[1]:\n    sys.exit('chain failed: bad input')\nprint('chain says ' + sys.argv[1])\n")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers: ['exec: {sys.executable} chain.py']
        tests:
          - vars: {{q: hello}}
            assert: [{{type: contains, value: chain says}}]
          - vars: {{q: explode}}
            assert: [{{type: contains, value: chain says}}]
          - vars: {{q: bye}}
            assert: [{{type: contains, value: chain says}}]
        """,
    )
    assert code == 1
    assert [r["success"] for r in rows] == [True, False, True]
    assert rows[1]["failureReason"] == 2
    assert rows[1]["error"] == "command exited with status 1: chain failed: bad input"
    assert rows[2]["response"]["output"] == "chain says bye"
