"""kopf (PyPI) runs an operator against the embedded API server unmodified."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

from tests.conftest import Api

OPERATOR = '''
import json, os
import kopf

GROUP = os.environ["KOPF_GROUP"]
OUT = os.environ["KOPF_OUT"]


def log(*args):
    with open(OUT, "a") as f:
        f.write(json.dumps(args) + "\\n")


@kopf.on.create(GROUP, "v1", "widgets")
def created(spec, name, namespace, body, **_):
    log("create", name, spec.get("color"))
    kopf.info(body, reason="Greeted", message=f"hello {name}")
    return {"seen": spec.get("color")}


@kopf.on.update(GROUP, "v1", "widgets")
def updated(spec, name, **_):
    log("update", name, spec.get("color"))


@kopf.on.delete(GROUP, "v1", "widgets")
def deleted(name, **_):
    log("delete", name)
'''


def _wait(pred: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


def _lines(path: Path) -> list[list[Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_kopf_operator_handles_custom_resources(api: Api, tmp_path: Path) -> None:
    group = f"k{uuid.uuid4().hex[:8]}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]},
    }
    assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
    ns = api.ns()
    op = tmp_path / "operator.py"
    op.write_text(textwrap.dedent(OPERATOR))
    out = tmp_path / "out.jsonl"
    log_path = tmp_path / "kopf.log"
    env = {**os.environ, "KUBECONFIG": api.st.kubeconfig_path, "KOPF_GROUP": group,
           "KOPF_OUT": str(out)}
    with open(log_path, "w") as logf:
        proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone",
                                 "--namespace", ns, str(op)], env=env, stdout=logf,
                                stderr=subprocess.STDOUT, cwd=tmp_path)
    path = f"/apis/{group}/v1/namespaces/{ns}/widgets"
    try:
        time.sleep(2)  # let kopf start its watches
        code, w = api.post(path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                  "metadata": {"name": "w1"}, "spec": {"color": "red"}})
        assert code == 201, w
        _wait(lambda: ["create", "w1", "red"] in _lines(out))
        # kopf's finalizer is on the object, and its handler result in the status
        def finalized() -> dict[str, Any] | None:
            o = api.get(f"{path}/w1")[1]
            return o if "kopf.zalando.org/KopfFinalizerMarker" in (
                o["metadata"].get("finalizers") or []) else None

        obj = _wait(finalized)
        assert obj["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
        _wait(lambda: (api.get(f"{path}/w1")[1].get("status") or {}).get("created") == {
            "seen": "red"})
        code, _ = api.patch(f"{path}/w1", {"spec": {"color": "blue"}})
        assert code == 200
        _wait(lambda: ["update", "w1", "blue"] in _lines(out))
        # its events reach the server
        evs = _wait(lambda: [e for e in api.get(f"/api/v1/namespaces/{ns}/events", params={
            "fieldSelector": "involvedObject.name=w1"})[1]["items"] if e["reason"] == "Greeted"])
        assert evs[0]["message"] == "hello w1"
        # deletion runs the delete handler, then kopf removes its finalizer and the object goes
        code, _ = api.delete(f"{path}/w1")
        assert code == 200
        _wait(lambda: ["delete", "w1"] in _lines(out))
        _wait(lambda: api.get(f"{path}/w1")[0] == 404)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    log = log_path.read_text()
    bad = [ln for ln in log.splitlines()
           if "ERROR" in ln or "Traceback" in ln or "watching" in ln.lower() and "error" in
           ln.lower()]
    assert not bad, log
