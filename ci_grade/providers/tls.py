"""HTTPS trust: the certificates a call accepts, and the failures that retrying cannot fix.

Calls trust what httpx trusts: certifi's bundle, or the CA file or directory named by
`SSL_CERT_FILE` / `SSL_CERT_DIR` (a company proxy's or a private gateway's CA). A server whose
certificate is not trusted, or names another host, will not be trusted on the next attempt
either, and a CA file that cannot be read stays unreadable: `context` names such a file when the
client is made, and `trust_failure` tells a refused certificate apart from a dropped connection,
so both are reported at once with what to do, instead of retried.
"""

from __future__ import annotations

import os
import ssl

_VARIABLES = "SSL_CERT_FILE or SSL_CERT_DIR"


class TrustStoreError(OSError):
    """The CA certificates `SSL_CERT_FILE` / `SSL_CERT_DIR` name cannot be used."""


def context() -> ssl.SSLContext:
    """A client context verifying servers against certifi, or `SSL_CERT_FILE` / `SSL_CERT_DIR`."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not (cafile or capath):
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    if capath and not os.path.isdir(capath):  # OpenSSL would only find no certificate there
        raise TrustStoreError(f"the CA certificates named by SSL_CERT_DIR={capath} cannot be used: not a directory")
    try:
        return ssl.create_default_context(cafile=cafile or None, capath=capath or None)
    except (OSError, ssl.SSLError) as exc:
        named = ", ".join(f"{name}={value}" for name, value in (("SSL_CERT_FILE", cafile), ("SSL_CERT_DIR", capath)) if value)
        raise TrustStoreError(f"the CA certificates named by {named} cannot be used: {exc}") from None


def trust_failure(exc: BaseException) -> str | None:
    """What to report when `exc` (or an exception it was raised from) is a certificate this
    machine does not accept; None for any other failure."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    refused: ssl.SSLCertVerificationError | None = None
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            refused = cause
            if getattr(cause, "verify_message", None):  # OpenSSL's own (aiohttp's error is one too, raised from it)
                break
        cause = cause.__cause__ or cause.__context__
    if refused is None:
        return None
    detail = getattr(refused, "verify_message", None) or getattr(refused, "reason", None) or str(refused)
    return f"the server's TLS certificate was refused ({detail}); if it is signed by a private CA, name that CA's certificates in {_VARIABLES}"
