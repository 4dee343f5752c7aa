"""pods/log, exec, attach and portforward: proxied to the kubelet of the pod's node.

Role: kube-apiserver's connect subresources of pods (LogREST, ExecREST,
AttachREST, PortForwardREST): check the pod and the container, find the pod's node's kubelet
(``status.addresses`` and ``status.daemonEndpoints.kubeletEndpoint.Port``) and
proxy the request to the kubelet's API (``/containerLogs``, ``/exec``,
``/attach``, ``/portForward``), streaming the answer.

Data flow::

    GET .../pods/NAME/log?container&follow&previous&timestamps&tailLines...
        pod (404 if missing) ─► container (the only one, or 400) ─► node ─► kubelet URL
        ─► GET http://HOST:PORT/containerLogs/NS/NAME/CONTAINER?... streamed back
           (the kubelet's non-200 answer becomes a 400 BadRequest with its text, as
           users see "container ... is waiting to start: ContainerCreating")
    GET .../pods/NAME/exec|attach?command&stdin&stdout&stderr&tty  (websocket upgrade)
        ─► websocket to http://HOST:PORT/exec|attach/NS/NAME/CONTAINER?... with the
           client's channel subprotocol (v5.channel.k8s.io first, as kubectl v1.36
           asks), then messages piped both ways until either side closes
    GET .../pods/NAME/portforward  (websocket upgrade, SPDY/3.1+portforward.k8s.io)
        ─► websocket to http://HOST:PORT/portForward/NS/NAME, binary messages (kubectl's
           SPDY frames) piped both ways

Deliberate deviations from kube-apiserver:

- the kubelet is spoken to over plain HTTP, unauthenticated (kube-apiserver uses
  HTTPS and its kubelet client certificate): the kubelets this proxy is for
  are pykcm's simulated ones (pykcm.sim.kubelet_server), which serve HTTP;
- the node's address is picked in the order InternalDNS, Hostname, InternalIP,
  ExternalDNS, ExternalIP (kube-apiserver's default
  ``--kubelet-preferred-address-types`` puts Hostname first): simulated nodes
  publish their kubelet as InternalDNS ``localhost`` while their Hostname is
  the node's name, which does not resolve;
- only websockets (no SPDY upgrade: kubectl v1.36 falls back to SPDY only
  when the websocket upgrade is refused); for port-forward kube-apiserver
  unwraps kubectl's websocket tunnel and speaks SPDY to the kubelet, pykcm
  passes the tunnel's messages through to the simulated kubelet, which reads
  the SPDY frames itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp import WSMsgType, web

from pykcm.api.resources import ResourceRegistry
from pykcm.apiserver import errors
from pykcm.apiserver.endpoints.request_info import RequestInfo
from pykcm.apiserver.registry.rest_storage import RESTStorage

__all__ = ["PROXIED_SUBRESOURCES", "handles", "serve"]

PROXIED_SUBRESOURCES: Final = frozenset({"log", "exec", "attach", "portforward"})
CHANNEL_PROTOCOLS: Final = ("v5.channel.k8s.io", "v4.channel.k8s.io")
PORT_FORWARD_PROTOCOLS: Final = ("SPDY/3.1+portforward.k8s.io",)
ADDRESS_PREFERENCE: Final = ("InternalDNS", "Hostname", "InternalIP", "ExternalDNS",
                             "ExternalIP")
_LOG_PARAMS: Final = ("follow", "previous", "timestamps", "tailLines", "sinceSeconds",
                      "sinceTime", "limitBytes")
_STREAM_PARAMS: Final = ("command", "stdin", "stdout", "stderr", "tty")


def handles(info: RequestInfo) -> bool:
    return (info.resource == "pods" and not info.group and info.version == "v1"
            and info.subresource in PROXIED_SUBRESOURCES and bool(info.name))


def _container(pod: Mapping[str, Any], wanted: str) -> str:
    """The container named, or the only one (kube-apiserver's messages otherwise)."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name", "")
    containers = [c.get("name", "") for c in spec.get("containers") or ()]
    inits = [c.get("name", "") for c in spec.get("initContainers") or ()]
    ephemeral = [c.get("name", "") for c in spec.get("ephemeralContainers") or ()]
    if not wanted:
        if len(containers) == 1:
            return str(containers[0])
        msg = (f"a container name must be specified for pod {name}, choose one of: "
               f"[{' '.join(containers)}]")
        if inits:
            msg += f" or one of the init containers: [{' '.join(inits)}]"
        if ephemeral:
            msg += f" or one of the ephemeral containers: [{' '.join(ephemeral)}]"
        raise errors.bad_request(msg)
    if wanted not in (*containers, *inits, *ephemeral):
        raise errors.bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _kubelet_base(node: Mapping[str, Any]) -> str:
    status = node.get("status") or {}
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    by_type: dict[str, str] = {}
    for a in status.get("addresses") or ():
        by_type.setdefault(a.get("type", ""), a.get("address", ""))
    host = next((by_type[t] for t in ADDRESS_PREFERENCE if by_type.get(t)), "")
    name = (node.get("metadata") or {}).get("name", "")
    if not host or not port:
        raise errors.bad_request(f'no preferred addresses found; known addresses: '
                                 f'{list(by_type.items())} for node "{name}"')
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{int(port)}"


async def serve(request: web.Request, info: RequestInfo, rest: RESTStorage,
                registry: ResourceRegistry) -> web.StreamResponse:
    pods = registry.get("", "v1", "pods")
    nodes = registry.get("", "v1", "nodes")
    assert pods is not None and nodes is not None
    pod = rest.get(pods, info.namespace, info.name).obj
    sub = info.subresource
    container = "" if sub == "portforward" else _container(pod, request.query.get(
        "container", ""))
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        if sub == "log":
            return web.Response(status=200, content_type="text/plain", body=b"")
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    node = rest.get(nodes, "", node_name).obj
    base = _kubelet_base(node)
    if sub == "portforward":
        path = "/".join(quote(p, safe="") for p in (info.namespace, info.name))
        return await _proxy_stream(request, f"{base}/portForward/{path}",
                                   PORT_FORWARD_PROTOCOLS)
    path = "/".join(quote(p, safe="") for p in (info.namespace, info.name, container))
    if sub == "log":
        q = [(k, v) for k in _LOG_PARAMS for v in request.query.getall(k, [])]
        return await _proxy_log(request, f"{base}/containerLogs/{path}?{urlencode(q)}")
    q = [(k, v) for k in _STREAM_PARAMS for v in request.query.getall(k, [])]
    return await _proxy_stream(request, f"{base}/{sub}/{path}?{urlencode(q)}",
                               CHANNEL_PROTOCOLS)


async def _proxy_log(request: web.Request, url: str) -> web.StreamResponse:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        try:
            upstream = await session.get(url)
        except aiohttp.ClientError as e:
            raise errors.internal(f"Get \"{url}\": {e}") from None
        async with upstream:
            if upstream.status != 200:
                text = (await upstream.text()).strip()
                raise errors.bad_request(text or f"the kubelet answered {upstream.status}")
            resp = web.StreamResponse(status=200)
            resp.content_type = "text/plain"
            await resp.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await resp.write(chunk)
            except (ConnectionError, aiohttp.ClientError, asyncio.CancelledError):
                return resp  # the client or the kubelet left: the stream simply ends
            await resp.write_eof()
            return resp


async def _proxy_stream(request: web.Request, url: str, protocols: tuple[str, ...]
                        ) -> web.StreamResponse:
    client = web.WebSocketResponse(protocols=protocols, autoping=True)
    if not client.can_prepare(request).ok:
        raise errors.bad_request("Upgrade request required")
    offered = [p.strip() for h in request.headers.getall("Sec-WebSocket-Protocol", [])
               for p in h.split(",") if p.strip() in protocols]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session:
        try:
            upstream = await session.ws_connect(url, protocols=offered or protocols,
                                                autoping=True, max_msg_size=0)
        except aiohttp.WSServerHandshakeError as e:
            raise errors.bad_request(f"unable to upgrade connection: {e.message}") from None
        except aiohttp.ClientError as e:
            raise errors.internal(f"error dialing backend: {e}") from None
        async with upstream:
            if upstream.protocol:
                client = web.WebSocketResponse(protocols=(upstream.protocol,), autoping=True,
                                               max_msg_size=0)
            await client.prepare(request)
            await _pipe(client, upstream)
    return client


async def _pipe(client: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse
                ) -> None:
    async def up() -> None:
        async for msg in client:
            if msg.type == WSMsgType.BINARY:
                await upstream.send_bytes(msg.data)
            elif msg.type == WSMsgType.TEXT:
                await upstream.send_str(msg.data)
            else:
                break

    async def down() -> None:
        async for msg in upstream:
            if msg.type == WSMsgType.BINARY:
                await client.send_bytes(msg.data)
            elif msg.type == WSMsgType.TEXT:
                await client.send_str(msg.data)
            else:
                break

    tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
    try:
        # the kubelet closing ends the exec; the client closing ends it too
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        await upstream.close()
        await client.close()
