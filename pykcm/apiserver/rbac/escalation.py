"""Escalation prevention: a user may write a role or binding only with permissions they
hold, unless they are privileged or allowed to ``escalate`` (roles) or ``bind`` (the
bound role).

kube-apiserver counterpart: ``pkg/registry/rbac/escalation_check.go``
(EscalationAllowed, RoleEscalationAuthorized, BindingAuthorized), ``ConfirmNoEscalation``
of ``pkg/registry/rbac/validation/rule.go``, ``CompactRules``, and component-helpers'
``Covers`` (a rule broken down to one verb/group/resource/name at a time, each covered by
some rule the user holds).

Data flow: server.py sets :data:`CURRENT` (the authorizer and the requesting user) for
each authenticated request; the four RBAC strategies (registry/rbac/) call
:func:`check_role` / :func:`check_binding` from their validate hooks, after defaulting
and before validation, as upstream's policy-based storage wraps the generic store. A
write with no request context (the server's own bootstrap reconciliation) is trusted,
as upstream's loopback ``system:apiserver`` user in system:masters is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from pykcm.api.validation import go_quote
from pykcm.apiserver import errors
from pykcm.apiserver.auth.authentication import User
from pykcm.apiserver.rbac.authorizer import PRIVILEGED_GROUP, RBACAuthorizer
from pykcm.apiserver.rbac.rules import Attributes, compact_string

__all__ = ["CURRENT", "RequestAuth", "check_binding", "check_role", "covers"]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
Rule = Mapping[str, Any]


@dataclass(frozen=True)
class RequestAuth:
    authorizer: RBACAuthorizer
    user: User


CURRENT: ContextVar[RequestAuth | None] = ContextVar("pykcm_rbac_request", default=None)


def _strs(rule: Rule, key: str) -> list[str]:
    v = rule.get(key)
    return [str(x) for x in v] if isinstance(v, list) else []


def breakdown(rule: Rule) -> Iterator[dict[str, list[str]]]:
    """BreakdownRule: one group, resource, verb (and name) per subrule; one URL and verb."""
    names = _strs(rule, "resourceNames")
    for group in _strs(rule, "apiGroups"):
        for resource in _strs(rule, "resources"):
            for verb in _strs(rule, "verbs"):
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if names:
                    for n in names:
                        yield {**base, "resourceNames": [n]}
                else:
                    yield base
    for url in _strs(rule, "nonResourceURLs"):
        for verb in _strs(rule, "verbs"):
            yield {"nonResourceURLs": [url], "verbs": [verb]}


def _resources_cover(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner:
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """ruleCovers of component-helpers' policy comparator."""
    o_verbs, o_groups = _strs(owner, "verbs"), _strs(owner, "apiGroups")
    o_names = _strs(owner, "resourceNames")
    s_names = _strs(sub, "resourceNames")
    return (("*" in o_verbs or set(_strs(sub, "verbs")) <= set(o_verbs))
            and ("*" in o_groups or set(_strs(sub, "apiGroups")) <= set(o_groups))
            and _resources_cover(_strs(owner, "resources"), _strs(sub, "resources"))
            and all(any(_url_covers(o, p) for o in _strs(owner, "nonResourceURLs"))
                    for p in _strs(sub, "nonResourceURLs"))
            and (not o_names or (bool(s_names) and set(s_names) <= set(o_names))))


def covers(owner_rules: Iterable[Rule], rules: Iterable[Rule]) -> list[dict[str, list[str]]]:
    """Covers: the subrules of ``rules`` no owner rule covers (empty: covered)."""
    owners = list(owner_rules)
    return [sub for rule in rules for sub in breakdown(rule)
            if not any(rule_covers(o, sub) for o in owners)]


def compact(rules: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """CompactRules: simple rules of one group and resource (and at most one name) merged
    by their verbs."""
    out: list[dict[str, list[str]]] = []
    simple: dict[tuple[str, str, str | None], dict[str, list[str]]] = {}
    for rule in rules:
        names = rule.get("resourceNames") or []
        if (len(names) > 1 or rule.get("nonResourceURLs") or len(rule.get("apiGroups") or []) != 1
                or len(rule.get("resources") or []) != 1):
            out.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], names[0] if names else None)
        if key in simple:
            simple[key]["verbs"] = simple[key]["verbs"] + rule["verbs"]
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
    return out + list(simple.values())


def _go_q_list(values: Iterable[str]) -> str:
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def confirm_no_escalation(auth: RequestAuth, namespace: str, rules: Iterable[Rule]) -> str:
    """ConfirmNoEscalation: '' when the user holds every permission of ``rules``, else
    the error's message."""
    owner, resolution_errors = auth.authorizer.all_rules(auth.user, namespace)
    if PRIVILEGED_GROUP in auth.user.groups:
        owner = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                 {"verbs": ["*"], "nonResourceURLs": ["*"]}, *owner]
    missing = covers(owner, rules)
    if not missing:
        return ""
    described = sorted({compact_string(r) for r in compact(missing)})
    msg = (f"user {go_quote(auth.user.name)} (groups={_go_q_list(auth.user.groups)}) is "
           "attempting to grant RBAC permissions not currently held:\n" + "\n".join(described))
    if resolution_errors:
        msg += "; resolution errors: [" + " ".join(resolution_errors) + "]"
    return msg


def only_gc_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """IsOnlyMutatingGCFields: the write changes only ownerReferences and finalizers."""
    def strip(o: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (o.get("metadata") or {}).items()
                if k not in ("ownerReferences", "finalizers", "resourceVersion",
                             "managedFields", "generation")}
        return {**o, "metadata": meta}
    return strip(new) == strip(old)


def _escalation_allowed(auth: RequestAuth) -> bool:
    return PRIVILEGED_GROUP in auth.user.groups


def check_role(plural: str, namespace: str, name: str, obj: Mapping[str, Any],
               old: Mapping[str, Any] | None = None) -> None:
    """A Role/ClusterRole write: 403 when it would grant what the user does not hold and
    they may not ``escalate``."""
    auth = CURRENT.get()
    if auth is None or _escalation_allowed(auth):
        return
    if old is not None and only_gc_fields(obj, old):
        return
    if auth.authorizer.allowed(Attributes(auth.user, "escalate", namespace=namespace,
                                          api_group=RBAC_GROUP, resource=plural, name=name)):
        return
    rules = [r for r in obj.get("rules") or [] if isinstance(r, dict)]
    msg = confirm_no_escalation(auth, namespace, rules)
    if msg:
        raise errors.forbidden(plural, RBAC_GROUP, name, msg)


def check_binding(plural: str, namespace: str, name: str, obj: Mapping[str, Any],
                  old: Mapping[str, Any] | None = None) -> None:
    """A RoleBinding/ClusterRoleBinding write: 403 unless the user may ``bind`` the role or
    holds every permission it grants."""
    auth = CURRENT.get()
    if auth is None or _escalation_allowed(auth):
        return
    if old is not None and only_gc_fields(obj, old):
        return
    ref = obj.get("roleRef") or {}
    kind, role_name = ref.get("kind"), str(ref.get("name") or "")
    resource = "clusterroles" if kind == "ClusterRole" else "roles"
    if auth.authorizer.allowed(Attributes(auth.user, "bind", namespace=namespace,
                                          api_group=str(ref.get("apiGroup") or ""),
                                          resource=resource, name=role_name)):
        return
    rules = auth.authorizer.role_rules(ref, namespace)
    if isinstance(rules, str):
        raise errors.forbidden(plural, RBAC_GROUP, name, rules)
    msg = confirm_no_escalation(auth, namespace, rules)
    if msg:
        raise errors.forbidden(plural, RBAC_GROUP, name, msg)
