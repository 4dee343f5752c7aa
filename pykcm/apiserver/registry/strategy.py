"""The Strategy: every rule of one resource the generic store asks about (upstream's
``rest.RESTCreateStrategy``, ``RESTUpdateStrategy``, ``RESTDeleteStrategy`` and
``TableConvertor`` of ``pkg/registry/<group>/<resource>/strategy.go``, as one object).

Role
----
``registry/generic/store`` (the REST pipeline) runs the same steps for every
resource; at each step it asks the resource's strategy what is special about
its kind::

    create: prepare_for_create ─► default(create=True) ─► admission ─► validate_create
            ─► warnings_on_create
    update: default(create=False) ─► admission ─► prepare_for_update (main resource)
            | prepare_for_status_update (/status) | prepare_for_subresource_update
            ─► validate_update | validate_status_update ─► warnings_on_update
    delete: grace_period (graceful deletion; None: deleted at once)
    get/list as a Table: printer

The base class is also the default strategy: a kind with no module of its own
gets it (metadata validation, the generic status/spec split and generation
rules driven by its ``ResourceInfo``, the Name/Created At printer). A resource
with rules of its own subclasses it in ``registry/<group>/<resource>.py`` and
registers the subclass with :func:`pykcm.apiserver.registry.lookup.register`.

A strategy is bound to the ``ResourceInfo`` it serves (``self.info``): the
``status_subresource`` and ``track_generation`` flags of ``pykcm.api.resources``
drive the generic split and generation rules.

Deliberate deviation: upstream has separate status strategy objects
(``deploymentStatusStrategy``); here one object per resource carries both, the
status hooks named ``*_status_*``.

Time. Strategies are shared by every server of the process, so the few hooks that
stamp a time (a PersistentVolume's phase transition, a CSR's condition times) read it
through :func:`now_rfc3339`: the clock of the server whose ``RESTStorage.strategy()``
handed the strategy out in the running task (``pykcm.apiserver.server_clock``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pykcm.api.resources import ResourceInfo
from pykcm.api.timestamps import format_time
from pykcm.api.validation import Cause, validate_object_meta, validate_object_meta_update
from pykcm.apiserver.registry.printers import DEFAULT_PRINTER, Printer

Obj = dict[str, Any]

# Metadata the system owns: a write can never change it (BeforeUpdate).
SYSTEM_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")




def rfc3339(ts: float) -> str:
    return format_time(ts)


def keep_field(meta: Obj, old_meta: dict[str, Any], key: str) -> None:
    """meta[key] as in old_meta (absent if it was absent)."""
    if key in old_meta:
        meta[key] = old_meta[key]
    else:
        meta.pop(key, None)


class Strategy:
    """The rules of one resource; the base class is the default strategy (see module doc)."""

    # The (group, kind) a subclass serves; register() files it under them.
    group: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    # The kind's table printer (kubectl get's columns).
    printer: Printer = DEFAULT_PRINTER
    # Whether a create keeps the status the client sent (kinds whose creator reports it:
    # Node, Service). Other kinds with a status subresource start with none.
    create_keeps_status: ClassVar[bool] = False
    # Metadata fields a /status write cannot change beyond the system ones
    # (Deployment: labels; Pod: ownerReferences).
    status_keeps_metadata: ClassVar[tuple[str, ...]] = ()
    # Whether a /status write keeps all of the stored metadata (Namespace).
    status_keeps_all_metadata: ClassVar[bool] = False
    # Whether warnings_on_update looks at the old object (the handlers then read it first).
    has_update_warnings: ClassVar[bool] = False

    def __init__(self, info: ResourceInfo) -> None:
        self.info = info

    # -- defaulting -------------------------------------------------------------------

    def default(self, obj: Obj, *, create: bool) -> None:
        """The kind's defaulting (SetDefaults_* as the body is decoded); ``create`` adds the
        create-only steps of PrepareForCreate that depend on defaulted fields."""

    # -- create ---------------------------------------------------------------------

    def prepare_for_create(self, obj: Obj) -> None:
        """PrepareForCreate: the metadata the system owns reset, generation 1, the status
        the server's (dropped unless the kind keeps it); the kind's own steps after."""
        meta = obj["metadata"]
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        meta.pop("resourceVersion", None)
        meta.pop("selfLink", None)
        if self.info.track_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if self.info.status_subresource and not self.create_keeps_status:
            # Workload status is the controllers' to write, never the creator's.
            obj.pop("status", None)

    def validate_create(self, obj: Obj) -> list[Cause]:
        """Validate (after defaulting and admission): the field errors of a 422."""
        return validate_object_meta(obj.get("metadata"), namespaced=self.info.namespaced)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return []

    # -- update of the main resource ------------------------------------------------

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """PrepareForUpdate of the main resource, in place: system metadata and (with a
        status subresource) the status carried over, the generation moved when
        :meth:`generation_changed`."""
        old_meta = old["metadata"]
        meta = new["metadata"]
        for k in SYSTEM_METADATA:
            keep_field(meta, old_meta, k)
        meta.pop("selfLink", None)
        if self.info.status_subresource:
            self.carry_status(new, old)
        self.prepare_kind_for_update(new, old)
        if self.info.track_generation:
            gen = old_meta.get("generation", 1)
            meta["generation"] = gen + 1 if self.generation_changed(new, old) else gen
        else:
            keep_field(meta, old_meta, "generation")
        self.finish_update(new, old)

    def carry_status(self, new: Obj, old: Obj) -> None:
        """With a status subresource, a write of the main resource keeps the stored status."""
        keep_field(new, old, "status")

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        """The kind's own PrepareForUpdate steps, before the generation is decided."""

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        """Whether an update is a new generation (for kinds that track one): the spec moved."""
        return new.get("spec") != old.get("spec")

    def finish_update(self, new: Obj, old: Obj) -> None:
        """The kind's steps after the generation is decided (upstream's order)."""

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        """ValidateUpdate of the main resource: the new object and the immutability rules."""
        return validate_object_meta_update(new.get("metadata"), old.get("metadata"))

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return []

    # -- /status and other subresources ------------------------------------------------

    def prepare_for_status_update(self, new: Obj, old: Obj) -> Obj:
        """The object a /status write stores: the stored one with the request's status (and
        the metadata the status strategy lets through). Returns a new top-level dict."""
        result = dict(old)
        if self.status_keeps_all_metadata:
            result["metadata"] = dict(old["metadata"])
        else:
            # Built-in status strategies reset the spec, not the metadata: the
            # Deployment controller writes its revision annotation with UpdateStatus,
            # and that must not bump the generation.
            result["metadata"] = self.status_write_metadata(new, old["metadata"])
        keep_field(result, new, "status")
        return result

    def status_write_metadata(self, new: Obj, old_meta: dict[str, Any]) -> Obj:
        """The metadata a status-style write stores: the request's, but for the system
        fields, the generation and the kind's :attr:`status_keeps_metadata`."""
        meta = dict(new.get("metadata") or old_meta)
        for k in (*SYSTEM_METADATA, "generation", *self.status_keeps_metadata):
            keep_field(meta, old_meta, k)
        meta.pop("selfLink", None)
        return meta

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        """Validation of an update through /status."""
        return validate_object_meta_update(new.get("metadata"), old.get("metadata"))

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> Obj:
        """A write through another subresource the kind serves (namespaces/finalize)."""
        raise NotImplementedError(f"{self.info.kind} has no {subresource} write")

    # -- delete -----------------------------------------------------------------------

    def grace_period(self, obj: Obj, requested: int | None) -> int | None:
        """CheckGracefulDelete: the grace period of a graceful deletion, or None when the
        kind is deleted at once (the default)."""
        return None
