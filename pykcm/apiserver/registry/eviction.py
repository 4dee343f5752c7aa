"""The ``pods/eviction`` subresource: a pod deleted only if its disruption budget allows it
(kube-apiserver ``pkg/registry/core/pod/storage/eviction.go``).

POST ``/api/v1/namespaces/NS/pods/NAME/eviction`` with a policy/v1 (or v1beta1)
``Eviction``; the answer is a ``Status`` (201 Success) or an error:

1. The pod is read (404 if missing). A pod that is Succeeded, Failed, Pending or
   already being deleted is deleted at once, whatever budgets say (a Pending or
   terminating-free pod with a resourceVersion precondition, so a pod turning Ready
   meanwhile is not caught).
2. The budgets of the pod's namespace whose selector matches it: more than one is a
   500 Status ("This pod has more than one PodDisruptionBudget, which the eviction
   subresource does not support."); none: the pod is deleted.
3. An unready pod is deleted without touching the budget when its
   ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (default ``IfHealthyBudget``)
   when the budget is met (currentHealthy >= desiredHealthy > 0); again with a
   resourceVersion precondition, a conflict then answered with 429.
4. Otherwise the budget is checked and decremented: a status its controller has not
   caught up with (observedGeneration < generation) is 429 "still being processed"
   (Retry-After 10); a negative allowance or more than 2000 ``disruptedPods`` is 403;
   ``disruptionsAllowed`` 0 is 429 "Cannot evict pod as it would violate the pod's
   disruption budget." with a ``DisruptionBudget`` cause explaining why (a failed sync,
   too few healthy pods, a False condition, or plainly not allowed). An allowed eviction
   writes the budget's status: one fewer disruption allowed (DisruptionAllowed turned
   False at 0) and the pod in ``disruptedPods`` with the time, through /status with the
   budget's resourceVersion; conflicts are retried on a fresh read (20 times, about
   0.5 s apart), then 504.
5. The pod gets the condition ``DisruptionTarget=True`` (``EvictionByEvictionAPI``,
   "Eviction API: evicting") and is deleted with the Eviction's ``deleteOptions``
   (graceful as any pod delete). Dry-run (query or deleteOptions) changes nothing.

Data flow: the handler decodes the body and calls :func:`evict` with the
:class:`~pykcm.apiserver.registry.rest_storage.RESTStorage`; every read and write goes through
it as any client's would (validation, status strategy, watch events). Deliberate
deviation: upstream reads budgets through a loopback client (LIST, GET, UpdateStatus);
here the same operations run in-process on the store.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from pykcm.api.conditions import find_status_condition
from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.pod_util import is_pod_ready
from pykcm.api.poddisruptionbudget import (
    DISRUPTION_ALLOWED_CONDITION,
    DISRUPTION_BUDGET_CAUSE,
    SYNC_FAILED_REASON,
    update_disruption_allowed_condition,
)
from pykcm.api.resources import ResourceInfo
from pykcm.api.timestamps import format_time
from pykcm.api.validation import go_quote
from pykcm.apiserver import errors
from pykcm.apiserver.errors import StatusError

if TYPE_CHECKING:
    from pykcm.apiserver.registry.rest_storage import DeleteOptions, RESTStorage

__all__ = ["EVICTION_API_VERSIONS", "MAX_DISRUPTED_POD_SIZE", "check_type_meta", "evict"]

MAX_DISRUPTED_POD_SIZE: Final = 2000
EVICTION_API_VERSIONS: Final = ("policy/v1", "policy/v1beta1")
_RETRY_STEPS: Final = 20
_RETRY_DELAY: Final = 0.5
_TOO_MANY: Final = "Cannot evict pod as it would violate the pod's disruption budget."

SUCCESS: Final = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                  "code": 201}


def _too_many(cause: str, retry_after: int) -> StatusError:
    """NewTooManyRequests with a DisruptionBudget cause; Retry-After only when > 0."""
    details: dict[str, Any] = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
    headers: dict[str, str] = {}
    if retry_after > 0:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return StatusError(429, "TooManyRequests", _TOO_MANY, details=details, headers=headers)


def _still_processing(pdb_name: str) -> StatusError:
    return _too_many(f"The disruption budget {pdb_name} is still being processed by the "
                     "server.", 10)


def _refusal(pdb: Mapping[str, Any]) -> StatusError:
    """The 429 of a budget that allows no disruption, with upstream's explanation."""
    name = (pdb.get("metadata") or {}).get("name")
    st = pdb.get("status") or {}
    cond = find_status_condition(st.get("conditions"), DISRUPTION_ALLOWED_CONDITION)
    false_with_message = (cond is not None and cond.get("status") == "False"
                          and bool(cond.get("message")))
    if false_with_message and cond is not None and cond.get("reason") == SYNC_FAILED_REASON:
        msg = (f"The disruption budget {name} does not allow evicting pods currently because "
               f"it failed sync: {cond.get('message')}")
    elif int(st.get("currentHealthy") or 0) <= int(st.get("desiredHealthy") or 0):
        msg = (f"The disruption budget {name} needs {int(st.get('desiredHealthy') or 0)} "
               f"healthy pods and has {int(st.get('currentHealthy') or 0)} currently")
    elif false_with_message and cond is not None:
        msg = (f"The disruption budget {name} does not allow evicting pods currently "
               f"({cond.get('reason')}): {cond.get('message')}")
    else:
        msg = f"The disruption budget {name} does not allow evicting pods currently"
    return _too_many(msg, 0)


def _pdb_forbidden(name: str, why: str) -> StatusError:
    return errors.forbidden("poddisruptionbudget", "policy", name, why)


def _can_ignore_pdb(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return (phase in ("Succeeded", "Failed", "Pending")
            or bool((pod.get("metadata") or {}).get("deletionTimestamp")))


def _should_enforce_resource_version(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return not (phase in ("Succeeded", "Failed")
                or bool((pod.get("metadata") or {}).get("deletionTimestamp")))


def _is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, StatusError) and exc.code == 409


def _delay(rest: RESTStorage) -> float:
    # the conflict retries' jitter, from the server's random source
    return _RETRY_DELAY * (1 + rest.rng.stream("eviction").random() * 0.1)  # upstream: Jitter 0.1


def check_eviction(body: Mapping[str, Any], name: str) -> None:
    """The Eviction's own checks before anything is read (400 / 422)."""
    meta = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    if meta.get("name", "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    opts = body.get("deleteOptions")
    if isinstance(opts, Mapping) and opts.get("ignoreStoreReadErrorWithClusterBreakingPotential"):
        raise errors.invalid("Eviction", "policy", name, [{
            "reason": "FieldValueInvalid",
            "message": "Invalid value: true: can not be set for pod eviction, try after removing "
                       "the option",
            "field": "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential"}])


def check_type_meta(body: dict[str, Any]) -> dict[str, Any]:
    """A body of another kind cannot be decoded as an Eviction (400 in the decoder's words);
    policy/v1 and policy/v1beta1 Evictions are accepted (and an untyped body)."""
    api_version, kind = str(body.get("apiVersion") or ""), str(body.get("kind") or "")
    if (kind or api_version) and (kind != "Eviction" or api_version not in EVICTION_API_VERSIONS):
        shown = kind or "Eviction"
        version = api_version.rsplit("/", 1)[-1] or "v1"
        raise errors.bad_request(
            f'{shown} in version "{version}" cannot be handled as a Eviction: converting '
            f"({version}.{shown}) to (policy.Eviction): unknown conversion")
    return body


def _dry_run_values(v: Any) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def _go_slice(values: list[str]) -> str:
    return "[" + " ".join(values) + "]"


def eviction_delete_options(body: Mapping[str, Any], query_dry_run: list[str]) -> DeleteOptions:
    """The Eviction's deleteOptions with the request's dryRun propagated (propagateDryRun)."""
    from pykcm.apiserver.registry.rest_storage import DeleteOptions

    raw = body.get("deleteOptions")
    raw = raw if isinstance(raw, Mapping) else {}
    in_body = _dry_run_values(raw.get("dryRun"))
    if in_body and query_dry_run and in_body != query_dry_run:
        raise errors.internal(f"Non-matching dry-run options in request and content: "
                              f"{_go_slice(query_dry_run)} and {_go_slice(in_body)}")
    opts = DeleteOptions()
    if raw.get("gracePeriodSeconds") is not None:
        grace = int(raw["gracePeriodSeconds"])
        opts.grace_period_seconds = 1 if grace < 0 else grace  # BeforeDelete's rule
    opts.propagation_policy = raw.get("propagationPolicy") or None
    if raw.get("orphanDependents") is not None:
        opts.orphan_dependents = bool(raw["orphanDependents"])
    pre = raw.get("preconditions")
    if isinstance(pre, Mapping):
        opts.precondition_uid = pre.get("uid")
        opts.precondition_rv = pre.get("resourceVersion")
    opts.dry_run = "All" in (in_body or query_dry_run)
    return opts


class _Eviction:
    """One eviction request (upstream EvictionREST.Create)."""

    def __init__(self, rest: RESTStorage, pods: ResourceInfo, pdbs: ResourceInfo | None,
                 namespace: str, name: str, opts: DeleteOptions) -> None:
        self.rest = rest
        self.pods = pods
        self.pdbs = pdbs
        self.ns = namespace
        self.name = name
        self.opts = opts

    def _pod(self) -> dict[str, Any]:
        entry = self.rest.get(self.pods, self.ns, self.name)
        pod: dict[str, Any] = orjson.loads(entry.raw)
        return pod

    async def run(self) -> dict[str, Any]:
        rv_unset = self.opts.precondition_rv is None
        pod: dict[str, Any] = {}
        for attempt in range(_RETRY_STEPS):
            pod = self._pod()
            if not _can_ignore_pdb(pod):
                break
            opts = self.opts
            if _should_enforce_resource_version(pod) and rv_unset:
                opts = copy.copy(opts)
                opts.precondition_rv = str(pod["metadata"].get("resourceVersion"))
            try:
                await self._add_condition_and_delete(opts)
            except StatusError as exc:
                if rv_unset and _is_conflict(exc) and attempt + 1 < _RETRY_STEPS:
                    await self.rest.clock.sleep(_delay(self.rest))
                    continue
                raise
            return dict(SUCCESS)
        budgets = self._budgets_of(pod)
        if len(budgets) > 1:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "This pod has more than one PodDisruptionBudget, which the "
                               "eviction subresource does not support.", "code": 500}
        enforce_rv = False
        if budgets:
            pdb = budgets[0]
            spec = pdb.get("spec") or {}
            st = pdb.get("status") or {}
            if not is_pod_ready(pod) and (
                    spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
                    or int(st.get("currentHealthy") or 0) >= int(st.get("desiredHealthy") or 0)
                    > 0):
                # the unready pod is not part of the budget's healthy count
                enforce_rv = True
            else:
                await self._check_and_decrement(pdb)
        opts = self.opts
        if enforce_rv:
            opts = copy.copy(opts)
            opts.precondition_rv = str(pod["metadata"].get("resourceVersion"))
        try:
            await self._add_condition_and_delete(opts)
        except StatusError as exc:
            if _is_conflict(exc) and enforce_rv and rv_unset:
                raise _still_processing(str(budgets[0]["metadata"]["name"])) from None
            raise
        return dict(SUCCESS)

    def _budgets_of(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The namespace's budgets whose selector matches the pod (invalid ones match none)."""
        if self.pdbs is None:
            return []
        from pykcm.apiserver.registry.rest_storage import ListOptions

        labels = (pod.get("metadata") or {}).get("labels") or {}
        out: list[dict[str, Any]] = []
        _, raws = self.rest.list_raw(self.pdbs, self.ns, ListOptions())
        for raw in raws:
            pdb = orjson.loads(raw)
            try:
                sel = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
            except SelectorParseError:
                continue
            if sel.matches(labels):
                out.append(pdb)
        return out

    async def _check_and_decrement(self, pdb: dict[str, Any]) -> None:
        """Verify the budget allows one more disruption and record it (conflicts retried on
        a fresh read)."""
        assert self.pdbs is not None
        name = str(pdb["metadata"]["name"])
        for attempt in range(_RETRY_STEPS):
            if attempt:
                entry = self.rest.get(self.pdbs, self.ns, name)
                pdb = orjson.loads(entry.raw)
            try:
                await self._decrement(pdb)
                return
            except StatusError as exc:
                if not _is_conflict(exc):
                    raise
            await self.rest.clock.sleep(_delay(self.rest))
        raise StatusError(504, "Timeout", f"couldn't update PodDisruptionBudget {go_quote(name)} "
                          "due to conflicts", details={"retryAfterSeconds": 10},
                          headers={"Retry-After": "10"})

    async def _decrement(self, pdb: dict[str, Any]) -> None:
        assert self.pdbs is not None
        name = str(pdb["metadata"]["name"])
        st = pdb.setdefault("status", {})
        if int(st.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
            raise _still_processing(name)
        allowed = int(st.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise _pdb_forbidden(name, "pdb disruptions allowed is negative")
        if len(st.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
            raise _pdb_forbidden(name, "DisruptedPods map too big - too many evictions not "
                                       "confirmed by PDB controller")
        if allowed == 0:
            raise _refusal(pdb)
        st["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            update_disruption_allowed_condition(st)
        if self.opts.dry_run:
            return
        disrupted = dict(st.get("disruptedPods") or {})
        disrupted[self.name] = format_time(self.rest.clock.now())
        st["disruptedPods"] = disrupted
        await self.rest.update(self.pdbs, self.ns, name, pdb, "status")

    async def _add_condition_and_delete(self, opts: DeleteOptions) -> None:
        """DisruptionTarget=True on the newest pod (preconditions checked against it), then
        the delete; the delete's resourceVersion precondition follows the condition's write."""
        if not opts.dry_run:
            pod = self._pod()
            meta = pod["metadata"]
            if opts.precondition_uid and opts.precondition_uid != meta.get("uid"):
                raise errors.conflict("Pod", "", self.name, (
                    f"the UID in the precondition ({opts.precondition_uid}) does not match the "
                    f"UID in record ({meta.get('uid')}). The object might have been deleted "
                    "and then recreated"))
            if opts.precondition_rv and opts.precondition_rv != str(meta.get("resourceVersion")):
                raise errors.conflict("Pod", "", self.name, (
                    f"the ResourceVersion in the precondition ({opts.precondition_rv}) does not "
                    f"match the ResourceVersion in record ({meta.get('resourceVersion')}). The "
                    "object might have been modified"))
            status = pod.setdefault("status", {})
            conditions = status.setdefault("conditions", [])
            now = format_time(self.rest.clock.now())
            new = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                   "lastTransitionTime": now, "reason": "EvictionByEvictionAPI",
                   "message": "Eviction API: evicting"}
            for i, c in enumerate(conditions):
                if c.get("type") == "DisruptionTarget":
                    if c.get("status") == "True":
                        new["lastTransitionTime"] = c.get("lastTransitionTime") or now
                    conditions[i] = new
                    break
            else:
                conditions.append(new)
            _, entry = await self.rest.update(self.pods, self.ns, self.name, pod, "status")
            if opts.precondition_rv is not None:
                opts = copy.copy(opts)
                opts.precondition_rv = str(entry.rv)
        await self.rest.delete(self.pods, self.ns, self.name, opts)


async def evict(rest: RESTStorage, pods: ResourceInfo, pdbs: ResourceInfo | None,
                namespace: str, name: str, body: Mapping[str, Any],
                query_dry_run: list[str]) -> tuple[int, dict[str, Any]]:
    """Evict ``namespace/name`` as ``body`` (a decoded Eviction) asks: (HTTP code, Status)."""
    check_eviction(body, name)
    opts = eviction_delete_options(body, query_dry_run)
    status = await _Eviction(rest, pods, pdbs, namespace, name, opts).run()
    return int(status["code"]), status
