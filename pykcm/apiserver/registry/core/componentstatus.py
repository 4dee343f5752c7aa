"""core/v1 ComponentStatuses (kube-apiserver ``pkg/registry/core/componentstatus``): get and
list only, never stored; each request probes the components again.

Data flow: GET /api/v1/componentstatuses[/NAME] → :func:`component_statuses` probes every
component concurrently → one ComponentStatus per component (a single ``Healthy`` condition)
→ the handler answers them as a list (label and field selectors over the metadata only, as
upstream: a selector naming anything but the name filters everything out) or one object,
with the deprecation warning ``v1 ComponentStatus is deprecated in v1.19+``.

The components and their checks, as kube-apiserver's:

- ``controller-manager``: GET https://127.0.0.1:10257/healthz (certificate not verified),
  kube-controller-manager's default secure port, where ``pykcm controller-manager`` serves
  too;
- ``scheduler``: GET https://127.0.0.1:10259/healthz, kube-scheduler's default port;
- the HTTP probe's outcome as the kubelet's HTTP prober words it: a 2xx answer is Healthy
  with the body as message, another status ``HTTP probe failed with statuscode: N``, a
  refused connection Go's dial error (``Get "URL": dial tcp ...: connect: connection
  refused``), each of the latter Unhealthy with an empty ``error``.

Deliberate deviation: ``etcd-0``. pykcm has no etcd: its storage is SQLite (storage/). The
row keeps kube-apiserver's name and shape (so ``kubectl get cs`` and scripts that look for
``etcd-0`` read it as they would), and reports the storage's health instead of an etcd
probe: Healthy with message ``ok`` (etcd's) while the store takes writes, else Unhealthy
with the store's error in ``error``, as upstream reports a failed etcd probe. ``pykcm sim``
serves no scheduler health endpoint, so ``scheduler`` is Unhealthy under ``pykcm up``
unless a kube-scheduler runs there.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Mapping
from typing import Any, Final

import aiohttp

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

__all__ = ["DEPRECATION_WARNING", "HTTP_COMPONENTS", "ComponentStatusStrategy",
           "component_status", "component_statuses", "http_probe"]

DEPRECATION_WARNING: Final = "v1 ComponentStatus is deprecated in v1.19+"
# name -> the /healthz URL kube-apiserver probes (both listen on loopback by default)
HTTP_COMPONENTS: Final[Mapping[str, str]] = {
    "controller-manager": "https://127.0.0.1:10257/healthz",
    "scheduler": "https://127.0.0.1:10259/healthz",
}
STORAGE_COMPONENT: Final = "etcd-0"
# kube-apiserver's probeTimeOut
PROBE_TIMEOUT: Final = 20.0
# the HTTP prober reads at most 10 KiB of a body
_MAX_BODY: Final = 10 * 1024

Obj = dict[str, Any]


async def http_probe(url: str, timeout: float = PROBE_TIMEOUT) -> tuple[str, str, str]:
    """(condition status, message, error) of an HTTP health probe, as the kubelet's HTTP
    prober and componentstatus's HttpServer.DoServerCheck turn its outcome into them."""
    # (InsecureSkipVerify as upstream; no CA store loaded: that costs more than the probe)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        async with aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=timeout)) as session, \
                session.get(url, ssl=ctx, allow_redirects=False) as resp:
            body = (await resp.content.read(_MAX_BODY)).decode("utf-8", "replace")
            if 200 <= resp.status < 300:
                return "True", body, ""
            if 300 <= resp.status < 400:
                # probe.Warning: neither healthy nor unhealthy
                return "Unknown", f"Probe terminated redirects, Response body: {body}", ""
            return "False", f"HTTP probe failed with statuscode: {resp.status}", ""
    except (aiohttp.ClientConnectorError, OSError) as exc:
        return "False", f'Get "{url}": {_dial_error(url, exc)}', ""
    except TimeoutError:
        return "False", (f'Get "{url}": context deadline exceeded (Client.Timeout exceeded '
                         "while awaiting headers)"), ""
    except aiohttp.ClientError as exc:
        return "False", f'Get "{url}": {exc}', ""


def _dial_error(url: str, exc: BaseException) -> str:
    """Go's net.OpError text for a failed dial to the URL's host:port."""
    hostport = url.split("//", 1)[1].split("/", 1)[0]
    cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    if isinstance(cause, ConnectionRefusedError):
        return f"dial tcp {hostport}: connect: connection refused"
    return f"dial tcp {hostport}: {getattr(cause, 'strerror', None) or cause}"


def component_status(name: str, status: str, message: str, error: str) -> Obj:
    """One ComponentStatus as kube-apiserver serializes it (empty message and error left
    out: omitempty)."""
    cond: Obj = {"type": "Healthy", "status": status}
    if message:
        cond["message"] = message
    if error:
        cond["error"] = error
    return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
            "conditions": [cond]}


def _storage_status(storage_error: Callable[[], str | None]) -> Obj:
    err = storage_error()
    if err is None:
        return component_status(STORAGE_COMPONENT, "True", "ok", "")
    return component_status(STORAGE_COMPONENT, "False", "", err)


async def component_statuses(storage_error: Callable[[], str | None],
                             name: str | None = None) -> list[Obj]:
    """The ComponentStatuses (only ``name``'s when given; none for an unknown name), the
    HTTP components probed concurrently. Upstream's list order is the order its probes
    finish; this one is fixed: the HTTP components in their table's order, then storage."""
    names = [n for n in (*HTTP_COMPONENTS, STORAGE_COMPONENT) if name is None or n == name]
    probes = [http_probe(HTTP_COMPONENTS[n]) for n in names if n in HTTP_COMPONENTS]
    results = iter(await asyncio.gather(*probes))
    out = []
    for n in names:
        if n == STORAGE_COMPONENT:
            out.append(_storage_status(storage_error))
        else:
            out.append(component_status(n, *next(results)))
    return out


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Status", "string", "Status of the component conditions"),
    pr.column("Message", "string", "Message of the component conditions"),
    pr.column("Error", "string", "Error of the component conditions"),
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    status, message, error = "Unknown", "", ""
    for c in pr.as_list(obj.get("conditions")):
        c = pr.as_dict(c)
        if c.get("type") == "Healthy":
            status = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message, error = pr.as_str(c.get("message")), pr.as_str(c.get("error"))
            break
    return pr.Row([pr.object_name(obj), status, message, error])


@register
class ComponentStatusStrategy(Strategy):
    """Only the printer: nothing is written."""

    group = ""
    kind = "ComponentStatus"
    printer = pr.Printer(_COLUMNS, _row)
