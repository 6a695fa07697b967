"""The HTTP provider's `signatureAuth` end to end: `ci-grade eval` signs each request with a PEM
key, a PKCS#12 file, a key beside its certificate or a Java keystore, and a stand-in verifies the
signature with the client's public key."""

from __future__ import annotations

import json
import ssl
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from cryptography.hazmat.primitives import hashes

from ci_grade.providers.base import CallContext
from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows, use
from tests.servers import signed_server
from tests.servers.llm_server import LLMServer
from tests.servers.signed_server import KeyMaterial

PASSWORD = "pfx-pass-8731"


@pytest.fixture(scope="module")
def client() -> KeyMaterial:
    return KeyMaterial()


@pytest.fixture
def server(client: KeyMaterial) -> Iterator[LLMServer]:
    with LLMServer() as srv:
        signed_server.install(srv, client)
        yield srv


def config(url: str, auth: str) -> str:
    """promptfoo's signature example, pointed at `url`, with the `signatureAuth` block `auth`."""
    return f"""
    targets:
      - id: http
        config:
          url: {url}/chat
          method: POST
          headers:
            Content-Type: application/json
            'client-id': 'promptfoo-app'
            'timestamp': '{{{{signatureTimestamp}}}}'
            'signature': '{{{{signature}}}}'
          signatureAuth:
{auth}
          body:
            chat_history: '{{{{prompt}}}}'
    prompts:
      - ' return this: {{{{prompt}}}}'
    tests:
      - vars: {{prompt: 'I hope our signature works'}}
        assert: [{{type: contains, value: hello}}]
      - vars: {{prompt: 'and again'}}
        assert: [{{type: contains, value: hello}}]
    """


def indent(lines: str) -> str:
    """`signatureAuth`'s lines, indented under it in `config`."""
    return textwrap.indent(textwrap.dedent(lines).strip(), " " * 16)


def assert_signed_rows(tmp_path: Path, server: LLMServer, auth: str, secrets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    code, rows = eval_rows(tmp_path, config(server.url, indent(auth)))
    assert [row["error"] for row in rows] == [None, None]
    assert code == 0 and [row["response"]["output"] for row in rows] == [{"message": "hello"}] * 2
    requests = server.requests_to("/chat")
    assert len(requests) == 2
    # one signature serves both calls while it is valid
    assert requests[0].headers["timestamp"] == requests[1].headers["timestamp"]
    assert abs(int(requests[0].headers["timestamp"]) - time.time() * 1000) < 60000
    written = (tmp_path / "out.json").read_text()
    for secret in (*secrets, requests[0].headers["signature"]):
        assert secret not in written
    return rows


def test_pem_key_file_signs_requests_as_the_example(tmp_path: Path, server: LLMServer, client: KeyMaterial) -> None:
    client.write(tmp_path)
    auth = """
    privateKeyPath: ./private_key.pem
    signatureValidityMs: 300000
    signatureDataTemplate: 'promptfoo-app{{signatureTimestamp}}'
    signatureAlgorithm: SHA256
    """
    key_body = client.pem().splitlines()[1]
    assert_signed_rows(tmp_path, server, auth, (key_body,))


def test_pfx_over_https_with_the_password_from_the_environment(tmp_path: Path, client: KeyMaterial, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = trustme.CA()
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("PROMPTFOO_PFX_PASSWORD", PASSWORD)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "certificate.pfx").write_bytes(client.pfx(PASSWORD))
    server = LLMServer().start(tls=context)
    try:
        signed_server.install(server, client, message="hello from PFX authenticated endpoint")
        assert server.url.startswith("https://")
        code, rows = eval_rows(tmp_path, config(server.url, indent("type: pfx\npfxPath: certs/certificate.pfx\nsignatureDataTemplate: 'promptfoo-app{{signatureTimestamp}}'")))
        assert code == 0 and rows[0]["response"]["output"] == {"message": "hello from PFX authenticated endpoint"}
        assert PASSWORD not in (tmp_path / "out.json").read_text()
    finally:
        server.stop()


def test_key_beside_its_certificate(tmp_path: Path, server: LLMServer, client: KeyMaterial) -> None:
    client.write(tmp_path)
    auth = "type: pfx\ncertPath: certificate.crt\nkeyPath: private.key\nsignatureDataTemplate: 'promptfoo-app{{signatureTimestamp}}'"
    assert_signed_rows(tmp_path, server, auth)


def test_java_keystore_entry_by_alias_with_its_own_password(tmp_path: Path, server: LLMServer, client: KeyMaterial, monkeypatch: pytest.MonkeyPatch) -> None:
    other = KeyMaterial("ec")
    import jks

    # two entries: the alias picks the client's key, whose password differs from the store's
    first = jks.KeyStore.loads(other.jks("store-pass-1", alias="aaa-other"), "store-pass-1").private_keys["aaa-other"]
    mine = jks.KeyStore.loads(client.jks("store-pass-1", alias="client", key_password="key-pass-2"), "store-pass-1", try_decrypt_keys=False).private_keys["client"]
    (tmp_path / "clientkeystore.jks").write_bytes(jks.KeyStore.new("jks", [first, mine]).saves("store-pass-1"))
    monkeypatch.setenv("PROMPTFOO_JKS_PASSWORD", "store-pass-1")
    auth = """
    type: jks
    keystorePath: clientkeystore.jks
    keyAlias: 'client'
    keyPassword: key-pass-2
    signatureValidityMs: 300000
    signatureDataTemplate: 'promptfoo-app{{signatureTimestamp}}'
    signatureAlgorithm: SHA256
    """
    assert_signed_rows(tmp_path, server, auth, ("store-pass-1", "key-pass-2"))


def test_ec_key_with_sha384_and_the_signature_in_the_body(tmp_path: Path) -> None:
    key = KeyMaterial("ec")
    with LLMServer() as server:
        signed_server.install(server, key, template="ts={{timestamp}}\nend", digest=hashes.SHA384())
        spec = {"id": "http", "config": {
            "url": server.url + "/chat",
            "headers": {"client-id": "x", "timestamp": "{{signatureTimestamp}}", "signature": "{{signature}}"},
            "body": {"chat_history": "{{prompt}}", "signed_at": "{{signatureTimestamp}}"},
            "signatureAuth": {"privateKey": key.pem(), "signatureAlgorithm": "RSA-SHA384", "signatureDataTemplate": "ts={{signatureTimestamp}}\\nend"},
        }}
        response = call(spec, "hi", CallContext(vars={}))
        assert response.error is None and response.output == {"message": "hello"}
        (request,) = server.requests_to("/chat")
        assert request.json["signed_at"] == request.headers["timestamp"]


def test_key_material_given_as_base64_content(client: KeyMaterial, monkeypatch: pytest.MonkeyPatch) -> None:
    import base64
    import textwrap

    monkeypatch.setenv("PROMPTFOO_PFX_PASSWORD", PASSWORD)
    wrapped = textwrap.fill(base64.b64encode(client.pfx(PASSWORD)).decode(), 76)  # as `base64` wraps it
    pem = base64.b64encode(client.pem().encode()).decode()
    with LLMServer() as server:
        signed_server.install(server, client, template="{{timestamp}}")
        headers = {"client-id": "x", "timestamp": "{{signatureTimestamp}}", "signature": "{{signature}}"}
        for auth in ({"type": "pfx", "certificateContent": wrapped}, {"type": "pem", "certificateContent": pem}, {"type": "pfx", "certContent": pem, "keyContent": pem}):
            spec = {"id": "http", "config": {"url": server.url + "/chat", "headers": headers, "body": {"chat_history": "{{prompt}}"}, "signatureAuth": auth}}
            assert call(spec, "hi").output == {"message": "hello"}, auth
        broken = call({"id": "http", "config": {"url": server.url + "/chat", "headers": headers, "body": {}, "signatureAuth": {"type": "jks", "keystoreContent": "not base64!", "keystorePassword": "x"}}}, "hi")
        assert broken.error == "provider http: failed to generate the signature: signatureAuth.keystoreContent is not base64"
        assert len(server.requests_to("/chat")) == 3


def test_an_expired_signature_is_made_again(client: KeyMaterial) -> None:
    with LLMServer() as server:
        signed_server.install(server, client, template="{{timestamp}}")
        spec = {"id": "http", "config": {
            "url": server.url + "/chat", "body": {"chat_history": "{{prompt}}"},
            "headers": {"client-id": "x", "timestamp": "{{signatureTimestamp}}", "signature": "{{signature}}"},
            "signatureAuth": {"privateKey": client.pem(), "signatureValidityMs": 40, "signatureRefreshBufferMs": 0},
        }}

        async def twice(provider: Any) -> list[Any]:
            import asyncio

            first = await provider.call("a")
            await asyncio.sleep(0.06)
            return [first, await provider.call("b")]

        responses = use(spec, twice)
        assert [r.error for r in responses] == [None, None]
        first, second = server.requests_to("/chat")
        assert int(second.headers["timestamp"]) > int(first.headers["timestamp"])


def test_a_key_the_server_does_not_know_is_refused_by_it(tmp_path: Path, server: LLMServer) -> None:
    stranger = KeyMaterial("ec")
    auth = f"privateKey: {json.dumps(stranger.pem())}\nsignatureDataTemplate: 'promptfoo-app{{{{signatureTimestamp}}}}'"
    code, rows = eval_rows(tmp_path, config(server.url, indent(auth)))
    assert code == 1 and all(row["error"] == 'HTTP 401 Unauthorized: {"error": "Invalid signature"}' for row in rows)


def test_missing_key_file_and_wrong_password_are_row_errors_that_name_no_secret(tmp_path: Path, server: LLMServer, client: KeyMaterial) -> None:
    code, rows = eval_rows(tmp_path, config(server.url, indent("type: jks\nkeystorePath: ./examples/clientkeystore.jks\nkeystorePassword: pw-123456")))
    assert code == 1
    assert rows[0]["error"] == f"provider http: failed to generate the signature: keystore {tmp_path / 'examples' / 'clientkeystore.jks'} not found"
    (tmp_path / "certificate.pfx").write_bytes(client.pfx(PASSWORD))
    code, rows = eval_rows(tmp_path, config(server.url, indent("pfxPath: certificate.pfx\npfxPassword: wrong-password-77")))
    assert code == 1 and "certificate.pfx cannot be read: invalid PKCS#12 data or wrong password" in rows[0]["error"]
    assert "wrong-password-77" not in (tmp_path / "out.json").read_text()
    code, rows = eval_rows(tmp_path, config(server.url, indent("pfxPath: certificate.pfx")))
    assert "the PFX password is required: set signatureAuth.pfxPassword or certificatePassword, or PROMPTFOO_PFX_PASSWORD" in rows[0]["error"]
    (tmp_path / "public.pem").write_text(client.public_pem())
    code, rows = eval_rows(tmp_path, config(server.url, indent("privateKeyPath: public.pem")))
    assert rows[0]["error"].endswith(f"the private key from privateKeyPath {tmp_path / 'public.pem'} cannot be used: it is a public key, not a private key")
    assert server.requests_to("/chat") == []


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        ("type: p7b\nprivateKeyPath: k.pem", "signatureAuth.type 'p7b' is not one of pem, pfx, jks"),
        ("signatureAlgorithm: SHA256", "signatureAuth names no key"),
        ("type: pfx\ncertPath: c.crt", "signatureAuth of type pfx names no key"),
        ("privateKeyPath: k.pem\nsignatureAlgorithm: MD5", "signatureAuth.signatureAlgorithm 'MD5' is not a digest ci-grade signs with"),
        ("privateKeyPath: k.pem\nsignatureDataTemplate: '{{ signatureTimestamp'", "signatureAuth.signatureDataTemplate"),
        ("privateKeyPath: k.pem\nsignatureValidityMs: soon", "signatureAuth.signatureValidityMs must be a number of milliseconds"),
    ],
)
def test_bad_settings_exit_2_before_any_call(tmp_path: Path, server: LLMServer, auth: str, problem: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", config(server.url, indent(auth)))
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    assert problem in result.err and "promptfooconfig.yaml:" in result.err and "Traceback" not in result.err
    assert server.requests_to("/chat") == []


def test_a_missing_library_is_named_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from ci_grade.providers import http_signature

    real = importlib.util.find_spec
    monkeypatch.setattr(http_signature.importlib.util, "find_spec", lambda name: None if name == "jks" else real(name))
    assert http_signature.problem({"type": "jks", "keystorePath": "k.jks"}) == "signatureAuth of type jks needs the purejks package: pip install 'ci-grade[signature]'"
    assert http_signature.problem({"privateKeyPath": "k.pem"}) is None
