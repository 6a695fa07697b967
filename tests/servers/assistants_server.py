"""A stand-in for the Assistants API (threads, runs, steps, messages) of OpenAI (`/v1`, a
`Bearer` key) and Azure OpenAI (`/openai`, an `api-key` header and an `api-version` query).

Every request must carry the key and `OpenAI-Beta: assistants=v2`, as the real APIs require.

- `POST {prefix}/threads/runs` starts a thread and a run (`assistant_id` must be known; the
  thread's messages need a role (`user`/`assistant`) and content; tools need a known type). The
  run is `queued`; each read advances it (`polls` reads in progress first).
- `GET {prefix}/threads/{t}/runs/{r}`: the run. When `calls(prompt, tools)` names function
  calls, the run stops at `requires_action` with them; `POST .../submit_tool_outputs` must answer
  exactly those call ids, and the next read completes the run with `answer(prompt, outputs)`.
  A `file_search` tool adds a file search step. `fail_with` ends runs with that `last_error`.
- `GET {prefix}/threads/{t}/runs/{r}/steps` and `GET {prefix}/threads/{t}/messages`: lists.
"""

from __future__ import annotations

import itertools
import re
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response

_PATH = re.compile(r"/(v1|openai)/threads(?:/(runs)|/([^/]+)/(runs|messages)(?:/([^/]+)(?:/(steps|submit_tool_outputs))?)?)")


def api_error(status: int, message: str) -> Response:
    return Response(status, json={"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})


class AssistantsServer(LLMServer):
    """The Assistants API on one loopback port (OpenAI's and Azure's paths)."""

    def __init__(self, key: str, assistants: tuple[str, ...] = ("asst_test",)) -> None:
        super().__init__()
        self.key = key
        self.assistants = set(assistants)
        self.polls = 0
        self.calls: Callable[[str, list[dict[str, Any]]], list[tuple[str, str]]] = lambda prompt, tools: []
        """The function calls (name, JSON arguments) the assistant makes for a prompt."""
        self.answer: Callable[[str, list[str]], str] = lambda prompt, outputs: f"echo: {prompt}" + "".join(f" | {o}" for o in outputs)
        self.fail_with: dict[str, str] | None = None
        self.threads: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._state = threading.Lock()

    def new_id(self, kind: str) -> str:
        return f"{kind}_{next(self._ids)}"

    def handle(self, recorded: Recorded) -> Any:
        path, _, query = recorded.path.partition("?")
        found = _PATH.fullmatch(path)
        if found is None:
            return super().handle(recorded)
        prefix, create, thread_id, collection, item, action = found.groups()
        if denied := self._denied(recorded, prefix, dict(urllib.parse.parse_qsl(query))):
            return denied
        with self._state:
            if create and recorded.method == "POST":
                return self._create_and_run(recorded.json)
            thread = self.threads.get(thread_id or "")
            if thread is None:
                return api_error(404, f"No thread found with id '{thread_id}'.")
            if collection == "messages" and recorded.method == "GET" and not item:
                return Response(200, json=_listing(thread["messages"]))
            run = thread["runs"].get(item or "")
            if collection != "runs" or run is None:
                return api_error(404, f"No run found with id '{item}'.")
            if action == "steps" and recorded.method == "GET":
                return Response(200, json=_listing(run["steps"]))
            if action == "submit_tool_outputs" and recorded.method == "POST":
                return self._submit(thread, run, recorded.json)
            if action is None and recorded.method == "GET":
                self._advance(thread, run)
                return Response(200, json=run["public"])
        return api_error(404, f"no route for {recorded.method} {path}")

    def _denied(self, recorded: Recorded, prefix: str, query: dict[str, str]) -> Response | None:
        if prefix == "v1" and recorded.headers.get("authorization") != f"Bearer {self.key}":
            return api_error(401, "Incorrect API key provided.")
        if prefix == "openai":
            if recorded.headers.get("api-key") != self.key:
                return Response(401, json={"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}})
            if not query.get("api-version"):
                return Response(404, json={"error": {"code": "404", "message": "Resource not found"}})
        if recorded.headers.get("openai-beta") != "assistants=v2":
            return api_error(400, "You must provide the 'OpenAI-Beta' header to access the Assistants API.")
        return None

    def _create_and_run(self, body: Any) -> Response:
        if not isinstance(body, dict) or body.get("assistant_id") not in self.assistants:
            return api_error(404, f"No assistant found with id '{body.get('assistant_id') if isinstance(body, dict) else None}'.")
        messages = (body.get("thread") or {}).get("messages")
        if not isinstance(messages, list) or not messages:
            return api_error(400, "thread.messages: expected a non-empty array")
        for message in messages:
            if message.get("role") not in ("user", "assistant") or not isinstance(message.get("content"), str | list):
                return api_error(400, "Invalid value for 'role' or 'content' in thread.messages.")
        tools = body.get("tools") or []
        if any(t.get("type") not in ("function", "file_search", "code_interpreter") for t in tools):
            return api_error(400, "Invalid value for 'tools[].type'.")
        thread_id, run_id = self.new_id("thread"), self.new_id("run")
        stored = [self._message(thread_id, None, m["role"], m["content"] if isinstance(m["content"], str) else str(m["content"])) for m in messages]
        prompt = str(messages[-1]["content"])
        run = {"public": {
            "id": run_id, "object": "thread.run", "created_at": 1700000000, "thread_id": thread_id, "assistant_id": body["assistant_id"],
            "status": "queued", "required_action": None, "last_error": None, "model": body.get("model") or "gpt-4o-mini",
            "instructions": body.get("instructions") or "", "tools": tools, "usage": None, "temperature": body.get("temperature"),
        }, "prompt": prompt, "tools": tools, "body": body, "steps": [], "reads": 0, "pending": [], "outputs": []}
        self.threads[thread_id] = {"messages": stored, "runs": {run_id: run}}
        return Response(200, json=run["public"])

    def _message(self, thread_id: str, run_id: str | None, role: str, text: str) -> dict[str, Any]:
        return {"id": self.new_id("msg"), "object": "thread.message", "created_at": 1700000000 + next(self._ids), "thread_id": thread_id, "run_id": run_id,
                "role": role, "content": [{"type": "text", "text": {"value": text, "annotations": []}}], "attachments": [], "metadata": {}}

    def _step(self, run: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
        public = run["public"]
        step = {"id": self.new_id("step"), "object": "thread.run.step", "created_at": 1700000000, "run_id": public["id"], "thread_id": public["thread_id"],
                "assistant_id": public["assistant_id"], "type": details["type"], "status": "completed", "step_details": details}
        run["steps"].append(step)
        return step

    def _advance(self, thread: dict[str, Any], run: dict[str, Any]) -> None:
        public = run["public"]
        if public["status"] not in ("queued", "in_progress"):
            return
        run["reads"] += 1
        if run["reads"] <= self.polls:
            public["status"] = "in_progress"
            return
        if self.fail_with is not None:
            public.update(status="failed", last_error=dict(self.fail_with))
            return
        if not run["steps"] and any(t.get("type") == "file_search" for t in run["tools"]):
            self._step(run, {"type": "tool_calls", "tool_calls": [{"id": self.new_id("call"), "type": "file_search", "file_search": {"results": []}}]})
        calls = self.calls(run["prompt"], run["tools"]) if not run["outputs"] else []
        if calls:
            tool_calls = [{"id": self.new_id("call"), "type": "function", "function": {"name": name, "arguments": arguments}} for name, arguments in calls]
            run["pending"] = tool_calls
            self._step(run, {"type": "tool_calls", "tool_calls": [{**c, "function": {**c["function"], "output": None}} for c in tool_calls]})
            public.update(status="requires_action", required_action={"type": "submit_tool_outputs", "submit_tool_outputs": {"tool_calls": tool_calls}})
            return
        message = self._message(public["thread_id"], public["id"], "assistant", self.answer(run["prompt"], run["outputs"]))
        thread["messages"].append(message)
        self._step(run, {"type": "message_creation", "message_creation": {"message_id": message["id"]}})
        public.update(status="completed", required_action=None, usage={"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50})

    def _submit(self, thread: dict[str, Any], run: dict[str, Any], body: Any) -> Response:
        public = run["public"]
        if public["status"] != "requires_action":
            return api_error(400, f"Runs in status \"{public['status']}\" do not accept tool outputs.")
        outputs = (body or {}).get("tool_outputs") if isinstance(body, dict) else None
        expected = {c["id"] for c in run["pending"]}
        if not isinstance(outputs, list) or {o.get("tool_call_id") for o in outputs} != expected or not all(isinstance(o.get("output"), str) for o in outputs):
            return api_error(400, f"Expected tool outputs for call_ids {sorted(expected)}, got {outputs!r}")
        by_id = {o["tool_call_id"]: o["output"] for o in outputs}
        for call in run["steps"][-1]["step_details"]["tool_calls"]:
            call["function"]["output"] = by_id[call["id"]]
        run["outputs"] = [by_id[c["id"]] for c in run["pending"]]
        public.update(status="queued", required_action=None)
        return Response(200, json=public)


def _listing(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "list", "data": items, "first_id": items[0]["id"] if items else None, "last_id": items[-1]["id"] if items else None, "has_more": False}
