"""A throwaway TLS certificate for the scripted server on 127.0.0.1 (tests and benchmarks)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


class OpenSSLMissing(RuntimeError):
    """The openssl command line tool is not installed."""


def self_signed_cert(where: Path) -> tuple[str, str]:
    """Make a self-signed EC certificate for 127.0.0.1 in `where`; returns (cert, key) paths."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise OpenSSLMissing("the openssl CLI is needed to make a TLS certificate")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)
