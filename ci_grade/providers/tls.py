"""HTTPS trust: the certificates a call accepts, and the failure a refused one is.

Calls trust what httpx trusts: certifi's bundle, or the CA file or directory named by
`SSL_CERT_FILE` / `SSL_CERT_DIR` (a company proxy's or a private gateway's CA). A server whose
certificate is not trusted, or names another host, will not be trusted on the next attempt
either: `refused_certificate` tells such a failure apart from a dropped connection, so it is
reported at once with what to do, instead of being retried.
"""

from __future__ import annotations

import os
import ssl


def context() -> ssl.SSLContext:
    """A client context verifying servers against certifi, or `SSL_CERT_FILE` / `SSL_CERT_DIR`."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not (cafile or capath):
        import certifi

        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile or None, capath=capath or None)


def refused_certificate(exc: BaseException) -> str | None:
    """What to report when `exc` (or an exception it was raised from) is a certificate this
    machine does not accept; None for any other failure."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = cause.verify_message or cause.reason or str(cause)
            return (
                f"the server's TLS certificate was refused ({detail}); if it is signed by a private CA, "
                "name that CA's certificates in SSL_CERT_FILE or SSL_CERT_DIR"
            )
        cause = cause.__cause__ or cause.__context__
    return None
