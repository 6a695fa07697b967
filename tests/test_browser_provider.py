"""The `browser` provider end to end: `ci-grade eval` drives a stand-in web chat on loopback with a
real headless Chromium through Playwright, in a browser it launches and in one already running
(connected to over the DevTools Protocol, in that browser's signed-in session)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser import chromium_path
from tests.conftest import run_cli, write
from tests.servers.chat_page_server import ChatPageServer

STEPS = """
      steps:
        - action: navigate
          args: {{url: '{url}/'}}
        - action: wait
          args: {{ms: 1}}
        - action: extract
          args: {{script: 'return document.title'}}
          name: title
        - action: type
          args: {{selector: '#chat-input', text: '{{{{prompt}}}}'}}
        - action: click
          args: {{selector: '{{{{button}}}}'}}
        - action: waitForNewChildren
          args: {{parentSelector: '#messages', delay: 10, timeout: 30000}}
        - action: extract
          args: {{selector: '.reply:last-child'}}
          name: reply
"""


def run(folder: Path, config: str) -> tuple[int, list[dict[str, Any]], str]:
    write(folder / "promptfooconfig.yaml", config)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=folder)
    assert result.code in (0, 1), result.err
    return result.code, json.loads((folder / "out.json").read_text())["results"]["results"], result.err


def test_steps_drive_a_page_and_transform_response_shapes_the_output(tmp_path: Path) -> None:
    with ChatPageServer() as page:
        code, rows, _ = run(
            tmp_path,
            f"""
prompts: ['Hello {{{{name}}}}']
providers:
  - id: browser
    config:
      timeoutMs: 5000
{STEPS.format(url=page.url)}
        - action: screenshot
          args: {{path: '{tmp_path}/{{{{name}}}}.png'}}
      transformResponse: '{{output: `${{extracted.reply}} [${{extracted.title}}]`, metadata: {{words: extracted.reply.split(" ").length}}}}'
tests:
  - vars: {{name: ada, button: '#send-button'}}
    assert: [{{type: equals, value: 'You said: Hello ada [Stand-in chat]'}}]
  - vars: {{name: bob, button: '#no-such-button'}}
""",
        )
    assert code == 1
    assert rows[0]["success"], rows[0]
    assert rows[0]["response"]["metadata"]["words"] == 4
    assert rows[1]["error"] == "Browser execution error: Element not found: #no-such-button"
    assert (tmp_path / "ada.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [path for path, _ in page.requests].count("/") == 2


def test_without_transform_response_the_output_is_the_pages_html_and_keys_are_pressed(tmp_path: Path) -> None:
    with ChatPageServer() as page:
        _, rows, _ = run(
            tmp_path,
            f"""
prompts: ['Hi']
providers:
  - id: browser
    config:
      steps:
        - action: navigate
          args: {{url: '{page.url}/'}}
        - action: type
          args: {{selector: '#chat-input', text: 'first<enter>'}}
        - action: waitForNewChildren
          args: {{parentSelector: '#messages', delay: 10}}
""",
        )
    assert rows[0]["response"]["output"].startswith("<!DOCTYPE html>")
    assert '<li class="mine">first</li><li class="reply">You said: first</li>' in rows[0]["response"]["output"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_connect_options_drive_a_running_chrome_in_its_signed_in_session(tmp_path: Path) -> None:
    port = _free_port()
    with ChatPageServer() as page:
        chrome = subprocess.Popen(
            [chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--remote-debugging-port={port}", f"--user-data-dir={tmp_path / 'profile'}", f"{page.url}/login?user=ada"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while not any(path == "/login" for path, _ in page.requests) or not _answers(f"http://127.0.0.1:{port}/json/version"):
                assert time.monotonic() < deadline, "the running Chrome did not start"
                time.sleep(0.05)
            _, rows, _ = run(
                tmp_path,
                f"""
prompts: ['Who am I?']
providers:
  - id: browser
    config:
      connectOptions: {{debuggingPort: {port}}}
{STEPS.format(url=page.url)}
      transformResponse: 'extracted.reply'
tests:
  - vars: {{button: '#send-button'}}
""",
            )
            assert chrome.poll() is None, "the provider leaves the running browser open"
        finally:
            chrome.terminate()
            chrome.wait(10)
    assert rows[0]["response"]["output"] == "You said: Who am I? (signed in as ada)"
    assert ("/", "user=ada") in page.requests


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_closed_debugging_port_makes_the_rows_errors_naming_it(tmp_path: Path) -> None:
    port = _free_port()
    _, rows, _ = run(tmp_path, f"prompts: ['Hi']\nproviders:\n  - id: browser\n    config: {{connectOptions: {{debuggingPort: {port}}}, steps: [{{action: wait, args: {{ms: 1}}}}]}}\n")
    assert rows[0]["error"].startswith(f"Browser execution error: Cannot connect to Chrome at http://127.0.0.1:{port}. Make sure Chrome is running with debugging enabled")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{}", "config.steps must be a list of browser actions"),
        ("{steps: [{action: scroll}]}", "steps[0]: unknown action 'scroll'"),
        ("{steps: [{action: type, args: {text: hi}}]}", "steps[0]: action 'type' requires 'selector' in args"),
        ("{steps: [{action: extract, args: {selector: p}}]}", "steps[0]: action 'extract' requires a name"),
        ("{steps: [], connectOptions: {mode: websocket, wsEndpoint: 'ws://127.0.0.1:1'}}", "connectOptions mode 'websocket' (a Playwright browser server) is not supported"),
    ],
)
def test_a_config_the_browser_cannot_run_is_refused_before_any_call(tmp_path: Path, config: str, message: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['Hi']\nproviders:\n  - id: browser\n    config: {config}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert f"provider 'browser': {message}" in result.err
