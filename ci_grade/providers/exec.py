"""`exec:<command>`: a local program as the model under test.

The command is split like a shell would split it (no shell runs it) and called with three extra
arguments, as promptfoo does: the prompt, the provider options as JSON (`{id, config}`, with
`config.basePath` set to the config's folder) and the call context as JSON (`{vars, prompt}`).
It runs in the config's folder with the run's environment and no stdin. Its stdout, trimmed and
without terminal colour codes, is the output. A non-zero exit status, empty stdout with text on
stderr, or running longer than `config.timeout` seconds (default 60) is an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
from collections.abc import Mapping
from pathlib import Path

from ci_grade.config.models import ProviderSpec
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.http_api import excerpt
from ci_grade.results.usage import TokenUsage

DEFAULT_TIMEOUT_SECONDS = 60.0
_ANSI_ESCAPE = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")


class ExecProvider(Provider):
    """Runs the command once per call with `asyncio.create_subprocess_exec`."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.command = spec.id.split(":", 1)[1].strip()
        configured = spec.config.get("timeout")
        self.timeout = float(configured) if configured is not None else DEFAULT_TIMEOUT_SECONDS

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        try:
            argv = shlex.split(self.command)
        except ValueError as exc:
            return ProviderResponse(error=f"cannot parse command {self.command!r}: {exc}")
        if not argv:
            return ProviderResponse(error="exec: needs a command, e.g. exec: python chain.py")
        folder = self.base_dir or Path.cwd()
        options = {"id": self.id, "config": {**self.spec.config, "basePath": str(folder)}}
        call_context = {"vars": context.vars, "prompt": {"raw": context.prompt_raw, "label": context.prompt_label}, **context.trace_fields()}
        arguments = [prompt, json.dumps(options, default=str), json.dumps(call_context, default=str)]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                *arguments,
                cwd=folder,
                env=dict(self.env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group: a timeout stops what it started too
            )
        except OSError as exc:
            return ProviderResponse(error=f"cannot run {argv[0]!r}: {exc.strerror or exc}")
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), self.timeout)
        except TimeoutError:
            await _stop(process)
            return ProviderResponse(error=f"command timed out after {self.timeout:g}s: {self.command}")
        finally:
            if process.returncode is None:
                await _stop(process)
        output = _clean(stdout)
        errors = _clean(stderr)
        if process.returncode != 0:
            detail = f": {excerpt(errors)}" if errors else ""
            return ProviderResponse(error=f"command exited with status {process.returncode}{detail}")
        if not output and errors:
            return ProviderResponse(error=f"command wrote only to stderr: {excerpt(errors)}")
        return ProviderResponse(output=output, token_usage=TokenUsage(), cost=0.0)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill the command and every process it started (a shell script's background jobs would
    otherwise hold its output open, and the wait for it, past the timeout)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def _clean(data: bytes) -> str:
    return _ANSI_ESCAPE.sub("", data.decode("utf-8", errors="replace")).strip()
