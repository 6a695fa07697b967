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


def _nested(text: str, depth: int, ensure_ascii: bool) -> str:
    """`text` written as a JSON string inside JSON, `depth` times."""
    for _ in range(depth):
        text = json.dumps({"reply": text}, ensure_ascii=ensure_ascii)
    return text


@pytest.mark.parametrize("ensure_ascii", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_secret_in_json_inside_json_is_masked_at_every_depth(depth: int, ensure_ascii: bool) -> None:
    secret = 'Pa"ss\\wörd/<1>\n&x'
    redactor = Redactor([secret])
    masked = redactor.text(_nested(f"the reply quotes {secret}.", depth, ensure_ascii))
    for _ in range(depth):
        masked = json.loads(masked)["reply"]
    assert masked == "the reply quotes ***."


@pytest.mark.parametrize("spelling", [
    "Pa\\\"ss\\/w\\u00F6rd",  # slash escaped, upper-case hex (as .NET writes it)
    "Pa\\\"ss\\/w\\u00f6rd",
    "Pa\\\"ss/w\\u00f6rd",
    "Pa\\\\\\\"ss\\\\/w\\\\u00f6rd",  # the same once more inside JSON
])
def test_each_common_encoders_spelling_is_masked(spelling: str) -> None:
    redactor = Redactor(['Pa"ss/wörd'])
    assert redactor.text(f"<{spelling}>") == "<***>"


def test_listeners_hear_the_main_spellings_only() -> None:
    """`::add-mask::` lines: the value, its JSON and CSV spellings (not each encoder's, which only the reports need)."""
    redactor = Redactor(['Pa"ss/wörd'])
    heard: list[str] = []
    redactor.listen(heard.append)
    assert sorted(heard) == sorted({'Pa"ss/wörd', 'Pa\\"ss/wörd', 'Pa""ss/wörd'})


# Well-shaped but made-up credentials, one per format GitHub's secret scanning knows.
CREDENTIALS = {
    "GitHub personal token": "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "GitHub OAuth token": "gho_" + "Zy8Xw6Vu4Ts2Rq0Po8Nm6Lk4Ji2Hg0Fe8Dc6",
    "GitHub user-to-server token": "ghu_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
    "GitHub server-to-server token": "ghs_" + "M9n8B7v6C5x4Z3l2K1j0H9g8F7d6S5a4P3o2",
    "GitHub refresh token": "ghr_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g3H4i5J6",
    "GitHub fine-grained token": "github_pat_11ABCDEFG0" + "aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "OpenAI project key": "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34Yz56_-T3BlbkFJaB1cD2eF3",
    "OpenAI legacy key": "sk-" + "aB1cD2eF3gH4iJ5kL6mNT3BlbkFJoP7qR8sT9uV0wX1yZ2aB3c",
    "Anthropic key": "sk-ant-api03-" + "Xy9_Zw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7Zy6Xw5Vu4Ts3Rq2Po1Nm0Lk9Ji8Hg7Fe6Dc5Ba4Zy3Xw2Vu1Ts0-AA",
    "AWS access key id": "AKIA" + "IOSFODNN7EXAMPL3",
    "AWS temporary key id": "ASIA" + "Y3FLDRE6PXZ7Q2MN",
    "AWS session token": "FwoGZXIvYXdz" + "EJr//////////wEaDM1Xk2Pq9Lm3Nv8RtCKyAV3sY2Zh8Wq1Xt9Pb4Rk6Jd0Lm2Nc5Qv7Ge3Hf",
    "Google API key": "AIza" + "SyD-3kL9mN2pQ4rS6tU8vW0xY1zA3bC5dE7",
    "Hugging Face token": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "Replicate token": "r8_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6Kl",
    "Groq key": "gsk_" + "aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT1uV3wX5yZ7aB9cD1eF3gH5i",
    "xAI key": "xai-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3Ab4Cd5Ef6Gh7Ij8Kl9Mn0Op1Qr2St3Uv4Wx5Y",
    "JWT": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkRlcGxveSJ9.Qm9ndXNTaWduYXR1cmVWYWx1ZTEyMw",
    "Slack bot token": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    "Slack user token": "xoxp-" + "2345678901-8765432109-ZyXwVuTsRqPoNmLkJiHgFeDc",
}


@pytest.mark.parametrize("name", sorted(CREDENTIALS))
def test_values_shaped_like_credentials_are_masked_whatever_holds_them(name: str) -> None:
    value = CREDENTIALS[name]
    redactor = Redactor()  # knows no secret at all
    assert redactor.text(f"deploy with {value}, then stop") == "deploy with ***, then stop"
    assert json.loads(redactor.text(json.dumps({"DEPLOY": value, "note": f"token={value}"}))) == {"DEPLOY": "***", "note": "token=***"}
    assert redactor.data({"vars": {"deploy": value}}) == {"vars": {"deploy": "***"}}


def test_an_aws_secret_key_is_masked_beside_its_access_key_id() -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY"
    redactor = Redactor()
    paired = redactor.text(f"aws_access_key_id = AKIAIOSFODNN7EXAMPL3\naws_secret_access_key = {secret}\n")
    assert paired == "aws_access_key_id = ***\naws_secret_access_key = ***\n"
    assert redactor.text(f"a 40-character value alone: {secret}") == f"a 40-character value alone: {secret}"


def test_private_keys_are_masked_whole_also_in_a_service_account_json() -> None:
    block = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq3N8x/Zb+Q==\n-----END PRIVATE KEY-----\n"
    account = {"type": "service_account", "project_id": "demo-project", "private_key": block, "client_email": "ci@demo-project.iam.gserviceaccount.com"}
    redactor = Redactor()
    for depth in (0, 1, 2):
        masked = redactor.text(_nested(json.dumps(account), depth, False))
        assert "MIIEvQIBADAN" not in masked and "q3N8x" not in masked and "ci@demo-project.iam.gserviceaccount.com" in masked
    cut = redactor.text("key: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB")
    assert cut == "key: ***"  # a block cut before its end is masked to where the key text stops


ORDINARY = [
    "Use sk-learn-compatible-estimators for the baseline; risk-adjusted task-force results follow.",
    "The commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it (see 123e4567-e89b-12d3-a456-426614174000).",
    "hf_hub_download(repo_id='gpt2') and the r8_ prefix and gsk_ keys are described in the docs.",
    "A base64 header eyJhbGciOiJIUzI1NiJ9 alone is not a token, nor is eyJ.eyJ.x or xoxo.",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUJ\n-----END CERTIFICATE-----",
    "ghp_short and github_pat_tooShort and AKIA alone, AIza too short, xai-model and sk-ant-mini.",
    "ASIAN markets and AKIAGUESSWHATNOTKEYS9 words, GitHub's ghs_ prefix in prose, though high.",
]


def test_ordinary_text_is_left_alone() -> None:
    redactor = Redactor()
    for text in ORDINARY:
        assert redactor.text(text) == text
        assert redactor.text(json.dumps(text)) == json.dumps(text)
