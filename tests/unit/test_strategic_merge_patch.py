"""Strategic merge patch: upstream (apimachinery strategicpatch v1.36) semantics on built-in kinds."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykcm.api.patch import (
    InvalidPatchError,
    PatchConflictError,
    PatchError,
    apply_merge_patch,
    apply_strategic_merge_patch,
    load_patch_schema,
    schema_ref_for,
)

DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
POD = "io.k8s.api.core.v1.Pod"
SERVICE = "io.k8s.api.core.v1.Service"
CONFIGMAP = "io.k8s.api.core.v1.ConfigMap"
PDB = "io.k8s.api.policy.v1.PodDisruptionBudget"


def smp(original: dict[str, Any], patch: dict[str, Any], ref: str = DEPLOYMENT) -> dict[str, Any]:
    """Apply and also check the contract: inputs untouched, no directive leaks."""
    before_o = copy.deepcopy(original)
    before_p = copy.deepcopy(patch)
    result = apply_strategic_merge_patch(original, patch, ref)
    assert original == before_o, "original was mutated"
    assert patch == before_p, "patch was mutated"
    assert not directive_keys(result), f"directive leaked: {directive_keys(result)}"
    return result


def directive_keys(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k.startswith("$"):
                found.append(k)
            found.extend(directive_keys(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(directive_keys(v))
    return found


def deployment(containers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": containers
        if containers is not None
        else [
            {
                "name": "a",
                "image": "nginx:1.25",
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            },
            {"name": "b", "image": "redis:7"},
        ],
        "restartPolicy": "Always",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec},
            **spec,
        },
    }


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = obj["spec"]["template"]["spec"]
    return result


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [i[key] for i in items]


# --- schema ------------------------------------------------------------------------------


def test_schema_ref_for_builtin_kinds() -> None:
    assert schema_ref_for("apps", "v1", "Deployment") == DEPLOYMENT
    assert schema_ref_for("", "v1", "Pod") == POD
    assert (
        schema_ref_for("coordination.k8s.io", "v1", "Lease") == "io.k8s.api.coordination.v1.Lease"
    )
    assert schema_ref_for("autoscaling", "v1", "Scale") == "io.k8s.api.autoscaling.v1.Scale"
    assert schema_ref_for("example.com", "v1", "Widget") is None


def test_schema_carries_patch_metadata() -> None:
    schema = load_patch_schema()
    containers = schema.field(POD, "spec.containers")
    assert containers is not None and containers.merge and containers.merge_key == "name"
    assert containers.type_name == "io.k8s.api.core.v1.Container"
    ports = schema.field(POD, "spec.containers.ports")
    assert ports is not None and ports.merge_key == "containerPort"
    assert ports.list_map_keys == ("containerPort", "protocol")
    volumes = schema.field(POD, "spec.volumes")
    assert volumes is not None and volumes.merge and volumes.retain_keys
    strategy = schema.field(DEPLOYMENT, "spec.strategy")
    assert strategy is not None and strategy.retain_keys and not strategy.merge
    finalizers = schema.field(POD, "metadata.finalizers")
    assert finalizers is not None and finalizers.merge and finalizers.merge_key == ""
    tolerations = schema.field(POD, "spec.tolerations")
    assert tolerations is not None and not tolerations.merge
    assert schema.field(POD, "spec.nope") is None


def test_schema_file_is_compact() -> None:
    from importlib import resources

    size = len(resources.files("pykcm.api.patch").joinpath("_data/patch_schema.json").read_bytes())
    assert size < 300_000


# --- the two kubectl apply patches from the brief ------------------------------------------------


def test_kubectl_apply_image_change_two_containers() -> None:
    original = deployment()
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"image": "nginx:1.27", "name": "a"}],
                }
            }
        }
    }
    result = smp(original, patch)
    containers = pod_spec(result)["containers"]
    assert names(containers) == ["a", "b"]
    assert containers[0]["image"] == "nginx:1.27"
    assert containers[0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    assert containers[1] == {"name": "b", "image": "redis:7"}
    # Untouched subtrees are shared, not copied.
    assert result["metadata"] is original["metadata"]
    assert containers[1] is pod_spec(original)["containers"][1]


def test_kubectl_apply_env_var_removed() -> None:
    original = deployment(
        containers=[
            {
                "name": "a",
                "image": "x",
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            }
        ]
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "X"}],
                            "env": [{"$patch": "delete", "name": "Y"}],
                            "name": "a",
                        }
                    ],
                }
            }
        }
    }
    result = smp(original, patch)
    assert pod_spec(result)["containers"] == [
        {"name": "a", "image": "x", "env": [{"name": "X", "value": "1"}]}
    ]


# --- merge lists -------------------------------------------------------------------------------


def test_containers_merged_by_name() -> None:
    result = smp(
        deployment(),
        {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "redis:8"}]}}}},
    )
    containers = pod_spec(result)["containers"]
    assert names(containers) == ["a", "b"]
    assert containers[1] == {"name": "b", "image": "redis:8"}
    assert containers[0]["image"] == "nginx:1.25"


def test_new_merge_item_without_set_element_order_goes_first() -> None:
    # Upstream's mergeSortedSlice puts patch items the server has never seen
    # ahead of server-only items when no $setElementOrder says otherwise.
    result = smp(
        deployment(),
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}},
    )
    assert names(pod_spec(result)["containers"]) == ["c", "a", "b"]


def test_new_merge_item_with_set_element_order_appended() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        }
    }
    assert names(pod_spec(smp(deployment(), patch))["containers"]) == ["a", "b", "c"]


def test_env_merged_by_name() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}],
                        }
                    ]
                }
            }
        }
    }
    env = pod_spec(smp(deployment(), patch))["containers"][0]["env"]
    assert env == [
        {"name": "X", "value": "1"},
        {"name": "Y", "value": "3"},
        {"name": "Z", "value": "4"},
    ]


def test_env_order_interleaves_like_upstream() -> None:
    # Patch items keep patch order; the server-only Y goes after X because X
    # preceded it in the original.
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "a", "env": [{"name": "Z"}, {"name": "X", "value": "9"}]}
                    ]
                }
            }
        }
    }
    env = pod_spec(smp(deployment(), patch))["containers"][0]["env"]
    assert env == [{"name": "Z"}, {"name": "X", "value": "9"}, {"name": "Y", "value": "2"}]


def test_env_value_to_value_from_via_null() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "env": [
                                {
                                    "name": "X",
                                    "value": None,
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                }
                            ],
                        }
                    ]
                }
            }
        }
    }
    env = pod_spec(smp(deployment(), patch))["containers"][0]["env"]
    assert env[0] == {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def test_ports_merged_by_container_port() -> None:
    original = deployment(
        containers=[{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "ports": [
                                {"containerPort": 80, "name": "http"},
                                {"containerPort": 443},
                            ],
                        }
                    ]
                }
            }
        }
    }
    ports = pod_spec(smp(original, patch))["containers"][0]["ports"]
    assert ports == [
        {"containerPort": 80, "protocol": "TCP", "name": "http"},
        {"containerPort": 443},
    ]


def test_volumes_merged_by_name_with_retain_keys() -> None:
    original = deployment()
    pod_spec(original)["volumes"] = [
        {"name": "data", "emptyDir": {"medium": "Memory"}},
        {"name": "cfg", "configMap": {"name": "old"}},
    ]
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "volumes": [
                        {
                            "$retainKeys": ["configMap", "name"],
                            "name": "data",
                            "configMap": {"name": "new"},
                        }
                    ]
                }
            }
        }
    }
    volumes = pod_spec(smp(original, patch))["volumes"]
    assert volumes == [
        {"name": "data", "configMap": {"name": "new"}},
        {"name": "cfg", "configMap": {"name": "old"}},
    ]


def test_pod_conditions_merged_by_type() -> None:
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "Initialized", "status": "True"},
            ],
        },
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": None}]}}
    result = smp(pod, patch, POD)
    assert result["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Initialized", "status": "True"},
    ]
    assert result["status"]["phase"] == "Running"


def test_owner_references_merged_by_uid() -> None:
    obj = {
        "metadata": {
            "name": "p",
            "ownerReferences": [
                {"uid": "1", "kind": "ReplicaSet", "name": "rs", "controller": True}
            ],
        }
    }
    patch = {
        "metadata": {
            "ownerReferences": [
                {"uid": "1", "controller": False},
                {"uid": "2", "kind": "Node", "name": "n"},
            ]
        }
    }
    refs = smp(obj, patch, POD)["metadata"]["ownerReferences"]
    assert refs == [
        {"uid": "1", "kind": "ReplicaSet", "name": "rs", "controller": False},
        {"uid": "2", "kind": "Node", "name": "n"},
    ]


def test_owner_reference_deleted_by_uid() -> None:
    obj = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}
    patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1"}]}}
    assert smp(obj, patch, POD)["metadata"]["ownerReferences"] == [{"uid": "2", "name": "b"}]


def test_service_ports_merged_by_port() -> None:
    svc = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}}
    patch = {"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}
    assert smp(svc, patch, SERVICE)["spec"]["ports"] == [
        {"port": 80, "targetPort": 8080},
        {"port": 443, "targetPort": 9443},
    ]


# --- primitive merge lists -----------------------------------------------------------------------


def test_finalizers_union_keeps_order() -> None:
    obj = {"metadata": {"finalizers": ["a", "b"]}}
    assert smp(obj, {"metadata": {"finalizers": ["b", "c"]}}, POD)["metadata"]["finalizers"] == [
        "a",
        "b",
        "c",
    ]
    assert smp(obj, {"metadata": {"finalizers": ["a"]}}, POD)["metadata"]["finalizers"] == [
        "a",
        "b",
    ]
    # A value the server has never seen goes ahead of server-only values (upstream).
    assert smp(obj, {"metadata": {"finalizers": ["c"]}}, POD)["metadata"]["finalizers"] == [
        "c",
        "a",
        "b",
    ]


def test_finalizers_set_element_order() -> None:
    obj = {"metadata": {"finalizers": ["a", "b"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["b", "a", "c"], "finalizers": ["c"]}}
    assert smp(obj, patch, POD)["metadata"]["finalizers"] == ["b", "a", "c"]


def test_delete_from_primitive_list() -> None:
    obj = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}
    assert smp(obj, patch, POD)["metadata"]["finalizers"] == ["a", "c"]


def test_kubectl_finalizer_removed_with_order_and_delete_list() -> None:
    obj = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["b"],
            "$setElementOrder/finalizers": ["a", "c"],
        }
    }
    assert smp(obj, patch, POD)["metadata"]["finalizers"] == ["a", "c"]


def test_delete_from_primitive_list_when_list_absent_is_noop() -> None:
    obj = {"metadata": {"name": "x"}}
    assert smp(obj, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, POD) == obj


# --- atomic lists --------------------------------------------------------------------------------


def test_tolerations_args_command_replaced_atomically() -> None:
    original = deployment(containers=[{"name": "a", "args": ["--x", "--y"], "command": ["/bin/a"]}])
    pod_spec(original)["tolerations"] = [
        {"key": "k1", "operator": "Exists"},
        {"key": "k2", "operator": "Exists"},
    ]
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "tolerations": [{"key": "k3", "operator": "Exists"}],
                    "containers": [{"name": "a", "args": ["--z"], "command": ["/bin/b", "-v"]}],
                }
            }
        }
    }
    spec = pod_spec(smp(original, patch))
    assert spec["tolerations"] == [{"key": "k3", "operator": "Exists"}]
    assert spec["containers"][0]["args"] == ["--z"]
    assert spec["containers"][0]["command"] == ["/bin/b", "-v"]


def test_atomic_list_items_are_cleaned_of_nulls_and_directives() -> None:
    original = deployment()
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "tolerations": [{"key": "k", "value": None}, {"$patch": "delete", "key": "z"}]
                }
            }
        }
    }
    assert pod_spec(smp(original, patch))["tolerations"] == [{"key": "k"}]


# --- retainKeys ------------------------------------------------------------------------------------


def test_deployment_strategy_rolling_update_to_recreate() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert smp(deployment(), patch)["spec"]["strategy"] == {"type": "Recreate"}


def test_deployment_strategy_kubectl_style_with_null() -> None:
    patch = {
        "spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}}
    }
    assert smp(deployment(), patch)["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_keeps_listed_fields() -> None:
    patch = {
        "spec": {
            "strategy": {"$retainKeys": ["rollingUpdate", "type"], "rollingUpdate": {"maxSurge": 2}}
        }
    }
    assert smp(deployment(), patch)["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0},
    }


def test_retain_keys_rejects_patch_field_not_listed() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}
    with pytest.raises(InvalidPatchError, match="invalid patch format of retainKeys") as exc:
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert exc.value.http_status == 400


# --- $setElementOrder --------------------------------------------------------------------------------


def test_set_element_order_reorders_without_content_change() -> None:
    patch = {
        "spec": {
            "template": {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}
        }
    }
    result = smp(deployment(), patch)
    assert names(pod_spec(result)["containers"]) == ["b", "a"]


def test_set_element_order_server_only_item_keeps_relative_place() -> None:
    original = deployment(containers=[{"name": "a"}, {"name": "b"}, {"name": "c"}])
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                    "containers": [{"name": "a", "image": "x"}],
                }
            }
        }
    }
    # c and a follow the order list; b (server-only) is slotted in before c
    # because it preceded c in the original.
    assert names(pod_spec(smp(original, patch))["containers"]) == ["b", "c", "a"]


def test_set_element_order_replace_container_next_to_injected_sidecar() -> None:
    # kubectl apply renaming "app" to "app2" while the server holds an injected
    # sidecar. Upstream orders server-only items against the original list as
    # edited in place (deletion shifts, then the added item fills the gap), so
    # the sidecar lands first.
    pod = {
        "spec": {
            "containers": [{"name": "app", "image": "v1"}, {"name": "istio-proxy", "image": "i"}]
        }
    }
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "app2"}],
            "containers": [{"name": "app2", "image": "v2"}, {"$patch": "delete", "name": "app"}],
        }
    }
    assert smp(pod, patch, POD)["spec"]["containers"] == [
        {"name": "istio-proxy", "image": "i"},
        {"name": "app2", "image": "v2"},
    ]


def test_set_element_order_add_and_delete_with_server_only_items() -> None:
    obj = {
        "metadata": {
            "ownerReferences": [{"uid": "1"}, {"uid": "2", "x": "b"}, {"uid": "4", "x": "c"}]
        }
    }
    patch = {
        "metadata": {
            "$setElementOrder/ownerReferences": [{"uid": "2"}, {"uid": "3"}],
            "ownerReferences": [{"uid": "3"}, {"uid": "1", "$patch": "delete"}],
        }
    }
    refs = smp(obj, patch, POD)["metadata"]["ownerReferences"]
    assert refs == [{"uid": "2", "x": "b"}, {"uid": "4", "x": "c"}, {"uid": "3"}]


def test_set_element_order_groups_duplicates() -> None:
    obj = {"metadata": {"finalizers": ["1", "2", "3", "2", "4"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["2", "1", "4", "3", "2"]}}
    assert smp(obj, patch, POD)["metadata"]["finalizers"] == ["2", "2", "1", "4", "3"]


def test_set_element_order_on_object_field_rejected() -> None:
    patch: dict[str, Any] = {
        "spec": {"template": {"spec": {"$setElementOrder/securityContext": [{"name": "a"}]}}}
    }
    with pytest.raises(InvalidPatchError, match="expected slice or array type, but got: struct"):
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    patch = {"spec": {"$setElementOrder/template": [{"name": "a"}]}}
    with pytest.raises(
        InvalidPatchError, match="expected a \\[\\]interface {}, but received a map"
    ):
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)


def test_set_element_order_for_list_the_original_lacks() -> None:
    original = deployment()
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/initContainers": [{"name": "i2"}, {"name": "i1"}],
                    "initContainers": [
                        {"name": "i2", "image": "y"},
                        {"$patch": "delete", "name": "i3"},
                        {"name": "i1", "image": "x"},
                    ],
                }
            }
        }
    }
    assert pod_spec(smp(original, patch))["initContainers"] == [
        {"name": "i2", "image": "y"},
        {"name": "i1", "image": "x"},
    ]


def test_set_element_order_patch_items_must_follow_it() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                    "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
                }
            }
        }
    }
    with pytest.raises(InvalidPatchError, match="the order in patch list"):
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)


def test_set_element_order_mismatch_is_rejected() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}],
                    "containers": [{"name": "b", "image": "x"}],
                }
            }
        }
    }
    with pytest.raises(InvalidPatchError, match="doesn't match \\$setElementOrder list"):
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)


def test_bad_set_element_order_key() -> None:
    with pytest.raises(InvalidPatchError, match="invalid patch format of setElementOrder list"):
        apply_strategic_merge_patch(deployment(), {"spec": {"$setElementOrder": []}}, DEPLOYMENT)


# --- $patch directives ----------------------------------------------------------------------------


def test_patch_delete_on_map_removes_it() -> None:
    original = deployment()
    pod_spec(original)["securityContext"] = {"runAsUser": 1000}
    patch = {"spec": {"template": {"spec": {"securityContext": {"$patch": "delete"}}}}}
    assert "securityContext" not in pod_spec(smp(original, patch))


def test_patch_delete_on_list_item() -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}}
    assert names(pod_spec(smp(deployment(), patch))["containers"]) == ["b"]


def test_patch_delete_missing_item_is_noop() -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "zzz", "$patch": "delete"}]}}}}
    assert names(pod_spec(smp(deployment(), patch))["containers"]) == ["a", "b"]


def test_patch_replace_on_map() -> None:
    patch = {"spec": {"selector": {"$patch": "replace", "matchLabels": {"tier": "web"}}}}
    assert smp(deployment(), patch)["spec"]["selector"] == {"matchLabels": {"tier": "web"}}
    patch = {"metadata": {"labels": {"$patch": "replace", "new": "1"}}}
    assert smp(deployment(), patch)["metadata"]["labels"] == {"new": "1"}


def test_patch_replace_on_list() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"$patch": "replace"}, {"name": "z", "image": "zz"}]}
            }
        }
    }
    assert pod_spec(smp(deployment(), patch))["containers"] == [{"name": "z", "image": "zz"}]


def test_patch_merge_directive_is_default_behaviour() -> None:
    patch = {"metadata": {"labels": {"$patch": "merge", "tier": "web"}}}
    assert smp(deployment(), patch)["metadata"]["labels"] == {"app": "web", "tier": "web"}


def test_patch_replace_on_absent_map_creates_it() -> None:
    patch = {
        "spec": {"template": {"spec": {"securityContext": {"$patch": "replace", "runAsUser": 7}}}}
    }
    assert pod_spec(smp(deployment(), patch))["securityContext"] == {"runAsUser": 7}


def test_patch_delete_at_top_level_empties_object() -> None:
    assert smp(deployment(), {"$patch": "delete"}) == {}


def test_replace_strategy_field_replaces_map() -> None:
    pdb = {
        "spec": {
            "selector": {
                "matchLabels": {"a": "1"},
                "matchExpressions": [{"key": "k", "operator": "Exists"}],
            }
        }
    }
    patch = {"spec": {"selector": {"matchLabels": {"b": "2"}}}}
    assert smp(pdb, patch, PDB)["spec"]["selector"] == {"matchLabels": {"b": "2"}}


def test_unknown_patch_type_rejected() -> None:
    with pytest.raises(InvalidPatchError, match="unknown patch type: bogus in map"):
        apply_strategic_merge_patch(deployment(), {"spec": {"$patch": "bogus"}}, DEPLOYMENT)
    with pytest.raises(InvalidPatchError, match="unknown patch type"):
        apply_strategic_merge_patch(
            deployment(),
            {"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "nope"}]}}}},
            DEPLOYMENT,
        )


# --- maps, nulls, unknown fields -------------------------------------------------------------------


def test_labels_merge_and_null_deletes() -> None:
    obj = {"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}}}
    result = smp(obj, {"metadata": {"labels": {"a": None, "c": "3"}, "annotations": None}}, POD)
    assert result == {"metadata": {"labels": {"b": "2", "c": "3"}}}


def test_null_for_absent_key_is_ignored() -> None:
    obj = {"metadata": {"name": "x"}}
    assert smp(obj, {"metadata": {"labels": None}, "spec": None}, POD) == obj


def test_new_subtree_drops_nulls() -> None:
    obj = {"metadata": {"name": "x"}}
    result = smp(obj, {"metadata": {"labels": {"a": "1", "b": None}}}, POD)
    assert result == {"metadata": {"name": "x", "labels": {"a": "1"}}}


def test_unknown_fields_use_merge_patch_semantics() -> None:
    obj = {"spec": {"replicas": 1, "extra": {"list": [1, 2], "nested": {"a": 1, "b": 2}}}}
    patch = {"spec": {"extra": {"list": [3], "nested": {"a": None, "c": 3}, "new": [{"x": None}]}}}
    result = smp(obj, patch)
    assert result["spec"]["extra"] == {"list": [3], "nested": {"b": 2, "c": 3}, "new": [{}]}


def test_quantity_map_and_int_or_string() -> None:
    original = deployment(
        containers=[{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]
    )
    patch = {
        "spec": {
            "strategy": {"rollingUpdate": {"maxSurge": "50%"}},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "a", "resources": {"limits": {"cpu": "2", "memory": None}}}
                    ]
                }
            },
        }
    }
    result = smp(original, patch)
    assert pod_spec(result)["containers"][0]["resources"] == {"limits": {"cpu": "2"}}
    assert result["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "50%", "maxUnavailable": 0}


def test_scalar_type_change_replaces() -> None:
    result = smp(deployment(), {"spec": {"strategy": {"rollingUpdate": {"maxSurge": "25%"}}}})
    assert result["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "25%"


def test_configmap_data() -> None:
    cm = {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    assert smp(cm, {"data": {"a": None, "z": "26"}}, CONFIGMAP)["data"] == {"b": "2", "z": "26"}


# --- errors -----------------------------------------------------------------------------------------


def test_list_where_schema_says_object() -> None:
    with pytest.raises(PatchConflictError) as exc:
        apply_strategic_merge_patch(deployment(), {"spec": {"template": []}}, DEPLOYMENT)
    assert str(exc.value) == (
        "json: cannot unmarshal array into Go struct field DeploymentSpec.spec.template "
        "of type v1.PodTemplateSpec"
    )
    assert isinstance(exc.value, InvalidPatchError)
    assert exc.value.http_status == 422


def test_object_where_schema_says_list() -> None:
    with pytest.raises(PatchConflictError, match="containers"):
        apply_strategic_merge_patch(
            deployment(),
            {"spec": {"template": {"spec": {"containers": {"name": "a"}}}}},
            DEPLOYMENT,
        )


def test_merge_item_missing_merge_key() -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}}
    with pytest.raises(InvalidPatchError) as exc:
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert str(exc.value) == "map: map[image:nginx] does not contain declared merge key: name"


def test_lists_of_lists_rejected() -> None:
    with pytest.raises(InvalidPatchError, match="lists of lists are not supported"):
        apply_strategic_merge_patch(
            {"metadata": {"finalizers": []}}, {"metadata": {"finalizers": [["b"]]}}, POD
        )


def test_mixed_element_types_rejected() -> None:
    with pytest.raises(InvalidPatchError, match="list element types are not identical"):
        apply_strategic_merge_patch(
            {"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": [1]}}, POD
        )


def test_unknown_kind_is_unsupported() -> None:
    with pytest.raises(
        InvalidPatchError, match="strategic merge patch format is not supported"
    ) as exc:
        apply_strategic_merge_patch({}, {}, "com.example.v1.Widget")
    assert exc.value.http_status == 415


def test_non_object_documents_rejected() -> None:
    with pytest.raises(InvalidPatchError) as exc:
        apply_strategic_merge_patch(deployment(), [], DEPLOYMENT)  # type: ignore[arg-type]
    assert exc.value.http_status == 400


def test_bad_delete_from_primitive_list_value() -> None:
    with pytest.raises(InvalidPatchError, match="invalid patch format of primitive list"):
        apply_strategic_merge_patch(
            {"metadata": {"finalizers": ["a"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
            POD,
        )


def test_custom_schema_can_be_passed() -> None:
    from pykcm.api.patch import PatchSchema

    schema = PatchSchema(
        {
            "gvk": {"example.com/v1/Widget": "Widget"},
            "defs": {
                "Widget": {"spec": {"t": "o", "r": "WidgetSpec"}},
                "WidgetSpec": {
                    "items": {"t": "a", "e": {"t": "o", "r": "Item"}, "s": "merge", "k": "id"}
                },
                "Item": {},
            },
        }
    )
    obj = {"spec": {"items": [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]}}
    result = apply_strategic_merge_patch(
        obj, {"spec": {"items": [{"id": 2, "v": "B"}]}}, "Widget", schema
    )
    assert result["spec"]["items"] == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}]
    assert schema.ref_for("example.com", "v1", "Widget") == "Widget"


# --- property tests ----------------------------------------------------------------------------------

ENV_NAMES = st.sampled_from(["A", "B", "C", "D", "E", "F", "G"])
ENV_VALUES = st.text(alphabet="xyz01", max_size=3)


def env_list(draw: st.DrawFn) -> list[dict[str, Any]]:
    chosen = draw(st.lists(ENV_NAMES, unique=True, max_size=6))
    return [{"name": n, "value": draw(ENV_VALUES)} for n in chosen]


def container_with_env(env: list[dict[str, Any]]) -> dict[str, Any]:
    return deployment(containers=[{"name": "app", "image": "i", "env": env}])


@st.composite
def env_patch_case(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    original = env_list(draw)
    patch_names = draw(st.lists(ENV_NAMES, unique=True, max_size=6))
    items: list[dict[str, Any]] = []
    for n in patch_names:
        if draw(st.booleans()) and draw(st.booleans()):
            items.append({"name": n, "$patch": "delete"})
        else:
            items.append({"name": n, "value": draw(ENV_VALUES)})
    return original, items


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(env_patch_case())
def test_property_env_patch_is_dict_by_name_update(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    original_env, patch_env = case
    expected = {e["name"]: e["value"] for e in original_env}
    for item in patch_env:
        if item.get("$patch") == "delete":
            expected.pop(item["name"], None)
        else:
            expected[item["name"]] = item["value"]
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": patch_env}]}}}}
    result = smp(container_with_env(original_env), patch)
    env = pod_spec(result)["containers"][0]["env"]
    assert {e["name"]: e["value"] for e in env} == expected
    assert len(env) == len(expected)
    # Server-only items keep their relative order.
    touched = {i["name"] for i in patch_env}
    server_only = [e["name"] for e in original_env if e["name"] not in touched]
    assert [n for n in names(env) if n in server_only] == server_only


@st.composite
def env_two_states(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return env_list(draw), env_list(draw)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(env_two_states())
def test_property_kubectl_style_env_patch_yields_desired_list(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    current, desired = case
    # The patch kubectl's two-way diff sends: changed/added items, deletions,
    # and the full desired order.
    current_by_name = {e["name"]: e for e in current}
    desired_names = {e["name"] for e in desired}
    items: list[dict[str, Any]] = [e for e in desired if current_by_name.get(e["name"]) != e]
    items += [
        {"$patch": "delete", "name": e["name"]} for e in current if e["name"] not in desired_names
    ]
    patch: dict[str, Any] = {
        "name": "app",
        "$setElementOrder/env": [{"name": e["name"]} for e in desired],
    }
    if items:
        patch["env"] = items
    full = {
        "spec": {
            "template": {
                "spec": {"$setElementOrder/containers": [{"name": "app"}], "containers": [patch]}
            }
        }
    }
    result = smp(container_with_env(current), full)
    assert pod_spec(result)["containers"][0].get("env", []) == desired


def reference_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2 pseudo-code, transcribed independently (mutates a deep copy)."""
    if isinstance(patch, dict):
        if not isinstance(target, dict):
            target = {}
        else:
            target = copy.deepcopy(target)
        for name, value in patch.items():
            if value is None:
                target.pop(name, None)
            else:
                target[name] = reference_merge_patch(target.get(name), value)
        return target
    return copy.deepcopy(patch)


KEYS = st.sampled_from(["a", "b", "c", "d"])
LEAVES = st.one_of(st.text(alphabet="pq", max_size=2), st.integers(-3, 3), st.booleans())
LISTLESS_DOCS = st.recursive(
    LEAVES, lambda children: st.dictionaries(KEYS, children, max_size=4), max_leaves=12
)
LISTLESS_PATCHES = st.recursive(
    st.one_of(LEAVES, st.none()),
    lambda children: st.dictionaries(KEYS, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300)
@given(
    st.dictionaries(KEYS, LISTLESS_DOCS, max_size=4),
    st.dictionaries(KEYS, LISTLESS_PATCHES, max_size=4),
)
def test_property_listless_maps_equal_merge_patch(a: dict[str, Any], b: dict[str, Any]) -> None:
    # Unknown fields and string maps (annotations) behave exactly like RFC 7386.
    original = {"metadata": {"name": "x"}, "extra": a}
    patch = {"extra": b}
    assert smp(original, patch) == reference_merge_patch(original, patch)
    assert smp(original, patch) == apply_merge_patch(original, patch)
    flat_a = {k: v for k, v in a.items() if isinstance(v, str)}
    flat_b = {k: v for k, v in b.items() if v is None or isinstance(v, str)}
    annotated = {"metadata": {"annotations": flat_a}}
    assert smp(annotated, {"metadata": {"annotations": flat_b}}, POD) == reference_merge_patch(
        annotated, {"metadata": {"annotations": flat_b}}
    )


DIRECTIVE_VALUES = st.sampled_from(["delete", "replace", "merge", "bogus"])


@st.composite
def directive_map(draw: st.DrawFn, inner: st.SearchStrategy[Any]) -> dict[str, Any]:
    base = draw(
        st.dictionaries(st.sampled_from(["name", "image", "value", "type", "x"]), inner, max_size=3)
    )
    if draw(st.integers(0, 4)) == 0:
        base["$patch"] = draw(DIRECTIVE_VALUES)
    if draw(st.integers(0, 6)) == 0:
        base["$retainKeys"] = draw(
            st.lists(st.sampled_from(["name", "image", "value", "x"]), max_size=3)
        )
    return base


@st.composite
def random_patch(draw: st.DrawFn) -> dict[str, Any]:
    scalar = st.one_of(st.text(alphabet="ab", max_size=2), st.none(), st.integers(0, 2))
    env_item = st.fixed_dictionaries(
        {"name": st.sampled_from(["X", "Y", "Z"])},
        optional={"value": scalar, "$patch": DIRECTIVE_VALUES},
    )
    container = st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c"])},
        optional={
            "image": scalar,
            "env": st.lists(env_item, max_size=3),
            "$setElementOrder/env": st.lists(
                st.fixed_dictionaries({"name": st.sampled_from(["X", "Y", "Z"])}), max_size=3
            ),
            "$patch": DIRECTIVE_VALUES,
            "args": st.lists(st.one_of(st.text(max_size=2), directive_map(scalar)), max_size=2),
            "securityContext": directive_map(scalar),
        },
    )
    spec = st.fixed_dictionaries(
        {},
        optional={
            "containers": st.lists(container, max_size=3),
            "$setElementOrder/containers": st.lists(
                st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])}), max_size=3
            ),
            "tolerations": st.lists(directive_map(scalar), max_size=2),
            "volumes": st.lists(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(["v1", "v2"])},
                    optional={
                        "emptyDir": directive_map(scalar),
                        "$retainKeys": st.lists(
                            st.sampled_from(["name", "emptyDir", "configMap"]), max_size=2
                        ),
                    },
                ),
                max_size=2,
            ),
            "extra": st.recursive(
                scalar, lambda c: directive_map(c) | st.lists(c, max_size=2), max_leaves=6
            ),
        },
    )
    metadata = st.fixed_dictionaries(
        {},
        optional={
            "labels": directive_map(scalar),
            "finalizers": st.lists(st.sampled_from(["f1", "f2", "f3"]), max_size=3),
            "$deleteFromPrimitiveList/finalizers": st.lists(
                st.sampled_from(["f1", "f2"]), max_size=2
            ),
            "$setElementOrder/finalizers": st.lists(
                st.sampled_from(["f1", "f2", "f3"]), max_size=3
            ),
        },
    )
    return draw(
        st.fixed_dictionaries(
            {},
            optional={
                "metadata": metadata,
                "spec": st.fixed_dictionaries(
                    {},
                    optional={
                        "strategy": directive_map(scalar),
                        "template": st.fixed_dictionaries({}, optional={"spec": spec}),
                    },
                ),
            },
        )
    )


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(random_patch())
def test_property_no_directive_in_output_and_inputs_untouched(patch: dict[str, Any]) -> None:
    original = deployment()
    original["metadata"]["finalizers"] = ["f1", "f2"]
    pod_spec(original)["volumes"] = [{"name": "v1", "emptyDir": {}}]
    pod_spec(original)["containers"][0]["securityContext"] = {"runAsUser": 1}
    before_o = copy.deepcopy(original)
    before_p = copy.deepcopy(patch)
    try:
        result = apply_strategic_merge_patch(original, patch, DEPLOYMENT)
    except PatchError:
        result = None
    assert original == before_o
    assert patch == before_p
    if result is not None:
        assert not directive_keys(result)
        orjson.dumps(result)  # plain JSON data only
        # Applying the same patch again is stable for everything but
        # order-sensitive merges, and must also succeed.
        apply_strategic_merge_patch(result, patch, DEPLOYMENT)
