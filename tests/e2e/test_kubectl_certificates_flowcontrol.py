"""kubectl on the certificates, flowcontrol and apiregistration kinds (issue 15, part B):
``kubectl apply`` of a CertificateSigningRequest, a PriorityLevelConfiguration and a
FlowSchema succeeds on pykcm's API server and on the real kube-apiserver v1.36.2, and
``kubectl get`` (plain and ``-o wide``) prints the same columns and cells on both (AGE
masked), as it does for the bootstrap FlowSchemas and priority levels and the local
APIServices both servers make at start. (One known difference is asserted as such: the
Dangling condition of a FlowSchema created later, which pykcm does not write.)
"""

from __future__ import annotations

import base64
import uuid

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.e2e.conftest import Kubectl
from tests.e2e.test_kubectl_storage_csi import _masked

pytestmark = pytest.mark.upstream

MANIFEST = """\
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
spec: {{request: {request}, signerName: example.com/signer, usages: [client auth], expirationSeconds: 7200}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
spec: {{type: Limited, limited: {{nominalConcurrencyShares: 5, lendablePercent: 0, limitResponse: {{type: Queue, queuing: {{queues: 4, handSize: 2, queueLengthLimit: 10}}}}}}}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
spec:
  priorityLevelConfiguration: {{name: {sfx}}}
  matchingPrecedence: 5000
  distinguisherMethod: {{type: ByUser}}
  rules: [{{subjects: [{{kind: User, user: {{name: nobody-{sfx}}}}}], nonResourceRules: [{{verbs: [get], nonResourceURLs: [/nothing-{sfx}]}}]}}]
"""


def _request() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, "jane")])).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def test_apply_and_get_print_upstreams_columns(kubectl_both: dict[str, Kubectl]) -> None:
    sfx = f"e2e-{uuid.uuid4().hex[:8]}"
    manifest = MANIFEST.format(sfx=sfx, request=_request())
    outputs: dict[str, dict[str, list[list[str]]]] = {}
    try:
        for name, k in kubectl_both.items():
            applied = k.ok("apply", "-f", "-", stdin=manifest)
            assert f"flowschema.flowcontrol.apiserver.k8s.io/{sfx} created" in applied, applied
            outputs[name] = {}
            for kind in ("certificatesigningrequests", "prioritylevelconfigurations",
                         "flowschemas"):
                for wide in ((), ("-o", "wide")):
                    outputs[name][f"{kind} {' '.join(wide)}"] = _masked(
                        k.ok("get", kind, "-l", f"e2e={sfx}", *wide))
            k.ok("certificate", "deny", sfx)
            outputs[name]["denied"] = _masked(k.ok("get", "csr", sfx))
            outputs[name]["bootstrap"] = _masked(k.ok(
                "get", "flowschemas", "exempt", "catch-all", "system-nodes", "-o", "wide"))
            outputs[name]["levels"] = _masked(k.ok(
                "get", "prioritylevelconfigurations", "exempt", "workload-low", "catch-all"))
            outputs[name]["apiservices"] = _masked(k.ok(
                "get", "apiservices", "v1.", "v1.apps", "v2.autoscaling", "v1.storage.k8s.io"))
        # the requester column names each server's admin user: masked
        for out in outputs.values():
            for key in ("certificatesigningrequests ", "certificatesigningrequests -o wide",
                        "denied"):
                out[key][1][3] = "<requestor>"
        # kube-apiserver's APF configuration controller writes a new FlowSchema's Dangling
        # condition (MISSINGPL False); pykcm writes it only for the bootstrap ones (README)
        for key in ("flowschemas ", "flowschemas -o wide"):
            assert outputs["kube"][key][1][-1] == "False"
            assert outputs["pykcm"][key][1][-1] == "?"
            for out in outputs.values():
                out[key][1][-1] = "<missing-pl>"
        assert outputs["pykcm"] == outputs["kube"]
        assert outputs["pykcm"]["denied"][1][-1] == "Denied"
    finally:
        for k in kubectl_both.values():
            for kind in ("certificatesigningrequests", "flowschemas",
                         "prioritylevelconfigurations"):
                k.run("delete", kind, "-l", f"e2e={sfx}", "--wait=false")
