"""Stand-ins for IBM Cloud IAM and watsonx.ai on an LLMServer.

`POST /identity/token` exchanges an API key (form-encoded, `grant_type` the API-key grant) for an
access token; `POST /ml/v1/text/generation` and `/ml/v1/text/chat` require that token (or a
given bearer token), a `version` query parameter, `model_id` and `project_id`, and answer in
watsonx.ai's format; `GET /ml/v1/foundation_model_specs` lists the model's pricing tiers.
Errors are watsonx.ai's `{"errors": [{"code", "message"}], "status_code"}`.
"""

from __future__ import annotations

import secrets
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response, last_user_text

GRANT = "urn:ibm:params:oauth:grant-type:apikey"


def error(status: int, code: str, message: str) -> Response:
    return Response(status, json={"errors": [{"code": code, "message": message}], "trace": "t-1", "status_code": status})


@dataclass
class Watsonx:
    api_key: str
    project: str
    tokens: set[str] = field(default_factory=set)
    exchanges: int = 0


def install(server: LLMServer, api_key: str, project: str, reply: Callable[[str], str], *, bearer: str | None = None,
            tiers: tuple[str, str] = ("class_1", "class_2")) -> Watsonx:
    state = Watsonx(api_key, project, {bearer} if bearer else set())

    def token(recorded: Recorded) -> Response:
        form = dict(urllib.parse.parse_qsl(recorded.body.decode()))
        if form.get("grant_type") != GRANT or form.get("apikey") != api_key:
            return Response(400, json={"errorCode": "BXNIM0415E", "errorMessage": "Provided API key could not be found."})
        issued = f"iam-{secrets.token_hex(8)}"
        state.tokens.add(issued)
        state.exchanges += 1
        return Response(200, json={"access_token": issued, "token_type": "Bearer", "expires_in": 3600, "expiration": 4102444800})

    def guard(recorded: Recorded) -> Response | None:
        auth = next((v for k, v in recorded.headers.items() if k.lower() == "authorization"), "")
        if auth.removeprefix("Bearer ") not in state.tokens:
            return error(401, "authentication_token_not_valid", "Failed to authenticate the request due to invalid token")
        if "version" not in urllib.parse.parse_qs(urllib.parse.urlsplit(recorded.path).query):
            return error(400, "missing_version", "Missing query parameter version")
        return None

    def checked(recorded: Recorded) -> tuple[Response | None, dict[str, Any]]:
        refused = guard(recorded)
        body = recorded.json if isinstance(recorded.json, dict) else {}
        if refused is None and (not body.get("model_id") or body.get("project_id") != project):
            refused = error(400, "json_validation_error", "model_id and a valid project_id are required")
        return refused, body

    def generation(recorded: Recorded) -> Response:
        refused, body = checked(recorded)
        if refused is None and not isinstance(body.get("input"), str):
            refused = error(400, "json_validation_error", "input must be a string")
        if refused:
            return refused
        text = reply(body["input"])
        return Response(200, json={"model_id": body["model_id"], "model_version": "1.0.0", "created_at": "2026-01-01T00:00:00Z", "results": [
            {"generated_text": text, "generated_token_count": len(text.split()), "input_token_count": len(body["input"].split()), "stop_reason": "eos_token"}]})

    def chat(recorded: Recorded) -> Response:
        refused, body = checked(recorded)
        if refused is None and not isinstance(body.get("messages"), list):
            refused = error(400, "json_validation_error", "messages must be a list")
        if refused:
            return refused
        text = reply(last_user_text(body))
        return Response(200, json={"id": "chat-1", "model_id": body["model_id"], "created": 0, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": len(text.split()), "total_tokens": 7 + len(text.split())}})

    def specs(recorded: Recorded) -> Response:
        if refused := guard(recorded):
            return refused
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(recorded.path).query)
        model = query.get("filters", [""])[0].removeprefix("modelid_")
        return Response(200, json={"total_count": 1, "resources": [{"model_id": model, "input_tier": tiers[0], "output_tier": tiers[1]}]})

    server.route("POST", "/identity/token", token)
    server.route("POST", "/ml/v1/text/generation", generation)
    server.route("POST", "/ml/v1/text/chat", chat)
    server.route("GET", "/ml/v1/foundation_model_specs", specs)
    return state
