"""A With Pi reply that is not JSON is quoted in the reason, cut to 120 characters."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers import pi_server
from tests.servers.llm_server import LLMServer, Response
from tests.test_model_graded_pi import KEY, QUESTION, by_output, grade


def test_a_body_that_is_not_json_is_quoted_up_to_120_characters(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WITHPI_API_KEY", KEY)
    monkeypatch.setenv("WITHPI_API_BASE_URL", pi_server.base_url(llm_server))
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    pi_server.install(llm_server, by_output, api_key=KEY)
    body = "<html>" + "maintenance " * 30 + "</html>"
    llm_server.route("POST", pi_server.PATH, lambda rec: Response(200, body=body.encode(), headers={"Content-Type": "text/html"}))
    _, (result,) = grade(tmp_path, "x", {"type": "pi", "value": QUESTION})
    assert result.status == "error"
    shown = body[:119] + "…"  # 120 characters with the mark
    assert result.reason == f"Pi scoring API returned a body that is not JSON: {shown!r} (gave up after 1 attempts)"
