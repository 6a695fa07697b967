"""A stand-in for an Azure AI Foundry project (`/api/projects/<project>`): its agents and the
Responses API of its OpenAI endpoint, as the Azure AI Projects SDK calls them.

Every request must carry `Authorization: Bearer <token>` with the token the stand-in Azure CLI
hands out (`az_cli.py`), as the real service checks the Entra ID token.

- `GET .../agents/{name}?api-version=v1`: the agent named so, else 404.
- `GET .../agents?api-version=v1[&after=<id>]`: the agents, `page_size` a page (`last_id` and
  `has_more` as the service pages them).
- `POST .../openai/v1/responses`: needs an `agent_reference` (`{"name", "type": "agent_reference"}`)
  to a known agent and an `input` list. Message items need a role and content; a follow-up names
  `previous_response_id` and answers exactly that reply's function calls with
  `function_call_output` items. `calls(prompt, agent)` scripts the function calls (name, JSON
  arguments) the agent makes; `answer(prompt, outputs)` the final text. `fail_next` holds replies sent
  instead of the next ones (an API error, a 429).
"""

from __future__ import annotations

import itertools
import re
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response, request_text

_PATH = re.compile(r"/api/projects/([^/]+)/(?:agents(?:/([^/]+))?|openai/v1/(responses))")
PROJECT = "proj"


def error(status: int, code: str, message: str) -> Response:
    return Response(status, json={"error": {"code": code, "message": message}})


class FoundryServer(LLMServer):
    """One Foundry project on a loopback port (serve it over HTTPS: the SDK sends tokens only there)."""

    def __init__(self, token: str, agents: dict[str, str], page_size: int = 2) -> None:
        super().__init__()
        self.token = token
        self.agents = dict(agents)
        """Agent name -> its (legacy) id."""
        self.page_size = page_size
        self.calls: Callable[[str, str], list[tuple[str, str]]] = lambda prompt, agent: []
        self.answer: Callable[[str, list[str]], str] = lambda prompt, outputs: f"agent says: {prompt}" + "".join(f" | {o}" for o in outputs)
        self.fail_next: list[Response] = []
        self._replies: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._state = threading.Lock()

    @property
    def project_url(self) -> str:
        return f"{self.url}/api/projects/{PROJECT}"

    def handle(self, recorded: Recorded) -> Any:
        path, _, query = recorded.path.partition("?")
        found = _PATH.fullmatch(path)
        if found is None or found.group(1) != PROJECT:
            return error(404, "NotFound", f"no route for {recorded.method} {path}")
        if recorded.headers.get("authorization") != f"Bearer {self.token}":
            return error(401, "PermissionDenied", "The principal does not have access to this project, or the token is invalid.")
        with self._state:
            if self.fail_next:
                return self.fail_next.pop(0)
        params = dict(urllib.parse.parse_qsl(query))
        _, name, responses = found.groups()
        if responses:
            return self._respond(recorded) if recorded.method == "POST" else error(405, "MethodNotAllowed", path)
        if params.get("api-version") != "v1":
            return error(400, "BadRequest", "Missing or unsupported api-version query parameter.")
        if recorded.method != "GET":
            return error(405, "MethodNotAllowed", path)
        return self._agent(name) if name else self._listing(params.get("after"))

    def agent_json(self, name: str) -> dict[str, Any]:
        version = {"object": "agent.version", "id": f"{name}:1", "name": name, "version": "1", "created_at": 1700000000, "metadata": {},
                   "definition": {"kind": "prompt", "model": "gpt-4o-mini", "instructions": "Answer briefly."}}
        return {"object": "agent", "id": self.agents[name], "name": name, "versions": {"latest": version}}

    def _agent(self, name: str) -> Response:
        name = urllib.parse.unquote(name)
        if name not in self.agents:
            return error(404, "not_found", f"Agent {name} not found.")
        return Response(200, json=self.agent_json(name))

    def _listing(self, after: str | None) -> Response:
        names = list(self.agents)
        ids = [self.agents[n] for n in names]
        start = ids.index(after) + 1 if after in ids else 0
        page = names[start : start + self.page_size]
        more = start + self.page_size < len(names)
        data = [self.agent_json(n) for n in page]
        return Response(200, json={"object": "list", "data": data, "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data and more else None, "has_more": more})

    def _respond(self, recorded: Recorded) -> Response:
        body = recorded.json if isinstance(recorded.json, dict) else {}
        reference = body.get("agent_reference")
        if not isinstance(reference, dict) or reference.get("type") != "agent_reference" or reference.get("name") not in self.agents:
            return error(400, "invalid_request", f"agent_reference must name an agent of this project, got {reference!r}")
        items = body.get("input")
        if not isinstance(items, list) or not items:
            return error(400, "invalid_request", "input: expected a non-empty array")
        with self._state:
            previous = self._replies.get(str(body.get("previous_response_id")))
            if body.get("previous_response_id") is not None:
                return self._follow_up(previous, items, reference["name"])
            for item in items:
                if item.get("type", "message") != "message" or item.get("role") not in ("user", "assistant", "system", "developer") or "content" not in item:
                    return error(400, "invalid_request", f"invalid input item {item!r}")
            prompt = request_text({"input": items})
            return self._reply(prompt, [], reference["name"], self.calls(prompt, reference["name"]), body)

    def _follow_up(self, previous: dict[str, Any] | None, items: list[Any], agent: str) -> Response:
        if previous is None:
            return error(400, "invalid_request", "previous_response_id names no response")
        answered = {item.get("call_id"): item.get("output") for item in items if item.get("type") == "function_call_output"}
        if set(answered) != set(previous["pending"]) or len(answered) != len(items):
            return error(400, "invalid_request", f"function_call_output items must answer calls {sorted(previous['pending'])}")
        outputs = previous["outputs"] + [str(answered[c]) for c in previous["pending"]]
        return self._reply(previous["prompt"], outputs, agent, [], previous["body"])

    def _reply(self, prompt: str, outputs: list[str], agent: str, calls: list[tuple[str, str]], body: dict[str, Any]) -> Response:
        reply_id = f"resp_{next(self._ids)}"
        pending = {f"call_{next(self._ids)}": (name, arguments) for name, arguments in calls}
        if pending:
            output = [{"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"}
                      for call_id, (name, arguments) in pending.items()]
            text = ""
        else:
            text = self.answer(prompt, outputs)
            output = [{"type": "message", "id": f"msg_{reply_id}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]}]
        self._replies[reply_id] = {"prompt": prompt, "outputs": outputs, "pending": list(pending), "body": body}
        words = len(prompt.split()) + sum(len(o.split()) for o in outputs)
        usage = {"input_tokens": 10 + words, "output_tokens": 5 + len(text.split()), "total_tokens": 15 + words + len(text.split()),
                 "input_tokens_details": {"cached_tokens": 4}, "output_tokens_details": {"reasoning_tokens": 0}}
        reply = {"id": reply_id, "object": "response", "created_at": 1700000000, "status": "completed", "model": body.get("model") or "gpt-4o-mini",
                 "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": body.get("tools") or [], "usage": usage,
                 "agent_reference": {"name": agent, "type": "agent_reference"}, "error": None, "incomplete_details": None}
        return Response(200, json=reply)


def function_outputs(server: FoundryServer) -> list[Any]:
    """The `input` of every follow-up request (the callbacks' answers), in order."""
    return [r.json["input"] for r in server.requests if r.path.endswith("/responses") and r.json.get("previous_response_id")]


def responses_bodies(server: FoundryServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests if r.path.endswith("/responses")]
