"""core/v1 ServiceAccounts (pkg/registry/core/serviceaccount): the warning on the deprecated
mountable-secrets annotation.

Validation is still the flat module's; tokens (serviceaccounts/token) are
service_accounts.py's.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register

Obj = dict[str, Any]

ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"


def _annotations(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("annotations") or {}


@register
class ServiceAccountStrategy(FlatModulesStrategy):
    kind = "ServiceAccount"
    has_update_warnings = True

    def warnings_on_create(self, obj: Obj) -> list[str]:
        if ENFORCE_MOUNTABLE_SECRETS in _annotations(obj):
            return [(f"metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; "
                     "prefer separate namespaces to isolate access to mounted secrets")]
        return []

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        # only when a write newly sets it
        if ENFORCE_MOUNTABLE_SECRETS in _annotations(old):
            return []
        return self.warnings_on_create(new)
