"""Which values of a config the redactor collects as secrets: credentials under provider
`config` and `headers`, and nothing that merely looks like an auth key elsewhere."""

from __future__ import annotations

from ci_grade.redact import Redactor


def test_an_auth_header_is_collected() -> None:
    redactor = Redactor([])
    redactor.collect({"providers": [{"id": "http", "headers": {"Authorization": "Bearer abcdef123456"}}]})
    assert "abcdef123456" not in redactor.text("sent Bearer abcdef123456")
