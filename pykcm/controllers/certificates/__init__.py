"""The certificate controllers of kube-controller-manager (pkg/controller/certificates)."""

from pykcm.controllers.certificates.approver import CSRApprovingController
from pykcm.controllers.certificates.cleaner import CSRCleanerController
from pykcm.controllers.certificates.signer import CSRSigningController, sign_request

__all__ = ["CSRApprovingController", "CSRCleanerController", "CSRSigningController",
           "sign_request"]
