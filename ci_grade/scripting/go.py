"""Go file providers, as promptfoo runs them: `file://provider.go[:Function]` or `golang:provider.go`,
whose function (default `CallApi`) is
`func(prompt string, options, context map[string]interface{}) (map[string]interface{}, error)`.

The file's package is built once per run, with a small `main` that calls the function added by
`go build -overlay` (nothing is written into the user's module): in the file's own folder for a
`main` package, else in a folder of its own that imports the package. The module is the one whose
`go.mod` is in the file's folder or a folder above it. A build error is a ScriptError with Go's
messages (the config's preflight makes it exit 2). Each call runs the program once, its arguments
as JSON on stdin and its result in a file; an error it returns, or a panic, is a ScriptError; a
call past its time limit is killed (ScriptAborted). The toolchain is `config.goExecutable`, else
`go` on PATH.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_grade.errors import ScriptAborted, ScriptError
from ci_grade.scripting import one_shot

DEFAULT_FUNCTION = "CallApi"
NO_TOOLCHAIN = "Go file providers need Go: install it (go on PATH) or name its executable in config.goExecutable"
BUILD_TIMEOUT_SECONDS = 600.0
"""A first build may download the module's dependencies."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAIN = """package main

import (
	cgjson "encoding/json"
	cgfmt "fmt"
	cgos "os"
{import_line})

func main() {{
	var arguments [3]interface{{}}
	if err := cgjson.NewDecoder(cgos.Stdin).Decode(&arguments); err != nil {{
		cgfmt.Fprintln(cgos.Stderr, "ci-grade: unreadable arguments:", err)
		cgos.Exit(3)
	}}
	prompt, _ := arguments[0].(string)
	options, _ := arguments[1].(map[string]interface{{}})
	context, _ := arguments[2].(map[string]interface{{}})
	reply := map[string]interface{{}}{{}}
	func() {{
		defer func() {{
			if recovered := recover(); recovered != nil {{
				reply = map[string]interface{{}}{{"error": cgfmt.Sprintf("panic: %v", recovered)}}
			}}
		}}()
		result, err := {function}(prompt, options, context)
		if err != nil {{
			reply = map[string]interface{{}}{{"error": err.Error()}}
		}} else {{
			reply = map[string]interface{{}}{{"data": result}}
		}}
	}}()
	encoded, err := cgjson.Marshal(reply)
	if err != nil {{
		encoded, _ = cgjson.Marshal(map[string]interface{{}}{{"error": "the result is not JSON: " + err.Error()}})
	}}
	if err := cgos.WriteFile(cgos.Args[1], encoded, 0o600); err != nil {{
		cgfmt.Fprintln(cgos.Stderr, "ci-grade:", err)
		cgos.Exit(3)
	}}
}}
"""

_built: dict[tuple[str, str, str, str], Path] = {}
_build_lock = threading.Lock()
_programs: tempfile.TemporaryDirectory[str] | None = None


def toolchain(config: Mapping[str, Any]) -> str | None:
    """The `go` to build with: `config.goExecutable`, else `go` on PATH (None when there is none)."""
    return shutil.which(str(config.get("goExecutable") or "go"))


def module_root(folder: Path) -> Path | None:
    """The nearest folder, from `folder` up, that holds a `go.mod`."""
    for candidate in (folder, *folder.parents):
        if (candidate / "go.mod").is_file():
            return candidate
    return None


def build(script: Path, function: str, go: str) -> Path:
    """The program that calls `function` of the package `script` belongs to, built once per
    version of the file (ScriptError with Go's messages when it does not build)."""
    if not _IDENTIFIER.fullmatch(function):
        raise ScriptError(f"{function!r} is not a Go function name")
    script = script.resolve()
    key = (str(script), function, go, hashlib.sha256(script.read_bytes()).hexdigest())
    with _build_lock:
        if key not in _built:
            _built[key] = _build(script, function, go, hashlib.sha256("\0".join(key).encode()).hexdigest()[:16])
        return _built[key]


def _build(script: Path, function: str, go: str, digest: str) -> Path:
    root = module_root(script.parent)
    if root is None:
        raise ScriptError(f"no go.mod in {script.parent} or a folder above it: a Go provider must be in a module")
    package = json.loads(_go(go, ["list", "-json", "."], script.parent))
    if package.get("Name") != "main" and not function[0].isupper():
        raise ScriptError(f"{function} is not exported: a provider in package {package.get('Name')} must name a function that starts with a capital letter")
    folder = Path(_folder()) / digest
    folder.mkdir()
    if package.get("Name") == "main":
        source = script.parent / f"zz_ci_grade_main_{digest}.go"
        main = _MAIN.format(import_line="", function=function)
    else:
        source = root / f".ci-grade-go-{digest}" / "main.go"
        main = _MAIN.format(import_line=f"\n\tprovider {json.dumps(package['ImportPath'])}\n", function=f"provider.{function}")
    (folder / "main.go").write_text(main, encoding="utf-8")
    (folder / "overlay.json").write_text(json.dumps({"Replace": {str(source): str(folder / "main.go")}}), encoding="utf-8")
    program = folder / "provider"
    target = f"./{source.parent.relative_to(root).as_posix()}"  # from the module's folder, so Go names files from there
    _go(go, ["build", "-overlay", str(folder / "overlay.json"), "-o", str(program), target], root, shown={str(folder / "main.go"): f"calling {function}"})
    return program


def _go(go: str, arguments: list[str], cwd: Path, shown: Mapping[str, str] | None = None) -> str:
    """`go <arguments>`'s output (ScriptError with its first messages, the files in `shown` named as given)."""
    try:
        result = subprocess.run([go, *arguments], cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise ScriptError(f"`go {arguments[0]}` did not finish within {BUILD_TIMEOUT_SECONDS:g} s") from None
    if result.returncode != 0:
        text = result.stderr
        for path, name in (shown or {}).items():
            text = re.sub(re.escape(path) + r":\d+:\d+", name, text)
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
        raise ScriptError(f"`go {arguments[0]}` failed: " + "; ".join(lines[:5]) if lines else f"`go {arguments[0]}` exited with status {result.returncode}")
    return result.stdout


def _folder() -> str:
    """A folder for the built programs, removed when ci-grade exits."""
    global _programs
    if _programs is None:
        _programs = tempfile.TemporaryDirectory(prefix="ci-grade-go-")
    return _programs.name


async def call(program: Path, args: Sequence[Any], *, timeout: float | None = None) -> Any:
    """The function's result for `args` (prompt, options, context)."""
    with tempfile.TemporaryDirectory(prefix="ci-grade-go-call-") as folder:
        result = Path(folder) / "result.json"
        reply, problem, status = await one_shot.run([str(program), str(result)], result, what="the Go provider", timeout=timeout, stdin=json.dumps(list(args)).encode())
    if reply is None:
        raise ScriptAborted(problem[0] if problem else f"the Go provider exited with status {status} and no result")
    return one_shot.data(reply)
