"""REST storage: the generic create/update/patch/delete/list pipeline (upstream's registry Store).

handlers.py decodes a request and calls one method here; this module runs
kube-apiserver's sequence for it against the `Store`:

    create: namespace checks → system metadata → generateName → defaults →
            validation → write (201)
    update/patch: read current → (patch) → preconditions → strategy
            (status/spec split, generation) → defaults → validation → no-op
            check → write, or delete when the last finalizer of a deleting
            object goes
    delete: preconditions → propagation finalizers → graceful period →
            deletionTimestamp, or removal

Everything between reading the current object and `Store.write` is
synchronous, so two concurrent writers can never both succeed against the same
revision.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import builtins
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from pykcm.api import fields as _fields
from pykcm.api import labels as _labels
from pykcm.api.patch import (
    PatchConflictError,
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    schema_ref_for,
)
from pykcm.api.patch._errors import go_repr
from pykcm.api.randomness import RandomSource, random_of
from pykcm.api.resources import ResourceInfo, ResourceRegistry
from pykcm.api.validation import Cause, go_quote
from pykcm.apiserver import errors
from pykcm.apiserver.admission import default_ingress_class
from pykcm.apiserver.admission import mutating as mutating_admission
from pykcm.apiserver.admission import priority as priority_admission
from pykcm.apiserver.admission import storage as storage_admission
from pykcm.apiserver.admission.validating import QuotaPlugins
from pykcm.apiserver.controlplane.service_allocator import ServiceAllocator
from pykcm.apiserver.crd import definitions as crd_definitions
from pykcm.apiserver.crd.custom_resources import (
    CLEANUP_FINALIZER,
    CRD_GROUP,
    CustomResources,
)
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager.apply_options import check_applied_name, validate_patch_options
from pykcm.apiserver.fieldmanager.factory import field_manager_for
from pykcm.apiserver.fieldmanager.field_manager import FieldManager
from pykcm.apiserver.rbac.escalation import CURRENT as REQUEST_AUTH
from pykcm.apiserver.registry import selectable_fields as _selectable
from pykcm.apiserver.registry.apiextensions.customresource import CustomResourceStrategy
from pykcm.apiserver.registry.lookup import strategy_for
from pykcm.apiserver.registry.scheduling.priorityclass import system_class_delete_error
from pykcm.apiserver.registry.strategy import Strategy, rfc3339
from pykcm.apiserver.serializer import go_json
from pykcm.apiserver.serializer.go_types import (
    GoDecodeError,
    check_struct,
    drop_go_empty,
    go_encoding_order,
    kind_struct,
    zero_nulls,
)
from pykcm.apiserver.server_clock import CLOCK as SERVER_CLOCK
from pykcm.apiserver.storage import Entry, ResourceStore, Store, object_key, resource_id

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
LEGACY_TOKEN_TRACKING = "kube-apiserver-legacy-service-account-token-tracking"
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}

# The verbs a resource's POST/PUT/PATCH/DELETE may create on update, as upstream's
# AllowCreateOnUpdate.
_CREATE_ON_UPDATE = frozenset({"Event", "Endpoints", "Lease", "RuntimeClass", "Service"})


@dataclass(slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False


@dataclass(slots=True)
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    resource_version: str | None = None
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    send_initial_events: bool | None = None
    allow_watch_bookmarks: bool = False
    timeout_seconds: int | None = None


Filter = Callable[[str, Entry], bool]
CreateValidator = Callable[[dict[str, Any]], list[Cause]]
UpdateValidator = Callable[[dict[str, Any], dict[str, Any]], list[Cause]]


def _as_status_causes(causes: Iterable[Cause]) -> list[dict[str, Any]]:
    return [c.to_status_cause() for c in causes]


def _strip_for_compare(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without the fields a no-op write may differ in (a write that changes
    only managedFields, an apply taking over ownership, is a write)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    out = dict(obj)
    out["metadata"] = meta
    return out


def _rv_of(entry: Entry | None) -> int:
    return entry.rv if entry else 0


class RESTStorage:
    def __init__(self, store: Store, registry: ResourceRegistry, *,
                 rng: RandomSource | None = None) -> None:
        self.store = store
        # the server's one clock, held by its store: every time this pipeline writes
        self.clock = store.clock
        # the server's random source (APIServer(rng=)): UIDs, generated names and the
        # admission plugins' draws, each on its own stream (seeded runs reproduce them),
        # and within it one stream per requesting user (see _draws)
        self.rng = random_of(rng)
        self._uids = self.rng.stream("uid")
        self._names = self.rng.stream("generateName")
        self._sa_admission = self.rng.stream("admission/ServiceAccount")
        self.registry = registry
        ns_info = registry.get("", "v1", "namespaces")
        assert ns_info is not None
        self.ns_info = ns_info
        self.services = ServiceAllocator()
        self.custom = CustomResources(registry)
        self._tasks: set[asyncio.Task[None]] = set()
        self.quota_plugins = QuotaPlugins(self._core_store, self._write_quota_status)

    def rs(self, info: ResourceInfo) -> ResourceStore:
        return self.store.resource(resource_id(info.group, info.plural))

    def _core_store(self, plural: str) -> ResourceStore | None:
        info = self.registry.get("", "v1", plural)
        return self.rs(info) if info is not None else None

    async def _write_quota_status(self, quota: dict[str, Any]) -> None:
        """Quota admission's charge: a /status update conditional on its resourceVersion."""
        info = self.registry.get("", "v1", "resourcequotas")
        assert info is not None
        meta = quota["metadata"]
        await self.update(info, meta["namespace"], meta["name"], quota, subresource="status")

    async def close(self) -> None:
        """Stop background work (CRD cleanups resume at the next start)."""
        for t in builtins.list(self._tasks):
            t.cancel()
        for t in builtins.list(self._tasks):
            # The task was cancelled just above; its outcome no longer matters.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    # -- bootstrap -----------------------------------------------------------

    async def ensure_system_namespaces(self) -> None:
        crd_info = self.registry.get(CRD_GROUP, "v1", "customresourcedefinitions")
        if crd_info is not None:
            # Serve what the stored CRDs declare; resume unfinished CRD deletions.
            for e in list(self.rs(crd_info).items.values()):
                crd = e.obj
                if _established(crd):
                    self.custom.sync_crd(crd)
                if crd["metadata"].get("deletionTimestamp"):
                    self._start_crd_cleanup(crd["metadata"]["name"])
        rs = self.rs(self.ns_info)
        for name in SYSTEM_NAMESPACES:
            if rs.current(name) is None:
                await self.create(self.ns_info, "", {"metadata": {"name": name}})
        # The API server's own Service comes once its port is known
        # (kubernetes_service.py).
        cm_info = self.registry.get("", "v1", "configmaps")
        if cm_info is not None and self.rs(cm_info).current(
                "kube-system/" + LEGACY_TOKEN_TRACKING) is None:
            # kube-apiserver's legacytokentracking controller: the day it began tracking
            # legacy service-account tokens, read by kube-controller-manager's
            # legacy-serviceaccount-token-cleaner (which logs an error without it).
            await self.create(cm_info, "kube-system", {
                "metadata": {"name": LEGACY_TOKEN_TRACKING},
                "data": {"since": time.strftime("%Y-%m-%d", time.gmtime(self.clock.now()))}})

    # -- reads ----------------------------------------------------------------

    def get(self, info: ResourceInfo, namespace: str, name: str) -> Entry:
        entry = self.rs(info).get(object_key(namespace if info.namespaced else "", name))
        if entry is None:
            raise errors.not_found(info.plural, info.group, name)
        return entry

    def build_filter(self, info: ResourceInfo, namespace: str, opts: ListOptions,
                     name: str = "") -> Filter | None:
        """The selector predicate for LIST/WATCH; None when everything matches."""
        try:
            lsel = _labels.parse_label_selector(opts.label_selector) if opts.label_selector else None
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from None
        fsel = None
        if opts.field_selector or name:
            fs = opts.field_selector
            if name:
                fs = f"metadata.name={name}" + ("," + fs if fs else "")
            try:
                fsel = _fields.parse_field_selector(fs)
            except ValueError as exc:
                raise errors.bad_request(str(exc)) from None
            crv_sel = self.custom.get(info)
            if crv_sel is not None:
                allowed = crv_sel.selectable()
                for f in sorted(fsel.fields()):
                    if f not in allowed:
                        raise errors.bad_request(f"field label not supported: {f}")
            elif info.group in ("", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io",
                                "networking.k8s.io", "node.k8s.io", "policy",
                                "scheduling.k8s.io", "storage.k8s.io"):
                msg = _selectable.check_field_selector(info.kind, fsel)
                if msg:
                    raise errors.bad_request(msg)
                # Legacy aliases (spec.host → spec.nodeName) as upstream converts them.
                fsel = _selectable.normalize_field_selector(info.kind, fsel)
        if lsel is not None and lsel.empty:
            lsel = None
        if fsel is not None and fsel.empty:
            fsel = None
        ns_prefix = namespace + "/" if (namespace and info.namespaced) else ""
        if lsel is None and fsel is None and not ns_prefix:
            return None
        kind = info.kind
        crv_f = self.custom.get(info)

        def extract(obj: dict[str, Any]) -> dict[str, str]:
            if crv_f is not None:
                return crv_f.field_set(obj)
            return _selectable.field_set(kind, obj)

        def flt(key: str, entry: Entry) -> bool:
            if ns_prefix and not key.startswith(ns_prefix):
                return False
            if lsel is not None and not lsel.matches(entry.labels):
                return False
            return fsel is None or fsel.matches(entry.fields(extract))

        return flt

    def list(self, info: ResourceInfo, namespace: str, opts: ListOptions) -> bytes:
        """The list response body, assembled from the stored bytes."""
        meta, raws = self.list_raw(info, namespace, opts)
        custom = self.custom.get(info) is not None
        if custom:
            meta.setdefault("continue", "")  # an unstructured list writes it even when empty
        return list_body(info, meta, raws, custom=custom)

    def list_raw(self, info: ResourceInfo, namespace: str,
                 opts: ListOptions) -> tuple[dict[str, Any], builtins.list[bytes]]:
        """(list metadata, the items' bytes) for a LIST with its selectors and paging."""
        rs = self.rs(info)
        ns = namespace if info.namespaced else ""
        # Namespace scoping is done by key range below: the filter holds only the selectors
        # (and still validates them: a bad selector is a 400 even on an empty list).
        flt_sel = self.build_filter(info, "", opts)
        start_key = ""
        snap_rv: int | None = None
        rv = opts.resource_version
        match = opts.resource_version_match
        if opts.continue_token:
            snap_rv, start_key = decode_continue(opts.continue_token)
            if rv and rv != "0":
                raise errors.bad_request(
                    "specifying resource version is not allowed when using continue")
        elif rv not in (None, "", "0"):
            want = parse_rv(rv)
            if match == "Exact":
                snap_rv = want
                if want > self.store.rv:
                    raise errors.too_large_resource_version(want, self.store.rv)
            # NotOlderThan (or unset match): the latest state is not older than want.
        if snap_rv is None or snap_rv >= self.store.rv:
            items, keys = rs.items, rs.sorted_keys()
            list_rv = self.store.rv
        else:
            try:
                items, keys = rs.snapshot(snap_rv)
            except StatusError as exc:
                if opts.continue_token:
                    raise errors.expired(
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue "
                        "parameter.") from None
                raise errors.too_old_resource_version(snap_rv, rs.oldest_rv) from exc
            list_rv = snap_rv
        scoped = rs.keys_in(keys, ns)
        if start_key:
            scoped_list = scoped if isinstance(scoped, list) else list(scoped)
            scoped = scoped_list[bisect.bisect_left(scoped_list, start_key):]
        # resourceVersion=0 is served from kube-apiserver's watch cache, which does not
        # page: the whole list in one answer, no continue token
        limit = 0 if rv == "0" and not opts.continue_token else max(0, opts.limit)
        out: list[bytes] = []
        next_key = ""
        remaining: int | None = None
        if flt_sel is None:
            seq = scoped if isinstance(scoped, list) else list(scoped)
            if limit and len(seq) > limit:
                page = seq[:limit]
                next_key = seq[limit]
                remaining = len(seq) - limit
            else:
                page = seq
            out = [items[k].raw for k in page]
        else:
            for k in scoped:
                e = items[k]
                if flt_sel(k, e):
                    if limit and len(out) >= limit:
                        next_key = k
                        break
                    out.append(e.raw)
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if next_key:
            meta["continue"] = encode_continue(list_rv, next_key)
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        return meta, out

    # -- create ------------------------------------------------------------------

    def strategy(self, info: ResourceInfo) -> Strategy:
        """The resource's strategy: a custom resource's from its CRD version, else its kind's."""
        crv = self.custom.get(info)
        # the strategy's time stamps (now_rfc3339) read this server's clock in this task
        SERVER_CLOCK.set(self.clock)
        return CustomResourceStrategy(crv) if crv is not None else strategy_for(info)


    def _check_namespace_for_create(self, info: ResourceInfo, namespace: str, name: str) -> None:
        if not info.namespaced:
            return
        ns_entry = self.rs(self.ns_info).current(namespace)
        if ns_entry is None:
            raise errors.not_found("namespaces", "", namespace)
        if b'"deletionTimestamp"' in ns_entry.raw and _terminating(ns_entry.obj):
            err = errors.forbidden(
                info.plural, info.group, name,
                f"unable to create new content in namespace {namespace} because it is "
                "being terminated",
            )
            assert err.details is not None
            err.details["causes"] = [{
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }]
            raise err

    async def create(self, info: ResourceInfo, namespace: str, obj: dict[str, Any],
                     dry_run: bool = False, validate: CreateValidator | None = None,
                     manager: str | None = None) -> Entry:
        """`validate` replaces the kind's validation (a view with its own rules: events.k8s.io
        Events); `manager` (the field manager or user agent) tracks the write in
        managedFields when the object carries them."""
        meta = _check_body_meta(info, obj, namespace, self.registry,
                                custom=self.custom.get(info) is not None)
        generate = not meta.get("name") and bool(meta.get("generateName"))
        if not meta.get("name") and not generate:
            if info.kind == "Service" and not info.group:
                self._nameless_service(obj)
            raise errors.invalid(info.kind, info.group, "", [{
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name",
            }])
        # admission runs before the name is generated: its errors name the generateName
        requested_name = str(meta.get("name") or meta.get("generateName") or "")
        st = self.strategy(info)
        st.prepare_for_create(obj)
        uids, names = self._draws()
        meta["uid"] = uids.uuid4()
        meta["creationTimestamp"] = rfc3339(self.clock.now())
        if generate:
            meta["name"] = _truncate_generate_name(meta["generateName"]) + names.name_suffix()
        crv = self.custom.get(info)
        st.default(obj, create=True)
        if manager is not None:
            self._track_update(info, "", None, obj, manager)
        if info.kind == "Pod" and not info.group:
            # NamespaceLifecycle, then ServiceAccount (whose lookup may wait)
            self._check_namespace_for_create(info, namespace, requested_name)
            await mutating_admission.service_account(
                obj, namespace, requested_name, self._service_account_lookup(namespace),
                rng=self._sa_admission.stream(_requester()))
        mutating_admission.admit(info, obj, None, name=requested_name)
        self._priority_admission(info, obj, None, "", requested_name)
        if info.kind == "Ingress" and info.group == "networking.k8s.io":
            self._default_ingress_class(obj)
        self.quota_plugins.mutate(info, namespace, obj)
        self._storage_admission(info, obj, None)
        causes = _as_status_causes(validate(obj) if validate is not None
                                   else st.validate_create(obj))
        if causes:
            raise errors.invalid(info.kind, info.group, meta.get("name", ""), causes)
        if crv is None:
            _encode_as_go(info, obj)
        is_crd = info.group == CRD_GROUP and info.kind == "CustomResourceDefinition"
        if is_crd:
            # What the create stores: no names accepted, no conditions yet (the
            # apiextensions controllers' second write below accepts and establishes).
            storage = [v.get("name") for v in (obj.get("spec") or {}).get("versions") or []
                       if isinstance(v, dict) and v.get("storage")]
            obj["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
                             "storedVersions": storage[:1]}
        rs = self.rs(info)
        for attempt in range(8):
            name = meta["name"]
            self._check_namespace_for_create(info, namespace, name)
            key = object_key(namespace if info.namespaced else "", name)
            if rs.current(key) is None:
                break
            if not generate or attempt == 7:
                raise errors.already_exists(info.plural, info.group, name)
            meta["name"] = _truncate_generate_name(meta["generateName"]) + names.name_suffix()
        await self.quota_plugins.validate(info, namespace, obj, None, dry_run=dry_run)
        if info.kind == "Service" and not info.group:
            self._allocate_service(info, obj)
            if dry_run:  # a dry run shows the addresses it would get, and keeps none
                self.services.release(obj)
                return Entry(obj, orjson.dumps(obj), 0)
            try:
                return await self.store.write(rs, key, obj, None)
            except BaseException:
                self.services.release(obj)
                raise
        if dry_run:
            return Entry(obj, orjson.dumps(obj), 0)
        entry = await self.store.write(rs, key, obj, None)
        if is_crd:
            # the controllers' write, at once: names accepted, established, served
            accepted = entry.copy()
            accepted["status"] = self._crd_status(accepted, None)
            accepted["metadata"]["resourceVersion"] = str(entry.rv)
            done = await self.store.write(rs, key, accepted, entry)
            self._crd_changed(done.obj)
        return entry

    def _default_ingress_class(self, obj: dict[str, Any]) -> None:
        """Admission plugin DefaultIngressClass (admission/default_ingress_class.py) over the
        committed IngressClasses."""
        ic = self.registry.get("networking.k8s.io", "v1", "ingressclasses")
        if ic is not None:
            default_ingress_class.admit(obj, lambda: [e.obj for e in self.rs(ic).items.values()])

    def _priority_admission(self, info: ResourceInfo, obj: dict[str, Any],
                            old: dict[str, Any] | None, subresource: str, name: str) -> None:
        """Admission plugin Priority (admission/priority.py) over the committed
        PriorityClasses: pods' priority, one global default class."""
        pc = self.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
        if subresource or pc is None or info.group not in ("", pc.group):
            return

        def classes() -> list[dict[str, Any]]:
            return [e.obj for e in self.rs(pc).items.values()]

        if info.kind == "Pod" and not info.group:
            priority_admission.admit_pod(obj, old, classes, name)
        elif info.kind == "PriorityClass":
            priority_admission.validate_priority_class(obj, old is None, classes)

    def _storage_admission(self, info: ResourceInfo, obj: dict[str, Any],
                           old: dict[str, Any] | None) -> None:
        """DefaultStorageClass, StorageObjectInUseProtection, PersistentVolumeClaimResize."""
        if info.kind == "VolumeAttributesClass" and info.group == "storage.k8s.io":
            storage_admission.protect_volume_attributes_class(obj, old)
            return
        if info.group or info.kind not in ("PersistentVolume", "PersistentVolumeClaim"):
            return
        sc = self.registry.get("storage.k8s.io", "v1", "storageclasses")

        def lookup(name: str) -> dict[str, Any] | None:
            entry = self.rs(sc).get(object_key("", name)) if sc is not None else None
            return entry.obj if entry is not None else None

        def classes() -> list[dict[str, Any]]:
            return [e.obj for e in self.rs(sc).items.values()] if sc is not None else []

        storage_admission.admit(info, obj, old, lookup, classes)

    def _draws(self) -> tuple[RandomSource, RandomSource]:
        """The UID and generateName streams of this request's user.

        Seeded, each user (each component: every controller has its own with
        --use-service-account-credentials; "" is the server's own writes) draws from its
        own streams, so how one component's creates interleave with another's does not
        change either's UIDs and names. Unseeded: the one source."""
        who = _requester()
        return self._uids.stream(who), self._names.stream(who)

    def _service_account_lookup(self, namespace: str) -> mutating_admission.ServiceAccountLookup:
        """The namespace's committed ServiceAccounts by name (the admission plugin's lister)."""
        info = self.registry.get("", "v1", "serviceaccounts")

        def lookup(name: str) -> dict[str, Any] | None:
            if info is None:
                return None
            entry = self.rs(info).get(object_key(namespace, name))
            return entry.obj if entry is not None else None

        return lookup

    # -- CustomResourceDefinitions ----------------------------------------------

    def _crd_status(self, crd: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Names accepted and established at once, as the apiextensions controllers do."""
        crd_info = self.registry.get(CRD_GROUP, "v1", "customresourcedefinitions")
        others: builtins.list[dict[str, Any]] = []
        if crd_info is not None:
            name = crd["metadata"].get("name")
            others = [e.obj for k, e in self.rs(crd_info).items.items() if k != name]
        status: dict[str, Any] = crd_definitions.crd_status_on_accept(
            crd, other_crds=others, previous_status=(old or {}).get("status") or {})
        return status

    def _crd_changed(self, crd: dict[str, Any]) -> None:
        if _established(crd):
            self.custom.sync_crd(crd)
        else:
            self.custom.remove_crd(crd)

    def _start_crd_cleanup(self, name: str) -> None:
        task = asyncio.get_running_loop().create_task(self._cleanup_crd(name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _cleanup_crd(self, name: str) -> None:
        """The CRD finalizer: delete every custom resource, then let the CRD go."""
        crd_info = self.registry.get(CRD_GROUP, "v1", "customresourcedefinitions")
        assert crd_info is not None
        rs_crd = self.rs(crd_info)
        for attempt in range(50):
            current = rs_crd.current(name)
            if current is None:
                return
            crd = current.obj
            versions = self.custom.versions_of(name)
            try:
                if versions:
                    info = versions[0].info
                    await self.delete_collection(info, "", ListOptions(), DeleteOptions(
                        propagation_policy="Background"))
                    if self.rs(info).items:
                        await self.clock.sleep(0.2)
                        continue
                current = rs_crd.current(name)
                if current is None:
                    return
                new = current.copy()
                fins = [f for f in new["metadata"].get("finalizers") or []
                        if f != CLEANUP_FINALIZER]
                if fins:
                    new["metadata"]["finalizers"] = fins
                else:
                    new["metadata"].pop("finalizers", None)
                if self._should_delete_during_update(crd_info, new, crd):
                    await self._remove(rs_crd, name, current, False, new)
                else:
                    await self.store.write(rs_crd, name, new, current)
                for crv in versions:
                    rid = self.rs(crv.info)
                    for w in list(rid.watchers):
                        w.close()
                self.custom.remove_crd(crd)
                return
            except StatusError:
                await self.clock.sleep(0.2)

    def _service_allocator(self) -> ServiceAllocator:
        alloc = self.services
        if not alloc.loaded:
            rs = self.rs(self.registry.get("", "v1", "services") or self.ns_info)
            alloc.load(e.obj for e in rs.items.values())
        return alloc

    def _update_service_type(self, info: ResourceInfo, name: str, new: dict[str, Any],
                             old: dict[str, Any]) -> None:
        """A type change: node ports come with NodePort/LoadBalancer, and the fields only
        those types need go when they are left as they were (dropTypeDependentFields)."""
        spec, ospec = new.get("spec"), old.get("spec") or {}
        if not isinstance(spec, dict):
            return
        external = ("NodePort", "LoadBalancer")
        ntype, otype = spec.get("type") or "ClusterIP", ospec.get("type") or "ClusterIP"
        if otype in external and ntype not in external:
            old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                         for p in ospec.get("ports") or [] if isinstance(p, dict)}
            for p in spec.get("ports") or []:
                if isinstance(p, dict) and p.get("nodePort") and p["nodePort"] == old_ports.get(
                        (p.get("port"), p.get("protocol", "TCP"))):
                    del p["nodePort"]
            for k in ("externalTrafficPolicy", "healthCheckNodePort"):
                if k in spec and spec[k] == ospec.get(k) and not spec.get("externalIPs"):
                    del spec[k]
            self._service_allocator().release(old)
            self._service_allocator().note(new)
        elif ntype in external:
            if not spec.get("externalTrafficPolicy"):
                spec["externalTrafficPolicy"] = "Cluster"
            causes = self._service_allocator().allocate_node_ports(new)
            if causes:
                raise errors.invalid(info.kind, info.group, name,
                                     [c.to_status_cause() for c in causes])
            self._service_allocator().note(new)

    def _nameless_service(self, obj: dict[str, Any]) -> None:
        """A Service without a name fails where kube-apiserver allocates its address (before
        validation): the IPAddress object it creates for it needs the Service's name."""
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
            return
        ip = spec.get("clusterIP") or self._service_allocator().peek_ip() or ""
        raise errors.invalid("Service", "", "", [{
            "reason": "FieldValueInvalid", "field": "spec.clusterIPs",
            "message": f'Invalid value: [""]: failed to allocate IP: IPAddress.networking.k8s.io '
                       f'"{ip}" is invalid: spec.parentRef.name: Required value'}])

    def _allocate_service(self, info: ResourceInfo, obj: dict[str, Any]) -> None:
        causes = self._service_allocator().allocate(obj)
        if causes:
            raise errors.invalid(info.kind, info.group, obj["metadata"].get("name", ""),
                                 [c.to_status_cause() for c in causes])

    # -- update / patch -------------------------------------------------------

    async def update(self, info: ResourceInfo, namespace: str, name: str, obj: dict[str, Any],
                     subresource: str = "", dry_run: bool = False,
                     validate: UpdateValidator | None = None,
                     create_validate: CreateValidator | None = None,
                     manager: str | None = None) -> tuple[int, Entry]:
        meta = _check_body_meta(info, obj, namespace, self.registry,
                                custom=self.custom.get(info) is not None)
        body_name = meta.get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        meta["name"] = name
        rs = self.rs(info)
        key = object_key(namespace if info.namespaced else "", name)
        current = rs.current(key)
        if current is None:
            if info.kind in _CREATE_ON_UPDATE and not subresource:
                if meta.get("resourceVersion"):
                    raise errors.not_found(info.plural, info.group, name)
                created = await self.create(info, namespace, obj, dry_run, create_validate,
                                            manager=manager)
                return 201, created
            raise errors.not_found(info.plural, info.group, name)
        body_rv = meta.get("resourceVersion")
        if body_rv:
            if parse_body_rv(body_rv) != current.rv:
                raise errors.conflict(info.plural, info.group, name, errors.OPTIMISTIC_LOCK_MSG)
        elif info.require_resource_version_on_update:
            # Upstream names the resource (not the kind) in this one message.
            raise errors.invalid(info.plural, info.group, name, [{
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0: must be specified for an update",
                "field": "metadata.resourceVersion",
            }])
        return 200, await self._commit_update(info, rs, key, name, obj, current, subresource,
                                              dry_run, validate, manager=manager)

    async def patch(self, info: ResourceInfo, namespace: str, name: str, content_type: str,
                    body: bytes, subresource: str = "", dry_run: bool = False,
                    on_patched: Callable[[dict[str, Any]], None] | None = None,
                    manager: str | None = None) -> Entry:
        """Apply a patch; `on_patched` sees the patched object first (field validation)."""
        smp_ref = schema_ref_for(info.group, info.version, info.kind)
        patch_type(content_type, smp_ref)  # an unsupported type is 415 even for a missing object
        rs = self.rs(info)
        key = object_key(namespace if info.namespaced else "", name)
        current = rs.current(key)
        if current is None:
            raise errors.not_found(info.plural, info.group, name)
        # Patch a private copy: the result shares unchanged subtrees with it and
        # is then ours to mutate. `old` stays a separate, read-only view.
        patched = apply_patch(content_type, body, current.copy(), smp_ref)
        if self.custom.get(info) is None:
            check_patched_types(info, content_type, body, patched)
        if on_patched is not None:
            on_patched(patched)
        meta = patched.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request("the patched object has no metadata")
        if meta.get("name") != name:
            raise errors.bad_request(f"the name of the object ({meta.get('name')}) does not "
                                     f"match the name on the URL ({name})")
        _drop_empty_meta(meta)
        # EnsureObjectNamespaceMatchesRequestNamespace: an empty namespace is the URL's
        # (a `$patch: replace` of metadata leaves none), a cluster-scoped object has none.
        if not info.namespaced:
            meta.pop("namespace", None)
        elif not meta.get("namespace"):
            meta["namespace"] = namespace
        elif meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request")
        patched_rv = meta.get("resourceVersion")
        if patched_rv and patched_rv != str(current.rv):
            raise errors.conflict(info.plural, info.group, name, errors.OPTIMISTIC_LOCK_MSG)
        if not patched_rv and info.require_resource_version_on_update:
            # the patch took the resourceVersion away (a `$patch: replace` of metadata)
            raise errors.invalid(info.plural, info.group, name, [{
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0: must be specified for an update",
                "field": "metadata.resourceVersion"}])
        patched["apiVersion"] = info.api_version
        patched["kind"] = info.kind
        return await self._commit_update(info, rs, key, name, patched, current, subresource,
                                         dry_run, manager=manager)

    # -- server-side apply and managedFields ------------------------------------------

    def field_manager(self, info: ResourceInfo, subresource: str = "") -> FieldManager | None:
        """The field manager of an endpoint (None: no schema for the kind)."""
        crv = self.custom.get(info)
        SERVER_CLOCK.set(self.clock)  # managedFields times: this server's clock
        return field_manager_for(info, subresource, crv.raw_schema if crv else None,
                                 custom=crv is not None)

    def _track_update(self, info: ResourceInfo, subresource: str, old: dict[str, Any] | None,
                      obj: dict[str, Any], manager: str) -> None:
        """managedFields of an Update by `manager`, set on `obj` in place: every create,
        update and patch records its manager's fields, as kube-apiserver does."""
        fm = self.field_manager(info, subresource)
        if fm is None:
            return
        meta = obj["metadata"]
        view = obj
        if self.custom.get(info) is None:
            # kube-apiserver's field manager sees the object decoded into its Go struct: a
            # zero value of an omitempty field sent in the request is no field there
            view = orjson.loads(orjson.dumps(obj))
            _encode_as_go(info, view)
        tracked = fm.update(old, view, manager)
        mf = tracked["metadata"].get("managedFields")
        if mf is None:
            meta.pop("managedFields", None)
        else:
            meta["managedFields"] = mf

    async def apply(self, info: ResourceInfo, namespace: str, name: str,
                    applied: dict[str, Any], subresource: str = "", dry_run: bool = False,
                    field_manager: str | None = None, force: bool = False
                    ) -> tuple[int, Entry]:
        """Server-side apply (PATCH application/apply-patch+yaml): 201 when it created."""
        validate_patch_options(True, field_manager, force)
        assert field_manager
        check_applied_name(applied, name)
        fm = self.field_manager(info, subresource)
        if fm is None:
            raise errors.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json")
        ameta = applied.get("metadata")
        if isinstance(ameta, dict) and ameta.get("namespace") and info.namespaced and (
                ameta["namespace"] != namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request")
        fm.check_applied(applied)     # SMD's typed conversion answers first, as upstream
        if self.custom.get(info) is None:
            fq = kind_struct(info.group, info.version, info.kind)
            try:
                if fq is not None:
                    check_struct(applied, fq)
            except GoDecodeError as exc:
                # SMD's typed conversion of the configuration fails (a bare 500 upstream too;
                # the message is Go's decoder's, not SMD's "expected string, got ...")
                am = applied.get("metadata")
                ameta_: dict[str, Any] = am if isinstance(am, dict) else {}
                raise errors.bare_internal(
                    f"failed to create typed patch object ({ameta_.get('namespace') or ''}/"
                    f"{ameta_.get('name') or ''}; {info.group}/{info.version}, Kind={info.kind})"
                    f": {exc}") from None
        rs = self.rs(info)
        key = object_key(namespace if info.namespaced else "", name)
        current = rs.current(key)
        if current is None:
            if subresource:
                raise errors.not_found(info.plural, info.group, name)
            obj = fm.apply(None, applied, field_manager, force)
            meta = obj["metadata"]
            meta["name"] = name
            if info.namespaced:
                meta["namespace"] = namespace
            return 201, await self.create(info, namespace, obj, dry_run)
        obj = fm.apply(current.copy(), applied, field_manager, force)
        obj["apiVersion"], obj["kind"] = info.api_version, info.kind
        meta = obj["metadata"]
        meta["resourceVersion"] = str(current.rv)
        return 200, await self._commit_update(info, rs, key, name, obj, current, subresource,
                                              dry_run, carry_managed_fields=True)

    async def _commit_update(self, info: ResourceInfo, rs: ResourceStore, key: str, name: str,
                             obj: dict[str, Any], current: Entry, subresource: str,
                             dry_run: bool, validate: UpdateValidator | None = None,
                             manager: str | None = None,
                             carry_managed_fields: bool = False) -> Entry:
        old = current.obj  # read-only: shared with a pending write, or freshly parsed
        crv = self.custom.get(info)
        uid = (obj.get("metadata") or {}).get("uid")
        if uid and uid != old["metadata"].get("uid"):
            # BeforeUpdate keeps the stored UID only when none is sent; a different
            # one fails validation, which makes a UID in a patch a precondition.
            raise errors.invalid(info.kind, info.group, name, [{
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "{uid}": field is immutable',
                "field": "metadata.uid",
            }])
        # kube-apiserver defaults a body as it decodes it, and runs mutating admission
        # before the strategy's PrepareForUpdate: the generation then compares defaulted specs.
        st = self.strategy(info)
        st.default(obj, create=False)
        if manager is not None:
            self._track_update(info, subresource, old, obj, manager)
            carry_managed_fields = True
        managed_fields = obj["metadata"].get("managedFields")
        mutating_admission.admit(info, obj, old, subresource)
        self._priority_admission(info, obj, old, subresource, name)
        if not subresource:
            self._storage_admission(info, obj, old)
        if subresource == "status":
            new = st.prepare_for_status_update(obj, old)
        elif subresource:
            new = st.prepare_for_subresource_update(subresource, obj, old)
        else:
            st.prepare_for_update(obj, old)
            new = obj
        if info.kind == "Service" and not info.group and new is obj:
            self._update_service_type(info, name, new, old)
            # the IP family fields follow the addresses the update kept (REST, not decoding)
            st.default(new, create=False)
        if new is not obj:
            # Status-style writes build the result from the stored object:
            # copy it so the stored dict is never mutated.
            new = orjson.loads(orjson.dumps(new))
        new_meta = new["metadata"]
        old_meta = old["metadata"]
        if carry_managed_fields and new is not obj:
            # a status-style write built from the stored object: the write's ownership
            if managed_fields is None:
                new_meta.pop("managedFields", None)
            else:
                new_meta["managedFields"] = managed_fields
        if old_meta.get("deletionTimestamp"):
            added = [f for f in new_meta.get("finalizers") or []
                     if f not in (old_meta.get("finalizers") or [])]
            if added:
                raise errors.invalid(info.kind, info.group, name, [{
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: no new finalizers can be added if the object is "
                               f"being deleted, found new finalizers {_go_str_list(added)}",
                    "field": "metadata.finalizers",
                }])
        if validate is not None:
            causes = _as_status_causes(validate(new, old))
        elif subresource == "status":
            causes = _as_status_causes(st.validate_status_update(new, old))
        else:
            causes = _as_status_causes(st.validate_update(new, old))
        if causes:
            raise errors.invalid(info.kind, info.group, name, causes)
        await self.quota_plugins.validate(info, str(new_meta.get("namespace") or ""), new, old,
                                          subresource, dry_run)
        if crv is None:
            _encode_as_go(info, new)
        is_crd = info.group == CRD_GROUP and info.kind == "CustomResourceDefinition"
        new_meta["resourceVersion"] = str(current.rv)
        if _strip_for_compare(new) == _strip_for_compare(old):
            return current  # no-op: same revision, no event
        if dry_run:
            return Entry(new, orjson.dumps(new), current.rv)
        if self._should_delete_during_update(info, new, old):
            await self._remove(rs, key, current, False)
            if is_crd:
                self.custom.remove_crd(new)
            return Entry(new, orjson.dumps(new), current.rv)
        entry = await self.store.write(rs, key, new, current)
        if is_crd:
            if subresource != "status":
                # the apiextensions controllers' answer to the new spec, as a second write
                # (the update's own answer shows the status as it was)
                status = self._crd_status(entry.obj, old)
                if status != entry.obj.get("status"):
                    accepted = entry.copy()
                    accepted["status"] = status
                    accepted["metadata"]["resourceVersion"] = str(entry.rv)
                    self._crd_changed((await self.store.write(rs, key, accepted, entry)).obj)
                    return entry
            self._crd_changed(entry.obj)
        return entry

    @staticmethod
    def _should_delete_during_update(info: ResourceInfo, new: dict[str, Any],
                                     old: dict[str, Any]) -> bool:
        old_meta = old["metadata"]
        if new["metadata"].get("finalizers"):
            return False
        if not old_meta.get("deletionTimestamp"):
            return False
        if info.kind == "Namespace":
            return not (new.get("spec") or {}).get("finalizers")
        # ShouldDeleteDuringUpdate: no grace period, or one of 0
        grace = old_meta.get("deletionGracePeriodSeconds")
        return grace is None or grace == 0

    # -- delete ---------------------------------------------------------------------

    async def delete(self, info: ResourceInfo, namespace: str, name: str,
                     opts: DeleteOptions) -> tuple[bool, Entry]:
        """Returns (deleted_now, entry): the final state, or the object now being deleted."""
        if info.kind == "PriorityClass" and info.group == "scheduling.k8s.io":
            # the priorityclass REST's Delete: the system classes stay
            why = system_class_delete_error(name)
            if why is not None:
                raise errors.forbidden(info.plural, info.group, name, why)
        rs = self.rs(info)
        key = object_key(namespace if info.namespaced else "", name)
        current = rs.current(key)
        if current is None:
            raise errors.not_found(info.plural, info.group, name)
        # One private parse serves both as the view of the current state (read
        # before any change below) and as the object to write.
        new = current.copy()
        new_meta = new["metadata"]
        meta = dict(new_meta)
        if info.kind == "Namespace" and not info.group:
            # The namespace registry checks them itself, in the storage's words.
            if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
                raise errors.conflict(
                    info.plural, "", name,
                    f"Precondition failed: UID in precondition: {opts.precondition_uid}, "
                    f"UID in object meta: {meta.get('uid')}")
            if opts.precondition_rv is not None and opts.precondition_rv != str(current.rv):
                raise errors.conflict(
                    info.plural, "", name,
                    f"Precondition failed: ResourceVersion in precondition: "
                    f"{opts.precondition_rv}, ResourceVersion in object meta: {current.rv}")
        # BeforeDelete checks the preconditions first (naming the kind, not the resource).
        if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
            raise errors.conflict(
                info.kind, info.group, name,
                f"the UID in the precondition ({opts.precondition_uid}) does not match the UID "
                f"in record ({meta.get('uid')}). The object might have been deleted and then "
                "recreated")
        if opts.precondition_rv is not None and opts.precondition_rv != str(current.rv):
            raise errors.conflict(
                info.kind, info.group, name,
                f"the ResourceVersion in the precondition ({opts.precondition_rv}) does not "
                f"match the ResourceVersion in record ({current.rv}). The object might have "
                "been modified")
        if info.kind == "Namespace" and name in UNDELETABLE_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        ns_spec_finalizers = bool((new.get("spec") or {}).get("finalizers"))
        graceful = self.strategy(info).grace_period(new, opts.grace_period_seconds)
        old_finalizers = list(new_meta.get("finalizers") or [])
        finalizers = _gc_finalizers(info, opts, old_finalizers)
        changed_finalizers = finalizers != old_finalizers
        if finalizers:
            new_meta["finalizers"] = finalizers
        else:
            new_meta.pop("finalizers", None)
        now = self.clock.now()
        if info.group == CRD_GROUP and info.kind == "CustomResourceDefinition":
            if meta.get("deletionTimestamp"):
                return False, current
            if CLEANUP_FINALIZER not in finalizers:
                finalizers.append(CLEANUP_FINALIZER)
            new_meta["finalizers"] = finalizers
            new_meta["deletionTimestamp"] = rfc3339(now)
            conds = [c for c in (new.get("status") or {}).get("conditions") or []
                     if c.get("type") != "Terminating"]
            conds.append({"type": "Terminating", "status": "True",
                          "lastTransitionTime": rfc3339(now),
                          "reason": "InstanceDeletionPending",
                          "message": "CustomResourceDefinition marked for deletion; "
                                     "CustomResource deletion will begin soon"})
            new.setdefault("status", {})["conditions"] = conds
            entry = await self._write_or_dry(rs, key, new, current, opts.dry_run)
            if not opts.dry_run:
                self._start_crd_cleanup(name)
            return False, entry
        if info.kind == "Namespace":
            if not meta.get("deletionTimestamp"):
                # kube-apiserver's namespace registry sets no deletionGracePeriodSeconds
                new_meta["deletionTimestamp"] = rfc3339(now)
                new.setdefault("status", {})["phase"] = "Terminating"
                return False, await self._write_or_dry(rs, key, new, current, opts.dry_run)
            if ns_spec_finalizers or finalizers:
                if changed_finalizers:
                    return False, await self._write_or_dry(rs, key, new, current, opts.dry_run)
                return False, current
            return True, await self._remove(rs, key, current, opts.dry_run, new)
        grace = graceful or 0
        if meta.get("deletionTimestamp"):
            # Already deleting: a second delete may only shorten the grace period.
            old_grace = meta.get("deletionGracePeriodSeconds")
            if graceful is not None and old_grace is not None and grace < old_grace:
                new_meta["deletionGracePeriodSeconds"] = grace
                new_meta["deletionTimestamp"] = rfc3339(now + grace)
                if grace == 0 and not finalizers:
                    return True, await self._remove(rs, key, current, opts.dry_run, new)
                return False, await self._write_or_dry(rs, key, new, current, opts.dry_run)
            if changed_finalizers:
                return False, await self._write_or_dry(rs, key, new, current, opts.dry_run)
            return False, current
        if graceful is not None:
            # Graceful deletion (BeforeDelete): the object is marked and its generation
            # moves, even when the period is 0 and it goes at once (the answer shows it).
            new_meta["deletionTimestamp"] = rfc3339(now + grace)
            new_meta["deletionGracePeriodSeconds"] = grace
            _bump_generation(new_meta)
            marked = await self._write_or_dry(rs, key, new, current, opts.dry_run)
            if grace == 0 and not finalizers:
                # Two writes, as upstream: the marked object (MODIFIED), then its removal
                # (DELETED); the answer is the object as last stored.
                if not opts.dry_run:
                    await self._remove(rs, key, marked, False, marked.copy())
                return True, marked
            return False, marked
        if not finalizers:
            return True, await self._remove(rs, key, current, opts.dry_run, new)
        # markAsDeleting: finalizers keep it; generation moves once
        new_meta["deletionTimestamp"] = rfc3339(now)
        new_meta["deletionGracePeriodSeconds"] = 0
        _bump_generation(new_meta)
        return False, await self._write_or_dry(rs, key, new, current, opts.dry_run)

    async def _write_or_dry(self, rs: ResourceStore, key: str, new: dict[str, Any],
                            current: Entry, dry_run: bool) -> Entry:
        if dry_run:
            return Entry(new, orjson.dumps(new), current.rv)
        return await self.store.write(rs, key, new, current)

    async def _remove(self, rs: ResourceStore, key: str, current: Entry, dry_run: bool,
                      final: dict[str, Any] | None = None) -> Entry:
        """Remove the object; `final`, if given, is a private parse of its current state."""
        if dry_run:
            return current
        entry = await self.store.write(rs, key, None, current, final=final)
        if rs.rid == "core/services":
            self._service_allocator().release(entry.obj)
        return entry

    async def delete_collection(self, info: ResourceInfo, namespace: str, list_opts: ListOptions,
                                opts: DeleteOptions) -> builtins.list[Entry]:
        """Delete every object the list selects; returns them as listed."""
        rs = self.rs(info)
        ns = namespace if info.namespaced else ""
        flt = self.build_filter(info, "", list_opts)
        targets: builtins.list[tuple[str, str]] = []
        listed: builtins.list[Entry] = []
        for k in builtins.list(rs.keys_in(rs.sorted_keys(), ns)):
            e = rs.items.get(k)
            if e is None or (flt is not None and not flt(k, e)):
                continue
            obj_ns, _, obj_name = k.rpartition("/")
            targets.append((obj_ns, obj_name))
            listed.append(e)
        gone: builtins.list[bool] = []

        async def one(target: tuple[str, str]) -> None:
            try:
                await self.delete(info, target[0], target[1], opts)
            except StatusError as exc:
                if exc.code != 404:  # deleted meanwhile: that is what was asked
                    raise
                gone.append(True)

        # Deletes go out together so the log commits them in large batches.
        for i in range(0, len(targets), 2000):
            await asyncio.gather(*(one(t) for t in targets[i:i + 2000]))
        if gone:
            # "deleted meanwhile" may be another client's delete still in flight:
            # answer once it is committed, so a LIST right after (the namespace
            # controller's check) no longer shows the object.
            await self.store.settle()
        # kube-apiserver answers with the list it deleted from, as listed (not the
        # objects' states after their deletes)
        return listed


# -- helpers ------------------------------------------------------------------------


def _go_json_type(v: Any) -> str:
    """The JSON type name Go's decoder reports (json: cannot unmarshal <type> into ...)."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


# The Go package of each group's internal types (named in conversion errors).
_INTERNAL_PACKAGE = {"": "core", "events.k8s.io": "core", "coordination.k8s.io": "coordination",
                     "apiextensions.k8s.io": "apiextensions", "discovery.k8s.io": "discovery",
                     "storage.k8s.io": "storage"}


def type_meta_error(info: ResourceInfo, api_version: str, kind: str,
                     registry: ResourceRegistry | None) -> StatusError:
    """kube-apiserver's decode error for a body of another kind or version than the URL's."""
    group, _, version = api_version.rpartition("/")
    head = f'{kind} in version "{version}" cannot be handled as a {info.kind}: '
    if registry is not None and (other := registry.by_kind(group, kind)) is not None and (
            other.version == version):
        internal = _INTERNAL_PACKAGE.get(info.group, info.group)
        return errors.bad_request(head + f"converting ({version}.{kind}) to "
                                         f"({internal}.{info.kind}): unknown conversion")
    return errors.bad_request(head + f'no kind "{kind}" is registered for version '
                                     f'"{api_version}" in scheme "pkg/runtime/scheme.go:111"')


def _check_custom_type_meta(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """An unstructured body (a custom resource): its kind is required, a wrong apiVersion is
    a 400, a wrong kind fails validation."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not kind:
        raw = orjson.dumps(obj)
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {info.kind}): Object 'Kind' "
            f"is missing in '{raw.decode()}' ({_summary(raw)})")
    if api_version and api_version != info.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({info.api_version})")
    if kind != info.kind:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise errors.invalid(str(kind), info.group, name, [{
            "reason": "FieldValueInvalid", "field": "kind",
            "message": f'Invalid value: "{kind}": must be {info.kind}'}])


def _summary(data: bytes, max_length: int = 30) -> str:
    if data[:1] == b"{":
        text = data[:max_length].decode(errors="replace")
        return text + " ..." if len(data) > max_length else text
    return data[:max_length].hex() + " ..." if len(data) > max_length else data.hex()


def _check_body_meta(info: ResourceInfo, obj: dict[str, Any], namespace: str,
                     registry: ResourceRegistry | None = None,
                     custom: bool = False) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if custom:
        _check_custom_type_meta(info, obj)
    elif (api_version and api_version != info.api_version) or (kind and kind != info.kind):
        raise type_meta_error(info, str(api_version or info.api_version),
                              str(kind or info.kind), registry)
    _canonical_order(obj, info)
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.bad_request(
            f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
            f"json: cannot unmarshal {_go_json_type(meta)} into Go struct field "
            f"{info.kind}.metadata of type v1.ObjectMeta")
    if info.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request")
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    _drop_empty_meta(meta)
    return meta


# ObjectMeta's collections are `omitempty`: kube-apiserver decodes writes into Go
# structs, so an empty (or null) one is never stored nor served.
_OMITEMPTY_META_COLLECTIONS = ("labels", "annotations", "ownerReferences", "finalizers",
                               "managedFields")


def _bump_generation(meta: dict[str, Any]) -> None:
    gen = meta.get("generation")
    if isinstance(gen, int) and gen > 0:
        meta["generation"] = gen + 1


def _drop_empty_meta(meta: dict[str, Any]) -> None:
    for k in _OMITEMPTY_META_COLLECTIONS:
        if k in meta and not meta[k]:
            del meta[k]


def list_body(info: ResourceInfo, meta: dict[str, Any], raws: Iterable[bytes],
              custom: bool = False) -> bytes:
    """A list object around items already encoded (no re-encoding of the items).

    Items of built-in kinds leave without their kind and apiVersion, as
    kube-apiserver encodes a typed list (its items' TypeMeta is empty; the
    list's says what they are); custom resources keep theirs (unstructured).
    """
    head = orjson.dumps({"kind": info.list_kind, "apiVersion": info.api_version,
                         "metadata": meta})
    if not custom:
        raws = strip_type_meta(info, raws)
    return head[:-1] + b',"items":[' + b",".join(raws) + b"]}"


def strip_type_meta(info: ResourceInfo, raws: Iterable[bytes]) -> list[bytes]:
    """The encoded objects without their leading kind and apiVersion.

    Stored objects start with them (`_canonical_order`), so this is a slice;
    one that does not is decoded and encoded again.
    """
    prefix = orjson.dumps({"kind": info.kind, "apiVersion": info.api_version})[:-1] + b","
    n = len(prefix)
    out: list[bytes] = []
    for raw in raws:
        if raw.startswith(prefix):
            out.append(b"{" + raw[n:])
        else:
            obj = orjson.loads(raw)
            obj.pop("kind", None)
            obj.pop("apiVersion", None)
            out.append(orjson.dumps(obj))
    return out


def patch_type(content_type: str, smp_schema_ref: str | None) -> str:
    """"json", "merge" or "strategic" for a PATCH content type; 415 for anything else."""
    ptype = PATCH_TYPES.get(content_type.split(";")[0].strip().lower())
    if ptype is None:
        # go-restful refuses a content type no PATCH route consumes, before any handler.
        raise StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type",
                          details={})
    if ptype == "apply" or (ptype == "strategic" and smp_schema_ref is None):
        accepted = ("application/json-patch+json, application/merge-patch+json"
                    + (", application/strategic-merge-patch+json" if smp_schema_ref
                       else ", application/apply-patch+yaml"))
        raise errors.unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types "
            f"include: {accepted}"
            + (" (server-side apply is not supported by this server yet)"
               if ptype == "apply" else ""))
    return ptype


# kube-apiserver's maxJSONPatchOperations: a longer JSON patch is refused (413) before it runs.
MAX_JSON_PATCH_OPERATIONS = 10_000

# The Go types kube-apiserver decodes each patch into (named in its decode errors).
_PATCH_GO_TYPE = {"json": "[]handlers.jsonPatchOp", "merge": "map[string]interface {}",
                  "strategic": "map[string]interface {}"}


def apply_patch(content_type: str, body: bytes, original: dict[str, Any],
                smp_schema_ref: str | None) -> dict[str, Any]:
    """Apply a PATCH body of the given content type to `original` (which it may share).

    `smp_schema_ref` names the definition for strategic merge patch; None (custom
    resources) refuses it with 415, as kube-apiserver does. Errors are
    kube-apiserver's: a body that does not decode is 400 (with Go's decoder
    message), a JSON patch that does not apply a generic 422.
    """
    ptype = patch_type(content_type, smp_schema_ref)
    # JSON and merge patches are decoded strictly ("error decoding patch: ..."), a
    # strategic one plainly (the decoder's message alone).
    prefix = "" if ptype == "strategic" else "error decoding patch: "
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise errors.bad_request(prefix + (go_json.syntax_error(body) or "invalid JSON")
                                 ) from None
    want = list if ptype == "json" else dict
    if not isinstance(doc, want):
        raise errors.bad_request(f"{prefix}json: cannot unmarshal {_go_json_type(doc)} into Go "
                                 f"value of type {_PATCH_GO_TYPE[ptype]}")
    try:
        if ptype == "json":
            for op in doc:
                if not isinstance(op, dict):
                    raise errors.bad_request(
                        f"{prefix}json: cannot unmarshal {_go_json_type(op)} into Go value of "
                        "type handlers.jsonPatchOp")
            if len(doc) > MAX_JSON_PATCH_OPERATIONS:
                raise errors.request_entity_too_large(
                    "The allowed maximum operations in a JSON patch is "
                    f"{MAX_JSON_PATCH_OPERATIONS}, got {len(doc)}")
            patched = apply_json_patch(original, doc)
        elif ptype == "merge":
            patched = apply_merge_patch(original, doc)
        else:
            assert smp_schema_ref is not None and isinstance(doc, dict)
            try:
                patched = apply_strategic_merge_patch(original, doc, smp_schema_ref)
            except PatchConflictError:
                # upstream replaces the value and fails converting the result to its Go type
                # (check_patched_types words that): the same replacement
                patched = apply_merge_patch(original, doc)
    except PatchError as exc:
        code = getattr(exc, "http_status", 422)
        if ptype == "json" and code == 422:
            raise errors.generic_invalid() from None
        raise StatusError(code, "Invalid" if code == 422 else "BadRequest",
                          str(exc) or "invalid patch") from None
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        if ptype == "json":
            raise errors.generic_invalid() from None
        raise StatusError(422, "Invalid", str(exc) or "invalid patch") from None
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    return patched


def check_patched_types(info: ResourceInfo, content_type: str, body: bytes,
                        patched: dict[str, Any], fq: str | None = None) -> None:
    """The patched object must decode into the kind's Go struct (go_types.py); else the 422
    kube-apiserver answers, quoting the patched object (JSON and merge patch: as JSON, a merge
    patch's keys sorted as Go marshals a map) or the patch (strategic: Go's %v of it)."""
    fq = fq or kind_struct(info.group, info.version, info.kind)
    if fq is None:
        return
    ptype = PATCH_TYPES.get(content_type.split(";")[0].strip().lower())
    strategic = ptype == "strategic"
    try:
        check_struct(patched, fq, unstructured=strategic)
    except GoDecodeError as exc:
        if strategic:
            value = go_repr(orjson.loads(body))
        else:
            # what the patch library decoded into Go maps is written sorted, the rest as
            # the object was encoded (its Go struct order)
            doc = orjson.loads(body)
            touched = _merge_paths(doc, ()) if ptype == "merge" else _json_patch_paths(doc)
            value = orjson.dumps(go_encoding_order(patched, fq, touched)).decode()
        message = f"Invalid value: {go_quote(value)}: {exc}"
        raise StatusError(422, "Invalid", f' "" is invalid: patch: {message}', details={
            "causes": [{"reason": "FieldValueInvalid", "message": message,
                        "field": "patch"}]}) from None
    zero_nulls(patched, fq)


def _encode_as_go(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """What kube-apiserver stores is its Go struct encoded: an `omitempty` field at its zero
    value is not there (a status merge patch of `readyReplicas: 0` leaves no readyReplicas,
    `hostNetwork: false` is not kept), a pointer's zero is (`collisionCount: 0`)."""
    fq = kind_struct(info.group, info.version, info.kind)
    if fq is not None:
        drop_go_empty(obj, fq)


def _merge_paths(patch: Any, path: tuple[str, ...]) -> set[tuple[str, ...]]:
    out = {path}
    if isinstance(patch, dict):
        for k, v in patch.items():
            if isinstance(v, dict):
                out |= _merge_paths(v, (*path, k))
    return out


def _json_patch_paths(ops: Any) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = {()}
    for op in ops if isinstance(ops, list) else ():
        for field in ("path", "from"):
            p = op.get(field) if isinstance(op, dict) else None
            if isinstance(p, str) and p.startswith("/"):
                tokens = tuple(t.replace("~1", "/").replace("~0", "~")
                               for t in p[1:].split("/"))
                out.update(tokens[:i] for i in range(len(tokens)))
    return out


def _established(crd: dict[str, Any]) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def _terminating(ns: dict[str, Any]) -> bool:
    return bool(ns["metadata"].get("deletionTimestamp")) or (ns.get("status") or {}).get(
        "phase") == "Terminating"


def _canonical_order(obj: dict[str, Any], info: ResourceInfo) -> None:
    """kind, apiVersion, metadata first, as kube-apiserver encodes objects."""
    rest = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "metadata")}
    meta = obj.get("metadata")
    obj.clear()
    obj["kind"] = info.kind
    obj["apiVersion"] = info.api_version
    obj["metadata"] = meta
    obj.update(rest)


def _requester() -> str:
    """The user of the request being served ("" for the server's own writes)."""
    auth = REQUEST_AUTH.get()
    return auth.user.name if auth is not None else ""


def _truncate_generate_name(base: str) -> str:
    # names.SimpleNameGenerator: the base cut to 63 - 5 characters before the suffix
    return base[:58] if len(base) > 58 else base


def _gc_finalizers(info: ResourceInfo, opts: DeleteOptions, finalizers: list[str]) -> list[str]:
    """The finalizers a DELETE leaves (deletionFinalizersForGarbageCollection).

    An explicit orphanDependents / propagationPolicy wins; else a GC finalizer
    already on the object; else the resource's default (batch/v1 Jobs orphan).
    Core Events do not take part in garbage collection (policy Unsupported):
    both GC finalizers go.
    """
    gc = ("orphan", "foregroundDeletion")
    if info.kind == "Event" and not info.group:
        orphan = foreground = False
    else:
        policy = opts.propagation_policy
        if opts.orphan_dependents is not None:
            orphan, foreground = opts.orphan_dependents, False
        elif policy in ("Orphan", "Background", "Foreground"):
            orphan, foreground = policy == "Orphan", policy == "Foreground"
        elif "orphan" in finalizers or "foregroundDeletion" in finalizers:
            first = next(f for f in finalizers if f in gc)
            orphan, foreground = first == "orphan", "foregroundDeletion" in finalizers
        else:
            orphan, foreground = info.default_propagation == "Orphan", False
    new = [f for f in finalizers if f not in gc]
    if orphan:
        new.append("orphan")
    if foreground:
        new.append("foregroundDeletion")
    return finalizers if set(new) == set(finalizers) else new


def _go_str_list(items: list[str]) -> str:
    return "[]string{" + ", ".join(f'"{i}"' for i in items) + "}"


def parse_rv(value: str, watch: bool = False) -> int:
    """A resourceVersion query parameter. One that is no number: 400 on a list, and on a
    watch the bare 500 kube-apiserver's watch cache answers (messages from strconv)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 20:
        return int(value)
    why = (f'resourceVersion: Invalid value: "{value}": '
           + errors.go_parse_int_error("ParseUint", str(value)))
    if watch:
        raise errors.bare_internal(why)
    raise errors.bad_request(f"invalid resource version: {why}")


def parse_body_rv(value: str) -> int:
    """An object's resourceVersion; one that is no number fails as upstream's does: a bare
    500 with strconv's message."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        try:
            return int(value)
        except ValueError:
            pass
    raise errors.bare_internal(errors.go_parse_int_error("ParseUint", str(value)))


def encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _invalid_continue(why: str) -> StatusError:
    return errors.bad_request(f"invalid continue token: {why}")


def decode_continue(token: str) -> tuple[int, str]:
    """(revision, start key) of a continue token; kube-apiserver's errors for a bad one."""
    generic = "continue key is not valid"
    for i, ch in enumerate(token):  # Go's base64.RawURLEncoding: no padding
        if ch not in _B64URL:
            raise _invalid_continue(f"{generic}: illegal base64 data at input byte {i}")
    if len(token) % 4 == 1:
        raise _invalid_continue(f"{generic}: illegal base64 data at input byte {len(token) - 1}")
    data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise _invalid_continue(f"{generic}: {go_json.syntax_error(data)}") from None
    if not isinstance(d, dict):
        raise _invalid_continue(f"{generic}: json: cannot unmarshal {_go_json_type(d)} into Go "
                                "value of type storage.continueToken")
    version, rv, start = d.get("v", ""), d.get("rv", 0), d.get("start", "")
    if not isinstance(rv, int) or not isinstance(start, str) or not isinstance(version, str):
        raise _invalid_continue(f"{generic}: json: cannot unmarshal into Go struct field "
                                "continueToken of type storage.continueToken")
    if version != "meta.k8s.io/v1":
        raise _invalid_continue(f"{generic}: server does not recognize this encoded version "
                                f"{version}")
    if rv == 0:
        raise _invalid_continue(f"{generic}: incorrect encoded start resourceVersion "
                                "(version meta.k8s.io/v1)")
    if not start:
        raise _invalid_continue(f"{generic}: encoded start key empty (version meta.k8s.io/v1)")
    if rv < 0:
        raise _invalid_continue(f"{generic}: incorrect encoded start resourceVersion "
                                "(version meta.k8s.io/v1)")
    return rv, start
