"""Mutating admission: the default kube-apiserver v1.36 plugins pykcm reproduces.

kube-apiserver runs its mutating admission plugins on a write after the body
is decoded and defaulted and before the object is validated; rest_storage
calls :func:`admit` at that point (create, update; not on subresources), and
on a pod create first awaits :func:`service_account` (its lookup may wait).

Reproduced, because clients see their effect on every pod:

- **ServiceAccount** (pods, create only; mirror pods are checked, never
  changed): ``spec.serviceAccountName`` (and its alias ``serviceAccount``)
  defaults to ``default``; the account must exist, else 403 ``error looking
  up service account <ns>/<name>: serviceaccount "<name>" not found`` (a
  missing ``default`` is looked for ten times 100-200 ms apart first, as
  upstream gives the serviceaccount controller a moment). When
  ``automountServiceAccountToken`` (the pod's, else the account's, else true)
  allows, every init container and container without a mount at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` mounts a projected volume
  ``kube-api-access-<5 random>`` (token for 3607 s, the ``kube-root-ca.crt``
  ConfigMap's ``ca.crt``, the namespace from the downward API); a pod without
  image pull secrets gets the account's; an account annotated
  ``kubernetes.io/enforce-mountable-secrets: "true"`` limits the secrets the
  pod may reference to its own. Updates are not touched (ephemeral
  containers, the one update upstream checks, are not served). One order
  differs: a pod with neither name nor generateName is refused for that (422)
  before its account is looked up (upstream's name check comes after admission).

- **DefaultTolerationSeconds** (pods, create and update): a pod that does not
  tolerate the ``node.kubernetes.io/not-ready`` / ``unreachable`` NoExecute
  taints gets a toleration of each for 300 s.
- Priority (pods' priority from the stored PriorityClasses) is priority.py's.

Deliberately not reproduced (see tests/differential/apiserver/allowlist.yaml):
TaintNodesByCondition (its not-ready
taint on new Nodes needs the node lifecycle controller to lift it: the
simulator runs on this server without any controller manager in tests and
``pykcm up --no-controller-manager``, where its nodes would never take pods) and
PodSecurity (namespace labels are not enforced). LimitRanger and ResourceQuota are in
validating.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.randomness import RandomSource, random_of
from pykcm.api.resources import ResourceInfo
from pykcm.api.serviceaccount import WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS, pod_secret_names
from pykcm.apiserver import errors

__all__ = ["admit", "service_account"]

DEFAULT_TOLERATION_SECONDS: Final = 300
NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"


def admit(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
          subresource: str = "", name: str | None = None) -> None:
    """Run the mutating plugins on `obj` (old is None on create); raises StatusError.

    ``name`` is the name errors give (on a create: the requested name, else the
    generateName, as the name is generated after admission).
    """
    if info.group or info.kind != "Pod" or subresource:
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    _default_toleration_seconds(spec)


# -- ServiceAccount ------------------------------------------------------------------------

DEFAULT_SERVICE_ACCOUNT: Final = "default"
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
TOKEN_VOLUME_PREFIX: Final = "kube-api-access-"
TOKEN_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
ENFORCE_MOUNTABLE_SECRETS: Final = "kubernetes.io/enforce-mountable-secrets"

ServiceAccountLookup = Callable[[str], dict[str, Any] | None]


async def service_account(obj: dict[str, Any], namespace: str, name: str,
                          lookup: ServiceAccountLookup,
                          sleep: Callable[[float], Awaitable[None]] = REAL_CLOCK.sleep,
                          rng: RandomSource | None = None) -> None:
    """The ServiceAccount plugin on a pod create (``lookup(name)``: the namespace's account
    of that name, or None); raises 403 StatusError. Its retries wait in real time: they
    wait for the serviceaccount controller's write (I/O progress), not for cluster time.
    ``rng`` (the server's, unseeded by default) draws the retry interval and the token
    volume's name suffix."""
    rng = random_of(rng)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    meta = obj.get("metadata") or {}
    if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
        _validate_mirror_pod(spec, name)
        return
    sa_name = str(spec.get("serviceAccountName") or "")
    if not sa_name:
        sa_name = spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
    sa = await _get_service_account(sa_name, lookup, sleep, rng)
    if sa is None:
        raise _forbidden(name, f"error looking up service account {namespace}/{sa_name}: "
                               f'serviceaccount "{sa_name}" not found')
    if _should_automount(sa, spec):
        _mount_token(spec, rng)
    if not spec.get("imagePullSecrets"):
        pulls = [{"name": str((r or {}).get("name") or "")}
                 for r in sa.get("imagePullSecrets") or [] if isinstance(r, dict)]
        if pulls:
            spec["imagePullSecrets"] = pulls
    if _enforce_mountable_secrets(sa):
        why = _limit_secret_references(sa, spec)
        if why:
            raise _forbidden(name, why)


async def _get_service_account(sa_name: str, lookup: ServiceAccountLookup,
                               sleep: Callable[[float], Awaitable[None]], rng: RandomSource
                               ) -> dict[str, Any] | None:
    """The lister, then direct reads: ten for ``default`` (its controller may be about to
    create it), one otherwise, one random 100-200 ms interval apart."""
    sa = lookup(sa_name)
    if sa is not None:
        return sa
    attempts = 10 if sa_name == DEFAULT_SERVICE_ACCOUNT else 1
    interval = rng.uniform(0.1, 0.2)
    for i in range(attempts):
        if i:
            await sleep(interval)
        sa = lookup(sa_name)
        if sa is not None:
            return sa
    return None


def _should_automount(sa: dict[str, Any], spec: dict[str, Any]) -> bool:
    pod_pref = spec.get("automountServiceAccountToken")
    if isinstance(pod_pref, bool):
        return pod_pref
    sa_pref = sa.get("automountServiceAccountToken")
    if isinstance(sa_pref, bool):
        return sa_pref
    return True


def token_volume_source() -> dict[str, Any]:
    """TokenVolumeSource: the projected volume of a pod's service-account token."""
    return {"sources": [
        {"serviceAccountToken": {"expirationSeconds": WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS,
                                 "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt",
                                                              "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ], "defaultMode": 420}


def _mount_token(spec: dict[str, Any], rng: RandomSource) -> None:
    """mountServiceAccountToken: the volume (reused if the pod has one already) and a mount
    in every (init) container without one at the token path."""
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    assert isinstance(volumes, list)
    volume_name = ""
    for v in volumes:
        if isinstance(v, dict) and str(v.get("name") or "").startswith(TOKEN_VOLUME_PREFIX):
            volume_name = v["name"]
            break
    has_volume = bool(volume_name)
    if not volume_name:
        volume_name = TOKEN_VOLUME_PREFIX + rng.name_suffix()
    needs_volume = False
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            if not isinstance(c, dict):
                continue
            mounts = c.get("volumeMounts") if isinstance(c.get("volumeMounts"), list) else []
            assert isinstance(mounts, list)
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH
                   for m in mounts):
                continue
            c["volumeMounts"] = [*mounts, {"name": volume_name, "readOnly": True,
                                           "mountPath": TOKEN_MOUNT_PATH}]
            needs_volume = True
    if not has_volume and needs_volume:
        spec["volumes"] = [*volumes, {"name": volume_name, "projected": token_volume_source()}]


def _enforce_mountable_secrets(sa: dict[str, Any]) -> bool:
    value = ((sa.get("metadata") or {}).get("annotations") or {}).get(ENFORCE_MOUNTABLE_SECRETS)
    # strconv.ParseBool; an unparsable value is false
    return value in ("1", "t", "T", "TRUE", "true", "True")


def _limit_secret_references(sa: dict[str, Any], spec: dict[str, Any]) -> str:
    """limitSecretReferences: the first reference the account does not allow, as a message."""
    sa_name = str((sa.get("metadata") or {}).get("name") or "")
    mountable = {str((r or {}).get("name") or "") for r in sa.get("secrets") or []
                 if isinstance(r, dict)}
    for v in spec.get("volumes") or []:
        secret = (v or {}).get("secret") if isinstance(v, dict) else None
        if isinstance(secret, dict):
            name = str(secret.get("secretName") or "")
            if name not in mountable:
                return (f'volume with secret.secretName="{name}" is not allowed because service '
                        f"account {sa_name} does not reference that secret")
    for key, what in (("initContainers", "init container"), ("containers", "container")):
        for c in spec.get(key) or []:
            if not isinstance(c, dict):
                continue
            cname = c.get("name") or ""
            for env in c.get("env") or []:
                ref = ((env or {}).get("valueFrom") or {}).get("secretKeyRef")
                if isinstance(ref, dict) and str(ref.get("name") or "") not in mountable:
                    return (f"{what} {cname} with envVar {env.get('name') or ''} referencing "
                            f'secret.secretName="{ref.get("name") or ""}" is not allowed because '
                            f"service account {sa_name} does not reference that secret")
            for env in c.get("envFrom") or []:
                ref = (env or {}).get("secretRef")
                if isinstance(ref, dict) and str(ref.get("name") or "") not in mountable:
                    return (f"{what} {cname} with envFrom referencing "
                            f'secret.secretName="{ref.get("name") or ""}" is not allowed because '
                            f"service account {sa_name} does not reference that secret")
    pulls = {str((r or {}).get("name") or "") for r in sa.get("imagePullSecrets") or []
             if isinstance(r, dict)}
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        name = str((ref or {}).get("name") or "") if isinstance(ref, dict) else ""
        if name not in pulls:
            return (f'imagePullSecrets[{i}].name="{name}" is not allowed because service '
                    f"account {sa_name} does not reference that imagePullSecret")
    return ""


def _validate_mirror_pod(spec: dict[str, Any], name: str) -> None:
    """Mirror pods (a kubelet's static pods) are never changed and may reference no account,
    no secret and no projected token."""
    if spec.get("serviceAccountName"):
        raise _forbidden(name, "a mirror pod may not reference service accounts")
    if pod_secret_names({"spec": spec}):
        raise _forbidden(name, "a mirror pod may not reference secrets")
    for v in spec.get("volumes") or []:
        for src in ((v or {}).get("projected") or {}).get("sources") or []:
            if isinstance(src, dict) and src.get("serviceAccountToken") is not None:
                raise _forbidden(name, "a mirror pod may not use ServiceAccountToken volume "
                                       "projections")


def _default_toleration_seconds(spec: dict[str, Any]) -> None:
    tolerations = spec.get("tolerations")
    items = [t for t in tolerations if isinstance(t, dict)] if isinstance(tolerations, list) \
        else []
    not_ready = unreachable = False
    for t in items:
        key, effect = t.get("key") or "", t.get("effect") or ""
        if effect in ("NoExecute", ""):
            not_ready = not_ready or key in (NOT_READY, "")
            unreachable = unreachable or key in (UNREACHABLE, "")
    added = [{"key": k, "operator": "Exists", "effect": "NoExecute",
              "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for k, tolerated in ((NOT_READY, not_ready), (UNREACHABLE, unreachable))
             if not tolerated]
    if added:
        spec["tolerations"] = [*(tolerations if isinstance(tolerations, list) else []), *added]


def _forbidden(name: str, why: str) -> errors.StatusError:
    return errors.forbidden("pods", "", name, why)
