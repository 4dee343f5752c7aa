"""What the workload kinds' validation shares (ReplicaSet, Deployment, StatefulSet,
DaemonSet, ReplicationController, Job): the selector and its match with the pod
template, the immutable selector, and the status counters' rules.

Upstream's ``pkg/apis/apps/validation`` helpers (ValidatePodTemplateSpecForReplicaSet,
ValidateDeploymentStatus's counters, ...), with their field paths and messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    forbidden,
    go_label_selector,
    invalid,
    not_supported,
    required,
    validate_label_selector,
)
from pykcm.apiserver.registry.core.podspec_validation import validate_pod_template_spec
from pykcm.apiserver.registry.validation import (
    as_int,
    as_map,
    as_str,
    go_labels,
    nonnegative_field,
    semantic_equal,
)


def selector_and_template(
    spec: Mapping[str, Any], kind_word: str, *, require: bool, allow_invalid_value: bool = False,
) -> tuple[list[Cause], Any]:
    """Common selector checks; returns (errors, compiled selector or None on error)."""
    errs: list[Cause] = []
    sel = spec.get("selector")
    if sel is None:
        if require:
            errs.append(required("spec.selector"))
    else:
        sel = as_map(sel)
        errs.extend(validate_label_selector(sel, "spec.selector",
                                            allow_invalid_label_value=allow_invalid_value))
        if not sel.get("matchLabels") and not sel.get("matchExpressions"):
            errs.append(invalid("spec.selector", go_label_selector(sel),
                                f"empty selector is invalid for {kind_word}"))
    try:
        compiled = selector_from_label_selector(None if sel is None else as_map(sel))
    except SelectorParseError:
        return errs, None
    return errs, compiled


def template_labels_match(compiled: Any, tmpl: Mapping[str, Any], path: str) -> list[Cause]:
    labels = as_map(tmpl.get("metadata")).get("labels")
    if compiled is not None and not compiled.empty and not compiled.matches(as_map(labels)):
        return [invalid(f"{path}.metadata.labels", go_labels(labels),
                        "`selector` does not match template `labels`")]
    return []


def validate_template_for_replicaset(tmpl: Mapping[str, Any], compiled: Any, path: str,
                                      kind_word: str) -> list[Cause]:
    errs = template_labels_match(compiled, tmpl, path)
    errs.extend(validate_pod_template_spec(tmpl, path))
    spec = as_map(tmpl.get("spec"))
    restart = as_str(spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(not_supported(f"{path}.spec.restartPolicy", restart, ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(f"{path}.spec.activeDeadlineSeconds",
                              f"activeDeadlineSeconds in {kind_word} is not Supported"))
    return errs


def selector_immutable(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    ns = as_map(new.get("spec")).get("selector")
    os_ = as_map(old.get("spec")).get("selector")
    if semantic_equal(ns, os_):
        return []
    return [invalid("spec.selector", go_label_selector(None if ns is None else as_map(ns)),
                    FIELD_IMMUTABLE_ERROR_MSG)]


def status_nonnegative(status: Mapping[str, Any], keys: Sequence[str]) -> list[Cause]:
    errs: list[Cause] = []
    for k in keys:
        errs.extend(nonnegative_field(status, k, f"status.{k}"))
    return errs


def not_greater(status: Mapping[str, Any], key: str, than: str, msg: str) -> list[Cause]:
    a, b = as_int(status.get(key)) or 0, as_int(status.get(than)) or 0
    return [invalid(f"status.{key}", a, msg)] if a > b else []


def collision_not_decremented(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    n, o = as_int(new.get("collisionCount")), as_int(old.get("collisionCount"))
    if o is not None and (n is None or n < o):
        return [invalid("status.collisionCount", n or 0, "cannot be decremented")]
    return []
