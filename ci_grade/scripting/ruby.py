"""Ruby from configs, as promptfoo runs it: `file://x.rb[:fn]` functions and inline `ruby` code.

Each call is one `ruby` process (`one_shot`; PROMPTFOO_RUBY names another interpreter, as in
promptfoo) that loads the script, calls the method with the JSON arguments and writes the JSON
result to a file; it may take
CI_GRADE_CALL_TIMEOUT_SECONDS (default 120). Code that raises is a ScriptError with Ruby's
message; a process that times out or dies is a ScriptAborted. `syntax_error` runs `ruby -c`.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_grade.errors import ScriptAborted, ScriptError
from ci_grade.scripting import one_shot

_RUNNER = """
require 'json'
script, method, args_path, result_path = ARGV
$LOAD_PATH.unshift(File.dirname(File.absolute_path(script)))
args = JSON.parse(File.read(args_path, encoding: 'utf-8'))
begin
  load script
  result = send(method, *args)
  File.write(result_path, JSON.generate({ 'data' => result }), encoding: 'utf-8')
rescue ScriptError, StandardError => e
  File.write(result_path, JSON.generate({ 'error' => "#{e.class}: #{e.message}" }), encoding: 'utf-8')
end
"""


def interpreter(env: Mapping[str, str] | None = None) -> str | None:
    """The Ruby to run: PROMPTFOO_RUBY when set, else `ruby` on PATH (None when there is none)."""
    env = os.environ if env is None else env
    chosen = env.get("PROMPTFOO_RUBY") or "ruby"
    return shutil.which(chosen)


def inline_script(code: str) -> str:
    """promptfoo's wrapper: one line is `return <code>`, several lines are the method's body."""
    if "\n" not in code:
        body = f"  return {code}"
    else:
        indent = next((line[: len(line) - len(line.lstrip())] for line in code.split("\n") if line.strip() and line[:1].isspace()), "  ")
        body = "\n".join(indent + line for line in code.split("\n"))
    return f"require 'json'\n\ndef main(output, context)\n{body}\nend\n"


async def call(script: Path, method: str, args: Sequence[Any], *, timeout: float | None = None) -> Any:
    """`method(*args)` from the Ruby file `script`."""
    ruby = interpreter()
    if ruby is None:
        raise ScriptAborted("Ruby not found: install Ruby or set PROMPTFOO_RUBY to its executable")
    with tempfile.TemporaryDirectory(prefix="ci-grade-ruby-") as folder:
        runner, args_path, result = Path(folder) / "runner.rb", Path(folder) / "args.json", Path(folder) / "result.json"
        runner.write_text(_RUNNER, encoding="utf-8")
        args_path.write_text(json.dumps(list(args)), encoding="utf-8")
        argv = [ruby, str(runner), str(script.resolve()), method, str(args_path), str(result)]
        reply, problem, status = await one_shot.run(argv, result, what="the Ruby script", timeout=timeout, cwd=script.resolve().parent)
    if reply is None:
        raise ScriptError(problem[-1].strip() if problem else f"ruby exited with status {status} and no result")
    return one_shot.data(reply)


async def call_inline(code: str, args: Sequence[Any], *, timeout: float | None = None) -> Any:
    """Inline code wrapped as promptfoo wraps it, its `main(output, context)` called with `args`."""
    with tempfile.TemporaryDirectory(prefix="ci-grade-ruby-code-") as folder:
        script = Path(folder) / "script.rb"
        script.write_text(inline_script(code), encoding="utf-8")
        return await call(script, "main", args, timeout=timeout)


@functools.lru_cache(maxsize=256)
def syntax_error(source: str, shown: str, *, inline: bool = False) -> str | None:
    """What `ruby -c` says about `source` (the line in `shown`, or in the code when inline), or None."""
    ruby = interpreter()
    if ruby is None:
        return None
    text = inline_script(source) if inline else source
    result = subprocess.run([ruby, "-c", "-"], input=text, capture_output=True, text=True, timeout=30, check=False)
    if result.returncode == 0:
        return None
    first = (result.stderr.strip().splitlines() or ["syntax error"])[0]
    location = first.split(":", 2)
    if len(location) == 3 and location[1].isdigit():
        line = int(location[1]) - (3 if inline else 0)
        return f"SyntaxError: {location[2].strip()} ({f'line {max(1, line)} of the code' if inline else f'{shown}:{line}'})"
    return f"SyntaxError: {first}"
