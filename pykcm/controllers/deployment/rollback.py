"""Rollback (upstream deployment/rollback.go).

apps/v1 has no ``spec.rollbackTo``: ``kubectl rollout undo`` works on the
client side, reading the ReplicaSets' ``deployment.kubernetes.io/revision``
annotations, picking the previous (or ``--to-revision``) one and patching
the Deployment's template with that ReplicaSet's. The controller then finds
that ReplicaSet as the new one and gives it the next revision, keeping its
old revisions in ``revision-history`` (sync.get_new_replica_set): that is
all ``rollout undo`` and ``rollout history`` need.

The old server-side rollback survives in apps/v1 as the annotation
``deprecated.deployment.rollback.to`` (what a v1beta1 ``rollbackTo``
converts to), and this module honours it as upstream does: copy the
template (and annotations) of the ReplicaSet of that revision (0: the one
before the current) into the Deployment and drop the annotation, with a
DeploymentRollback event, or a warning when the revision is missing or
the template is already the current one.

Data flow::

    annotation rollback.to=N ─► ReplicaSet with revision N ─► template + annotations
                                                               │ PUT deployment
                                   (next sync: that ReplicaSet is the new one, revision max+1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykcm.controllers.deployment import util
from pykcm.controllers.deployment.sync import get_all_replica_sets_and_sync_revision
from pykcm.controllers.deployment.util import Obj

if TYPE_CHECKING:
    from pykcm.controllers.deployment.deployment_controller import DeploymentController

__all__ = ["get_rollback_to", "rollback", "rollback_to_template", "set_rollback_to"]


def get_rollback_to(d: Obj) -> int | None:
    """The revision the deprecated rollback annotation asks for, or None (absent or invalid)."""
    v = ((d.get("metadata") or {}).get("annotations") or {}).get(util.DEPRECATED_ROLLBACK_TO)
    if not v:
        return None
    try:
        return int(v)
    except ValueError:
        return None  # invalid: ignored


def set_rollback_to(d: dict[str, Any], revision: int | None) -> None:
    """Set (or with None remove) the deprecated rollback annotation on ``d``."""
    ann = d.setdefault("metadata", {}).setdefault("annotations", {})
    if revision is None:
        ann.pop(util.DEPRECATED_ROLLBACK_TO, None)
    else:
        ann[util.DEPRECATED_ROLLBACK_TO] = str(revision)


async def rollback(dc: DeploymentController, d: dict[str, Any], rs_list: list[Obj]) -> None:
    """Roll ``d`` back to the revision its rollback annotation names."""
    new_rs, all_old = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
    all_rss: list[Obj] = [rs for rs in [*all_old, new_rs] if rs is not None]
    to = get_rollback_to(d) or 0
    if to == 0:
        # 0 means the revision before the current one.
        to = util.last_revision(all_rss)
        if to == 0:
            dc.event_recorder.event(d, "Warning", util.ROLLBACK_REVISION_NOT_FOUND,
                                    "Unable to find last revision.")
            await update_deployment_and_clear_rollback_to(dc, d)
            return
    for rs in all_rss:
        try:
            v = util.revision(rs)
        except ValueError:
            continue
        if v == to:
            # The revision number moves on at the next sync, when this
            # ReplicaSet is found to be the new one.
            if await rollback_to_template(dc, d, rs):
                dc.event_recorder.event(d, "Normal", util.ROLLBACK_DONE,
                                        f'Rolled back deployment "{d["metadata"]["name"]}" '
                                        f"to revision {to}")
            return
    dc.event_recorder.event(d, "Warning", util.ROLLBACK_REVISION_NOT_FOUND,
                            "Unable to find the revision to rollback to.")
    await update_deployment_and_clear_rollback_to(dc, d)


async def rollback_to_template(dc: DeploymentController, d: dict[str, Any], rs: Obj) -> bool:
    """Copy ``rs``'s template and annotations into ``d`` and write it; whether it changed.

    The ReplicaSet's annotations go back too: otherwise the Deployment's
    current ones (the current new ReplicaSet's) would be copied onto it.
    """
    performed = False
    if not util.equal_ignore_hash(d["spec"].get("template"), (rs.get("spec") or {}).get("template")):
        util.set_from_replica_set_template(d, (rs.get("spec") or {}).get("template") or {})
        util.set_deployment_annotations_to(d, rs)
        performed = True
    else:
        dc.event_recorder.event(d, "Warning", util.ROLLBACK_TEMPLATE_UNCHANGED,
                                "The rollback revision contains the same template as current "
                                f'deployment "{d["metadata"]["name"]}"')
    await update_deployment_and_clear_rollback_to(dc, d)
    return performed


async def update_deployment_and_clear_rollback_to(dc: DeploymentController,
                                                  d: dict[str, Any]) -> None:
    """Drop the rollback annotation and PUT the Deployment."""
    set_rollback_to(d, None)
    await dc.write_deployment(d)
