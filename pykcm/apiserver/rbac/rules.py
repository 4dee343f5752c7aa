"""PolicyRule matching: does one RBAC rule allow one request?

kube-apiserver counterpart: ``pkg/apis/rbac/v1/evaluation_helpers.go`` (VerbMatches,
APIGroupMatches, ResourceMatches, ResourceNameMatches, NonResourceURLMatches,
CompactString) and ``plugin/pkg/auth/authorizer/rbac``'s RuleAllows.

Data flow: the authorizer (authorizer.py) builds an :class:`Attributes` from the
request (or from an access review's spec) and asks :func:`rule_allows` of every rule
the subject's bindings reach; escalation.py asks the same of the rules a role would
grant. Rules are the stored JSON dicts (``verbs``, ``apiGroups``, ``resources``,
``resourceNames``, ``nonResourceURLs``); absent lists match nothing, as Go's nil
slices. The ``*`` wildcards are upstream's: any verb, group, resource, ``*/sub`` any
resource's ``sub`` subresource, a trailing ``*`` on a non-resource URL a prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykcm.apiserver.auth.authentication import User

__all__ = ["Attributes", "compact_string", "rule_allows"]


@dataclass(frozen=True, slots=True)
class Attributes:
    """authorizer.Attributes: who asks to do what."""

    user: User
    verb: str
    is_resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


def _strs(rule: Mapping[str, Any], key: str) -> Sequence[str]:
    v = rule.get(key)
    return v if isinstance(v, list) else ()


def verb_matches(rule: Mapping[str, Any], verb: str) -> bool:
    return any(v == "*" or v == verb for v in _strs(rule, "verbs"))


def api_group_matches(rule: Mapping[str, Any], group: str) -> bool:
    return any(g == "*" or g == group for g in _strs(rule, "apiGroups"))


def resource_matches(rule: Mapping[str, Any], combined: str, subresource: str) -> bool:
    for r in _strs(rule, "resources"):
        if r == "*" or r == combined:
            return True
        # "*/scale" matches any resource's scale subresource (and only that)
        if subresource and r == "*/" + subresource:
            return True
    return False


def resource_name_matches(rule: Mapping[str, Any], name: str) -> bool:
    names = _strs(rule, "resourceNames")
    return not names or name in names


def non_resource_url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for u in _strs(rule, "nonResourceURLs"):
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    """RuleAllows: a resource request needs verb, group, resource and name to match; a
    non-resource request verb and path."""
    if attrs.is_resource_request:
        combined = (f"{attrs.resource}/{attrs.subresource}" if attrs.subresource
                    else attrs.resource)
        return (verb_matches(rule, attrs.verb) and api_group_matches(rule, attrs.api_group)
                and resource_matches(rule, combined, attrs.subresource)
                and resource_name_matches(rule, attrs.name))
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


def _go_q_list(values: Sequence[str]) -> str:
    """Go's %q of a []string: ["a" "b"] (space separated)."""
    from pykcm.api.validation import go_quote

    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: Mapping[str, Any]) -> str:
    """CompactString: ``{APIGroups:[""], Resources:["pods"], Verbs:["list"]}``, the
    escalation error's listing of a rule (empty lists left out)."""
    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"),
                       ("resourceNames", "ResourceNames"), ("verbs", "Verbs")):
        values = _strs(rule, key)
        if values:
            parts.append(f"{label}:{_go_q_list(values)}")
    return "{" + ", ".join(parts) + "}"
