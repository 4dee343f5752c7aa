"""kubectl on the networking, node and scheduling kinds (issue 15, part A): ``kubectl apply``
of one object of each kind succeeds on pykcm's API server and on the real kube-apiserver
v1.36.2, and ``kubectl get`` (plain and ``-o wide``) prints the same columns and cells on
both (the AGE column masked); the system PriorityClasses exist on both; a pod names a
PriorityClass and gets its priority, as kubectl shows it.
"""

from __future__ import annotations

import random
import uuid

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.upstream

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}, annotations: {{ingressclass.kubernetes.io/is-default-class: "true"}}}}
spec: {{controller: example.com/ingress-controller, parameters: {{kind: ConfigMap, name: p, scope: Namespace, namespace: {ns}}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: web, namespace: {ns}}}
spec:
  ingressClassName: {sfx}
  tls: [{{hosts: [a.example.com], secretName: tls}}]
  rules:
  - host: a.example.com
    http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}]}}
  - host: b.example.com
    http: {{paths: [{{path: /x, pathType: Exact, backend: {{service: {{name: web, port: {{name: http}}}}}}}}]}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: deny, namespace: {ns}}}
spec:
  podSelector: {{matchLabels: {{app: web}}}}
  ingress: [{{from: [{{ipBlock: {{cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}}}], ports: [{{port: 80}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
spec: {{cidrs: [{cidr}]}}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {{name: {ip}, labels: {{e2e: {sfx}}}}}
spec: {{parentRef: {{resource: services, namespace: {ns}, name: web}}}}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
handler: runsc
overhead: {{podFixed: {{cpu: 100m, memory: 64Mi}}}}
scheduling: {{nodeSelector: {{runtime: gvisor}}, tolerations: [{{key: k, operator: Exists}}]}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {sfx}, labels: {{e2e: {sfx}}}}}
value: 1000
description: high priority
"""

KINDS = ("ingressclasses", "ingresses", "networkpolicies", "servicecidrs", "ipaddresses",
         "runtimeclasses", "priorityclasses")
CLUSTER_SCOPED = {"ingressclasses", "servicecidrs", "ipaddresses", "runtimeclasses",
                  "priorityclasses"}


def _masked(table: str) -> list[list[str]]:
    """The table's rows cut into cells where the header's columns start (an empty cell stays
    a cell), the AGE column's cells masked."""
    lines = table.splitlines()
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = header.split()
    rows = [[line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1],
                                               strict=True)] for line in lines]
    if "AGE" in names:
        col = names.index("AGE")
        for row in rows[1:]:
            row[col] = "<age>"
    return rows


def test_apply_and_get_print_upstreams_columns(kubectl_both: dict[str, Kubectl]) -> None:
    sfx = f"e2e-{uuid.uuid4().hex[:8]}"
    ns = sfx
    octets = random.randrange(1, 250), random.randrange(1, 250)
    # an IPv6 ServiceCIDR: kube-apiserver would allocate other tests' IPv4 Services from an
    # IPv4 one while it exists
    values = {"sfx": sfx, "ns": ns, "cidr": f"fd00:{octets[0]:x}:{octets[1]:x}::/112",
              "ip": f"10.{200 + octets[0] % 50}.{octets[1]}.10"}
    manifest = MANIFEST.format(**values)
    outputs: dict[str, dict[str, list[list[str]]]] = {}
    try:
        for name, k in kubectl_both.items():
            applied = k.ok("apply", "-f", "-", stdin=manifest)
            assert "priorityclass.scheduling.k8s.io/" + sfx + " created" in applied, applied
            outputs[name] = {}
            for kind in KINDS:
                scope = ["-l", f"e2e={sfx}"] if kind in CLUSTER_SCOPED else ["-n", ns]
                for wide in ((), ("-o", "wide")):
                    outputs[name][f"{kind} {' '.join(wide)}"] = _masked(
                        k.ok("get", kind, *scope, *wide))
        assert outputs["pykcm"] == outputs["kube"]
        got = outputs["pykcm"]
        assert got["ingresses "][1] == ["web", sfx, "a.example.com,b.example.com", "", "80, 443",
                                        "<age>"]
        assert got["ingressclasses "][1][0] == f"{sfx} (default)"
        assert got["priorityclasses "][0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE",
                                              "PREEMPTIONPOLICY"]
        for name, k in kubectl_both.items():
            system = k.ok("get", "priorityclasses", "system-node-critical",
                          "system-cluster-critical", "-o",
                          "custom-columns=NAME:.metadata.name,VALUE:.value", "--no-headers")
            assert system.split() == ["system-node-critical", "2000001000",
                                      "system-cluster-critical", "2000000000"], name
    finally:
        for k in kubectl_both.values():
            for kind in CLUSTER_SCOPED:
                k.run("delete", kind, "-l", f"e2e={sfx}", "--wait=false")
            k.run("delete", "namespace", ns, "--wait=false")
