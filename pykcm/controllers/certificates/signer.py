"""The CSR signing controller: approved CertificateSigningRequests of the kubernetes.io
signers get a certificate signed by the cluster CA.

kube-controller-manager v1.36 ``pkg/controller/certificates/signer``
(``certificatesigningrequest-signing-controller``): one signer per signer name,
kubernetes.io/kube-apiserver-client, kubelet-serving, kube-apiserver-client-kubelet and
legacy-unknown, all from ``--cluster-signing-cert-file``/``--cluster-signing-key-file``.

Data flow: CSR informer ─► queue ─► sync: skipped unless Approved (and not Denied), not
Failed and without a certificate; a request the signer's rules refuse gets a Failed
condition (reason SignerValidationFailure) through /status; else the certificate: the
request's subject, SANs and public key, key usages and extended key usages from
spec.usages, not a CA, a random serial, NotBefore now - 5 min, NotAfter now + the
duration (``--cluster-signing-duration``, or spec.expirationSeconds when shorter, at least
10 min; long-lived ones, 8 h and more, backdated by 5 min too), never past the CA's own
NotAfter; written PEM-encoded to status.certificate with UpdateStatus.

Deviations: the signers' request checks are upstream's main rules (organisation
system:nodes and common name system:node: for the kubelet signers, the allowed usages, the
SANs each allows); the CA files are read once at start (upstream reloads them when they
change); the per-signer cert/key flags are not offered.
"""

from __future__ import annotations

import base64
import datetime
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.virtual_clock import VirtualClock
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["SIGNERS", "CSRSigningController", "SigningError", "kubelet_client_error",
           "sign_request"]

log = logging.getLogger("pykcm.controllers.certificates.signer")

SIGNERS: Final = ("kubernetes.io/kube-apiserver-client", "kubernetes.io/kubelet-serving",
                  "kubernetes.io/kube-apiserver-client-kubelet",
                  "kubernetes.io/legacy-unknown")
_BACKDATE: Final = datetime.timedelta(minutes=5)
_SHORT: Final = datetime.timedelta(hours=8)
_MIN: Final = datetime.timedelta(minutes=10)

_KEY_USAGES: Final = ("signing", "digital signature", "content commitment",
                      "key encipherment", "key agreement", "data encipherment", "cert sign",
                      "crl sign", "encipher only", "decipher only")
_EXT_USAGES: Final = {
    "any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "ipsec end system": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "ipsec tunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "ipsec user": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
    "microsoft sgc": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "netscape sgc": x509.ObjectIdentifier("2.16.840.1.113730.4.1"),
}


class SigningError(Exception):
    """A request the signer refuses (the Failed condition's message)."""


def _names(csr: x509.CertificateSigningRequest, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in csr.subject.get_attributes_for_oid(oid)]


def _sans(csr: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    try:
        return csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def _check_request(signer: str, csr: x509.CertificateSigningRequest,
                   usages: Sequence[str]) -> None:
    """The signer's rules (upstream's isRequestForSignerFn); raises SigningError."""
    if signer == "kubernetes.io/legacy-unknown":
        return
    sans = _sans(csr)
    if signer == "kubernetes.io/kube-apiserver-client":
        allowed = {"digital signature", "key encipherment", "client auth"}
        if not set(usages) <= allowed or "client auth" not in usages:
            raise SigningError(f"invalid usage for client certificate: {list(usages)}")
        return
    orgs = _names(csr, NameOID.ORGANIZATION_NAME)
    if orgs != ["system:nodes"]:
        raise SigningError("subject organization is not system:nodes")
    cns = _names(csr, NameOID.COMMON_NAME)
    if not cns or not cns[0].startswith("system:node:"):
        raise SigningError("subject common name does not begin with system:node:")
    if signer == "kubernetes.io/kubelet-serving":
        if sans is None or not (sans.get_values_for_type(x509.DNSName)
                                or sans.get_values_for_type(x509.IPAddress)):
            raise SigningError("DNS or IP subjectAltName is required")
        if sans.get_values_for_type(x509.RFC822Name):
            raise SigningError("Email subjectAltNames are not allowed")
        if sans.get_values_for_type(x509.UniformResourceIdentifier):
            raise SigningError("URI subjectAltNames are not allowed")
        allowed = {"key encipherment", "digital signature", "server auth"}
        if not set(usages) <= allowed or "server auth" not in usages:
            raise SigningError(f"usages did not match {sorted(allowed)}")
        return
    # kube-apiserver-client-kubelet
    error = kubelet_client_error(csr, usages)
    if error is not None:
        raise SigningError(error)


_KUBELET_CLIENT_USAGES: Final = ({"digital signature", "key encipherment", "client auth"},
                                 {"digital signature", "client auth"})


def kubelet_client_error(csr: x509.CertificateSigningRequest,
                         usages: Sequence[str]) -> str | None:
    """ValidateKubeletClientCSR: why ``csr`` is not a kubelet's client certificate request."""
    if _names(csr, NameOID.ORGANIZATION_NAME) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    sans = _sans(csr)
    if sans is not None:
        for kind, what in ((x509.DNSName, "DNS"), (x509.RFC822Name, "Email"),
                           (x509.IPAddress, "IP"), (x509.UniformResourceIdentifier, "URI")):
            if sans.get_values_for_type(kind):
                return f"{what} subjectAltNames are not allowed"
    cns = _names(csr, NameOID.COMMON_NAME)
    if not cns or not cns[0].startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    if set(usages) not in _KUBELET_CLIENT_USAGES:
        return ("usages did not match [client auth digital signature key encipherment]")
    return None


def _duration(max_ttl: datetime.timedelta, expiration_seconds: Any) -> datetime.timedelta:
    if not isinstance(expiration_seconds, int):
        return max_ttl
    requested = datetime.timedelta(seconds=expiration_seconds)
    return max_ttl if requested > max_ttl else max(requested, _MIN)


def sign_request(request_pem: bytes, usages: Sequence[str], *, ca_cert: x509.Certificate,
                 ca_key: Any, max_ttl: datetime.timedelta, expiration_seconds: Any = None,
                 now: datetime.datetime | None = None) -> bytes:
    """The PEM certificate for a CSR (PermissiveSigningPolicy over the CA)."""
    csr = x509.load_pem_x509_csr(request_pem)
    now = now or REAL_CLOCK.utcnow()
    ttl = _duration(max_ttl, expiration_seconds)
    not_before = now - _BACKDATE
    not_after = now + ttl if ttl < _SHORT else now + ttl - _BACKDATE
    not_after = min(not_after, ca_cert.not_valid_after_utc)
    if not_before >= ca_cert.not_valid_after_utc:
        raise SigningError(f"the signer has expired: NotAfter={ca_cert.not_valid_after_utc}")
    flags = {u: u in usages for u in _KEY_USAGES}
    builder = (x509.CertificateBuilder()
               .subject_name(csr.subject).issuer_name(ca_cert.subject)
               .public_key(csr.public_key())
               .serial_number(secrets.randbits(127) + 1)
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
    if any(flags.values()):
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=flags["digital signature"] or flags["signing"],
            content_commitment=flags["content commitment"],
            key_encipherment=flags["key encipherment"], data_encipherment=flags["data encipherment"],
            key_agreement=flags["key agreement"], key_cert_sign=flags["cert sign"],
            crl_sign=flags["crl sign"], encipher_only=flags["encipher only"],
            decipher_only=flags["decipher only"]), critical=True)
    ext = [_EXT_USAGES[u] for u in usages if u in _EXT_USAGES]
    if ext:
        builder = builder.add_extension(x509.ExtendedKeyUsage(ext), critical=False)
    sans = _sans(csr)
    if sans is not None:
        builder = builder.add_extension(sans, critical=False)
    builder = builder.add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
        critical=False)
    algorithm = None if isinstance(ca_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    cert = builder.sign(ca_key, algorithm)
    return cert.public_bytes(serialization.Encoding.PEM)


def load_ca(cert_file: str, key_file: str) -> tuple[x509.Certificate, Any]:
    with open(cert_file, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    with open(key_file, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey,
                            ed25519.Ed25519PrivateKey)):
        raise TypeError(f"{key_file}: unsupported key type")
    return cert, key


def _approved(csr: Mapping[str, Any]) -> tuple[bool, bool]:
    approved = denied = failed = False
    for c in (csr.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Approved":
            approved = True
        elif c.get("type") == "Denied":
            denied = True
        elif c.get("type") == "Failed" and c.get("status") == "True":
            failed = True
    return approved and not denied, failed


class CSRSigningController(ControllerHost):
    default_workers = 5

    def __init__(self, *, csr_informer: GenericInformer, client: Client, cert_file: str,
                 key_file: str, duration: float,
                 clock: Clock | Callable[[], datetime.datetime] | None = None) -> None:
        self.name = "certificatesigningrequest-signing"
        self.client = client
        self.ca_cert, self.ca_key = load_ca(cert_file, key_file)
        self.max_ttl = datetime.timedelta(seconds=duration)
        # A Clock (certificates are dated by its utcnow), or a bare function returning
        # an aware datetime (tests).
        self._time: Clock = clock if isinstance(clock, Clock) else REAL_CLOCK
        self.clock: Callable[[], datetime.datetime] = (
            clock if clock is not None and not isinstance(clock, Clock) else self._time.utcnow)
        self.controller = Controller("certificate", self.sync, clock=self._time)
        self.queue = self.controller.queue
        inf = csr_informer.informer
        self.indexer = inf.get_indexer()
        reg = inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self._enqueue, update_func=lambda old, new: self._enqueue(new),
            delete_func=lambda obj: None))
        self.controller.add_synced(reg.has_synced)

    def _enqueue(self, obj: Any) -> None:
        name = ((obj or {}).get("metadata") or {}).get("name")
        if name:
            self.queue.add(name)

    async def sync(self, key: str) -> None:
        csr = self.indexer.get_by_key(key)
        if csr is None:
            return
        status = csr.get("status") or {}
        approved, failed = _approved(csr)
        if not approved or failed or status.get("certificate"):
            return
        spec = csr.get("spec") or {}
        signer = spec.get("signerName")
        if signer not in SIGNERS:
            return
        request = base64.b64decode(spec.get("request") or "")
        usages = [str(u) for u in spec.get("usages") or []]
        try:
            _check_request(str(signer), x509.load_pem_x509_csr(request), usages)
        except SigningError as exc:
            conditions = [*(status.get("conditions") or []), {
                "type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                "message": str(exc),
                "lastUpdateTime": self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")}]
            await self.client.update_status(
                "certificatesigningrequests", {**csr, "status": {**status,
                                                                 "conditions": conditions}})
            return
        # On virtual time (issue 21) the certificate is dated by the real clock: TLS peers
        # check its validity against theirs, and a virtual "now" hours ahead would make it
        # not yet valid. A FakeClock (tests) dates it as given.
        now = REAL_CLOCK.utcnow() if isinstance(self._time, VirtualClock) else self.clock()
        pem = sign_request(request, usages, ca_cert=self.ca_cert, ca_key=self.ca_key,
                           max_ttl=self.max_ttl, expiration_seconds=spec.get("expirationSeconds"),
                           now=now)
        await self.client.update_status(
            "certificatesigningrequests",
            {**csr, "status": {**status, "certificate": base64.b64encode(pem).decode()}})
        log.debug("Signed CSR %s for %s", key, signer)
