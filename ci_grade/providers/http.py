"""Any HTTP endpoint as a provider: ids `http`, `https`, `http://...` and `https://...`.

Config: `url` (else the id itself), `method` (POST), `headers`, `queryParams`, `body` and
`transformResponse`. The url, header values, query values and body are nunjucks templates over
the test's vars plus `prompt`. An object body is rendered string by string and sent as JSON; a
string body that is JSON is rendered the same way (so a quote in the prompt cannot break the
JSON), any other string body is rendered as text and sent as `text/plain` unless a Content-Type
is given.

`transformResponse` turns the reply into the output: a JavaScript expression or function over
`json` (the parsed body, or null), `text` (the raw body) and `context` (`status`, `headers` and
promptfoo's `response` object), or `file://x.js[:fn]` / `file://x.py:fn` called as
`fn(json, text, context)`. A result with `output` or `error` keys is taken as a provider
response. Without a transform the output is the parsed JSON, else the text.

`signatureAuth` signs each request with the client's private key (`http_signature`): the vars
`signature` and `signatureTimestamp` fill the templates.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, ScriptError, TemplateError
from ci_grade.providers import http_signature, transforms
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.http_api import HttpApiProvider, excerpt
from ci_grade.providers.response_dict import response_from_dict, token_usage
from ci_grade.providers.retry import RetryPolicy
from ci_grade.results.usage import TokenUsage
from ci_grade.templating import nunjucks

if TYPE_CHECKING:
    import httpx

UNSUPPORTED = ("request", "transformRequest", "sessionParser")
_NO_BODY_METHODS = ("GET", "HEAD")


class HttpProvider(HttpApiProvider):
    """Sends one templated HTTP request per call and turns the reply into an output.

    Not cached: the request depends on the test's vars, not only on the prompt the cache keys on.
    """

    cacheable = False

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        config = spec.config
        self._url = config.get("url") or (spec.id if spec.id.startswith(("http://", "https://")) else None)
        self._transform = config.get("transformResponse", config.get("responseParser"))
        self._signer: http_signature.Signer | None = None

    def retry_policy(self) -> RetryPolicy:
        policy = RetryPolicy.from_env()
        retries = self.spec.config.get("maxRetries")
        if retries is None:
            return policy
        return RetryPolicy(attempts=max(1, int(retries) + 1), base_delay=policy.base_delay, max_delay=policy.max_delay, timeouts=policy.timeouts)

    def error_message(self, response: httpx.Response) -> str:
        body = excerpt(response.text, 200)
        return f"HTTP {response.status_code} {response.reason_phrase}" + (f": {body}" if body else "")

    @functools.cached_property
    def _config_problem(self) -> str | None:
        problem = check_spec(self.spec)
        return f"provider {self.id}: {problem}" if problem else None

    def check_config(self) -> str | None:
        return self._config_problem

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.check_config():
            return ProviderResponse(error=error)
        config = self.spec.config
        variables = {**context.vars, "prompt": prompt}
        if "signatureAuth" in config:
            self._signer = self._signer or http_signature.Signer(config["signatureAuth"], self.env, self.base_dir)
            try:
                signature = await self._signer.current()
            except ProviderError as exc:
                return ProviderResponse(error=f"provider {self.id}: failed to generate the signature: {exc}")
            variables.update(signature=signature.value, signatureTimestamp=signature.timestamp)
        try:
            url = nunjucks.render(str(self._url), variables)
            headers = {str(k): nunjucks.render(str(v), variables) for k, v in (config.get("headers") or {}).items()}
            params = {str(k): nunjucks.render(str(v), variables) for k, v in (config.get("queryParams") or {}).items()}
            method = str(config.get("method") or "POST").upper()
            content = None if method in _NO_BODY_METHODS else _render_body(config.get("body"), variables, headers)
        except TemplateError as exc:
            return ProviderResponse(error=f"provider {self.id}: {exc}")
        if context.traceparent:
            headers["traceparent"] = context.traceparent
        import httpx

        validate = config.get("validateStatus")
        try:
            target = httpx.URL(url).copy_merge_params(params) if params else url  # queryParams join the URL's own query
            response = await self.send(method, str(target), read=lambda reply: reply, headers=headers, content=content, **({"ok_status": range(100, 600)} if validate else {}))
            if validate and not await self.status_ok(str(validate), response.status_code):
                return ProviderResponse(error=f"HTTP call failed with status {response.status_code} {response.reason_phrase}: {excerpt(response.text, 200)}")
        except (ProviderError, ScriptError) as exc:
            return ProviderResponse(error=str(exc))
        except httpx.InvalidURL as exc:
            return ProviderResponse(error=f"provider {self.id}: invalid URL: {exc}")
        text = response.text
        try:
            data = json.loads(text) if text.strip() else None
        except ValueError:
            data = None
        if not self._transform:  # as promptfoo: the reply's data, and the tokenUsage it carries
            return ProviderResponse(output=data if data is not None else text, token_usage=_body_usage(data))
        transform_context = {
            "status": response.status_code,
            "headers": dict(response.headers),
            "response": {"data": data, "status": response.status_code, "statusText": response.reason_phrase, "headers": dict(response.headers), "cached": False},
            "vars": context.vars,
            "prompt": {"raw": context.prompt_raw, "label": context.prompt_label},
        }
        return await self.transformed(data, text, transform_context)

    async def status_ok(self, code: str, status: int) -> bool:
        """promptfoo's `validateStatus`: an expression of `status`, a function, or a file's function."""
        code = code.strip()
        if not code.startswith("file://") and not transforms.FUNCTION_EXPRESSION.match(code):
            code = f"(status) => ({code})"
        return bool(await self.run_transform(code, [status]))

    async def transformed(self, data: Any, text: str, context: dict[str, Any]) -> ProviderResponse:
        try:
            value = await self.run_transform(str(self._transform), [data, text, context])
        except (ScriptError, FileNotFoundError) as exc:
            return ProviderResponse(error=f"transformResponse failed: {exc}")
        except Exception as exc:
            return ProviderResponse(error=f"transformResponse failed: {type(exc).__name__}: {exc}")
        if value is None:
            return ProviderResponse(error="transformResponse returned nothing (check the expression against the reply)")
        if isinstance(value, dict) and ("output" in value or "error" in value):
            response = response_from_dict(value, "transformResponse")
            if "tokenUsage" not in value and "token_usage" not in value:
                response.token_usage = _body_usage(data)
            return response
        return ProviderResponse(output=value, token_usage=_body_usage(data))

    async def run_transform(self, code: str, args: list[Any]) -> Any:
        """Inline JavaScript (expression, body or function) or a JS/Python file function."""
        return await transforms.run(code, ("json", "text", "context"), args, self.base_dir)


def check_spec(spec: ProviderSpec) -> str | None:
    """What in an HTTP provider's settings ci-grade cannot run (asked before any call)."""
    config = spec.config
    unsupported = [key for key in UNSUPPORTED if key in config]
    if unsupported:
        return f"config.{unsupported[0]} is not supported by ci-grade"
    if not (config.get("url") or spec.id.startswith(("http://", "https://"))):
        return "config.url is required"
    if "signatureAuth" in config:
        return http_signature.problem(config["signatureAuth"])
    return None


def _body_usage(data: Any) -> TokenUsage:
    """The `tokenUsage` a reply's JSON carries (promptfoo keeps it), else one request."""
    usage = data.get("tokenUsage") if isinstance(data, dict) else None
    return token_usage(usage) if isinstance(usage, dict) else TokenUsage(num_requests=1)


def _json_strings(value: Any) -> Any:
    """promptfoo's `processJsonBody`: a string field that renders to a JSON object or array (a chat
    prompt in `messages: "{{prompt}}"`) is sent as that JSON, not as text."""
    if isinstance(value, dict):
        return {key: _json_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_strings(item) for item in value]
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict | list) else value
    return value


def _render_body(body: Any, variables: dict[str, Any], headers: dict[str, str]) -> bytes | None:
    """The request body as bytes, setting a Content-Type header when none is given."""
    if body is None:
        return None
    content_type = next((k for k in headers if k.lower() == "content-type"), None)
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict | list):  # as promptfoo sends text: form-encoded unless told, trimmed
            if content_type is None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            return nunjucks.render(body, variables).strip().encode()
        body = parsed
    if content_type is None:
        headers["Content-Type"] = "application/json"
    elif "json" not in headers[content_type].lower():
        raise TemplateError(f"Content-Type is {headers[content_type]}, but the body is an object or array: give the body as text, or send JSON")
    return json.dumps(_json_strings(nunjucks.render_value(body, variables)), ensure_ascii=False).encode()
