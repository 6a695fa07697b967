"""A GitHub REST stand-in on loopback: the endpoints PyGithub calls for the sticky PR comment.

Serves `GET /repos/{o}/{r}`, `GET /repos/{o}/{r}/issues/{n}` (and `/pulls/{n}`), `GET
/repos/{o}/{r}/pulls` (open pull requests by `head`, seeded with `add_pull`), `GET`/`POST
/repos/{o}/{r}/issues/{n}/comments` (paginated with `Link` headers like GitHub), `PATCH` and
`DELETE /repos/{o}/{r}/issues/comments/{id}` and `GET /user`. Every request must carry a known
token; requests are recorded; faults (status + message, a number of times) can be injected.
It is safe under concurrent clients (one lock over its state), and `hold_listings(n)` makes the
first `n` comment listings wait for one another, so `n` racing clients all see the same thread
(before any of them has posted).

Identities: `user_login=None` makes `token` behave like the Actions `GITHUB_TOKEN`: `GET /user`
is refused (403) and comments are written by `github-actions[bot]`; a login behaves like a
personal token. `add_token` adds more: other users, or a GitHub App's installation token (`GET
/user` refused, comments by `<app>[bot]`). Only a comment's author may edit or delete it.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

BOT_LOGIN = "github-actions[bot]"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    message: str
    times: int | None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    lose_reply: bool = False


@dataclass
class GitHubServer:
    """Start with `with GitHubServer(...) as gh:`; `gh.api_url` is the REST base URL."""

    token: str = "ghs_standInToken0123456789"
    repository: str = "octo/demo"
    user_login: str | None = None
    max_per_page: int = 100
    tls: ssl.SSLContext | None = None
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    _faults: list[_Fault] = field(default_factory=list)
    _next_id: int = 1000
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _tokens: dict[str, tuple[str, bool]] = field(default_factory=dict)
    _barrier: threading.Barrier | None = None
    _held: int = 0

    def __enter__(self) -> GitHubServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                server._handle(self, "GET")

            def do_POST(self) -> None:
                server._handle(self, "POST")

            def do_PATCH(self) -> None:
                server._handle(self, "PATCH")

            def do_DELETE(self) -> None:
                server._handle(self, "DELETE")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls is not None:  # HTTPS (a GitHub Enterprise Server with its own CA)
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def api_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self.tls is not None else 'http'}://{host}:{port}"

    @property
    def author(self) -> str:
        return self.user_login or BOT_LOGIN

    def add_token(self, token: str, login: str, *, app: bool = False) -> None:
        """Accept `token` as `login`: a user (reads `GET /user`) or, with `app`, an installation token."""
        self._tokens[token] = (login, not app)

    def hold_listings(self, count: int, timeout: float = 30.0) -> None:
        """Make the next `count` comment listings wait until all `count` have arrived; each is
        answered with the thread as it was when it arrived."""
        self._barrier = threading.Barrier(count, timeout=timeout)
        self._held = count

    def add_pull(self, number: int, head_label: str, head_sha: str, state: str = "open") -> None:
        """Open pull request `number` whose head is `head_label` (`owner:branch`) at `head_sha`."""
        owner, branch = head_label.split(":", 1)
        name = self.repository.split("/")[1]
        self.pulls[number] = {
            "number": number,
            "state": state,
            "url": f"{self.api_url}/repos/{self.repository}/pulls/{number}",
            "head": {"label": head_label, "ref": branch, "sha": head_sha, "repo": {"full_name": f"{owner}/{name}", "name": name}},
            "base": {"label": f"{self.repository.split('/')[0]}:main", "ref": "main", "sha": "0" * 40},
        }

    def add_comment(self, number: int, body: str, login: str) -> dict[str, Any]:
        """Seed a comment written by `login`."""
        with self._lock:
            return self._new_comment(number, body, login)

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int = 403,
        message: str = "Resource not accessible by integration",
        times: int | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer matching requests with `status` (`times` times, or always), with GitHub's error
        body or, given `raw`, those bytes as the body (a malformed reply), and `headers` (say
        `Retry-After`, as GitHub's rate limits send)."""
        self._faults.append(_Fault(method, re.compile(path_regex), status, message, times, raw, dict(headers or {})))

    def lose_replies(self, method: str, path_regex: str, times: int = 1) -> None:
        """Carry out matching requests (`times` times) but close the connection instead of
        replying: the reply lost on the way, after GitHub did what was asked."""
        self._faults.append(_Fault(method, re.compile(path_regex), 0, "", times, lose_reply=True))

    def calls(self, method: str, path_regex: str = "") -> list[Request]:
        pattern = re.compile(path_regex)
        return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    def _new_comment(self, number: int, body: str, login: str) -> dict[str, Any]:
        self._next_id += 1
        cid = self._next_id
        owner_repo = self.repository
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.api_url}/repos/{owner_repo}/issues/comments/{cid}",
            "html_url": f"https://github.example/{owner_repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.api_url}/repos/{owner_repo}/issues/{number}",
            "body": body,
            "user": {"login": login, "id": sum(map(ord, login)), "type": "Bot" if login.endswith("[bot]") else "User"},
            "created_at": _timestamp(cid),
            "updated_at": _timestamp(cid),
            "author_association": "NONE",
        }
        self.comments.setdefault(number, []).append(comment)
        return comment

    # --- request handling -------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = Request(method, parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}, dict(handler.headers.items()), body)
        with self._lock:
            self.requests.append(request)
            lost = self._take_lost(request)
            status, payload, headers = self._route(request)
            held = self._barrier is not None and self._held > 0 and method == "GET" and parts.path.endswith("/comments")
            self._held -= held
        if lost:
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if held and self._barrier is not None:
            self._barrier.wait()  # answered as the thread was when it asked, sent once all have asked
        data = b"" if status == 204 else payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        if status != 204:
            handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _take_lost(self, request: Request) -> bool:
        for fault in self._faults:
            if fault.lose_reply and fault.method == request.method and fault.pattern.search(request.path) and fault.times != 0:
                if fault.times is not None:
                    fault.times -= 1
                return True
        return False

    def identity(self, token: str) -> tuple[str, bool] | None:
        """(login, whether `GET /user` answers) for a token, or None for an unknown one."""
        if token == self.token:
            return self.author, self.user_login is not None
        return self._tokens.get(token)

    def _route(self, request: Request) -> tuple[int, Any, dict[str, str]]:
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        identity = self.identity(credential) if scheme.lower() in ("token", "bearer") else None
        if identity is None:
            return 401, {"message": "Bad credentials"}, {}
        login, reads_user = identity
        for fault in self._faults:
            if not fault.lose_reply and fault.method == request.method and fault.pattern.search(request.path) and fault.times != 0:
                if fault.times is not None:
                    fault.times -= 1
                return fault.status, fault.raw if fault.raw is not None else {"message": fault.message}, fault.headers
        repo = re.escape(self.repository)
        path = request.path
        if request.method == "GET" and path == "/user":
            if not reads_user:
                return 403, {"message": "Resource not accessible by integration"}, {}
            return 200, {"login": login, "id": 1, "type": "User"}, {}
        if request.method == "GET" and re.fullmatch(f"/repos/{repo}/pulls", path):  # GitHub's filters: state, head
            state, head = request.query.get("state", "open"), request.query.get("head")
            listed = [pull for _, pull in sorted(self.pulls.items()) if (state == "all" or pull["state"] == state) and (head is None or pull["head"]["label"] == head)]
            return 200, listed, {}
        if request.method == "GET" and re.fullmatch(f"/repos/{repo}", path):
            return 200, self._repo_json(), {}
        if request.method == "GET" and (m := re.fullmatch(f"/repos/{repo}/(issues|pulls)/(\\d+)", path)):
            number = int(m[2])
            if m[1] == "pulls" and number in self.pulls:
                return 200, {**self._issue_json(number), **self.pulls[number]}, {}
            return 200, self._issue_json(number), {}
        if m := re.fullmatch(f"/repos/{repo}/issues/(\\d+)/comments", path):
            number = int(m[1])
            if request.method == "GET":
                return self._page(number, request)
            if request.method == "POST":
                text = (request.json or {}).get("body")
                if not isinstance(text, str):
                    return 422, {"message": "Invalid request: body is required"}, {}
                if len(text) > 65536:
                    return 422, {"message": "Body is too long (maximum is 65536 characters)"}, {}
                return 201, self._new_comment(number, text, login), {}
        if request.method in ("PATCH", "DELETE") and (m := re.fullmatch(f"/repos/{repo}/issues/comments/(\\d+)", path)):
            for thread in self.comments.values():
                for comment in thread:
                    if comment["id"] == int(m[1]):
                        return self._change(request, thread, comment, login)
        return 404, {"message": "Not Found"}, {}

    def _change(self, request: Request, thread: list[dict[str, Any]], comment: dict[str, Any], login: str) -> tuple[int, Any, dict[str, str]]:
        if comment["user"]["login"] != login:
            return 403, {"message": "Must have admin rights to Repository."}, {}
        if request.method == "DELETE":
            thread.remove(comment)
            return 204, None, {}
        text = (request.json or {}).get("body")
        if not isinstance(text, str) or len(text) > 65536:
            return 422, {"message": "Invalid comment body"}, {}
        comment["body"] = text
        comment["updated_at"] = "2026-11-21T11:00:00Z"
        return 200, comment, {}

    def _page(self, number: int, request: Request) -> tuple[int, Any, dict[str, str]]:
        thread = self.comments.get(number, [])
        per_page = min(int(request.query.get("per_page", "30")), self.max_per_page)
        page = max(1, int(request.query.get("page", "1")))
        last = max(1, -(-len(thread) // per_page))
        items = thread[(page - 1) * per_page : page * per_page]
        base = f"{self.api_url}{request.path}"
        links = []
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{base}?per_page={per_page}&page=1>; rel="first"')
            links.append(f'<{base}?per_page={per_page}&page={page - 1}>; rel="prev"')
        return 200, items, ({"Link": ", ".join(links)} if links else {})

    def _repo_json(self) -> dict[str, Any]:
        owner, name = self.repository.split("/")
        return {
            "id": 1,
            "name": name,
            "full_name": self.repository,
            "owner": {"login": owner, "id": 2, "type": "Organization"},
            "url": f"{self.api_url}/repos/{self.repository}",
            "html_url": f"https://github.example/{self.repository}",
            "private": False,
        }

    def _issue_json(self, number: int) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{self.repository}/issues/{number}"
        return {
            "id": 5000 + number,
            "number": number,
            "title": f"PR {number}",
            "state": "open",
            "url": url,
            "comments_url": f"{url}/comments",
            "html_url": f"https://github.example/{self.repository}/pull/{number}",
            "comments": len(self.comments.get(number, [])),
            "pull_request": {"url": f"{self.api_url}/repos/{self.repository}/pulls/{number}"},
            "user": {"login": "contributor", "id": 3, "type": "User"},
        }


def _timestamp(comment_id: int) -> str:
    """A creation time that grows with the id, as GitHub's do."""
    seconds = comment_id - 1000
    return f"2026-11-21T{10 + seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"
