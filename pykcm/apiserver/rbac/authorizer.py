"""The RBAC authorizer: may this user do this? and what may they do in a namespace?

kube-apiserver counterpart: ``plugin/pkg/auth/authorizer/rbac/rbac.go`` (Authorize,
RulesFor), ``pkg/registry/rbac/validation/rule.go`` (DefaultRuleResolver:
VisitRulesFor, appliesTo, the binding describers of the ``allowed by`` reason), the
privileged-group authorizer in front of it (``system:masters`` may do everything),
and the 403 ``forbidden_error`` of ``responsewriters.ForbiddenStatusError``.

Data flow: server.py builds :class:`~pykcm.apiserver.rbac.rules.Attributes` from the
request info of every authenticated request and calls :meth:`RBACAuthorizer.authorize`;
a denial becomes :func:`forbidden_error`. access_reviews.py asks the same authorizer
for SubjectAccessReviews and :meth:`RBACAuthorizer.rules_for` for
SelfSubjectRulesReviews. The roles and bindings are read from the server's own store
(``RBACObjects``: the committed objects, parsed once per revision), as upstream's
authorizer reads them from its informers' caches: a change applies to the next request.

Deliberate deviations: the Node authorizer is not run (the simulated kubelets are
granted the upstream ``system:node`` ClusterRole by RBAC instead; see
rbac/bootstrap.py); the evaluation order of bindings is the store's name order
(upstream's is its cache's map order, which no client may rely on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from pykcm.api.validation import go_quote
from pykcm.apiserver import errors
from pykcm.apiserver.auth.authentication import User
from pykcm.apiserver.rbac.rules import Attributes, rule_allows

__all__ = [
    "PRIVILEGED_GROUP",
    "RBACAuthorizer",
    "RBACObjects",
    "RulesResult",
    "forbidden_error",
    "forbidden_message",
]

PRIVILEGED_GROUP: Final = "system:masters"
SA_PREFIX: Final = "system:serviceaccount:"
_EVERYTHING: Final = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
_EVERY_URL: Final = {"verbs": ["*"], "nonResourceURLs": ["*"]}


class RBACObjects(Protocol):
    """Where the authorizer reads roles and bindings (the store's committed objects)."""

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]: ...
    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]: ...
    def cluster_role(self, name: str) -> Mapping[str, Any] | None: ...
    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


def _subject_applies(user: User, subject: Mapping[str, Any], namespace: str) -> bool:
    """appliesToUser: a User by name, a Group by membership, a ServiceAccount by its
    username (its namespace defaulting to the binding's)."""
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = str(subject.get("namespace") or "") or namespace
        return bool(ns) and user.name == f"{SA_PREFIX}{ns}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], namespace: str) -> str:
    kind, name = str(subject.get("kind") or ""), str(subject.get("name") or "")
    if kind == "ServiceAccount":
        return f"{kind} {go_quote(name + '/' + (str(subject.get('namespace') or '') or namespace))}"
    return f"{kind} {go_quote(name)}"


def _describe(binding: Mapping[str, Any], subject: Mapping[str, Any]) -> str:
    meta = binding.get("metadata") or {}
    ref = binding.get("roleRef") or {}
    ns = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    kind = "RoleBinding" if ns else "ClusterRoleBinding"
    shown = f"{name}/{ns}" if ns else name
    return (f"{kind} {go_quote(shown)} of {ref.get('kind', '')} "
            f"{go_quote(str(ref.get('name') or ''))} to {_describe_subject(subject, ns)}")


@dataclass
class RulesResult:
    """RulesFor's answer: the rules in effect, and the errors met resolving them."""

    resource_rules: list[dict[str, Any]] = field(default_factory=list)
    non_resource_rules: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# A visit: (describe the rule's source, the rule) or (None, error message)
_Visit = tuple[Callable[[], str] | None, Mapping[str, Any] | str]


class RBACAuthorizer:
    CACHE_SIZE = 4096

    def __init__(self, objects: RBACObjects) -> None:
        self.objects = objects
        # (user, groups, namespace) -> the rules visited for it, while the objects'
        # generation (when they have one: StoredRBAC) is unchanged
        self._generation: Callable[[], tuple[int, ...]] | None = getattr(
            objects, "generation", None)
        self._cache: dict[tuple[str, tuple[str, ...], str], list[_Visit]] = {}
        self._cache_gen: tuple[int, ...] | None = None

    def role_rules(self, ref: Mapping[str, Any], namespace: str) -> list[Any] | str:
        """GetRoleReferenceRules: the referenced role's rules, or the lister's error."""
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "Role":
            role = self.objects.role(namespace, name)
            missing = f"role.rbac.authorization.k8s.io {go_quote(name)} not found"
        elif kind == "ClusterRole":
            role = self.objects.cluster_role(name)
            missing = f"clusterrole.rbac.authorization.k8s.io {go_quote(name)} not found"
        else:
            return f"unsupported role reference kind: {go_quote(str(kind))}"
        if role is None:
            return missing
        rules = role.get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []

    def _visit(self, user: User, namespace: str) -> list[_Visit]:
        """The visits of :meth:`_walk`, remembered per subject and namespace until a
        role or binding changes (bindings are few; subjects ask again and again)."""
        if self._generation is None:
            return list(self._walk(user, namespace))
        gen = self._generation()
        if gen != self._cache_gen:
            self._cache.clear()
            self._cache_gen = gen
        key = (user.name, user.groups, namespace)
        visits = self._cache.get(key)
        if visits is None:
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            visits = self._cache[key] = list(self._walk(user, namespace))
        return visits

    def _walk(self, user: User, namespace: str) -> Iterator[_Visit]:
        """VisitRulesFor: the ClusterRoleBindings' rules, then (in a namespace) the
        namespace's RoleBindings', each with how to describe its source."""
        sources: list[tuple[Iterable[Mapping[str, Any]], str]] = [
            (self.objects.cluster_role_bindings(), "")]
        if namespace:
            sources.append((self.objects.role_bindings(namespace), namespace))
        for bindings, ns in sources:
            for binding in bindings:
                subjects = binding.get("subjects") or []
                subject = next((s for s in subjects if isinstance(s, dict)
                                and _subject_applies(user, s, ns)), None)
                if subject is None:
                    continue
                rules = self.role_rules(binding.get("roleRef") or {}, ns)
                if isinstance(rules, str):
                    yield None, rules
                    continue

                def describe(b: Mapping[str, Any] = binding,
                             s: Mapping[str, Any] = subject) -> str:
                    return _describe(b, s)
                for rule in rules:
                    yield describe, rule

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason): the privileged group first, then RBAC. A denial's reason is
        the errors met on the way (``RBAC: ...``), else empty (no opinion)."""
        if PRIVILEGED_GROUP in attrs.user.groups:
            return True, ""
        errs: list[str] = []
        for describe, item in self._visit(attrs.user, attrs.namespace):
            if describe is None:
                errs.append(str(item))
            elif isinstance(item, Mapping) and rule_allows(attrs, item):
                return True, f"RBAC: allowed by {describe()}"
        if errs:
            return False, "RBAC: " + _aggregate(errs)
        return False, ""

    def allowed(self, attrs: Attributes) -> bool:
        return self.authorize(attrs)[0]

    def rules_for(self, user: User, namespace: str) -> RulesResult:
        """RulesFor of the authorizer union: the privileged group's ``*`` rules, then the
        RBAC rules of every binding that applies (duplicates listed once)."""
        out = RulesResult()
        if PRIVILEGED_GROUP in user.groups:
            out.resource_rules.append(dict(_EVERYTHING))
            out.non_resource_rules.append(dict(_EVERY_URL))
        for describe, item in self._visit(user, namespace):
            if describe is None:
                out.errors.append(str(item))
                continue
            assert isinstance(item, Mapping)
            verbs = list(item.get("verbs") or [])
            if item.get("resources"):
                r: dict[str, Any] = {"verbs": verbs,
                                     "apiGroups": list(item.get("apiGroups") or []),
                                     "resources": list(item["resources"])}
                if item.get("resourceNames"):
                    r["resourceNames"] = list(item["resourceNames"])
                if r not in out.resource_rules:
                    out.resource_rules.append(r)
            if item.get("nonResourceURLs"):
                n = {"verbs": verbs, "nonResourceURLs": list(item["nonResourceURLs"])}
                if n not in out.non_resource_rules:
                    out.non_resource_rules.append(n)
        return out

    def all_rules(self, user: User, namespace: str) -> tuple[list[Mapping[str, Any]], list[str]]:
        """The raw PolicyRules in effect (for escalation checks), and the errors met."""
        rules: list[Mapping[str, Any]] = []
        errs: list[str] = []
        for describe, item in self._visit(user, namespace):
            if describe is None:
                errs.append(str(item))
            elif isinstance(item, Mapping):
                rules.append(item)
        return rules, errs


def _aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error()."""
    from pykcm.apiserver.auth.authentication import go_aggregate

    return go_aggregate(messages)


def _sanitize(s: str) -> str:
    # the forbidden message is HTML-escaped as upstream's sanitizer does
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden_message(attrs: Attributes) -> str:
    """responsewriters' forbiddenMessage."""
    user = go_quote(attrs.user.name)
    if not attrs.is_resource_request:
        return f"User {user} cannot {attrs.verb} path {go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = (f"in the namespace {go_quote(attrs.namespace)}" if attrs.namespace
             else "at the cluster scope")
    return (f"User {user} cannot {attrs.verb} resource {go_quote(resource)} in API group "
            f"{go_quote(attrs.api_group)} {where}")


def forbidden_error(attrs: Attributes, reason: str) -> errors.StatusError:
    """ForbiddenStatusError: 403 naming the resource (and object) asked for."""
    msg = _sanitize(forbidden_message(attrs))
    if reason:
        msg = f"{msg}: {reason}"
    if not attrs.is_resource_request:
        # NewForbidden of an empty GroupResource: no target, empty details
        return errors.StatusError(403, "Forbidden", f"forbidden: {msg}", details={})
    return errors.forbidden(attrs.resource, attrs.api_group, attrs.name, msg)
