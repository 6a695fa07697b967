"""A stand-in web chat on loopback for the `browser` provider: `/` is a page with a text box
(`#chat-input`), a send button (`#send-button`) and a message list (`#messages`) where, two seconds after
a message is sent, a reply appears (`.reply`, "You said: ...", and the `user` cookie when set);
`/login?user=NAME` sets that cookie (for a browser whose session already exists). Every request's
path and `Cookie` header are recorded."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Stand-in chat</title></head>
<body>
<ul id="messages"></ul>
<input id="chat-input" autocomplete="off"><button id="send-button">Send</button>
<script>
const input = document.getElementById('chat-input');
function send() {
  const text = input.value;
  const mine = document.createElement('li');
  mine.className = 'mine';
  mine.textContent = text;
  document.getElementById('messages').appendChild(mine);
  input.value = '';
  setTimeout(() => {
    const reply = document.createElement('li');
    reply.className = 'reply';
    const user = document.cookie.split('; ').find((c) => c.startsWith('user='));
    reply.textContent = `You said: ${text}` + (user ? ` (signed in as ${user.slice(5)})` : '');
    document.getElementById('messages').appendChild(reply);
  }, 2000);
}
document.getElementById('send-button').addEventListener('click', send);
input.addEventListener('keydown', (event) => { if (event.key === 'Enter') send(); });
</script>
</body></html>
"""


class ChatPageServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                owner.requests.append((url.path, self.headers.get("Cookie")))
                headers = [("Content-Type", "text/html; charset=utf-8")]
                if url.path == "/login":
                    user = parse_qs(url.query).get("user", ["someone"])[0]
                    headers.append(("Set-Cookie", f"user={user}; Path=/"))
                    body = f"<p id='welcome'>Welcome {user}</p>".encode()
                elif url.path == "/":
                    body = PAGE.encode()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ChatPageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
