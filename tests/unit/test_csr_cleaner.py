"""Unit tests of the CSR cleaner's rules (pykcm.controllers.certificates.cleaner)."""

from __future__ import annotations

import base64
import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykcm.controllers.certificates.cleaner import should_clean

NOW = datetime.datetime(2026, 1, 2, 12, 0, tzinfo=datetime.UTC)


def _ts(hours_ago: float) -> str:
    return (NOW - datetime.timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cert(not_after: datetime.datetime) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(not_after - datetime.timedelta(days=1)).not_valid_after(not_after)
            .sign(key, hashes.SHA256()))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def _csr(created_hours_ago: float, conditions: list[tuple[str, float]],
         certificate: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [
        {"type": t, "status": "True", "lastUpdateTime": _ts(h)} for t, h in conditions]}
    if certificate:
        status["certificate"] = certificate
    return {"metadata": {"name": "c", "creationTimestamp": _ts(created_hours_ago)},
            "status": status}


def test_the_cleaners_deadlines() -> None:
    now = NOW.timestamp()
    valid = _cert(NOW + datetime.timedelta(days=10))
    expired = _cert(NOW - datetime.timedelta(minutes=1))
    assert not should_clean(_csr(23, []), now)  # pending, young
    assert should_clean(_csr(25, []), now)  # pending past 24 h
    assert not should_clean(_csr(5, [("Denied", 0.5)]), now)
    assert should_clean(_csr(5, [("Denied", 1.5)]), now)
    assert should_clean(_csr(5, [("Failed", 1.5)]), now)
    assert not should_clean(_csr(5, [("Approved", 0.5)], valid), now)
    assert should_clean(_csr(5, [("Approved", 1.5)], valid), now)  # issued, approved > 1 h
    assert should_clean(_csr(5, [("Approved", 0.1)], expired), now)  # certificate expired
    assert not should_clean(_csr(30, [("Approved", 23)]), now)  # approved, unissued, < 24 h
    assert should_clean(_csr(30, [("Approved", 25)]), now)
    # no lastUpdateTime: never old (upstream's zero time)
    assert not should_clean({"metadata": {"creationTimestamp": _ts(1)},
                             "status": {"conditions": [{"type": "Denied", "status": "True"}]}},
                            now)
