"""A stand-in for an API that authenticates requests by signature, as promptfoo's signature
examples' servers do, on an LLMServer, and the client key material such an API hands out.

`install` adds `POST <path>`: it requires the `signature`, `timestamp` and `client-id` headers,
refuses a timestamp older than the validity window, rebuilds the signed data from its template
(`{{timestamp}}` replaced by the header's value) and verifies the base64 signature with the
client's public key (RSA PKCS#1 v1.5 or ECDSA, the given digest), then answers `{"message": ...}`;
a refusal is a 401 with `{"error": ...}`, as the examples answer.

`KeyMaterial` makes a client key with a self-signed certificate and writes it as PEM, a PKCS#12
(PFX) file, a separate certificate and key, or a Java keystore.
"""

from __future__ import annotations

import base64
import datetime
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from tests.servers.llm_server import LLMServer, Recorded, Response


@dataclass
class KeyMaterial:
    """A client's private key and self-signed certificate."""

    kind: str = "rsa"
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = field(init=False)
    cert: x509.Certificate = field(init=False)

    def __post_init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if self.kind == "rsa" else ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "promptfoo-app")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(self.key, hashes.SHA256())
        )

    def pem(self) -> str:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()

    def public_pem(self) -> str:
        return self.key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    def cert_pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def pfx(self, password: str) -> bytes:
        encryption = serialization.BestAvailableEncryption(password.encode())
        return pkcs12.serialize_key_and_certificates(b"client", self.key, self.cert, None, encryption)

    def jks(self, store_password: str, alias: str = "client", key_password: str | None = None) -> bytes:
        """A Java keystore holding the key (under `alias`, encrypted with `key_password`, else the
        store's) and its certificate."""
        import jks

        der = self.key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        entry = jks.PrivateKeyEntry.new(alias, [self.cert.public_bytes(serialization.Encoding.DER)], der, "pkcs8")
        entry.encrypt(key_password or store_password)
        data: bytes = jks.KeyStore.new("jks", [entry]).saves(store_password)
        return data

    def write(self, folder: Path) -> dict[str, Path]:
        """The key as `private_key.pem`, `private.key` with `certificate.crt`: their paths by name."""
        paths = {"pem": folder / "private_key.pem", "key": folder / "private.key", "crt": folder / "certificate.crt"}
        paths["pem"].write_text(self.pem())
        paths["key"].write_text(self.pem())
        paths["crt"].write_text(self.cert_pem())
        return paths


def verified(public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey, signature: bytes, data: bytes, digest: hashes.HashAlgorithm) -> bool:
    try:
        if isinstance(public_key, rsa.RSAPublicKey):
            public_key.verify(signature, data, padding.PKCS1v15(), digest)
        else:
            public_key.verify(signature, data, ec.ECDSA(digest))
    except InvalidSignature:
        return False
    return True


def install(
    server: LLMServer, client: KeyMaterial, message: str = "hello", path: str = "/chat", template: str = "promptfoo-app{{timestamp}}",
    digest: hashes.HashAlgorithm | None = None, validity_ms: int = 300000,
) -> LLMServer:
    """`POST path` answers `{"message": message}` to requests signed by `client`'s key."""
    public_key = client.key.public_key()

    def chat(recorded: Recorded) -> Response:
        signature, timestamp, client_id = (recorded.headers.get(name) for name in ("signature", "timestamp", "client-id"))
        if not signature or not timestamp or not client_id:
            return Response(401, json={"error": "Missing signature headers"})
        if not timestamp.isdigit() or time.time() * 1000 - int(timestamp) > validity_ms:
            return Response(401, json={"error": "Signature expired or invalid timestamp"})
        data = template.replace("{{timestamp}}", timestamp).encode()
        try:
            raw = base64.b64decode(signature, validate=True)
        except ValueError:
            return Response(401, json={"error": "Invalid signature"})
        if not verified(public_key, raw, data, digest or hashes.SHA256()):
            return Response(401, json={"error": "Invalid signature"})
        if not isinstance(recorded.json, dict) or "chat_history" not in recorded.json:
            return Response(400, json={"error": "chat_history is required"})
        return Response(200, json={"message": message})

    return server.route("POST", path, chat)
