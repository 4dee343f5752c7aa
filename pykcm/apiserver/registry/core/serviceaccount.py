"""core/v1 ServiceAccounts (pkg/registry/core/serviceaccount): the warning on the deprecated
mountable-secrets annotation, printer. Metadata validation only; tokens
(serviceaccounts/token) are service_accounts.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]

# --- printer ---------------------------------------------------------------------------

# v1.35 dropped the Secrets count (kubernetes/kubernetes#117160): the field is not
# populated since 1.24 and the count misled.
_SERVICE_ACCOUNT_COLUMNS: Final = (pr.NAME_COLUMN, pr.AGE_COLUMN)


def _service_account_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"


def _annotations(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("annotations") or {}


@register
class ServiceAccountStrategy(Strategy):
    kind = "ServiceAccount"
    printer = pr.Printer(_SERVICE_ACCOUNT_COLUMNS, _service_account_row)
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
