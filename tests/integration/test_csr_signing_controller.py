"""The CSR signing controller against an API server (both servers): an approved
CertificateSigningRequest of a kubernetes.io signer gets a certificate the cluster CA
signed, with the request's subject and usages and the requested duration; a request the
signer's rules refuse gets the Failed condition instead; a pending one is left alone.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykcm.api.virtual_clock import VirtualClock
from pykcm.client import Client, load_kube_config
from pykcm.controllers.certificates import (
    CSRApprovingController,
    CSRCleanerController,
    CSRSigningController,
)
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend
from tests.polling import eventually

CSRS = "certificatesigningrequests"


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


def _ca(tmp: Path) -> tuple[x509.Certificate, str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp / "ca.crt", tmp / "ca.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert, str(cert_file), str(key_file)


def _request(cn: str, org: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, org)])).sign(key, hashes.SHA256()))
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


async def _create(client: Client, name: str, signer: str, usages: list[str],
                  request: str) -> None:
    await client.create(CSRS, {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": request, "signerName": signer, "usages": usages,
                 "expirationSeconds": 3600}})


async def _approve(client: Client, name: str) -> None:
    await client.patch(CSRS, name, {"status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]}},
        "merge", subresource="approval")


async def test_approved_requests_are_signed_and_refused_ones_fail(
        client: Client, tmp_path: Path) -> None:
    ca, cert_file, key_file = _ca(tmp_path)
    sfx = uuid.uuid4().hex[:8]
    good, bad, pending = f"good-{sfx}", f"bad-{sfx}", f"pending-{sfx}"
    factory = SharedInformerFactory(client)
    ctl = CSRSigningController(
        csr_informer=factory.for_resource("certificates.k8s.io", "v1", CSRS), client=client,
        cert_file=cert_file, key_file=key_file, duration=365 * 24 * 3600.0)
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        await _create(client, good, "kubernetes.io/kube-apiserver-client",
                      ["client auth", "digital signature"], _request("jane", "dev"))
        # a kubelet-serving request must come from system:nodes
        await _create(client, bad, "kubernetes.io/kubelet-serving", ["server auth"],
                      _request("jane", "dev"))
        await _create(client, pending, "kubernetes.io/kube-apiserver-client",
                      ["client auth"], _request("joe", "dev"))
        await _approve(client, good)
        await _approve(client, bad)

        async def issued() -> Any:
            obj = await client.get(CSRS, good)
            return obj.get("status", {}).get("certificate")

        pem = base64.b64decode(await eventually(issued, what="certificate issued"))
        cert = x509.load_pem_x509_certificate(pem)
        cert.verify_directly_issued_by(ca)
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "jane"
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
        assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        # expirationSeconds 3600, short-lived: NotAfter not backdated, NotBefore 5 min back
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert lifetime == datetime.timedelta(minutes=65)

        async def failed() -> Any:
            obj = await client.get(CSRS, bad)
            return [c for c in obj.get("status", {}).get("conditions", [])
                    if c["type"] == "Failed"]

        (cond,) = await eventually(failed, what="Failed condition")
        assert cond["reason"] == "SignerValidationFailure"
        assert cond["message"] == "subject organization is not system:nodes"
        assert "certificate" not in (await client.get(CSRS, bad)).get("status", {})
        assert "certificate" not in (await client.get(CSRS, pending)).get("status", {})
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        for name in (good, bad, pending):
            await client.delete(CSRS, name)


async def test_on_virtual_time_certificates_are_dated_by_the_real_clock(
        client: Client, tmp_path: Path) -> None:
    """A cluster on virtual time may be days ahead of the wall clock: the certificates
    it signs are still valid now for TLS peers, which check them against real time."""
    _, cert_file, key_file = _ca(tmp_path)
    name = f"vt-{uuid.uuid4().hex[:8]}"
    ahead = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=10)
    factory = SharedInformerFactory(client)
    ctl = CSRSigningController(
        csr_informer=factory.for_resource("certificates.k8s.io", "v1", CSRS), client=client,
        cert_file=cert_file, key_file=key_file, duration=365 * 24 * 3600.0,
        clock=VirtualClock(ahead.timestamp()))
    factory.start()
    task = asyncio.create_task(ctl.run(1))
    try:
        await _create(client, name, "kubernetes.io/kube-apiserver-client", ["client auth"],
                      _request("jane", "dev"))
        await _approve(client, name)

        async def issued() -> Any:
            return (await client.get(CSRS, name)).get("status", {}).get("certificate")

        cert = x509.load_pem_x509_certificate(
            base64.b64decode(await eventually(issued, what="certificate issued")))
        now = datetime.datetime.now(datetime.UTC)
        assert cert.not_valid_before_utc <= now < cert.not_valid_after_utc
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        await client.delete(CSRS, name)


async def test_the_cleaner_deletes_old_denied_requests_and_keeps_young_ones(
        client: Client) -> None:
    sfx = uuid.uuid4().hex[:8]
    old, young = f"old-denied-{sfx}", f"pending-{sfx}"
    for name in (old, young):
        await _create(client, name, "kubernetes.io/kube-apiserver-client", ["client auth"],
                      _request("jane", "dev"))
    two_hours_ago = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=2)
                     ).strftime("%Y-%m-%dT%H:%M:%SZ")
    await client.patch(CSRS, old, {"status": {"conditions": [{
        "type": "Denied", "status": "True", "reason": "Test", "message": "no",
        "lastUpdateTime": two_hours_ago}]}}, "merge", subresource="approval")
    factory = SharedInformerFactory(client)
    ctl = CSRCleanerController(
        csr_informer=factory.for_resource("certificates.k8s.io", "v1", CSRS), client=client)
    factory.start()
    task = asyncio.create_task(ctl.run(1))
    try:
        async def deleted() -> bool:
            names = {c["metadata"]["name"] for c in (await client.list(CSRS))["items"]}
            return old not in names

        await eventually(deleted, what="the old denied CSR deleted")
        assert (await client.get(CSRS, young))["metadata"]["name"] == young
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        await client.delete(CSRS, young)


async def test_the_approver_approves_kubelet_client_requests_the_requester_may_make(
        client: Client) -> None:
    sfx = uuid.uuid4().hex[:8]
    node, other = f"node-{sfx}", f"user-{sfx}"
    await _create(client, node, "kubernetes.io/kube-apiserver-client-kubelet",
                  ["digital signature", "client auth"], _request(f"system:node:n-{sfx}",
                                                                 "system:nodes"))
    await _create(client, other, "kubernetes.io/kube-apiserver-client", ["client auth"],
                  _request("jane", "dev"))
    factory = SharedInformerFactory(client)
    ctl = CSRApprovingController(
        csr_informer=factory.for_resource("certificates.k8s.io", "v1", CSRS), client=client)
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        async def approved() -> Any:
            obj = await client.get(CSRS, node)
            return [c for c in obj.get("status", {}).get("conditions", [])
                    if c["type"] == "Approved"]

        # the test's client is in system:masters: the "nodeclient" review allows it (the
        # requester is not the node itself, so "selfnodeclient" is not tried)
        (cond,) = await eventually(approved, what="Approved condition")
        assert (cond["reason"], cond["message"]) == (
            "AutoApproved", "Auto approving kubelet client certificate after SubjectAccessReview.")
        assert "conditions" not in (await client.get(CSRS, other)).get("status", {})
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        for name in (node, other):
            await client.delete(CSRS, name)
