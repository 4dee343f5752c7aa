"""Certificates: a self-signed CA and a serving certificate for HTTPS on loopback.

Generated once into the data dir (or a temp dir in memory mode) and reused on
restart, so a kubeconfig written earlier stays valid. The kubeconfig carries
the CA as certificate-authority-data; clients then verify the server as they
would a real cluster's.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class ServingCerts:
    ca_pem: bytes
    cert_path: str
    key_path: str


def _write_private(path: str, data: bytes) -> None:
    # Key material is created 0600 from the start, never world-readable.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def ensure_serving_certs(directory: str, hosts: tuple[str, ...] = ()) -> ServingCerts:
    """Load or create ca.crt, ca.key, apiserver.crt, apiserver.key in directory."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    ca_crt = os.path.join(directory, "ca.crt")
    ca_key = os.path.join(directory, "ca.key")
    crt = os.path.join(directory, "apiserver.crt")
    key = os.path.join(directory, "apiserver.key")
    sans = ("127.0.0.1", "::1", "localhost") + tuple(h for h in hosts if h)
    if all(os.path.exists(p) for p in (ca_crt, ca_key, crt, key)) and _covers(crt, sans):
        with open(ca_crt, "rb") as f:
            return ServingCerts(f.read(), crt, key)
    now = datetime.datetime.now(datetime.UTC)
    if os.path.exists(ca_crt) and os.path.exists(ca_key):
        with open(ca_key, "rb") as f:
            ca_private = serialization.load_pem_private_key(f.read(), None)
        with open(ca_crt, "rb") as f:
            ca_cert = x509.load_pem_x509_certificate(f.read())
    else:
        ca_private = ec.generate_private_key(ec.SECP256R1())
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("pykcm-ca"))
            .issuer_name(_name("pykcm-ca"))
            .public_key(ca_private.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                              content_commitment=False, key_encipherment=False,
                              data_encipherment=False, key_agreement=False,
                              encipher_only=False, decipher_only=False),
                critical=True,
            )
            .sign(ca_private, hashes.SHA256())
        )
        _write_private(ca_key, ca_private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        with open(ca_crt, "wb") as f:
            f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    names: list[x509.GeneralName] = []
    for h in sans:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    server_key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("pykcm-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_private, hashes.SHA256())  # type: ignore[arg-type]
    )
    _write_private(key, server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    with open(crt, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(ca_crt, "rb") as f:
        return ServingCerts(f.read(), crt, key)


def _covers(cert_path: str, sans: tuple[str, ...]) -> bool:
    try:
        with open(cert_path, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        have = {str(v) for v in ext.get_values_for_type(x509.IPAddress)} | set(
            ext.get_values_for_type(x509.DNSName))
        return all(str(ipaddress.ip_address(h)) in have if _is_ip(h) else h in have for h in sans)
    except Exception:  # noqa: BLE001 - any unreadable certificate is regenerated
        return False


def _is_ip(h: str) -> bool:
    try:
        ipaddress.ip_address(h)
        return True
    except ValueError:
        return False
