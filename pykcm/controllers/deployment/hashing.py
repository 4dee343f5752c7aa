"""The pod-template-hash: the name suffix and label of a Deployment's ReplicaSets.

Upstream's ``controller.ComputeHash``, implemented once for every controller
in :mod:`pykcm.api.deep_hash` (go-spew's print of the Go ``v1.PodTemplateSpec``
into FNV-32a, ``collisionCount`` mixed in, the sum's decimal digits through
``rand.SafeEncodeString``): a Deployment gets the very ReplicaSet names and
``pod-template-hash`` labels kube-controller-manager would give it.

Data flow::

    deployment.spec.template (wire dict) ──deep_hash.compute_hash──► "5d8c7b9f6"
                              collisionCount ──┘                         │
                                   RS name <deployment>-<hash>, label pod-template-hash

ReplicaSets named by an older pykcm (which hashed canonical JSON instead) stay
the Deployment's: which ReplicaSet is the new one is decided by comparing
templates (util.find_new_replica_set), never by the hash.
"""

from __future__ import annotations

from pykcm.api.deep_hash import SAFE_ALPHANUMS, compute_hash, fnv32a, safe_encode_string

__all__ = ["SAFE_ALPHANUMS", "compute_hash", "fnv32a", "safe_encode_string"]
