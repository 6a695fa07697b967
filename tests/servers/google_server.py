"""Stand-ins for Google's model APIs on an LLMServer: the Gemini API, Vertex AI (Gemini, Claude,
Llama) and the OAuth token endpoint a service account's JWT is exchanged at.

Each route checks what Google checks: the path, the `x-goog-api-key` header (Gemini API) or a
`Bearer` token this stand-in issued (Vertex), and the body's shape; it answers in the API's
format, errors included (`{"error": {"code", "message", "status"}}`). The token endpoint verifies
the JWT's RS256 signature with the service account's public key, its issuer, audience and scope.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers.llm_server import LLMServer, Recorded, Response, bag_of_words_embedding

Reply = Callable[[dict[str, Any]], Any]
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"  # the audience google-auth signs for, whatever the file's token_uri


def google_error(code: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(code, json={"error": {"code": code, "message": message, "status": STATUS.get(code, "UNKNOWN")}}, headers=headers or {})


def header(recorded: Recorded, name: str) -> str | None:
    return next((v for k, v in recorded.headers.items() if k.lower() == name), None)


def last_text(request: dict[str, Any]) -> str:
    for turn in reversed(request.get("contents") or []):
        if turn.get("role", "user") == "user":
            return "".join(str(p.get("text", "")) for p in turn.get("parts") or [])
    return ""


def candidate_reply(result: Any, request: dict[str, Any]) -> dict[str, Any]:
    """A generateContent reply: `result` is text, a list of parts, or a full reply dict."""
    if isinstance(result, dict):
        return result
    parts = [{"text": result}] if isinstance(result, str) else result
    text = "".join(str(p.get("text", "")) for p in parts)
    prompt = max(1, len(json.dumps(request.get("contents"))) // 4)
    completion = max(1, len(text) // 4)
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": prompt + completion},
        "modelVersion": "stand-in",
    }


def _bad_contents(request: Any) -> str | None:
    if not isinstance(request, dict) or not isinstance(request.get("contents"), list) or not request["contents"]:
        return "contents is not specified"
    for turn in request["contents"]:
        if turn.get("role") not in ("user", "model", "function") or not isinstance(turn.get("parts"), list):
            return f"Please use a valid role: user, model (got {turn.get('role')!r})"
    return None


def _answer(recorded: Recorded, reply: Reply | None) -> Response:
    request = recorded.json
    if problem := _bad_contents(request):
        return google_error(400, problem)
    result = reply(request) if reply else f"echo: {last_text(request)}"
    return result if isinstance(result, Response) else Response(200, json=candidate_reply(result, request))


def install_gemini(server: LLMServer, key: str, model: str, reply: Reply | None = None) -> LLMServer:
    """The Gemini API's `/v1beta/models/{model}:generateContent`, `:embedContent` and `:batchEmbedContents`."""

    def authorized(recorded: Recorded) -> Response | None:
        if header(recorded, "x-goog-api-key") != key:
            return google_error(400, "API key not valid. Please pass a valid API key.")
        return None

    def generate(recorded: Recorded) -> Response:
        return authorized(recorded) or _answer(recorded, reply)

    def embed_one(request: dict[str, Any]) -> dict[str, Any]:
        return {"values": bag_of_words_embedding("".join(p.get("text", "") for p in request["content"]["parts"]))}

    def embed(recorded: Recorded) -> Response:
        return authorized(recorded) or Response(200, json={"embedding": embed_one(recorded.json)})

    def batch(recorded: Recorded) -> Response:
        if refused := authorized(recorded):
            return refused
        requests = recorded.json.get("requests") or []
        if not requests or any(r.get("model") != f"models/{model}" for r in requests):
            return google_error(400, "* BatchEmbedContentsRequest.model: unexpected model name format")
        return Response(200, json={"embeddings": [embed_one(r) for r in requests]})

    base = f"/v1beta/models/{model}"
    server.route("POST", f"{base}:generateContent", generate)
    server.route("POST", f"{base}:embedContent", embed)
    return server.route("POST", f"{base}:batchEmbedContents", batch)


@dataclass
class TokenIssuer:
    """Credentials file whose access tokens the stand-in issues; Vertex routes accept only those."""

    path: Path
    project: str
    tokens: list[str] = field(default_factory=list, kw_only=True)

    def issue(self, lifetime: int) -> Response:
        token = f"ya29.stand-in-{secrets.token_hex(8)}"
        self.tokens.append(token)
        return Response(200, json={"access_token": token, "expires_in": lifetime, "token_type": "Bearer"})

    def authorized(self, recorded: Recorded) -> Response | None:
        auth = header(recorded, "authorization") or ""
        if not auth.startswith("Bearer ") or auth.removeprefix("Bearer ") not in self.tokens:
            return google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token.")
        return None


@dataclass
class ServiceAccount(TokenIssuer):
    """A service-account key file as `google-github-actions/auth` writes it, with its token endpoint."""

    email: str
    private_key_pem: str
    public_key: Any
    lifetime: int = 3599
    """Seconds each issued token lives (below google-auth's refresh margin: each use refreshes it)."""

    @classmethod
    def write(cls, folder: Path, server: LLMServer, project: str = "ci-project") -> ServiceAccount:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
        email = f"grader@{project}.iam.gserviceaccount.com"
        path = folder / "gha-creds-1234.json"
        path.write_text(json.dumps({
            "type": "service_account", "project_id": project, "private_key_id": "k1", "private_key": pem,
            "client_email": email, "client_id": "1", "token_uri": f"{server.url}/token",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "universe_domain": "googleapis.com",
        }))
        account = cls(path, project, email, pem, key.public_key())
        server.route("POST", "/token", account.exchange(server))
        return account

    def exchange(self, server: LLMServer) -> Callable[[Recorded], Response]:
        def handle(recorded: Recorded) -> Response:
            form = dict(urllib.parse.parse_qsl(recorded.body.decode()))
            if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
                return Response(400, json={"error": "unsupported_grant_type"})
            claims = self._verified(form.get("assertion", ""))
            if claims is None or claims.get("iss") != self.email or claims.get("aud") not in (f"{server.url}/token", GOOGLE_TOKEN_URI) or SCOPE not in str(claims.get("scope")):
                return Response(400, json={"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
            return self.issue(self.lifetime)

        return handle

    def _verified(self, assertion: str) -> dict[str, Any] | None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            header, payload, signature = assertion.split(".")
            self.public_key.verify(_unb64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
            claims: dict[str, Any] = json.loads(_unb64(payload))
        except (ValueError, InvalidSignature):
            return None
        return claims if json.loads(_unb64(header)).get("alg") == "RS256" and claims.get("exp", 0) > time.time() else None


@dataclass
class WorkloadIdentity(TokenIssuer):
    """A workload identity federation config as `google-github-actions/auth` writes it (direct
    access, no service account): GitHub's OIDC token, fetched from the runner's token URL with
    its request token, traded at Security Token Service (`POST /v1/token`) for an access token."""

    audience: str
    request_token: str
    oidc_token: str

    @classmethod
    def write(cls, folder: Path, server: LLMServer, project: str = "ci-project") -> WorkloadIdentity:
        audience = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/github/providers/ci"
        identity = cls(folder / "gha-creds-wif.json", project, audience, f"gh-request-{secrets.token_hex(8)}", f"eyJ.gh-oidc.{secrets.token_hex(8)}")
        identity.path.write_text(json.dumps({
            "type": "external_account", "audience": audience, "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": f"{server.url}/v1/token",
            "credential_source": {
                "url": f"{server.url}/actions/oidc?audience=https://iam.googleapis.com/{audience.removeprefix('//iam.googleapis.com/')}",
                "headers": {"Authorization": f"Bearer {identity.request_token}"},
                "format": {"type": "json", "subject_token_field_name": "value"},
            },
        }))
        server.route("GET", "/actions/oidc", identity.oidc)
        server.route("POST", "/v1/token", identity.exchange)
        return identity

    def oidc(self, recorded: Recorded) -> Response:
        if header(recorded, "authorization") != f"Bearer {self.request_token}":
            return Response(401, json={"message": "bad request token"})
        return Response(200, json={"count": 1, "value": self.oidc_token})

    def exchange(self, recorded: Recorded) -> Response:
        form = dict(urllib.parse.parse_qsl(recorded.body.decode()))
        expected = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": self.audience,
            "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "subject_token": self.oidc_token,
        }
        if any(form.get(k) != v for k, v in expected.items()) or SCOPE not in form.get("scope", ""):
            return Response(400, json={"error": "invalid_grant", "error_description": "The token exchange request is invalid."})
        return self.issue(3599)


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def install_vertex(server: LLMServer, account: TokenIssuer, model: str, reply: Reply | None = None, region: str = "us-central1") -> LLMServer:
    """Vertex AI's Gemini `generateContent` and embedding `predict` for `model`, behind the account's tokens."""
    base = f"/v1/projects/{account.project}/locations/{region}/publishers/google/models/{model}"

    def generate(recorded: Recorded) -> Response:
        return account.authorized(recorded) or _answer(recorded, reply)

    def predict(recorded: Recorded) -> Response:
        if refused := account.authorized(recorded):
            return refused
        instances = recorded.json.get("instances") or []
        if not instances or not all(isinstance(i.get("content"), str) for i in instances):
            return google_error(400, "instances[0].content is required")
        return Response(200, json={"predictions": [
            {"embeddings": {"values": bag_of_words_embedding(i["content"]), "statistics": {"token_count": len(i["content"].split()), "truncated": False}}}
            for i in instances
        ]})

    server.route("POST", f"{base}:generateContent", generate)
    return server.route("POST", f"{base}:predict", predict)


def install_vertex_claude(server: LLMServer, account: ServiceAccount, model: str, reply: Reply | None = None, region: str = "us-east5") -> LLMServer:
    """Claude on Vertex AI: Anthropic's Messages body at `:rawPredict`, with `anthropic_version` and no model."""

    def handle(recorded: Recorded) -> Response:
        if refused := account.authorized(recorded):
            return refused
        body = recorded.json
        if body.get("anthropic_version") != "vertex-2023-10-16" or "model" in body or not body.get("messages"):
            return Response(400, json={"type": "error", "error": {"type": "invalid_request_error", "message": "anthropic_version: vertex-2023-10-16 required, model not allowed"}})
        text = reply(body) if reply else f"echo: {body['messages'][-1]['content']}"
        if isinstance(text, Response):
            return text
        return Response(200, json={
            "id": "msg_vrtx", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        })

    path = f"/v1/projects/{account.project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict"
    return server.route("POST", path, handle)


def install_vertex_maas(server: LLMServer, account: ServiceAccount, model: str, reply: Reply | None = None, region: str = "us-central1") -> LLMServer:
    """Vertex AI's OpenAI-compatible endpoint for model-as-a-service models: Chat Completions with the
    model as `<publisher>/<model>`, behind the account's tokens; Google's error format."""

    def handle(recorded: Recorded) -> Response:
        if refused := account.authorized(recorded):
            return refused
        body = recorded.json
        if body.get("model") != model:
            return google_error(404, f"Publisher model {body.get('model')!r} was not found or your project does not have access to it.")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and m.get("role") and "content" in m for m in messages):
            return google_error(400, "messages: each message needs a role and content")
        text = reply(body) if reply else f"echo: {messages[-1]['content']}"
        if isinstance(text, Response):
            return text
        return Response(200, json={
            "id": "chatcmpl-vrtx", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        })

    path = f"/v1/projects/{account.project}/locations/{region}/endpoints/openapi/chat/completions"
    return server.route("POST", path, handle)
