"""Secret masking itself: which values are secrets, every spelling they are written in, secret-named
fields in data, and the redactor each sink uses (tests/reliability/test_secrets.py runs it end to end)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ci_grade import redact
from ci_grade.redact import MASK, Redactor, is_auth_key, is_secret_name


@pytest.mark.parametrize(("secret", "masked"), [("abc12", False), ("abc123", True), ("abcdefgh123", True), ("abcdefgh1234", True)])
def test_a_secret_is_six_characters_or_more(secret: str, masked: bool) -> None:
    redactor = Redactor([secret, f"  {secret}  "])
    assert redactor.text(f"key={secret}.") == ("key=***." if masked else f"key={secret}.")


def test_json_escaped_and_csv_quoted_spellings_are_masked() -> None:
    secret = 'p"ss\\w0rd\n!'
    redactor = Redactor([secret])
    as_json = json.dumps({"error": f"rejected {secret}"})
    assert secret not in redactor.text(as_json) and json.loads(redactor.text(as_json)) == {"error": "rejected ***"}
    cell = io.StringIO()
    csv.writer(cell).writerow([f"rejected {secret}"])
    assert list(csv.reader(io.StringIO(redactor.text(cell.getvalue())))) == [["rejected ***"]]
    heard: list[str] = []
    redactor.listen(heard.append)
    assert sorted(heard) == sorted({secret, json.dumps(secret)[1:-1], secret.replace('"', '""')})


def test_the_longest_secret_is_masked_whole() -> None:
    redactor = Redactor(["abcdef", "abcdefghij"])
    assert redactor.text("abcdefghij and abcdef") == "*** and ***"


def test_listeners_hear_each_new_secret_once() -> None:
    redactor = Redactor(["first-secret"])
    heard: list[str] = []
    redactor.listen(heard.append)
    redactor.add(["second-secret", "first-secret", "tiny", ""])
    assert heard == ["first-secret", "second-secret"]


def test_authorization_values_and_their_token_are_learned_from_config() -> None:
    redactor = Redactor()
    config = {"providers": [{"id": "http", "config": {"headers": {"Authorization": "Bearer tok-123456789", "X-Trace": "trace-abcdef"}}}],
              "defaultTest": {"options": {"provider": {"config": {"apiKey": "sk-grader-1234"}}}}}
    redactor.collect(config)
    assert redactor.text("Bearer tok-123456789 / tok-123456789 / sk-grader-1234 / trace-abcdef") == "*** / *** / *** / trace-abcdef"


def test_env_references_in_credentials_teach_the_variables_values() -> None:
    redactor = Redactor()
    redactor.collect({"config": {"apiKey": "{{ env.VENDOR_KEY }}", "token": "{{ env['OTHER'] }}", "keyEnvar": "CRED", "model": "{{ env.MODEL }}"}},
                     {"VENDOR_KEY": "vendor-key-1", "OTHER": "other-key-2", "CRED": "cred-value-3", "MODEL": "model-name-4"})
    assert redactor.text("vendor-key-1 other-key-2 cred-value-3 model-name-4") == "*** *** *** model-name-4"


def test_secret_named_fields_in_data_are_masked_whatever_their_value() -> None:
    redactor = Redactor(["known-secret-1"])
    data = {
        "apiKey": "short", "Authorization": "Basic x", "nested": [{"access_token": "t0", "note": "says known-secret-1"}],
        "keyboard": "qwerty", "count": 3, "password": "", "token": None, "headers": {"Cookie": "sid=1"},
    }
    assert redactor.data(data) == {
        "apiKey": MASK, "Authorization": MASK, "nested": [{"access_token": MASK, "note": "says ***"}],
        "keyboard": "qwerty", "count": 3, "password": "", "token": None, "headers": {"Cookie": MASK},
    }
    assert data["apiKey"] == "short", "a copy: the data itself is untouched"


def test_names_that_hold_credentials() -> None:
    assert all(is_secret_name(n) for n in ("apiKey", "api-key", "GITHUB_TOKEN", "client_secret", "passwd", "Authorization", "private_key", "signature"))
    assert not any(is_secret_name(n) for n in ("keyboard", "monkey", "author", "model", "passage"))
    assert all(is_auth_key(n) for n in ("X-Custom-Auth", "subscriptionKey", "Cookie", "passphrase"))
    assert not any(is_auth_key(n) for n in ("apiKeyEnvar", "tokenEnvVar", "model", "Accept"))


def test_each_command_has_its_redactor_and_the_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "env-token-123")
    assert redact.text("env-token-123 other-secret-9") == "*** other-secret-9"
    with redact.use(Redactor(["other-secret-9"])) as inner:
        assert redact.current() is inner
        assert redact.text("env-token-123 other-secret-9") == "env-token-123 ***"
        assert redact.data({"q": "other-secret-9", "apiKey": "z"}) == {"q": "***", "apiKey": MASK}
    assert redact.text("other-secret-9") == "other-secret-9"
    assert Redactor().text("") == "" and Redactor(["abcdef"]).text("") == ""
