"""The certificate controllers of kube-controller-manager (pkg/controller/certificates)."""

from pykcm.controllers.certificates.signer import CSRSigningController, sign_request

__all__ = ["CSRSigningController", "sign_request"]
