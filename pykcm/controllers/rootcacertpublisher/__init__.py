"""The root CA certificate publisher (kube-controller-manager
pkg/controller/certificates/rootcacertpublisher): ``kube-root-ca.crt`` in every namespace."""

from pykcm.controllers.rootcacertpublisher.publisher import (
    DESCRIPTION,
    DESCRIPTION_ANNOTATION,
    ROOT_CA_CONFIGMAP,
    Publisher,
)

__all__ = ["DESCRIPTION", "DESCRIPTION_ANNOTATION", "ROOT_CA_CONFIGMAP", "Publisher"]
