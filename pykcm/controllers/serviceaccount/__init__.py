"""The service account controllers (kube-controller-manager pkg/controller/serviceaccount).

Modules: ``serviceaccounts_controller`` (the ``default`` account in every namespace),
``tokens_controller`` (legacy token Secrets filled in and cleaned up) and
``legacy_serviceaccount_token_cleaner`` (unused auto-generated tokens labelled, then deleted).
Token signing and the names involved are in :mod:`pykcm.api.serviceaccount`.
"""

from pykcm.controllers.serviceaccount.legacy_serviceaccount_token_cleaner import (
    LegacySATokenCleaner,
)
from pykcm.controllers.serviceaccount.serviceaccounts_controller import (
    DEFAULT_SERVICE_ACCOUNTS,
    ServiceAccountsController,
)
from pykcm.controllers.serviceaccount.tokens_controller import TokensController

__all__ = [
    "DEFAULT_SERVICE_ACCOUNTS",
    "LegacySATokenCleaner",
    "ServiceAccountsController",
    "TokensController",
]
