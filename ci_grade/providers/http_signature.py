"""The HTTP provider's `signatureAuth`: a request signature made with the client's private key.

As promptfoo: the data `signatureDataTemplate` renders (default `{{signatureTimestamp}}`, a
literal `\\n` read as a newline) is signed with `signatureAlgorithm` (a digest as Node's
`createSign` names it, default SHA256: RSA keys sign PKCS#1 v1.5, EC and DSA keys DER-encoded),
and the base64 signature and its timestamp (milliseconds since the epoch) become the vars
`signature` and `signatureTimestamp` of the request's url, headers, query and body. One signature
serves every call until `signatureValidityMs` (default 300000) less `signatureRefreshBufferMs`
(default a tenth of it) has passed.

The key comes from (`type`, else found from the fields given):
- `pem`: `privateKeyPath`, `privateKey` or `certificateContent` (base64 of the PEM);
- `pfx`: a PKCS#12 file, `pfxPath` or `pfxContent`/`certificateContent` (base64), with
  `pfxPassword`/`certificatePassword` or PROMPTFOO_PFX_PASSWORD; or a PEM key beside its
  certificate, `keyPath` and `certPath` (or `keyContent` and `certContent`, base64);
- `jks`: a Java keystore, `keystorePath` or `keystoreContent`/`certificateContent` (base64), with
  `keystorePassword`/`certificatePassword` or PROMPTFOO_JKS_PASSWORD, the entry `keyAlias` (else
  the first) and its `keyPassword` (else the keystore's).

PEM and PKCS#12 are read by `cryptography`, Java keystores by `purejks` (the `ci-grade[signature]`
extra). The shape of the settings is checked before any call (`problem`); the key itself is read
on the first call, so a missing file or a wrong password is an error on each row, naming the
file, never the key or the password.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import importlib.util
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_grade.config import files
from ci_grade.errors import ProviderError, TemplateError
from ci_grade.templating import nunjucks

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

MISSING_CRYPTOGRAPHY = "signatureAuth needs the cryptography package: pip install 'ci-grade[signature]'"
MISSING_JKS = "signatureAuth of type jks needs the purejks package: pip install 'ci-grade[signature]'"
DIGESTS = {
    "sha1": "SHA1", "sha224": "SHA224", "sha256": "SHA256", "sha384": "SHA384", "sha512": "SHA512",
    "sha512-224": "SHA512_224", "sha512-256": "SHA512_256",
    "sha3-224": "SHA3_224", "sha3-256": "SHA3_256", "sha3-384": "SHA3_384", "sha3-512": "SHA3_512",
}
"""Node's digest names (any case, `RSA-` before or `WithRSAEncryption` after) -> `cryptography`'s hash classes."""
TYPES = ("pem", "pfx", "jks")


def _digest_name(algorithm: str) -> str | None:
    name = algorithm.strip().lower().removeprefix("rsa-").removesuffix("withrsaencryption")
    name = {"sha-1": "sha1", "sha-224": "sha224", "sha-256": "sha256", "sha-384": "sha384", "sha-512": "sha512"}.get(name, name)
    return DIGESTS.get(name)


def key_type(auth: Mapping[str, Any]) -> str | None:
    """promptfoo's type: the one given, else found from the fields present (None: no key source)."""
    if auth.get("type"):
        return str(auth["type"])
    if auth.get("privateKeyPath") or auth.get("privateKey"):
        return "pem"
    if auth.get("keystorePath") or auth.get("keystoreContent"):
        return "jks"
    if auth.get("pfxPath") or auth.get("pfxContent") or (auth.get("certPath") and auth.get("keyPath")):
        return "pfx"
    name = str(auth.get("certificateFilename") or "").lower()
    for suffixes, found in (((".pfx", ".p12"), "pfx"), ((".jks",), "jks"), ((".pem", ".key"), "pem")):
        if name.endswith(suffixes):
            return found
    return None


def problem(auth: Any) -> str | None:
    """What is wrong with a `signatureAuth` block before any call (None: it can be tried)."""
    if not isinstance(auth, dict):
        return f"signatureAuth must be a mapping, got {type(auth).__name__}"
    kind = key_type(auth)
    if kind is None:
        return "signatureAuth names no key: give privateKeyPath or privateKey (PEM), pfxPath or certPath and keyPath (PFX), or keystorePath (JKS)"
    if kind not in TYPES:
        return f"signatureAuth.type {kind!r} is not one of {', '.join(TYPES)}"
    sources = {
        "pem": ("privateKeyPath", "privateKey", "certificateContent"),
        "pfx": ("pfxPath", "pfxContent", "certificateContent"),
        "jks": ("keystorePath", "keystoreContent", "certificateContent"),
    }[kind]
    pair = kind == "pfx" and ((auth.get("certPath") and auth.get("keyPath")) or (auth.get("certContent") and auth.get("keyContent")))
    if not pair and not any(auth.get(name) for name in sources):
        extra = ", or certPath and keyPath" if kind == "pfx" else ""
        return f"signatureAuth of type {kind} names no key: give {', '.join(sources)}{extra}"
    algorithm = auth.get("signatureAlgorithm", "SHA256")
    if not isinstance(algorithm, str) or _digest_name(algorithm) is None:
        return f"signatureAuth.signatureAlgorithm {algorithm!r} is not a digest ci-grade signs with ({', '.join(sorted(DIGESTS)).upper()})"
    for name in ("signatureValidityMs", "signatureRefreshBufferMs"):
        value = auth.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            return f"signatureAuth.{name} must be a number of milliseconds, got {value!r}"
    template = auth.get("signatureDataTemplate", "{{signatureTimestamp}}")
    if not isinstance(template, str):
        return f"signatureAuth.signatureDataTemplate must be text, got {type(template).__name__}"
    try:
        nunjucks.check(template)
    except TemplateError as exc:
        return f"signatureAuth.signatureDataTemplate: {exc}"
    if importlib.util.find_spec("cryptography") is None:
        return MISSING_CRYPTOGRAPHY
    if kind == "jks" and importlib.util.find_spec("jks") is None:
        return MISSING_JKS
    return None


def _content(auth: Mapping[str, Any], *names: str) -> tuple[bytes, str] | None:
    """The first of `names` given, base64-decoded (line breaks allowed), and its name."""
    for name in names:
        if auth.get(name):
            try:
                return base64.b64decode("".join(str(auth[name]).split()), validate=True), name
            except (binascii.Error, ValueError):
                raise ProviderError(f"signatureAuth.{name} is not base64") from None
    return None


def _read(path_text: Any, base_dir: Path | None, what: str) -> tuple[bytes, str]:
    path = files.resolve(str(path_text), base_dir or Path.cwd())
    try:
        return path.read_bytes(), f"{what} {path}"
    except FileNotFoundError:
        raise ProviderError(f"{what} {path} not found") from None
    except OSError as exc:
        raise ProviderError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None


def _pem_problem(text: str) -> str | None:
    """Why PEM text holds no usable private key, told from its markers (never quoting it)."""
    text = text.strip()
    if not text:
        return "it is empty"
    if "PRIVATE KEY-----" not in text:
        if "BEGIN CERTIFICATE" in text:
            return "it is a certificate, not a private key"
        if "PUBLIC KEY-----" in text:
            return "it is a public key, not a private key"
        return 'it is not PEM-encoded (no "-----BEGIN ... PRIVATE KEY-----" line)'
    if "ENCRYPTED PRIVATE KEY" in text or "Proc-Type: 4,ENCRYPTED" in text:
        return "it is passphrase-protected; give an unencrypted key, or a PKCS#12 file with its password"
    if "-----END" not in text[text.index("PRIVATE KEY-----"):].split("-----BEGIN")[0]:
        return 'it is truncated (no "-----END ... PRIVATE KEY-----" line)'
    return None


def _pem_key(data: bytes, source: str) -> PrivateKeyTypes:
    from cryptography.hazmat.primitives import serialization

    if found := _pem_problem(data.decode("utf-8", "replace")):
        raise ProviderError(f"the private key from {source} cannot be used: {found}")
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ProviderError(f"the private key from {source} cannot be used: {exc}") from None


def _password(auth: Mapping[str, Any], env: Mapping[str, str], own: str, variable: str, what: str) -> str:
    value = auth.get(own) or auth.get("certificatePassword") or env.get(variable)
    if not value:
        raise ProviderError(f"{what} password is required: set signatureAuth.{own} or certificatePassword, or {variable}")
    return str(value)


def _pfx_key(auth: Mapping[str, Any], env: Mapping[str, str], base_dir: Path | None) -> PrivateKeyTypes:
    from cryptography.hazmat.primitives.serialization import pkcs12

    content = _content(auth, "pfxContent", "certificateContent")
    if content is None and not auth.get("pfxPath"):  # a PEM key beside its certificate
        if pem := _content(auth, "keyContent"):
            return _pem_key(*pem)
        _read(auth.get("certPath"), base_dir, "certificate file")  # promptfoo checks it is there
        return _pem_key(*_read(auth.get("keyPath"), base_dir, "key file"))
    data, source = content or _read(auth["pfxPath"], base_dir, "PFX file")
    password = _password(auth, env, "pfxPassword", "PROMPTFOO_PFX_PASSWORD", "the PFX")
    try:
        found, _, _ = pkcs12.load_key_and_certificates(data, password.encode())
    except (ValueError, TypeError) as exc:
        raise ProviderError(f"{source} cannot be read: invalid PKCS#12 data or wrong password ({exc})") from None
    if found is None:
        raise ProviderError(f"{source} holds no private key")
    return found


def _jks_key(auth: Mapping[str, Any], env: Mapping[str, str], base_dir: Path | None) -> PrivateKeyTypes:
    import jks
    from cryptography.hazmat.primitives import serialization

    data, source = _content(auth, "keystoreContent", "certificateContent") or _read(auth["keystorePath"], base_dir, "keystore")
    password = _password(auth, env, "keystorePassword", "PROMPTFOO_JKS_PASSWORD", "the JKS keystore")
    try:
        store = jks.KeyStore.loads(data, password, try_decrypt_keys=False)
    except jks.util.KeystoreException as exc:
        raise ProviderError(f"{source} cannot be read: {exc}") from None
    except Exception as exc:  # a file that is no keystore at all fails in the parser
        raise ProviderError(f"{source} is not a Java keystore ({type(exc).__name__})") from None
    aliases = list(store.private_keys)
    if not aliases:
        raise ProviderError(f"{source} holds no private key entry")
    alias = str(auth.get("keyAlias") or aliases[0])
    if alias not in store.private_keys:
        raise ProviderError(f"{source} has no private key entry {alias!r} (it has {', '.join(aliases)})")
    entry = store.private_keys[alias]
    try:
        entry.decrypt(str(auth.get("keyPassword") or password))
    except jks.util.KeystoreException as exc:
        raise ProviderError(f"the key {alias!r} in {source} cannot be decrypted: {exc}; set signatureAuth.keyPassword") from None
    return serialization.load_der_private_key(entry.pkey_pkcs8, password=None)


def load_key(auth: Mapping[str, Any], env: Mapping[str, str], base_dir: Path | None) -> PrivateKeyTypes:
    """The private key `auth` names (a ProviderError that names the source, never the key)."""
    kind = key_type(auth)
    if kind == "pfx":
        return _pfx_key(auth, env, base_dir)
    if kind == "jks":
        return _jks_key(auth, env, base_dir)
    if auth.get("privateKeyPath"):
        return _pem_key(*_read(auth["privateKeyPath"], base_dir, "privateKeyPath"))
    if auth.get("privateKey"):
        return _pem_key(str(auth["privateKey"]).encode(), "signatureAuth.privateKey")
    content = _content(auth, "certificateContent")
    assert content is not None  # `problem` saw a source
    return _pem_key(*content)


def sign(key: PrivateKeyTypes, data: bytes, algorithm: str) -> str:
    """`data` signed as Node's `createSign(algorithm).sign(key)` signs it, base64."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, padding, rsa

    digest: hashes.HashAlgorithm = getattr(hashes, _digest_name(algorithm) or "SHA256")()
    if isinstance(key, rsa.RSAPrivateKey):
        signature = key.sign(data, padding.PKCS1v15(), digest)
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        signature = key.sign(data, ec.ECDSA(digest))
    elif isinstance(key, dsa.DSAPrivateKey):
        signature = key.sign(data, digest)
    else:
        raise ProviderError(f"a {type(key).__name__.removeprefix('_')} key cannot sign with {algorithm} (as Node's createSign): use an RSA, EC or DSA key")
    return base64.b64encode(signature).decode("ascii")


@dataclass
class Signature:
    value: str
    timestamp: int


class Signer:
    """The current signature of one provider, made again when it is about to expire."""

    def __init__(self, auth: Mapping[str, Any], env: Mapping[str, str], base_dir: Path | None):
        self.auth, self.env, self.base_dir = auth, env, base_dir
        self.validity_ms = float(auth.get("signatureValidityMs", 300000))
        buffer = auth.get("signatureRefreshBufferMs")
        self.buffer_ms = float(buffer) if buffer is not None else self.validity_ms // 10
        self._key: PrivateKeyTypes | None = None
        self._current: Signature | None = None
        self._lock: asyncio.Lock | None = None

    def _stale(self, now_ms: int) -> bool:
        return self._current is None or now_ms - self._current.timestamp + self.buffer_ms >= self.validity_ms

    async def current(self) -> Signature:
        """A signature still valid (made now when there is none, or it is about to expire)."""
        if not self._stale(int(time.time() * 1000)) and self._current is not None:
            return self._current
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            now_ms = int(time.time() * 1000)
            if self._current is None or self._stale(now_ms):
                if self._key is None:
                    self._key = await asyncio.to_thread(load_key, self.auth, self.env, self.base_dir)
                template = str(self.auth.get("signatureDataTemplate", "{{signatureTimestamp}}"))
                try:
                    data = nunjucks.render(template, {"signatureTimestamp": now_ms}).replace("\\n", "\n")
                except TemplateError as exc:
                    raise ProviderError(f"signatureDataTemplate: {exc}") from None
                value = sign(self._key, data.encode(), str(self.auth.get("signatureAlgorithm", "SHA256")))
                self._current = Signature(value, now_ms)
            return self._current
