"""Per-kind validation, with upstream's field paths and messages.

Objects are defaulted first, as the server does before validating.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykcm.api.validation import format_invalid_message
from tests.unit.kind_strategies import (
    apply_defaults,
    validate_create,
    validate_status_update,
    validate_update,
)

Obj = dict[str, Any]


def _errors(causes: list[Any]) -> list[str]:
    return [c.error() for c in causes]


def _create(kind: str, obj: Obj) -> list[str]:
    apply_defaults(kind, obj)
    return _errors(validate_create(kind, obj))


def _update(kind: str, new: Obj, old: Obj) -> list[str]:
    apply_defaults(kind, new, create=False)
    return _errors(validate_update(kind, new, old))


def _containers(*names: str, image: str = "nginx:1.25") -> list[Obj]:
    return [{"name": n, "image": image} for n in names]


def _template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    tmpl: Obj = {"spec": {"containers": _containers("c"), **spec}}
    if labels is not None:
        tmpl["metadata"] = {"labels": labels}
    return tmpl


def deployment(**spec: Any) -> Obj:
    base: Obj = {"selector": {"matchLabels": {"app": "web"}}, "template": _template({"app": "web"})}
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"}, "spec": base}


# --- Deployment -----------------------------------------------------------------


def test_valid_deployment() -> None:
    assert _create("Deployment", deployment()) == []


def test_deployment_without_selector() -> None:
    obj = deployment()
    del obj["spec"]["selector"]
    apply_defaults("Deployment", obj)
    causes = validate_create("Deployment", obj)
    assert format_invalid_message("Deployment", "web", causes) == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, '
        'spec.template.metadata.labels: Invalid value: {"app":"web"}: '
        '`selector` does not match template `labels`]')
    assert causes[0].to_status_cause() == {"reason": "FieldValueRequired",
                                           "message": "Required value", "field": "spec.selector"}


def test_deployment_empty_selector_and_mismatch() -> None:
    assert _create("Deployment", deployment(selector={})) == [
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
    assert _create("Deployment", deployment(selector={"matchLabels": {"app": "other"}})) == [
        ('spec.template.metadata.labels: Invalid value: {"app":"web"}: '
        '`selector` does not match template `labels`')]
    no_labels = deployment()
    del no_labels["spec"]["template"]["metadata"]
    assert _create("Deployment", no_labels) == [
        ("spec.template.metadata.labels: Invalid value: null: "
        "`selector` does not match template `labels`")]


def test_deployment_spec_fields() -> None:
    assert _create("Deployment", deployment(replicas=-1)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
    assert _create("Deployment", deployment(minReadySeconds=700)) == [
        "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"]
    assert _create("Deployment", deployment(
        strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})) == [
        ("spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
        "'Recreate'")]
    assert _create("Deployment", deployment(
        strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})) == [
        ('spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when '
         "`maxSurge` is 0")]
    assert _create("Deployment", deployment(
        strategy={"rollingUpdate": {"maxUnavailable": "120%"}})) == [
        ("spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"120%\": must not be greater "
        "than 100%")]
    errs = _create("Deployment", deployment(strategy={"rollingUpdate": {"maxSurge": "x"}}))
    assert errs == [("spec.strategy.rollingUpdate.maxSurge: Invalid value: \"x\": a valid percent "
                    "string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
                    "'93%', regex used for validation is '[0-9]+%')")]
    assert _create("Deployment", deployment(strategy={"type": "Blue"})) == [
        ('spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:"Blue", '
        'RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", '
        '"RollingUpdate"')]


def test_deployment_template_rules() -> None:
    assert _create("Deployment", deployment(
        template=_template({"app": "web"}, restartPolicy="OnFailure"))) == [
        ('spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: '
        '"Always"')]
    assert _create("Deployment", deployment(
        template=_template({"app": "web"}, activeDeadlineSeconds=5))) == [
        ("spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
        "ReplicaSet is not Supported")]
    assert _create("Deployment", deployment(template={"metadata": {"labels": {"app": "web"}},
                                                       "spec": {"containers": []}})) == [
        "spec.template.spec.containers: Required value"]
    tmpl = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "Bad_Name", "image": "x"}, {"name": "a"},
                                    {"name": "a", "image": "y"}]}}
    assert _create("Deployment", deployment(template=tmpl)) == [
        ('spec.template.spec.containers[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
        "label must consist of lower case alphanumeric characters or '-', and must start and end "
        "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        "spec.template.spec.containers[1].image: Required value",
        'spec.template.spec.containers[2].name: Duplicate value: "a"',
    ]
    bad_label = deployment(template=_template({"app": "web", "bad key": "x"}))
    assert _create("Deployment", bad_label)[0].startswith(
        'spec.template.labels: Invalid value: "bad key"')


def test_deployment_metadata() -> None:
    obj = deployment()
    obj["metadata"]["name"] = "Web"
    assert _create("Deployment", obj)[0].startswith('metadata.name: Invalid value: "Web"')
    obj = deployment()
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "X", "name": n, "uid": n, "controller": True} for n in "ab"]
    errs = _create("Deployment", obj)
    assert len(errs) == 1 and errs[0].endswith(
        'Only one reference can have Controller set to true. Found "true" in references for X/a '
        'and X/b')


def test_deployment_selector_immutable() -> None:
    old = deployment()
    apply_defaults("Deployment", old)
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "v": "2"}}
    new["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    assert _update("Deployment", new, old) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","v":"2"}}: field is immutable']
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 5
    scaled["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    assert _update("Deployment", scaled, old) == []


# --- ReplicaSet, StatefulSet, DaemonSet ----------------------------------------------


def test_replicaset() -> None:
    rs = {"metadata": {"name": "rs", "namespace": "d"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": _template({"a": "b"})}}
    assert _create("ReplicaSet", copy.deepcopy(rs)) == []
    rs["spec"]["selector"] = {}
    assert _create("ReplicaSet", rs)[0].endswith("empty selector is invalid for deployment")


def statefulset(**spec: Any) -> Obj:
    base: Obj = {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": _template({"app": "db"})}
    base.update(spec)
    return {"metadata": {"name": "db", "namespace": "default"}, "spec": base}


def test_statefulset() -> None:
    assert _create("StatefulSet", statefulset()) == []
    obj = statefulset()
    obj["metadata"]["name"] = "db.v1"
    assert _create("StatefulSet", obj) == [('metadata.name: Invalid value: "db.v1": must not '
                                           'contain dots')]
    assert _create("StatefulSet", statefulset(podManagementPolicy="Random")) == [
        ("spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or "
        "'Parallel'")]
    # Upstream validates only the template's labels and annotations.
    assert _create("StatefulSet", statefulset(template={"metadata": {"labels": {"app": "db"}},
                                                         "spec": {}})) == []


def test_statefulset_update() -> None:
    old = statefulset()
    apply_defaults("StatefulSet", old)
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["updateStrategy"] = {"type": "OnDelete"}
    new["spec"]["revisionHistoryLimit"] = 3  # mutable in v1.36
    assert _update("StatefulSet", new, old) == []
    new = copy.deepcopy(old)
    new["spec"]["serviceName"] = "other"
    assert _update("StatefulSet", new, old) == [
        ("spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
        "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]


def test_daemonset() -> None:
    ds = {"metadata": {"name": "ds", "namespace": "d"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": _template({"a": "b"})}}
    assert _create("DaemonSet", copy.deepcopy(ds)) == []
    ds["spec"]["updateStrategy"] = {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    assert _create("DaemonSet", copy.deepcopy(ds)) == [
        ("spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when "
        "maxUnavailable is non-zero")]
    ds["spec"]["updateStrategy"] = {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}
    assert _create("DaemonSet", ds) == [
        ("spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when "
        "maxSurge is 0")]


# --- Job and CronJob -------------------------------------------------------------------


def job(restart: str | None = "Never", **spec: Any) -> Obj:
    tmpl = _template()
    if restart is not None:
        tmpl["spec"]["restartPolicy"] = restart
    return {"metadata": {"name": "pi", "namespace": "default", "uid": "u-1"},
            "spec": {"template": tmpl, **spec}}


def test_valid_job() -> None:
    assert _create("Job", job()) == []
    assert _create("Job", job("OnFailure")) == []


def test_job_restart_policy() -> None:
    assert _create("Job", job(None)) == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']
    assert _create("Job", job("Always")) == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']


def test_job_fields() -> None:
    assert _create("Job", job(parallelism=-1)) == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]
    assert _create("Job", job(completionMode="Sometimes")) == [
        ('spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", '
        '"Indexed"')]
    assert _create("Job", job(backoffLimit=-2)) == [
        "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"]


def test_job_manual_selector() -> None:
    manual = job(manualSelector=True, selector={"matchLabels": {"app": "pi"}})
    manual["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    assert _create("Job", manual) == []
    mismatch = job(manualSelector=True, selector={"matchLabels": {"app": "x"}})
    mismatch["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    assert _create("Job", mismatch) == [
        ('spec.template.metadata.labels: Invalid value: {"app":"pi"}: '
        '`selector` does not match template `labels`')]


def test_job_generated_labels_conflict() -> None:
    obj = job()
    obj["spec"]["template"]["metadata"] = {"labels": {"controller-uid": "wrong"}}
    errs = _create("Job", obj)
    assert errs[0].startswith("spec.template.metadata.labels[controller-uid]: Invalid value: "
                              '{"batch.kubernetes.io/controller-uid":"u-1",')
    assert errs[0].endswith(": must be 'u-1'")


def test_job_update_immutability() -> None:
    old = job()
    apply_defaults("Job", old)
    same = copy.deepcopy(old)
    same["spec"]["parallelism"] = 4
    assert _update("Job", same, old) == []
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:2"
    errs = _update("Job", new, old)
    assert len(errs) == 1 and errs[0].startswith("spec.template: Invalid value: ")
    assert errs[0].endswith(": field is immutable")
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 3
    assert _update("Job", new, old) == [
        "spec.completions: Invalid value: 3: field is immutable"]


def test_suspended_job_may_change_scheduling() -> None:
    old = job(suspend=True)
    apply_defaults("Job", old)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert _update("Job", new, old) == []
    old["status"] = {"startTime": "2024-01-01T00:00:00Z"}
    assert _update("Job", copy.deepcopy(new), old)[0].startswith("spec.template: Invalid value")


def cronjob(schedule: str = "*/5 * * * *", **spec: Any) -> Obj:
    return {"metadata": {"name": "cj", "namespace": "default"},
            "spec": {"schedule": schedule, **spec,
                     "jobTemplate": {"spec": {"template": _template(restartPolicy="OnFailure")}}}}


@pytest.mark.parametrize("schedule", ["*/5 * * * *", "0 0 1 jan mon", "@hourly", "@every 1h30m",
                                      "0-59/15 0,12 ? * sun-sat"])
def test_cronjob_valid_schedules(schedule: str) -> None:
    assert _create("CronJob", cronjob(schedule)) == []


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
    ],
)
def test_cronjob_bad_schedules(schedule: str, message: str) -> None:
    assert _create("CronJob", cronjob(schedule)) == [
        f'spec.schedule: Invalid value: "{schedule}": {message}']


def test_cronjob_other_fields() -> None:
    assert _create("CronJob", cronjob(concurrencyPolicy="Sometimes")) == [
        ('spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
        '"Forbid", "Replace"')]
    obj = cronjob()
    del obj["spec"]["schedule"]
    assert _create("CronJob", obj) == ["spec.schedule: Required value"]
    assert _create("CronJob", cronjob("TZ=UTC * * * * *"))[-1] == (
        'spec.schedule: Invalid value: "TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, '
        'use timeZone field instead')
    long_name = cronjob()
    long_name["metadata"]["name"] = "c" * 53
    assert _create("CronJob", long_name) == [
        f'metadata.name: Invalid value: "{"c" * 53}": must be no more than 52 characters']
    bad = cronjob()
    bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert _create("CronJob", bad) == [
        ('spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: '
        '"OnFailure", "Never"')]


# --- Pod -------------------------------------------------------------------------------


def pod(**spec: Any) -> Obj:
    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": _containers("c"), **spec}}


def test_pod_create() -> None:
    assert _create("Pod", pod()) == []
    assert _create("Pod", pod(containers=[])) == ["spec.containers: Required value"]
    assert _create("Pod", pod(restartPolicy="Sometimes")) == [
        ('spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"')]
    assert _create("Pod", pod(activeDeadlineSeconds=0)) == [
        ("spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
        "inclusive")]
    ports = [{"name": "c", "image": "x", "ports": [{"containerPort": 70000, "protocol": "XTP"}]}]
    assert _create("Pod", pod(containers=ports)) == [
        ("spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and "
        "65535, inclusive"),
        ('spec.containers[0].ports[0].protocol: Unsupported value: "XTP": supported values: '
        '"SCTP", "TCP", "UDP"')]
    mounts = [{"name": "c", "image": "x", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}]
    assert _create("Pod", pod(containers=mounts)) == [
        'spec.containers[0].volumeMounts[0].name: Not found: "nope"']
    resources = [{"name": "c", "image": "x",
                  "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]
    assert _create("Pod", pod(containers=resources)) == [
        ('spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
        'to cpu limit of 1')]
    init = [{"name": "c", "image": "x"}]
    assert _create("Pod", pod(initContainers=init)) == [
        'spec.initContainers[0].name: Duplicate value: "c"']
    tolerations = [{"key": "k", "operator": "Exists", "effect": "Sometimes"}]
    assert _create("Pod", pod(tolerations=tolerations)) == [
        ('spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"')]


def test_pod_update_rules() -> None:
    old = pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 30}])
    apply_defaults("Pod", old)
    image = copy.deepcopy(old)
    image["spec"]["containers"][0]["image"] = "nginx:1.26"
    image["spec"]["activeDeadlineSeconds"] = 100
    image["spec"]["tolerations"].append({"key": "x", "operator": "Exists"})
    image["spec"]["tolerations"][0]["tolerationSeconds"] = 10
    image["metadata"]["labels"] = {"new": "label"}
    assert _update("Pod", image, old) == []

    moved = copy.deepcopy(old)
    moved["spec"]["nodeName"] = "node-1"
    errs = _update("Pod", moved, old)
    assert len(errs) == 1
    assert errs[0].startswith(
        "spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)\n")
    assert 'nodeName: "node-1"' in errs[0]

    removed = copy.deepcopy(old)
    removed["spec"]["tolerations"] = []
    assert _update("Pod", removed, old) == [
        ("spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds")]
    more = copy.deepcopy(old)
    more["spec"]["containers"].append({"name": "d", "image": "x"})
    assert _update("Pod", more, old) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"]
    deadline = copy.deepcopy(old)
    deadline["spec"]["activeDeadlineSeconds"] = 10
    old_deadline = copy.deepcopy(deadline)
    deadline["spec"]["activeDeadlineSeconds"] = 20
    assert _update("Pod", deadline, old_deadline) == [
        ("spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous "
        "value")]


def test_pod_update_defaults_make_omissions_equal() -> None:
    old = pod()
    apply_defaults("Pod", old)
    # A client that re-sends the spec without the defaulted fields is fine.
    new = pod()
    new["spec"]["containers"][0]["image"] = "nginx:2"
    assert _update("Pod", new, old) == []


def test_pod_scheduling_gates() -> None:
    old = pod(schedulingGates=[{"name": "example.com/gate"}])
    apply_defaults("Pod", old)
    new = copy.deepcopy(old)
    new["spec"]["schedulingGates"] = []
    new["spec"]["nodeSelector"] = {"zone": "a"}
    assert _update("Pod", new, old) == []
    added = copy.deepcopy(old)
    added["spec"]["schedulingGates"].append({"name": "example.com/other"})
    assert _update("Pod", added, old) == [
        ("spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate "
        "'example.com/other'")]


def test_pod_status_update() -> None:
    old = pod()
    apply_defaults("Pod", old)
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
                     "conditions": [{"type": "Ready", "status": "True"}]}
    assert _errors(validate_status_update("Pod", new, old)) == []
    new["spec"]["nodeName"] = "n1"
    new["status"]["qosClass"] = "Guaranteed"
    assert _errors(validate_status_update("Pod", new, old)) == [
        "status.nodeName: Forbidden: may not be changed directly",
        'status.qosClass: Invalid value: "Guaranteed": field is immutable']


# --- Service ------------------------------------------------------------------------------


def service(**spec: Any) -> Obj:
    return {"metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


def test_service_create() -> None:
    assert _create("Service", service()) == []
    obj = service()
    obj["metadata"]["name"] = "1web"  # v1.36: an RFC 1123 label, a leading digit is fine
    assert _create("Service", obj) == []
    obj["metadata"]["name"] = "Web_1"
    assert _create("Service", obj)[0].startswith(
        'metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 label')
    assert _create("Service", service(ports=[])) == ["spec.ports: Required value"]
    assert _create("Service", service(clusterIP="None", ports=[])) == []
    # targetPort defaults to the (invalid) port, so both are reported, as upstream.
    assert _create("Service", service(ports=[{"port": 0}])) == [
        "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"]
    assert _create("Service", service(type="Internal")) == [
        ('spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", '
        '"LoadBalancer", "NodePort"')]
    assert _create("Service", service(ports=[{"port": 80}, {"port": 81}])) == [
        "spec.ports[0].name: Required value", "spec.ports[1].name: Required value"]
    dup = _create("Service", service(ports=[{"name": "a", "port": 80}, {"name": "b", "port": 80}]))
    # the internal ServicePort as JSON with Go field names (v1.36 field errors)
    assert dup == [('spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP",'
                   '"AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}')]
    assert _create("Service", service(clusterIP="10.0.0.300")) == [
        ('spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. '
        '10.9.8.7 or 2001:db8::ffff)')]


def test_service_cluster_ip_immutable() -> None:
    old = service(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"])
    apply_defaults("Service", old)
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.96.0.11"
    new["spec"]["clusterIPs"] = ["10.96.0.11"]
    assert _update("Service", new, old) == [
        'spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set']
    omitted = service()
    assert _update("Service", omitted, old) == []


# --- ConfigMap, Secret, Namespace, others -------------------------------------------------


def test_configmap() -> None:
    ok = {"metadata": {"name": "cm", "namespace": "d"}, "data": {"a.b": "x", "C_D": "y"}}
    assert _create("ConfigMap", ok) == []
    bad = {"metadata": {"name": "cm", "namespace": "d"}, "data": {"a b": "x"}}
    assert _create("ConfigMap", bad) == [
        ("data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric "
        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
        "used for validation is '[-._a-zA-Z0-9]+')")]
    old = {"metadata": {"name": "cm", "namespace": "d"}, "data": {"a": "1"}, "immutable": True}
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert _update("ConfigMap", new, old) == [
        "data: Forbidden: field is immutable when `immutable` is set"]
    new = copy.deepcopy(old)
    new["immutable"] = False
    assert _update("ConfigMap", new, old) == [
        "immutable: Forbidden: field is immutable when `immutable` is set"]


def test_secret() -> None:
    ok = {"metadata": {"name": "s", "namespace": "d"}, "data": {"k": "dg=="}}
    assert _create("Secret", copy.deepcopy(ok)) == []
    tls = {"metadata": {"name": "s", "namespace": "d"}, "type": "kubernetes.io/tls", "data": {}}
    assert _create("Secret", tls) == ["data[tls.crt]: Required value", "data[tls.key]: Required value"]
    old = copy.deepcopy(ok)
    apply_defaults("Secret", old)
    new = copy.deepcopy(old)
    new["type"] = "kubernetes.io/basic-auth"
    new["data"] = {"username": "dQ=="}
    assert _update("Secret", new, old) == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable']


def test_namespace() -> None:
    assert _create("Namespace", {"metadata": {"name": "team-a"}}) == []
    assert _create("Namespace", {"metadata": {"name": "team.a"}}) == [
        'metadata.name: Invalid value: "team.a": must not contain dots']
    assert _create("Namespace", {"metadata": {"name": "a", "namespace": "x"}}) == [
        "metadata.namespace: Forbidden: not allowed on this type"]
    ns = {"metadata": {"name": "a"}, "status": {"phase": "Terminating"}}
    assert _errors(validate_status_update("Namespace", ns, ns)) == [
        ("status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` "
        "is empty")]


def test_event_and_lease() -> None:
    event = {"metadata": {"name": "e.1", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "namespace": "other", "name": "p"},
             "reason": "Started", "type": "Normal"}
    assert _create("Event", event) == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace']
    event["involvedObject"]["namespace"] = "default"
    assert _create("Event", event) == []
    # Event names are free-form, but must fit in a URL path segment.
    event["metadata"]["name"] = "Pod.Name_1"
    assert _create("Event", event) == []
    event["metadata"]["name"] = "a/b"
    assert _create("Event", event) == ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
    new_style = {"metadata": {"name": "e", "namespace": "default"}, "eventTime": "2024-01-01T00:00:00Z",
                 "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"}}
    assert _create("Event", new_style) == [
        "reportingComponent: Required value",
        'reportingComponent: Invalid value: "": name part must be non-empty',
        ('reportingComponent: Invalid value: "": name part must consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
        "or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        "reportingInstance: Required value",
        "action: Required value",
        "reason: Required value",
    ]
    lease = {"metadata": {"name": "l", "namespace": "d"},
             "spec": {"holderIdentity": "x", "leaseDurationSeconds": 0}}
    assert _create("Lease", lease) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]


def test_unknown_kind_gets_metadata_validation() -> None:
    assert _create("Widget", {"metadata": {"name": "ok", "namespace": "d"}}) == []
    assert _create("Widget", {"metadata": {"name": "Bad", "namespace": "d"}})[0].startswith(
        'metadata.name: Invalid value: "Bad"')


def test_status_updates() -> None:
    dep = deployment()
    apply_defaults("Deployment", dep)
    new = copy.deepcopy(dep)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 1}
    assert _errors(validate_status_update("Deployment", new, dep)) == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"]
    rs_old = {"status": {"replicas": 1}}
    rs_new = {"status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": -1}}
    assert _errors(validate_status_update("ReplicaSet", rs_new, rs_old)) == [
        "status.availableReplicas: Invalid value: -1: must be greater than or equal to 0"]
    sts_old = {"status": {"replicas": 1, "collisionCount": 2}}
    sts_new = {"status": {"replicas": 1, "collisionCount": 1}}
    assert _errors(validate_status_update("StatefulSet", sts_new, sts_old)) == [
        "status.collisionCount: Invalid value: 1: cannot be decremented"]
    assert _errors(validate_status_update("Job", {"status": {"active": -1}}, {})) == [
        "status.active: Invalid value: -1: must be greater than or equal to 0"]


def test_pod_update_diff_lists_only_changed_fields() -> None:
    # Fields unset in the old spec stay out of the comparison (and the diff).
    old = pod()
    apply_defaults("Pod", old)
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "node-1"
    new["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    errs = _update("Pod", new, old)
    assert len(errs) == 1
    assert errs[0].endswith('\n  core.PodSpec{\n+ \tnodeName: "node-1",\n  }\n')
    # Explicit nulls and empty values are the same as unset.
    same = copy.deepcopy(old)
    same["spec"]["activeDeadlineSeconds"] = None
    same["spec"]["schedulingGates"] = []
    same["spec"]["nodeSelector"] = {}
    same["spec"]["containers"][0]["args"] = []
    assert _update("Pod", same, old) == []


def test_toleration_seconds_may_be_added_or_dropped() -> None:
    old = pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute"}])
    apply_defaults("Pod", old)
    added = copy.deepcopy(old)
    added["spec"]["tolerations"][0]["tolerationSeconds"] = 5
    assert _update("Pod", added, old) == []
    assert _update("Pod", copy.deepcopy(old), added) == []
    changed = copy.deepcopy(old)
    changed["spec"]["tolerations"][0]["effect"] = "NoSchedule"
    assert _update("Pod", changed, old) == [
        ("spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds")]


def test_pod_volume_sources_and_env_names() -> None:
    # Extra sources are reported in upstream's source order, whatever the key order.
    volumes = [{"secret": {"secretName": "s"}, "name": "v", "emptyDir": {}},
               {"name": "w", "hostPath": None}]
    env = [{"name": "A B"}, {"name": "A=B"}, {"name": "é"}, {"name": "\x7f"},
           {"name": "V", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    containers = [{"name": "c", "image": "x", "env": env}]
    env_msg = ("Invalid value: {!r}: a valid environment variable name must consist only of "
               "printable ASCII characters other than '='")
    assert _create("Pod", pod(volumes=volumes, containers=containers)) == [
        "spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type",
        "spec.volumes[1]: Required value: must specify a volume type",
        "spec.containers[0].env[1].name: " + env_msg.format("A=B").replace("'A=B'", '"A=B"'),
        "spec.containers[0].env[2].name: " + env_msg.format("é").replace("'é'", '"é"'),
        "spec.containers[0].env[3].name: " + env_msg.replace("{!r}", '"\\x7f"'),
        ("spec.containers[0].env[4].valueFrom: Invalid value: \"\": may not be specified when "
        "`value` is not empty"),
    ]


def test_validation_accepts_other_mappings() -> None:
    from types import MappingProxyType

    obj = pod(volumes=[{"name": "v", "emptyDir": {}}])
    apply_defaults("Pod", obj)
    proxy = MappingProxyType({**obj, "spec": MappingProxyType(obj["spec"])})
    assert validate_create("Pod", proxy) == []
    assert validate_update("Pod", proxy, obj) == []
    assert validate_update("Pod", obj, proxy) == []
