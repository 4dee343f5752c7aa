"""On ``pykcm up``: a CertificateSigningRequest made with ``kubectl create``, approved with
``kubectl certificate approve``, gets a certificate the cluster CA (DATA/pki/ca.crt)
signed: the controller manager's certificatesigningrequest-signing-controller, given the
CA by ``pykcm up``, as kube-controller-manager with --cluster-signing-cert-file.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import uuid

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykcm.testing.cluster import Cluster
from tests.e2e.cluster_helpers import wait_until
from tests.e2e.conftest import Kubectl, _kubectl_path

pytestmark = pytest.mark.e2e


def test_kubectl_certificate_approve_yields_a_certificate_of_the_cluster_ca(
        pykcm_cluster: Cluster) -> None:
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    k = Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": pykcm_cluster.kubeconfig_path,
                                  "KUBECACHEDIR": cache})
    name = f"jane-{uuid.uuid4().hex[:8]}"
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, "jane")])).sign(key, hashes.SHA256())
    manifest = {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64.b64encode(
            request.public_bytes(serialization.Encoding.PEM)).decode(),
                 "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["client auth"], "expirationSeconds": 86400}}
    try:
        k.ok("create", "-f", "-", stdin=json.dumps(manifest))
        assert "approved" in k.ok("certificate", "approve", name)

        def issued() -> bool:
            r = k.run("get", "csr", name, "-o", "jsonpath={.status.certificate}")
            return r.returncode == 0 and bool(r.stdout.strip())

        wait_until(issued, "the certificate")
        cert = x509.load_pem_x509_certificate(base64.b64decode(
            k.ok("get", "csr", name, "-o", "jsonpath={.status.certificate}")))
        with open(os.path.join(pykcm_cluster.data_dir, "pki", "ca.crt"), "rb") as f:
            ca = x509.load_pem_x509_certificate(f.read())
        cert.verify_directly_issued_by(ca)
        assert cert.public_key() == key.public_key()
        row = k.ok("get", "csr", name, "--no-headers").split()
        assert row[-1] == "Approved,Issued" and row[2] == "kubernetes.io/kube-apiserver-client"
    finally:
        k.run("delete", "csr", name)
        shutil.rmtree(cache, ignore_errors=True)
