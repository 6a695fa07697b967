"""Which values of a config the redactor collects as secrets: auth-like keys under a provider's
`config` or `headers`, but not the same keys elsewhere (test metadata is not a credential)."""

from __future__ import annotations

from ci_grade.redact import Redactor, is_auth_key, is_secret_name


def test_an_auth_like_header_is_collected_but_not_the_same_key_elsewhere() -> None:
    assert is_auth_key("X-Custom-Auth") and not is_secret_name("X-Custom-Auth")
    redactor = Redactor([])
    redactor.collect({
        "providers": [{"id": "https://api.example.invalid/chat", "headers": {"X-Custom-Auth": "Tk9-secret-Value"}}],
        "tests": [{"metadata": {"X-Custom-Auth": "Zq8-visible-Value"}}],
    })
    masked = redactor.text("sent Tk9-secret-Value for Zq8-visible-Value")
    assert "Tk9-secret-Value" not in masked
    assert "Zq8-visible-Value" in masked
