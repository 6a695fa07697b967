"""Vertex AI's project, region, endpoint and Application Default Credentials, read as promptfoo reads them.

Credentials: `config.credentials` (service-account JSON as text, a mapping or a `file://` path),
else `config.keyFilename`, else GOOGLE_APPLICATION_CREDENTIALS (the file `google-github-actions/auth`
writes: a service-account key or a workload identity federation config), each read by
`google-auth`; else google-auth's own default chain. Project: `config.projectId`,
VERTEX_PROJECT_ID, GOOGLE_PROJECT_ID, GOOGLE_CLOUD_PROJECT, then the credentials' own project.
Region: `config.region`, VERTEX_REGION, GOOGLE_CLOUD_LOCATION, else `us-central1`.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_grade.errors import ProviderError

if TYPE_CHECKING:
    from ci_grade.config.models import ProviderSpec

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
MISSING_AUTH = "the google-auth package is not installed: pip install 'ci-grade[google]'"


class VertexAuth:
    """One provider's credentials, loaded on first use and refreshed off the event loop."""

    def __init__(self, config: Mapping[str, Any], env: Mapping[str, str], base_dir: Path | None):
        self.config = config
        self.env = env
        self.base_dir = base_dir
        self._credentials: Any = None
        self._failure: str | None = None
        """Why the credentials could not be loaded: said again for every later call, without
        another search (Application Default Credentials probe the metadata server, seconds each)."""
        self._project: str | None = None
        self._lock = asyncio.Lock()

    def region(self) -> str:
        return str(self.config.get("region") or _first(self.env, "VERTEX_REGION", "GOOGLE_CLOUD_LOCATION") or "us-central1")

    def base_url(self) -> str:
        """`https://{apiHost}` (`config.apiHost`, VERTEX_API_HOST; a value with a scheme is used as
        given), else the region's endpoint."""
        host = self.config.get("apiHost") or _first(self.env, "VERTEX_API_HOST")
        if host:
            host = str(host).rstrip("/")
            return host if host.startswith(("http://", "https://")) else f"https://{host}"
        region = self.region()
        return "https://aiplatform.googleapis.com" if region == "global" else f"https://{region}-aiplatform.googleapis.com"

    def api_version(self) -> str:
        return str(self.config.get("apiVersion") or _first(self.env, "VERTEX_API_VERSION") or "v1")

    def credentials(self) -> Any:
        """The google-auth credentials (loaded from a file or JSON, else Application Default
        Credentials); a failure is remembered."""
        if self._failure is not None:
            raise ProviderError(self._failure)
        if self._credentials is None:
            try:
                import google.auth
                from google.auth import exceptions
            except ImportError:
                raise ProviderError(MISSING_AUTH) from None
            try:
                info = self._inline_credentials()
                path = self.config.get("keyFilename") or _first(self.env, "GOOGLE_APPLICATION_CREDENTIALS")
                if info is None and path:
                    info = _json_object(self._path(str(path)).read_text(encoding="utf-8"), "the credentials file")
                if info is not None:
                    self._credentials, self._project = _from_info(info), info.get("project_id")
                else:
                    self._credentials, self._project = google.auth.default(scopes=SCOPES)
            except (exceptions.GoogleAuthError, OSError, ValueError) as exc:
                self._failure = f"Google credentials could not be loaded: {exc}"
                raise ProviderError(self._failure) from None
        return self._credentials

    def project(self) -> str:
        configured = self.config.get("projectId") or _first(self.env, "VERTEX_PROJECT_ID", "GOOGLE_PROJECT_ID", "GOOGLE_CLOUD_PROJECT")
        if configured:
            return str(configured)
        self.credentials()
        if not self._project:
            raise ProviderError("Vertex AI project is not set: set config.projectId, VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT")
        return self._project

    async def token(self) -> str:
        """A valid access token: refreshed through google-auth in a worker thread when expired."""
        credentials = self.credentials()
        async with self._lock:
            if not credentials.valid:
                from google.auth import exceptions
                from google.auth.transport.requests import Request

                try:
                    await asyncio.to_thread(credentials.refresh, Request())
                except exceptions.GoogleAuthError as exc:
                    raise ProviderError(f"Google authentication failed: {exc}") from None
        return str(credentials.token)

    def _inline_credentials(self) -> dict[str, Any] | None:
        value = self.config.get("credentials")
        if value is None:
            return None
        if isinstance(value, dict):
            return value
        text = str(value)
        if text.startswith("file://"):
            text = self._path(text.removeprefix("file://")).read_text(encoding="utf-8")
        return _json_object(text, "config.credentials")

    def _path(self, path: str) -> Path:
        resolved = Path(path).expanduser()
        return resolved if resolved.is_absolute() or self.base_dir is None else self.base_dir / resolved


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not a JSON object")
    return data


def _from_info(info: dict[str, Any]) -> Any:
    """Credentials of the kind the JSON declares: a service-account key, a workload identity
    federation config (what `google-github-actions/auth` writes for it) or a user's credentials."""
    kind = info.get("type")
    if kind == "service_account":
        from google.oauth2 import service_account

        return service_account.Credentials.from_service_account_info(info, scopes=SCOPES)  # type: ignore[no-untyped-call]
    if kind == "external_account":
        from google.auth import identity_pool

        return identity_pool.Credentials.from_info(info, scopes=SCOPES)  # type: ignore[no-untyped-call]
    if kind == "authorized_user":
        from google.oauth2 import credentials

        return credentials.Credentials.from_authorized_user_info(info, scopes=SCOPES)  # type: ignore[no-untyped-call]
    raise ValueError(f"credentials of type {kind!r} are not supported (service_account, external_account, authorized_user)")


def _first(env: Mapping[str, str], *names: str) -> str | None:
    return next((env[name] for name in names if env.get(name)), None)


class VertexAuthed:
    """Mixed into a Vertex AI provider (`class X(VertexAuthed, SomeProvider)`): its `auth`, made on
    first use, after the registry has set `base_dir` (a relative key file is the config's)."""

    spec: ProviderSpec
    env: Mapping[str, str]
    base_dir: Path | None

    @functools.cached_property
    def auth(self) -> VertexAuth:
        return VertexAuth(self.spec.config, self.env, self.base_dir)
