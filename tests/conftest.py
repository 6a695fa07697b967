"""Shared fixtures: loopback servers, an isolated environment, and a CLI runner."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_grade.providers.compatible_families import FAMILIES
from tests.servers.llm_server import LLMServer

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
COMPAT = FIXTURES / "promptfoo" / "compat"  # promptfoo's example configs (MIT), see NOTICE.md

# Variables that would make a test reach a real service or change defaults.
_ISOLATED_VARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST", "OPENAI_ORGANIZATION", "OPENAI_ORG_ID",
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_API_KEY", "AZURE_OPENAI_API_HOST",
    "AZURE_API_HOST", "AZURE_OPENAI_ENDPOINT", "AZURE_DEPLOYMENT_NAME", "AZURE_OPENAI_DEPLOYMENT_NAME",
    "AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME", "OLLAMA_BASE_URL", "HF_API_TOKEN", "HF_TOKEN", "WITHPI_API_KEY",
    "AZURE_OPENAI_API_BASE_URL", "AZURE_API_BASE_URL", "AZURE_OPENAI_API_VERSION", "AZURE_API_VERSION",
    "ANTHROPIC_MAX_TOKENS", "ANTHROPIC_TEMPERATURE", "OLLAMA_API_KEY", "HF_API_BASE_URL", "CI_GRADE_MAX_RETRIES",
    "GITHUB_TOKEN", "GITHUB_EVENT_PATH", "GITHUB_EVENT_NAME", "GITHUB_REPOSITORY", "GITHUB_API_URL",
    "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "GITHUB_SHA", "GITHUB_WORKSPACE",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "PALM_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "VOYAGE_API_KEY",
    *{name for family in FAMILIES for name in (*family.keys, *family.url_vars, *family.host_vars, *(v for p in family.params for v in p.env))},
    "COHERE_API_KEY", "CO_API_KEY", "COHERE_API_BASE_URL", "VOYAGE_API_KEY", "VOYAGE_API_BASE_URL",
    "REPLICATE_API_TOKEN", "REPLICATE_API_KEY", "REPLICATE_BASE_URL", "WATSONX_AI_APIKEY", "WATSONX_AI_BEARER_TOKEN",
    "WATSONX_AI_PROJECT_ID", "WATSONX_AI_AUTH_TYPE", "WATSONX_AI_AUTH_URL",
    "PROMPTFOO_JKS_PASSWORD", "PROMPTFOO_PFX_PASSWORD",
    "FAL_KEY", "FAL_QUEUE_RUN_HOST", "FAL_POLL_INTERVAL", "GOOGLE_GENERATIVE_AI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_PROJECT_ID",
    "MCP_REQUEST_TIMEOUT_MS", "DISPLAY", "WAYLAND_DISPLAY",
)


_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}
_real_getaddrinfo = socket.getaddrinfo


def _loopback_only(host: object, *args: object, **kwargs: object) -> object:
    name = host.decode() if isinstance(host, bytes) else str(host or "")
    if name not in _LOOPBACK:
        raise OSError(f"tests may only reach loopback, not {name!r}")
    return _real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Name resolution outside loopback fails: nothing in a test can reach a real service."""
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_only)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's keys or CI's GitHub variables; retries are quick."""
    for name in _ISOLATED_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("INPUT_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    monkeypatch.setenv("CI_GRADE_RETRY_MAX_SECONDS", "0.5")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The response cache's default folder is a fresh one per test (`<returned>/ci-grade`), and the
    cache, on by default, is off (PROMPTFOO_CACHE_ENABLED=false) because most tests count requests
    across several runs; tests of the cache give `--cache-dir` or unset that variable."""
    for name in ("CI_GRADE_CACHE_DIR", "CI_GRADE_CACHE_TTL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROMPTFOO_CACHE_ENABLED", "false")
    folder = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A fresh scripted OpenAI-compatible server on loopback."""
    with LLMServer() as server:
        yield server


@pytest.fixture
def openai_env(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """Point OpenAI providers and default graders at the loopback server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    return llm_server


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str, cwd: Path | None = None) -> CliResult:
    """Run `ci-grade` in-process (fast), capturing output."""
    from ci_grade.cli import main

    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        os.chdir(previous)
    return CliResult(code, out.getvalue(), err.getvalue())


def run_cli_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120) -> CliResult:
    """Run `ci-grade` as a real process (for exit codes, tracebacks and start-up behaviour)."""
    proc = subprocess.run(
        [sys.executable, "-m", "ci_grade", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def write(path: Path, text: str) -> Path:
    """Write dedented text (creating folders) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path
