"""The `browser` provider: each row drives a web page through promptfoo's steps, with Playwright.

    providers:
      - id: browser
        config:
          steps:
            - {action: navigate, args: {url: 'http://127.0.0.1:8080'}}
            - {action: type, args: {selector: '#chat-input', text: '{{prompt}}<enter>'}}
            - {action: extract, args: {selector: '.reply:last-child'}, name: reply}
          transformResponse: 'extracted.reply'

As promptfoo runs them: every string argument is rendered with nunjucks over the row's variables
and `prompt`; the actions are navigate, click (`optional`), type (`<enter>`, `<tab>`, `<escape>`
press keys), screenshot, extract (an element's text, or a `script` body's return value), wait
(`ms`), waitForNewChildren; a step with `runOnce` runs only on a new page. `transformResponse`
is a JavaScript expression of `extracted` and `finalHtml` (default: the page's HTML), run in
V8. Each row gets a fresh browser context (`persistSession`: one page kept for the run);
`connectOptions: {debuggingPort}` drives an already running Chrome over the DevTools Protocol,
in its existing context. The browser is Chromium through Playwright's async API
(`pip install 'ci-grade[browser]'`): the system's `chromium` when there is one, else the one
`playwright install chromium` put in place; it starts once per run and stops at its end.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ScriptError
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.response_dict import response_from_dict
from ci_grade.results.usage import TokenUsage
from ci_grade.scripting import js
from ci_grade.templating import nunjucks

ACTIONS = ("navigate", "click", "type", "screenshot", "extract", "wait", "waitForNewChildren")
REQUIRED = {"navigate": ("url",), "click": ("selector",), "type": ("text", "selector"), "screenshot": ("path",)}
KEYS = {"<enter>": "Enter", "<tab>": "Tab", "<escape>": "Escape"}
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_DEBUGGING_PORT = 9222
SYSTEM_CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = "pip install 'ci-grade[browser]'"


def check_spec(spec: ProviderSpec) -> str | None:
    """What keeps a `browser` provider's config from running (asked before any call), or None."""
    config = spec.config
    steps = config.get("steps")
    if not isinstance(steps, list):
        return "config.steps must be a list of browser actions"
    for index, step in enumerate(steps):
        action = step.get("action") if isinstance(step, dict) else None
        if action not in ACTIONS:
            return f"steps[{index}]: unknown action {action!r} (one of {', '.join(ACTIONS)})"
        args = step.get("args") or {}
        missing = [name for name in REQUIRED.get(action, ()) if not args.get(name)]
        if action == "extract" and not (args.get("selector") or args.get("script")):
            missing = ["selector or script"]
        if missing:
            return f"steps[{index}]: action {action!r} requires {' and '.join(repr(m) for m in missing)} in args"
        if action == "extract" and not step.get("name"):
            return f"steps[{index}]: action 'extract' requires a name (the key of extracted in transformResponse)"
    connect = config.get("connectOptions")
    if isinstance(connect, dict) and connect.get("mode") == "websocket":
        return "connectOptions mode 'websocket' (a Playwright browser server) is not supported: start Chrome with --remote-debugging-port and give connectOptions.debuggingPort"
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return f"the browser provider needs Playwright: {INSTALL} (and a Chromium: the system's, or `playwright install chromium`)"
    return None


class BrowserProvider(Provider):
    """Runs the configured browser steps for each row and answers what they extracted."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.timeout_ms = float(spec.config.get("timeoutMs") or DEFAULT_TIMEOUT_MS)
        self._playwright: Any = None
        self._browser: Any = None
        self._started = asyncio.Lock()
        self._page: Any = None  # persistSession's page

    async def _browser_ready(self) -> Any:
        """The browser (launched, or connected to over CDP), once per run."""
        async with self._started:
            if self._browser is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
                connect = self.spec.config.get("connectOptions")
                self._browser = await (self._connect(connect) if isinstance(connect, dict) else self._launch())
            return self._browser

    async def _launch(self) -> Any:
        headed = self.spec.config.get("headless") is False and bool(self.env.get("DISPLAY") or self.env.get("WAYLAND_DISPLAY"))
        system = next((found for name in SYSTEM_CHROMIUM if (found := shutil.which(name, path=self.env.get("PATH", os.defpath)))), None)
        try:
            return await self._playwright.chromium.launch(headless=not headed, executable_path=system, args=["--ignore-certificate-errors"])
        except Exception as exc:  # Playwright's error names the executable it looked for
            raise ScriptError(f"cannot start Chromium ({str(exc).splitlines()[0]}): install the system's chromium, or run `playwright install chromium`") from None

    async def _connect(self, connect: Mapping[str, Any]) -> Any:
        url = f"http://127.0.0.1:{int(connect.get('debuggingPort') or DEFAULT_DEBUGGING_PORT)}"
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                (await client.get(f"{url}/json/version")).raise_for_status()
        except httpx.HTTPError:
            raise ScriptError(f"Cannot connect to Chrome at {url}. Make sure Chrome is running with debugging enabled: chrome --remote-debugging-port={url.rsplit(':', 1)[1]}") from None
        return await self._playwright.chromium.connect_over_cdp(url)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        variables = {**context.vars, "prompt": prompt}
        persist = bool(self.spec.config.get("persistSession"))
        try:
            browser = await self._browser_ready()
            if persist and self._page is not None and not self._page.is_closed():
                return await self._steps(self._page, variables, new_page=False)
            connected = isinstance(self.spec.config.get("connectOptions"), dict)
            browser_context = browser.contexts[0] if connected and browser.contexts else await browser.new_context(ignore_https_errors=True)
            await self._cookies(browser_context)
            page = await browser_context.new_page()
            if persist:
                self._page = page
            try:
                return await self._steps(page, variables, new_page=True)
            finally:
                if not persist:
                    await (page.close() if connected else browser_context.close())
        except ImportError:
            return ProviderResponse(error=f"the browser provider needs Playwright: {INSTALL}")
        except Exception as exc:  # Playwright's errors (timeouts, missing elements, a closed page): this row's error
            return ProviderResponse(error=f"Browser execution error: {_first_line(exc)}")

    async def _cookies(self, browser_context: Any) -> None:
        cookies = self.spec.config.get("cookies")
        if isinstance(cookies, str):
            text = files.read_text(files.resolve(files.strip_file_prefix(cookies), self.base_dir or Path.cwd())) if cookies.startswith("file://") else cookies
            pairs = [pair.strip().split("=", 1) for pair in text.split(";") if pair.strip()]
            await browser_context.add_cookies([{"name": pair[0], "value": pair[1] if len(pair) > 1 else ""} for pair in pairs])
        elif isinstance(cookies, list):
            await browser_context.add_cookies(cookies)

    async def _steps(self, page: Any, variables: dict[str, Any], new_page: bool) -> ProviderResponse:
        extracted: dict[str, Any] = {}
        for step in self.spec.config.get("steps") or []:
            if step.get("runOnce") and not new_page:
                continue
            args = {key: nunjucks.render(value, variables) if isinstance(value, str) else value for key, value in (step.get("args") or {}).items()}
            await self._act(page, str(step.get("action")), args, step.get("name"), extracted)
        html = await page.content()
        transform = self.spec.config.get("transformResponse") or self.spec.config.get("responseParser")
        if not transform:
            return ProviderResponse(output=html, token_usage=TokenUsage(), cost=0.0)
        try:
            _, value = await js.arun_inline(f"return {transform}", ("extracted", "finalHtml"), [extracted, html])
        except ScriptError as exc:
            return ProviderResponse(error=f"transformResponse failed: {exc}")
        if isinstance(value, dict) and ("output" in value or "error" in value):
            return response_from_dict(value, "transformResponse")
        return ProviderResponse(output=value, token_usage=TokenUsage(), cost=0.0)

    async def _found(self, page: Any, selector: str) -> bool:
        try:
            return await page.wait_for_selector(selector, timeout=self.timeout_ms) is not None
        except Exception:  # Playwright's TimeoutError: promptfoo goes on and lets the next call fail
            return False

    async def _act(self, page: Any, action: str, args: dict[str, Any], name: Any, extracted: dict[str, Any]) -> None:
        if action == "navigate":
            await page.goto(args["url"])
        elif action == "click":
            if await self._found(page, args["selector"]):
                await page.click(args["selector"])
            elif not args.get("optional"):
                raise ScriptError(f"Element not found: {args['selector']}")
        elif action == "type":
            await self._found(page, args["selector"])
            await self._type(page, args["selector"], str(args["text"]))
        elif action == "screenshot":
            await page.screenshot(path=args["path"], full_page=bool(args.get("fullPage")))
        elif action == "extract":
            if args.get("script"):
                extracted[str(name)] = await page.evaluate("(body) => new Function(body)()", args["script"])
            else:
                await self._found(page, args["selector"])
                extracted[str(name)] = await page.eval_on_selector(args["selector"], "(element) => element.textContent")
        elif action == "wait":
            await page.wait_for_timeout(float(args.get("ms") or 0))
        elif action == "waitForNewChildren":
            await page.wait_for_timeout(float(args.get("delay") or 1000))
            parent = f"{args['parentSelector']} > *"
            before = await page.eval_on_selector_all(parent, "(elements) => elements.length")
            await page.wait_for_function(
                "([selector, count]) => document.querySelectorAll(selector).length > count", arg=[parent, before], timeout=float(args.get("timeout") or self.timeout_ms), polling="raf"
            )
        else:
            raise ScriptError(f"Unknown action type: {action}")

    async def _type(self, page: Any, selector: str, text: str) -> None:
        """`fill` the text; `<enter>`, `<tab>` and `<escape>` in it press those keys, as promptfoo
        does (only the first kind found splits the text)."""
        for placeholder, key in KEYS.items():
            if placeholder in text.lower():
                parts = re.split(re.escape(placeholder), text, flags=re.I)
                for index, part in enumerate(parts):
                    if part:
                        await page.fill(selector, part)
                    if index < len(parts) - 1:
                        await page.press(selector, key)
                return
        await page.fill(selector, text)

    async def aclose(self) -> None:
        if self._browser is not None and not isinstance(self.spec.config.get("connectOptions"), dict):
            await self._browser.close()
        if self._playwright is not None:
            await self._playwright.stop()
        self._browser = self._playwright = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else "") or type(exc).__name__
