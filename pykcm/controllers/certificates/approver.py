"""The CSR approving controller: kubelets' client certificate requests are approved when
the requester may create them, by SubjectAccessReview.

kube-controller-manager v1.36 ``pkg/controller/certificates/approver``
(``certificatesigningrequest-approving-controller``).

Data flow: CSR informer ─► queue ─► sync: skipped when issued, approved or denied; a
request for kubernetes.io/kube-apiserver-client-kubelet that is a kubelet client request
(organisation system:nodes, common name system:node:..., no SANs, usages digital signature
+ client auth, with or without key encipherment) is checked as "selfnodeclient" when the
requester's username is the request's common name, then as "nodeclient": a
SubjectAccessReview of the requester (username, uid, groups, extra from the CSR's spec)
for ``create certificatesigningrequests/<that>`` in certificates.k8s.io; the first allowed
one appends Approved (reason AutoApproved, upstream's message) through /approval. Neither
allowed: retried later, as upstream's IgnorableError.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Any, Final

from cryptography import x509
from cryptography.x509.oid import NameOID

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controllers.certificates.signer import kubelet_client_error
from pykcm.informers.generic import GenericInformer

__all__ = ["CSRApprovingController", "NotApprovedError"]

log = logging.getLogger("pykcm.controllers.certificates.approver")

_KUBELET_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client-kubelet"
_RECOGNIZERS: Final = (
    ("selfnodeclient", True,
     "Auto approving self kubelet client certificate after SubjectAccessReview."),
    ("nodeclient", False, "Auto approving kubelet client certificate after SubjectAccessReview."),
)


class NotApprovedError(Exception):
    """Recognized, but no SubjectAccessReview allowed it (requeued with backoff)."""


class CSRApprovingController(ControllerHost):
    default_workers = 5

    def __init__(self, *, csr_informer: GenericInformer, client: Client,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "certificatesigningrequest-approving"
        self.client = client
        self.controller = Controller("csrapproving", self.sync, clock=self._time)
        self.queue = self.controller.queue
        inf = csr_informer.informer
        self.indexer = inf.get_indexer()
        reg = inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self._enqueue, update_func=lambda old, new: self._enqueue(new),
            delete_func=lambda obj: None))
        self.controller.add_synced(reg.has_synced)

    def _enqueue(self, obj: Any) -> None:
        name = ((obj or {}).get("metadata") or {}).get("name")
        if name:
            self.queue.add(name)

    async def _allowed(self, spec: Mapping[str, Any], subresource: str) -> bool:
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": spec.get("username", ""), "uid": spec.get("uid", ""),
                        "groups": spec.get("groups") or [], "extra": spec.get("extra") or {},
                        "resourceAttributes": {
                            "group": "certificates.k8s.io", "version": "*",
                            "resource": "certificatesigningrequests",
                            "subresource": subresource, "verb": "create"}}}
        answer = await self.client.create("subjectaccessreviews", sar)
        return bool((answer.get("status") or {}).get("allowed"))

    async def sync(self, key: str) -> None:
        csr = self.indexer.get_by_key(key)
        if csr is None:
            return
        status = csr.get("status") or {}
        if status.get("certificate") or any(
                c.get("type") in ("Approved", "Denied") for c in status.get("conditions") or []):
            return
        spec = csr.get("spec") or {}
        if spec.get("signerName") != _KUBELET_CLIENT_SIGNER:
            return
        request = x509.load_pem_x509_csr(base64.b64decode(spec.get("request") or ""))
        usages = [str(u) for u in spec.get("usages") or []]
        if kubelet_client_error(request, usages) is not None:
            return
        cns = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        common_name = str(cns[0].value) if cns else ""
        tried = []
        for subresource, self_only, message in _RECOGNIZERS:
            if self_only and spec.get("username") != common_name:
                continue
            tried.append(subresource)
            if await self._allowed(spec, subresource):
                conditions = [*(status.get("conditions") or []), {
                    "type": "Approved", "status": "True", "reason": "AutoApproved",
                    "message": message}]
                await self.client.update(
                    "certificatesigningrequests",
                    {**csr, "status": {**status, "conditions": conditions}},
                    subresource="approval")
                return
        raise NotApprovedError(f"recognized csr {key!r} as {tried} but subject access review "
                               "was not approved")
