"""authorization.k8s.io/v1 reviews: SubjectAccessReview, SelfSubjectAccessReview,
LocalSubjectAccessReview, SelfSubjectRulesReview, answered and never stored.

kube-apiserver counterpart: ``pkg/registry/authorization/{subjectaccessreview,
selfsubjectaccessreview,localsubjectaccessreview,selfsubjectrulesreview}`` and
``pkg/apis/authorization/validation`` (the 422s, with their messages).

Data flow: handlers.py decodes the POST body (the create-only path shared with
tokenreviews, see service_accounts.py) and calls one function here with the
requesting user; the answer is the request's spec with a ``status`` and goes
back as 201. Nothing reaches storage.

The answers are the RBAC authorizer's (rbac/authorizer.py, the one the request path
uses, reached through the request's context: rbac/escalation.py's ``CURRENT``): the
privileged group ``system:masters`` is allowed everything with no reason, an RBAC
allowance carries ``RBAC: allowed by ...``, a denial no reason unless resolving the
bindings met errors. A rules review lists the privileged group's ``*`` rules, then
every rule of the subject's bindings in the namespace, each once. Deliberate
deviations: the selector attributes of ``resourceAttributes`` (fieldSelector/
labelSelector requirements) are not validated; the metadata answered carries no
managedFields (pykcm keeps none); a review answered with no request context (a
direct call) finds no authorizer and allows nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from pykcm.apiserver import errors
from pykcm.apiserver.auth.authentication import User, go_aggregate
from pykcm.apiserver.rbac.escalation import CURRENT
from pykcm.apiserver.rbac.rules import Attributes

__all__ = [
    "AUTHZ_GV",
    "local_subject_access_review",
    "self_subject_access_review",
    "self_subject_rules_review",
    "subject_access_review",
]

AUTHZ_GV: Final = "authorization.k8s.io/v1"
_GROUP: Final = "authorization.k8s.io"


def _go_value(value: Any) -> str:
    """A value as field.Invalid prints it (JSON; a nil pointer is null)."""
    return orjson.dumps(value).decode()


def _cause(field: str, value: Any, why: str) -> dict[str, Any]:
    return {"reason": "FieldValueInvalid", "field": field,
            "message": f"Invalid value: {_go_value(value)}: {why}"}


def _invalid(causes: list[dict[str, Any]]) -> errors.StatusError:
    """The 422 of a review: kube-apiserver names neither kind nor object
    (``.authorization.k8s.io "" is invalid``)."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return errors.StatusError(422, "Invalid", f'.{_GROUP} "" is invalid: {summary}',
                              details={"group": _GROUP, "causes": causes})


def _spec(body: Mapping[str, Any]) -> dict[str, Any]:
    spec = body.get("spec")
    return dict(spec) if isinstance(spec, dict) else {}


def _attributes_causes(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if res is not None and nonres is not None:
        return [_cause("spec.nonResourceAttributes", nonres,
                       "cannot be specified in combination with resourceAttributes")]
    if res is None and nonres is None:
        return [_cause("spec.resourceAttributes", None,
                       "exactly one of nonResourceAttributes or resourceAttributes must be "
                       "specified")]
    return []


def _subject_causes(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    causes = _attributes_causes(spec)
    if not spec.get("user") and not spec.get("groups"):
        causes.append(_cause("spec.user", spec.get("user") or "",
                             "at least one of user or group must be specified"))
    return causes


def _meta(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return {}
    return {k: v for k, v in meta.items() if k != "managedFields" and v not in (None, "", {}, [])}


def _spec_user(spec: Mapping[str, Any]) -> User:
    groups = spec.get("groups")
    extra = spec.get("extra")
    return User(str(spec.get("user") or ""), str(spec.get("uid") or ""),
                tuple(str(g) for g in groups) if isinstance(groups, list) else (),
                tuple(sorted((str(k), tuple(str(x) for x in v))
                             for k, v in extra.items() if isinstance(v, list)))
                if isinstance(extra, dict) else ())


def _attributes(user: User, spec: Mapping[str, Any]) -> Attributes:
    """authorizationutil's ResourceAttributesFrom / NonResourceAttributesFrom."""
    res = spec.get("resourceAttributes")
    if isinstance(res, dict):
        return Attributes(user, str(res.get("verb") or ""),
                          namespace=str(res.get("namespace") or ""),
                          api_group=str(res.get("group") or ""),
                          resource=str(res.get("resource") or ""),
                          subresource=str(res.get("subresource") or ""),
                          name=str(res.get("name") or ""))
    nonres = spec.get("nonResourceAttributes")
    nonres = nonres if isinstance(nonres, dict) else {}
    return Attributes(user, str(nonres.get("verb") or ""), is_resource_request=False,
                      path=str(nonres.get("path") or ""))


def _decide(user: User, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The review's status: allowed, and the authorizer's reason when it gave one."""
    auth = CURRENT.get()
    if auth is None:
        return {"allowed": False}
    allowed, reason = auth.authorizer.authorize(_attributes(user, spec))
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def _answer(kind: str, meta: dict[str, Any], spec: dict[str, Any],
            status: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": AUTHZ_GV, "metadata": meta, "spec": spec,
            "status": status}


def subject_access_review(body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST subjectaccessreviews``: may ``spec.user``/``groups`` do this?"""
    spec, meta = _spec(body), _meta(body)
    causes = _subject_causes(spec)
    if meta:
        causes.append(_cause("metadata", meta, "must be empty"))
    if causes:
        raise _invalid(causes)
    return _answer("SubjectAccessReview", {}, spec, _decide(_spec_user(spec), spec))


def local_subject_access_review(namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST namespaces/<ns>/localsubjectaccessreviews``: a SubjectAccessReview held to
    one namespace."""
    spec, meta = _spec(body), _meta(body)
    if namespace and not meta.get("namespace"):
        meta["namespace"] = namespace  # the request's namespace fills the object's
    if meta.get("namespace") != namespace:
        raise errors.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
    causes = _subject_causes(spec)
    if {k: v for k, v in meta.items() if k != "namespace"}:
        causes.append(_cause("metadata", meta, "must be empty except for namespace"))
    res = spec.get("resourceAttributes")
    if isinstance(res, dict) and (res.get("namespace") or "") != namespace:
        causes.append(_cause("spec.resourceAttributes.namespace", res.get("namespace") or "",
                             "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        causes.append(_cause("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                             "disallowed on this kind of request"))
    if causes:
        raise _invalid(causes)
    return _answer("LocalSubjectAccessReview", {"namespace": namespace}, spec,
                   _decide(_spec_user(spec), spec))


def self_subject_access_review(user: User | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST selfsubjectaccessreviews`` (``kubectl auth can-i``): may I do this?"""
    if user is None:
        raise errors.bad_request("no user present on request")
    spec, meta = _spec(body), _meta(body)
    causes = _attributes_causes(spec)
    if meta:
        causes.append(_cause("metadata", meta, "must be empty"))
    if causes:
        raise _invalid(causes)
    return _answer("SelfSubjectAccessReview", {}, spec, _decide(user, spec))


def self_subject_rules_review(user: User | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST selfsubjectrulesreviews`` (``kubectl auth can-i --list``): what may I do in
    ``spec.namespace``? The authorizer's rules for the requesting user."""
    if user is None:
        raise errors.bad_request("no user present on request")
    spec = _spec(body)
    if not spec.get("namespace"):
        raise errors.bad_request("no namespace on request")
    auth = CURRENT.get()
    status: dict[str, Any] = {"resourceRules": [], "nonResourceRules": [], "incomplete": False}
    if auth is not None:
        rules = auth.authorizer.rules_for(user, str(spec["namespace"]))
        status["resourceRules"] = rules.resource_rules
        status["nonResourceRules"] = rules.non_resource_rules
        if rules.errors:
            status["evaluationError"] = go_aggregate(rules.errors)
    return {"kind": "SelfSubjectRulesReview", "apiVersion": AUTHZ_GV, "metadata": {},
            "spec": spec, "status": status}
