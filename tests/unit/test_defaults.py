"""Defaulting of built-in objects, against what kube-apiserver v1.36 returns."""

from __future__ import annotations

import base64
import copy
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.apiserver.registry.batch.job import generate_job_selector
from pykcm.apiserver.registry.core.podspec_defaults import image_pull_policy, pod_qos_class
from pykcm.apiserver.registry.defaults import parse_quantity
from tests.unit.kind_strategies import apply_defaults

CONTAINER_DEFAULTS = {
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
TEMPLATE_SPEC_DEFAULTS = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}


def _template(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    tmpl: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}],
                                     **spec}}
    if labels is not None:
        tmpl["metadata"] = {"labels": labels}
    return tmpl


def test_deployment() -> None:
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template({"app": "web"})}}
    apply_defaults("Deployment", obj)
    spec = obj["spec"]
    assert list(spec) == ["replicas", "selector", "template", "strategy", "revisionHistoryLimit",
                          "progressDeadlineSeconds"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    pod_spec = spec["template"]["spec"]
    assert {k: pod_spec[k] for k in TEMPLATE_SPEC_DEFAULTS} == TEMPLATE_SPEC_DEFAULTS
    assert "enableServiceLinks" not in pod_spec  # Pods only
    assert pod_spec["containers"][0] == {"name": "c", "image": "nginx:1.25", **CONTAINER_DEFAULTS,
                                         "imagePullPolicy": "IfNotPresent"}
    assert list(pod_spec["containers"][0]) == [
        "name", "image", "resources", "terminationMessagePath", "terminationMessagePolicy",
        "imagePullPolicy"]
    assert list(obj) == ["kind", "apiVersion", "metadata", "spec", "status"]
    assert obj["status"] == {}


def test_deployment_keeps_given_values_and_recreate() -> None:
    obj = {"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0,
                    "progressDeadlineSeconds": 30, "template": _template()}}
    apply_defaults("Deployment", obj)
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["strategy"] == {"type": "Recreate"}
    assert obj["spec"]["revisionHistoryLimit"] == 0
    assert obj["spec"]["progressDeadlineSeconds"] == 30
    partial = {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0}}, "template": _template()}}
    apply_defaults("Deployment", partial)
    assert partial["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": 0}


def test_replicaset() -> None:
    obj: dict[str, Any] = {"spec": {"template": _template()}}
    apply_defaults("ReplicaSet", obj)
    assert obj["spec"]["replicas"] == 1
    assert obj["status"] == {"replicas": 0}


def test_statefulset() -> None:
    obj: dict[str, Any] = {"spec": {"serviceName": "db", "template": _template(),
                                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                                              "spec": {"accessModes": ["RWO"]}}]}}
    apply_defaults("StatefulSet", obj)
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                            "whenScaled": "Retain"}
    assert "minReadySeconds" not in spec
    pvc = spec["volumeClaimTemplates"][0]
    assert pvc["apiVersion"] == "v1" and pvc["kind"] == "PersistentVolumeClaim"
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert pvc["status"] == {"phase": "Pending"}
    ondelete: dict[str, Any] = {"spec": {"updateStrategy": {"type": "OnDelete"},
                                         "template": _template()}}
    apply_defaults("StatefulSet", ondelete)
    assert ondelete["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_daemonset() -> None:
    obj: dict[str, Any] = {"spec": {"template": _template()}}
    apply_defaults("DaemonSet", obj)
    assert obj["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                             "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert obj["spec"]["revisionHistoryLimit"] == 10
    assert obj["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                             "desiredNumberScheduled": 0, "numberReady": 0}


def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default", "uid": "u-1"},
            "spec": {"template": _template(restartPolicy="Never"), **spec}}


def test_job() -> None:
    obj = _job()
    apply_defaults("Job", obj)
    spec = obj["spec"]
    assert spec["parallelism"] == 1 and spec["completions"] == 1
    assert spec["backoffLimit"] == 6
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    generated = {"controller-uid": "u-1", "batch.kubernetes.io/controller-uid": "u-1",
                 "job-name": "pi", "batch.kubernetes.io/job-name": "pi"}
    assert spec["template"]["metadata"]["labels"] == generated
    # Read back from storage, the Job carries the generated labels too.
    assert obj["metadata"]["labels"] == generated
    assert list(spec)[:3] == ["parallelism", "completions", "backoffLimit"]


def test_job_parallelism_and_policies() -> None:
    obj = _job(parallelism=3)
    apply_defaults("Job", obj)
    assert obj["spec"]["parallelism"] == 3 and "completions" not in obj["spec"]
    obj = _job(completions=5)
    apply_defaults("Job", obj)
    assert obj["spec"]["parallelism"] == 1 and obj["spec"]["completions"] == 5
    obj = _job(backoffLimitPerIndex=1, completionMode="Indexed", completions=2)
    apply_defaults("Job", obj)
    assert obj["spec"]["backoffLimit"] == 2**31 - 1
    obj = _job(podFailurePolicy={"rules": [{"action": "Ignore",
                                             "onPodConditions": [{"type": "DisruptionTarget"}]}]})
    apply_defaults("Job", obj)
    assert obj["spec"]["podReplacementPolicy"] == "Failed"
    assert obj["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


def test_job_labels_from_template_and_manual_selector() -> None:
    obj = _job()
    obj["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    apply_defaults("Job", obj)
    # Go shares the template's label map: the generated selector labels show on the Job
    assert obj["metadata"]["labels"] == obj["spec"]["template"]["metadata"]["labels"]
    assert obj["metadata"]["labels"]["app"] == "pi"
    own = _job()
    own["metadata"]["labels"] = {"mine": "x"}
    own["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    apply_defaults("Job", own)
    assert own["metadata"]["labels"] == {"mine": "x"}
    manual = _job(manualSelector=True, selector={"matchLabels": {"app": "pi"}})
    manual["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    apply_defaults("Job", manual)
    assert manual["spec"]["selector"] == {"matchLabels": {"app": "pi"}}
    assert manual["spec"]["template"]["metadata"]["labels"] == {"app": "pi"}


def test_job_update_does_not_generate_and_no_uid() -> None:
    obj = _job()
    apply_defaults("Job", obj, create=False)
    assert "selector" not in obj["spec"]
    no_uid = _job()
    del no_uid["metadata"]["uid"]
    apply_defaults("Job", no_uid)
    assert "selector" not in no_uid["spec"]


def test_generate_job_selector_keeps_user_labels() -> None:
    obj = _job()
    obj["spec"]["template"]["metadata"] = {"labels": {"job-name": "other"}}
    generate_job_selector(obj)
    labels = obj["spec"]["template"]["metadata"]["labels"]
    assert labels["job-name"] == "other"
    assert labels["batch.kubernetes.io/job-name"] == "pi"


def test_cronjob() -> None:
    obj: dict[str, Any] = {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {
        "spec": {"template": _template(restartPolicy="OnFailure")}}}}
    apply_defaults("CronJob", obj)
    spec = obj["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert spec["successfulJobsHistoryLimit"] == 3
    assert spec["failedJobsHistoryLimit"] == 1
    jt = spec["jobTemplate"]
    assert jt["metadata"] == {}
    # The Job defaults are not applied inside a CronJob.
    assert "backoffLimit" not in jt["spec"] and "completions" not in jt["spec"]
    assert jt["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"


def test_pod() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
         "resources": {"limits": {"cpu": "500m"}},
         "livenessProbe": {"httpGet": {"port": 80}},
         "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
        "initContainers": [{"name": "i", "image": "busybox@sha256:" + "a" * 64}],
        "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}}
    apply_defaults("Pod", obj)
    spec = obj["spec"]
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "Always"
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["resources"] == {"limits": {"cpu": "500m"}, "requests": {"cpu": "500m"}}
    assert c["livenessProbe"] == {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"},
                                  "timeoutSeconds": 1, "periodSeconds": 10,
                                  "successThreshold": 1, "failureThreshold": 3}
    assert c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert spec["initContainers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["volumes"] == [{"name": "v", "emptyDir": {}},
                               {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}}]
    assert spec["enableServiceLinks"] is True
    assert obj["status"] == {"phase": "Pending", "qosClass": "Burstable"}
    assert list(spec)[:3] == ["volumes", "initContainers", "containers"]


def test_pod_update_keeps_status_untouched() -> None:
    obj: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    apply_defaults("Pod", obj, create=False)
    assert "status" not in obj


def test_pod_host_network_ports() -> None:
    obj: dict[str, Any] = {"spec": {"hostNetwork": True, "containers": [
        {"name": "c", "image": "x", "ports": [{"containerPort": 8080}]}]}}
    apply_defaults("Pod", obj)
    assert obj["spec"]["containers"][0]["ports"][0]["hostPort"] == 8080


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("docker.io/library/nginx", "Always"),
        ("registry.example.com:5000/team/app:v1", "IfNotPresent"),
        ("localhost/app", "Always"),
        ("nginx@sha256:" + "0" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "0" * 64, "Always"),
        ("", "IfNotPresent"),
        ("Nginx", "IfNotPresent"),
        ("a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_qos_class() -> None:
    def spec(*resources: dict[str, Any]) -> dict[str, Any]:
        return {"containers": [{"name": str(i), "resources": r} for i, r in enumerate(resources)]}

    assert pod_qos_class(spec({})) == "BestEffort"
    full = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m",
                                                                  "memory": "1024Mi"}}
    assert pod_qos_class(spec(full)) == "Guaranteed"
    assert pod_qos_class(spec(full, {})) == "Burstable"
    assert pod_qos_class(spec({"requests": {"cpu": "1"}})) == "Burstable"
    assert pod_qos_class(spec({"requests": {"cpu": "0"}})) == "BestEffort"
    pod_level = {"resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                               "requests": {"cpu": "1", "memory": "1Gi"}},
                 "containers": [{"name": "a"}]}
    assert pod_qos_class(pod_level) == "Guaranteed"


@pytest.mark.parametrize(
    ("q", "value"),
    [("1", 1), ("100m", 0.1), ("1Ki", 1024), ("1k", 1000), ("1e3", 1000), ("1.5Gi", 1.5 * 2**30),
     (2, 2), ("x", None), ("1Q", None)],
)
def test_parse_quantity(q: Any, value: float | None) -> None:
    got = parse_quantity(q)
    assert (got is None) if value is None else (got is not None and float(got) == value)


def test_namespace() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "team-a"}}
    apply_defaults("Namespace", obj)
    assert obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert obj["spec"] == {"finalizers": ["kubernetes"]}
    assert obj["status"] == {"phase": "Active"}
    finalized = {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "x"}},
                 "spec": {}, "status": {"phase": "Terminating"}}
    apply_defaults("Namespace", finalized, create=False)
    assert finalized["spec"] == {}
    assert finalized["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a"
    assert finalized["status"]["phase"] == "Terminating"


def test_service() -> None:
    obj: dict[str, Any] = {"spec": {"selector": {"app": "web"},
                                    "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}}
    apply_defaults("Service", obj)
    spec = obj["spec"]
    assert spec["ports"] == [{"protocol": "TCP", "port": 80, "targetPort": 80},
                             {"protocol": "TCP", "port": 443, "targetPort": "https"}]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["ipFamilies"] == ["IPv4"]
    assert "clusterIP" not in spec
    assert "externalTrafficPolicy" not in spec
    assert obj["status"] == {"loadBalancer": {}}
    lb: dict[str, Any] = {"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
    apply_defaults("Service", lb)
    assert lb["spec"]["externalTrafficPolicy"] == "Cluster"
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True
    ext: dict[str, Any] = {"spec": {"type": "ExternalName", "externalName": "example.com"}}
    apply_defaults("Service", ext)
    assert "ipFamilies" not in ext["spec"] and "internalTrafficPolicy" not in ext["spec"]
    headless: dict[str, Any] = {"spec": {"clusterIP": "None"}}
    apply_defaults("Service", headless)
    assert headless["spec"]["ipFamilyPolicy"] == "RequireDualStack"


def test_secret() -> None:
    obj: dict[str, Any] = {"data": {"a": "eA=="}, "stringData": {"b": "hello", "a": "y"}}
    apply_defaults("Secret", obj)
    assert obj["type"] == "Opaque"
    assert "stringData" not in obj
    assert base64.b64decode(obj["data"]["b"]) == b"hello"
    assert base64.b64decode(obj["data"]["a"]) == b"y"
    typed = {"type": "kubernetes.io/tls"}
    apply_defaults("Secret", typed)
    assert typed["type"] == "kubernetes.io/tls"


def test_kinds_without_defaults_are_untouched() -> None:
    for kind, obj in [("ConfigMap", {"data": {"a": "b"}}), ("Lease", {"spec": {}}),
                      ("ServiceAccount", {})]:
        before = copy.deepcopy(obj)
        apply_defaults(kind, obj)
        assert obj == before and list(obj) == list(before)


def test_node_allocatable() -> None:
    obj: dict[str, Any] = {"status": {"capacity": {"cpu": "4"}}}
    apply_defaults("Node", obj)
    assert obj["status"]["allocatable"] == {"cpu": "4"}


_KINDS = st.sampled_from(["Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
                          "CronJob", "Service", "Namespace", "Secret"])


@given(_KINDS, st.booleans())
def test_defaulting_is_idempotent(kind: str, create: bool) -> None:
    objs: dict[str, dict[str, Any]] = {
        "Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        "Deployment": {"spec": {"template": _template({"a": "b"})}},
        "ReplicaSet": {"spec": {"template": _template()}},
        "StatefulSet": {"spec": {"template": _template()}},
        "DaemonSet": {"spec": {"template": _template()}},
        "Job": _job(),
        "CronJob": {"spec": {"jobTemplate": {"spec": {"template": _template()}}}},
        "Service": {"spec": {"ports": [{"port": 1}]}},
        "Namespace": {"metadata": {"name": "n"}},
        "Secret": {"stringData": {"a": "b"}},
    }
    obj = objs[kind]
    apply_defaults(kind, obj, create=create)
    once = copy.deepcopy(obj)
    apply_defaults(kind, obj, create=create)
    assert obj == once


def test_go_key_order_for_every_input_order() -> None:
    # Known keys are re-keyed into struct order, unknown ones keep their
    # relative order after them; the plan for a key sequence is memoized, so
    # check that repeated and differing shapes all come out right.
    shapes = [["spec", "zz", "kind", "aa", "metadata", "apiVersion"],
              ["apiVersion", "kind", "metadata", "spec"],
              ["kind", "apiVersion", "metadata", "spec"],
              ["zz", "spec", "aa", "metadata"]]
    for _ in range(2):
        for keys in shapes:
            obj: dict[str, Any] = {k: {} for k in keys}
            obj["spec"] = {"containers": [{"name": "c", "image": "x"}]}
            apply_defaults("Pod", obj, create=False)
            known = [k for k in ("kind", "apiVersion", "metadata", "spec", "status") if k in obj]
            assert list(obj) == known + [k for k in keys if k not in known]


def test_container_key_order_with_given_and_defaulted_fields() -> None:
    for _ in range(2):  # the second pass reuses the memoized plans
        container = {"tty": False, "image": "x", "x-unknown": 1, "name": "c",
                     "ports": [{"protocol": "UDP", "containerPort": 53, "name": "dns"}]}
        obj: dict[str, Any] = {"spec": {"containers": [container]}}
        apply_defaults("Pod", obj)
        assert list(container) == [
            "name", "image", "ports", "resources", "terminationMessagePath",
            "terminationMessagePolicy", "imagePullPolicy", "tty", "x-unknown"]
        assert list(container["ports"][0]) == ["name", "containerPort", "protocol"]


def test_parse_quantity_memo_and_odd_input() -> None:
    assert parse_quantity("100m") == parse_quantity("100m") == Decimal("0.1")
    assert parse_quantity(" 1Ki ") == 1024
    assert parse_quantity(" " * 600 + "2Gi") == 2 * 2**30  # too long to memoize, same answer
    assert parse_quantity(True) is None
    assert parse_quantity(None) is None
    assert image_pull_policy("nginx") == image_pull_policy("nginx") == "Always"
    assert image_pull_policy("a" * 600) == "IfNotPresent"  # too long for a reference


def test_qos_class_accepts_other_mappings() -> None:
    from types import MappingProxyType

    container = MappingProxyType({"resources": MappingProxyType(
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}})})
    assert pod_qos_class(MappingProxyType({"containers": [container]})) == "Guaranteed"
    assert pod_qos_class({"containers": [{"resources": {"requests": {"cpu": "1"}}}]}) == "Burstable"
    assert pod_qos_class({"containers": [{"name": "c"}]}) == "BestEffort"


def test_event_gets_the_fields_go_always_writes() -> None:
    # kube-apiserver v1.36 serializes these core/v1 Event fields even when zero
    ev = {"metadata": {"name": "e"}, "reason": "X", "involvedObject": {"kind": "Pod"}}
    apply_defaults("Event", ev)
    assert ev == {"metadata": {"name": "e"}, "reason": "X", "involvedObject": {"kind": "Pod"},
                  "source": {}, "firstTimestamp": None, "lastTimestamp": None,
                  "eventTime": None, "reportingComponent": "", "reportingInstance": ""}
    given = {"metadata": {"name": "e"}, "reportingComponent": "c", "eventTime": "t"}
    apply_defaults("Event", given)
    assert given["reportingComponent"] == "c" and given["eventTime"] == "t"


def test_node_gets_zero_status_structs() -> None:
    node: dict[str, Any] = {"metadata": {"name": "n"}}
    apply_defaults("Node", node)
    assert node["spec"] == {}
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert node["status"]["nodeInfo"]["kubeletVersion"] == ""
    assert len(node["status"]["nodeInfo"]) == 10


def test_statefulset_service_name_is_written_empty() -> None:
    sts: dict[str, Any] = {"metadata": {"name": "s"},
                           "spec": {"template": {"spec": {"containers": []}}}}
    apply_defaults("StatefulSet", sts)
    assert sts["spec"]["serviceName"] == ""
