"""The defaults of a DeviceClaim's requests, shared by ResourceClaims and
ResourceClaimTemplates (k8s.io/kubernetes ``pkg/apis/resource/v1/defaults.go``):
an exact request or a first-available subrequest allocates ``ExactCount`` by default, and
then ``count`` 1.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry import printers as pr

__all__ = ["default_device_claim"]


def _default_exact(req: Any) -> None:
    if not isinstance(req, dict):
        return
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1


def default_device_claim(devices: Any) -> None:
    """SetDefaults of every request of a ``spec.devices``."""
    for req in pr.as_list(pr.as_dict(devices).get("requests")):
        if not isinstance(req, dict):
            continue
        if "exactly" in req:
            _default_exact(req["exactly"])
        for sub in pr.as_list(req.get("firstAvailable")):
            _default_exact(sub)
