"""Benchmark the patch library: strategic merge, JSON merge and JSON Patch on a Deployment.

Data flow: build one realistic stored Deployment (last-applied annotation,
managedFields, two containers, status) and one patch per format -> check
that pykcm and each peer produce the same document -> time each function
(several repeats, median patches/s on one core) -> print a Markdown table and
append it, with the machine's description, to ``bench/RESULTS.md``.

Peers are the PyPI packages installable here: ``jsonpatch`` (RFC 6902) and
``json-merge-patch`` (RFC 7386, mutates its target, so it is timed both in
place and on a deep copy). No Python strategic merge patch exists on PyPI;
its row is set against ``copy.deepcopy`` of the object, the floor for any
implementation that copies before patching (as upstream's Go code must,
since it mutates its input). Missing peers are skipped.

Run: ``.venv/bin/python bench/patch.py [--quick] [--no-write]`` (under 60 s).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import RESULTS, append_results, cpu_model

from pykcm.api.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    schema_ref_for,
)

DEPLOYMENT = schema_ref_for("apps", "v1", "Deployment") or "io.k8s.api.apps.v1.Deployment"


def container(name: str, image: str, port: int) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": port, "protocol": "TCP", "name": "p"}],
        "env": [
            {"name": "MODE", "value": "prod"},
            {
                "name": "POD",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
        ],
        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m"}},
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def stored_deployment() -> dict[str, Any]:
    last_applied = orjson.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 3},
        }
    ).decode()
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "6f1c0e1e-2d3b-4b8e-9a51-1b2c3d4e5f60",
            "resourceVersion": "123456",
            "generation": 4,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {
                "deployment.kubernetes.io/revision": "4",
                "kubectl.kubernetes.io/last-applied-configuration": last_applied,
            },
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": "2025-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}},
                        "f:spec": {
                            "f:replicas": {},
                            "f:template": {
                                "f:spec": {
                                    'k:{"name":"a"}': {".": {}, "f:image": {}, "f:name": {}},
                                    'k:{"name":"b"}': {".": {}, "f:image": {}, "f:name": {}},
                                }
                            },
                        },
                    },
                },
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": "2025-01-01T00:00:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:availableReplicas": {}, "f:conditions": {}}},
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "replicas": 3,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "frontend"}},
                "spec": {
                    "containers": [
                        container("a", "nginx:1.25", 80),
                        container("b", "redis:7", 6379),
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                },
            },
        },
        "status": {
            "observedGeneration": 4,
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        },
    }


# What `kubectl apply` sends when container "a"'s image changes.
SMP_PATCH: dict[str, Any] = {
    "metadata": {
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"apps/v1","kind":"Deployment"}'
        }
    },
    "spec": {
        "template": {
            "spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"image": "nginx:1.27", "name": "a"}],
            }
        }
    },
}
MERGE_PATCH: dict[str, Any] = {
    "metadata": {"labels": {"version": "v2", "tier": None}},
    "spec": {"replicas": 5, "template": {"metadata": {"labels": {"version": "v2"}}}},
}
JSON_PATCH: list[dict[str, Any]] = [
    {"op": "test", "path": "/spec/replicas", "value": 3},
    {"op": "replace", "path": "/spec/replicas", "value": 5},
    {"op": "add", "path": "/metadata/labels/version", "value": "v2"},
    {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.27"},
]


def reference_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386's pseudo-code applied to one deep copy: the obvious pure-Python implementation."""

    def merge(target: Any, patch: Any) -> Any:
        if not isinstance(patch, dict):
            return patch
        if not isinstance(target, dict):
            target = {}
        for name, value in patch.items():
            if value is None:
                target.pop(name, None)
            else:
                target[name] = merge(target.get(name), value)
        return target

    return merge(copy.deepcopy(target), copy.deepcopy(patch))


def measure(fn: Callable[[], object], repeats: int, target_s: float) -> float:
    """Median calls/s over ``repeats`` runs of about ``target_s`` seconds each."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target_s / 4:
            break
        n *= 4
    n = max(1, int(n * target_s / elapsed))
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def machine() -> str:
    try:
        date = subprocess.run(
            ["date", "-u"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        date = datetime.datetime.now(datetime.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    return (
        f"{date}; {platform.machine()}, nproc {os.cpu_count()}, {cpu_model()}, "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="patch benchmark")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--no-write", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)
    repeats, target_s = (3, 0.1) if args.quick else (7, 0.3)

    obj = stored_deployment()
    rows: list[tuple[str, str, float, str]] = []

    def add(fmt: str, impl: str, fn: Callable[[], object], note: str = "") -> None:
        rows.append((fmt, impl, measure(fn, repeats, target_s), note))

    # Strategic merge patch.
    smp_result = apply_strategic_merge_patch(obj, SMP_PATCH, DEPLOYMENT)
    assert smp_result["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    add("strategic merge", "pykcm", lambda: apply_strategic_merge_patch(obj, SMP_PATCH, DEPLOYMENT))
    add(
        "strategic merge",
        "copy.deepcopy(object) alone",
        lambda: copy.deepcopy(obj),
        "floor for copy-then-patch designs",
    )
    add(
        "strategic merge",
        "orjson round trip alone",
        lambda: orjson.loads(orjson.dumps(obj)),
        "fastest full copy available",
    )

    # JSON merge patch.
    expected = reference_merge_patch(obj, MERGE_PATCH)
    assert apply_merge_patch(obj, MERGE_PATCH) == expected
    add("merge", "pykcm", lambda: apply_merge_patch(obj, MERGE_PATCH))
    add("merge", "RFC pseudo-code on a deepcopy", lambda: reference_merge_patch(obj, MERGE_PATCH))
    try:
        import json_merge_patch  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        print("json-merge-patch not installed; skipped", file=sys.stderr)
    else:
        assert json_merge_patch.merge(copy.deepcopy(obj), MERGE_PATCH) == expected
        add(
            "merge",
            "json-merge-patch 0.3 (on deepcopy)",
            lambda: json_merge_patch.merge(copy.deepcopy(obj), MERGE_PATCH),
        )
        scratch = copy.deepcopy(obj)
        add(
            "merge",
            "json-merge-patch 0.3 (in place)",
            lambda: json_merge_patch.merge(scratch, MERGE_PATCH),
            "mutates its input; not a fair contract",
        )

    # JSON Patch.
    jp_result = apply_json_patch(obj, JSON_PATCH)
    assert jp_result["spec"]["replicas"] == 5
    add("json patch", "pykcm", lambda: apply_json_patch(obj, JSON_PATCH))
    try:
        import jsonpatch
    except ImportError:
        print("jsonpatch not installed; skipped", file=sys.stderr)
    else:
        assert jsonpatch.apply_patch(obj, JSON_PATCH) == jp_result
        version = jsonpatch.__version__
        add("json patch", f"jsonpatch {version}", lambda: jsonpatch.apply_patch(obj, JSON_PATCH))
        compiled = jsonpatch.JsonPatch(JSON_PATCH)
        add("json patch", f"jsonpatch {version} (pre-parsed)", lambda: compiled.apply(obj))

    pykcm_rate = {fmt: rate for fmt, impl, rate, _ in rows if impl == "pykcm"}
    lines = [
        "| format | implementation | patches/s (median) | vs pykcm | note |",
        "|---|---|---:|---:|---|",
    ]
    for fmt, impl, rate, note in rows:
        ratio = rate / pykcm_rate[fmt]
        lines.append(f"| {fmt} | {impl} | {rate:,.0f} | {ratio:.2f}x | {note} |")
    table = "\n".join(lines)
    desc = machine()
    print(f"patch benchmark — {desc}\n")
    print(table)

    if not args.no_write:
        section = (
            f"\n## Patch library (`bench/patch.py`)\n\n"
            f"{desc}. Stored Deployment with last-applied annotation, managedFields, two "
            f"containers and status; one core; median of {repeats} repeats of ~{target_s:g}s. "
            "Strategic merge patch: the kubectl-apply patch for an image change "
            "(`$setElementOrder/containers` + one container). Merge patch: labels and replicas. "
            "JSON Patch: test + 3 replace/add ops. pykcm never mutates its inputs.\n\n"
            f"{table}\n"
        )
        append_results(section)
        print(f"\nappended to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
