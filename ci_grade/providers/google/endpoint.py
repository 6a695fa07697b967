"""The Gemini API's endpoint for a `google:` config (chat, embeddings, Live, Imagen alike):
`https://{apiHost}` from `config.apiHost`, GOOGLE_API_HOST or PALM_API_HOST, else
`config.apiBaseUrl` or GOOGLE_API_BASE_URL as given, else Google's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEFAULT_HOST = "generativelanguage.googleapis.com"


def base_url(config: dict[str, Any], env_value: Callable[..., str | None]) -> str:
    """The Gemini API's endpoint for a config (see the module's docstring)."""
    host = config.get("apiHost") or env_value("GOOGLE_API_HOST", "PALM_API_HOST")
    if host:
        host = str(host).rstrip("/")
        return host if host.startswith(("http://", "https://")) else f"https://{host}"
    return str(config.get("apiBaseUrl") or env_value("GOOGLE_API_BASE_URL") or f"https://{DEFAULT_HOST}").rstrip("/")
