"""kubectl on the CSI storage kinds (issue 15, part B): ``kubectl apply`` of one CSIDriver,
CSINode, CSIStorageCapacity, VolumeAttachment and VolumeAttributesClass succeeds on pykcm's
API server and on the real kube-apiserver v1.36.2, and ``kubectl get`` (plain and
``-o wide``) prints the same columns and cells on both (the AGE column masked).
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.upstream

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {{name: {sfx}.csi.example.com, labels: {{e2e: {sfx}}}}}
spec: {{attachRequired: false, podInfoOnMount: true, tokenRequests: [{{audience: vault}}], serviceAccountTokenInSecrets: true, volumeLifecycleModes: [Persistent, Ephemeral]}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
spec: {{drivers: [{{name: {sfx}.csi.example.com, nodeID: n1, topologyKeys: [topology.example.com/zone]}}]}}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {{name: cap, namespace: {ns}}}
storageClassName: fast
capacity: 10Gi
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
spec: {{attacher: {sfx}.csi.example.com, nodeName: n1, source: {{persistentVolumeName: pv-1}}}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
driverName: {sfx}.csi.example.com
parameters: {{iops: "3000"}}
"""

KINDS = ("csidrivers", "csinodes", "csistoragecapacities", "volumeattachments",
         "volumeattributesclasses")
CLUSTER_SCOPED = {"csidrivers", "csinodes", "volumeattachments", "volumeattributesclasses"}


def _masked(table: str) -> list[list[str]]:
    """The table's rows split into cells, the AGE and CREATED AT columns masked."""
    rows = [line.split() for line in table.splitlines()]
    header = rows[0]
    for title in ("AGE", "CREATED"):
        if title in header:
            col = header.index(title)
            for row in rows[1:]:
                row[col] = "<time>"
                if title == "CREATED":
                    del row[col + 1:]  # the timestamp's own words
    return rows


def test_apply_and_get_print_upstreams_columns(kubectl_both: dict[str, Kubectl]) -> None:
    sfx = f"e2e-{uuid.uuid4().hex[:8]}"
    ns = sfx
    manifest = MANIFEST.format(sfx=sfx, ns=ns)
    outputs: dict[str, dict[str, list[list[str]]]] = {}
    try:
        for name, k in kubectl_both.items():
            applied = k.ok("apply", "-f", "-", stdin=manifest)
            assert f"volumeattributesclass.storage.k8s.io/{sfx} created" in applied, applied
            outputs[name] = {}
            for kind in KINDS:
                scope = ["-l", f"e2e={sfx}"] if kind in CLUSTER_SCOPED else ["-n", ns]
                for wide in ((), ("-o", "wide")):
                    outputs[name][f"{kind} {' '.join(wide)}"] = _masked(
                        k.ok("get", kind, *scope, *wide))
        assert outputs["pykcm"] == outputs["kube"]
        got = outputs["pykcm"]
        assert got["csidrivers "][1] == [f"{sfx}.csi.example.com", "false", "true", "false",
                                         "vault", "false", "Persistent,Ephemeral", "<time>"]
        assert got["volumeattachments "][1] == [sfx, f"{sfx}.csi.example.com", "pv-1", "n1",
                                                "false", "<time>"]
        assert got["csinodes "][1] == [sfx, "1", "<time>"]
    finally:
        for k in kubectl_both.values():
            for kind in CLUSTER_SCOPED:
                if kind == "volumeattributesclasses":
                    # nothing removes vac-protection here (no controller manager)
                    k.run("patch", kind, sfx, "--type=merge", "-p",
                          '{"metadata":{"finalizers":null}}')
                k.run("delete", kind, "-l", f"e2e={sfx}", "--wait=false")
            k.run("delete", "namespace", ns, "--wait=false")
