"""Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1).

As client-go's `plugin/pkg/client/auth/exec`: the configured command runs with
its args and env plus `KUBERNETES_EXEC_INFO` (an ExecCredential whose spec says
whether the plugin may interact with the user, and the cluster when
`provideClusterInfo` is set); it prints an ExecCredential whose status holds a
bearer token or a client certificate and key, and maybe an expiry. The answer
is cached until it expires (for ever when it has no expiry); a 401 answered to
a request made with the cached credential runs the plugin again.

`interactiveMode: Never` runs the plugin with no stdin, which needs no TTY;
`IfAvailable` passes stdin through only when it is a terminal; `Always` fails
when there is none.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from pykcm.api.clock import REAL_CLOCK

__all__ = [
    "SUPPORTED_API_VERSIONS",
    "ExecConfig",
    "ExecCredential",
    "ExecCredentialProvider",
    "ExecPluginError",
]

SUPPORTED_API_VERSIONS: tuple[str, ...] = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
)
INTERACTIVE_MODES: tuple[str, ...] = ("Never", "IfAvailable", "Always")


class ExecPluginError(Exception):
    """The exec credential plugin could not run or gave an unusable answer."""


@dataclass(frozen=True)
class ExecConfig:
    """A kubeconfig `user.exec` stanza."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"
    # The cluster's `extensions` entry named client.authentication.k8s.io/exec,
    # passed to the plugin as spec.cluster.config.
    cluster_config: Any = None

    def __post_init__(self) -> None:
        if not self.command:
            raise ExecPluginError("exec plugin: no command is set")
        if self.api_version not in SUPPORTED_API_VERSIONS:
            raise ExecPluginError(
                f"exec plugin: unsupported apiVersion {self.api_version!r} (supported: "
                f"{', '.join(SUPPORTED_API_VERSIONS)})")
        if self.interactive_mode not in INTERACTIVE_MODES:
            raise ExecPluginError(
                f"exec plugin: invalid interactiveMode {self.interactive_mode!r} (valid: "
                f"{', '.join(INTERACTIVE_MODES)})")


@dataclass(frozen=True)
class ExecCredential:
    """What the plugin returned: a token, or a client certificate and key (PEM)."""

    token: str | None = None
    client_certificate_data: bytes | None = None
    client_key_data: bytes | None = None
    # Seconds since the epoch; None: valid until the server says otherwise.
    expiration: float | None = None
    # Identity for "is this the credential that got the 401?" (not a value check:
    # a plugin may well return the same token twice).
    serial: int = field(default=0, compare=False)

    @property
    def has_certificate(self) -> bool:
        return self.client_certificate_data is not None


def _parse_time(value: str) -> float:
    v = value.strip()
    if v.endswith(("Z", "z")):
        v = v[:-1] + "+00:00"
    dt = datetime.datetime.fromisoformat(v)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.UTC)
    return dt.timestamp()


def parse_exec_credential(stdout: bytes, api_version: str) -> ExecCredential:
    """Decode a plugin's stdout into an ExecCredential (raises ExecPluginError)."""
    try:
        doc = orjson.loads(stdout)
    except orjson.JSONDecodeError as exc:
        raise ExecPluginError(f"exec plugin: decoding stdout: {exc}") from None
    if not isinstance(doc, dict):
        raise ExecPluginError("exec plugin: decoding stdout: not a JSON object")
    got = doc.get("apiVersion")
    if got != api_version:
        raise ExecPluginError(
            f"exec plugin is configured to use API version {api_version}, plugin returned "
            f"version {got}")
    if doc.get("kind") not in ("ExecCredential", None):
        raise ExecPluginError(f"exec plugin: expected kind ExecCredential, got {doc.get('kind')}")
    status = doc.get("status")
    if not isinstance(status, dict):
        raise ExecPluginError("exec plugin didn't return a status field")
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if (cert is None) != (key is None):
        raise ExecPluginError("exec plugin returned only certificate or key, not both")
    if token is None and cert is None:
        raise ExecPluginError("exec plugin didn't return a token or cert/key pair")
    expiration = None
    if status.get("expirationTimestamp"):
        try:
            expiration = _parse_time(str(status["expirationTimestamp"]))
        except ValueError:
            raise ExecPluginError(
                "exec plugin: invalid expirationTimestamp "
                f"{status['expirationTimestamp']!r}") from None
    return ExecCredential(
        token=str(token) if token is not None else None,
        client_certificate_data=str(cert).encode() if cert is not None else None,
        client_key_data=str(key).encode() if key is not None else None,
        expiration=expiration,
    )


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


class ExecCredentialProvider:
    """Runs the plugin when needed and caches its answer until it expires."""

    def __init__(
        self,
        config: ExecConfig,
        *,
        cluster: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = REAL_CLOCK.now,
        stdin_is_tty: Callable[[], bool] = _stdin_is_tty,
    ) -> None:
        self.config = config
        # spec.cluster as client.authentication.k8s.io names its fields.
        self._cluster = dict(cluster) if cluster is not None else None
        self._clock = clock
        self._stdin_is_tty = stdin_is_tty
        self._cached: ExecCredential | None = None
        self._lock = asyncio.Lock()
        self._serial = 0
        self.exec_count = 0

    def _expired(self, cred: ExecCredential) -> bool:
        return cred.expiration is not None and self._clock() >= cred.expiration

    async def get(self) -> ExecCredential:
        """The cached credential, or a fresh one when none is cached or it expired."""
        cred = self._cached
        if cred is not None and not self._expired(cred):
            return cred
        async with self._lock:
            cred = self._cached
            if cred is not None and not self._expired(cred):
                return cred
            cred = await self._run()
            self._cached = cred
            return cred

    async def refresh(self, used: ExecCredential | None) -> ExecCredential:
        """After a 401: run the plugin again unless another caller already did."""
        async with self._lock:
            cred = self._cached
            if cred is not None and used is not None and cred.serial != used.serial and \
                    not self._expired(cred):
                return cred
            cred = await self._run()
            self._cached = cred
            return cred

    def invalidate(self) -> None:
        self._cached = None

    def exec_info(self, interactive: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {"interactive": interactive}
        if self.config.provide_cluster_info and self._cluster is not None:
            cluster = dict(self._cluster)
            if self.config.cluster_config is not None:
                cluster["config"] = self.config.cluster_config
            spec["cluster"] = cluster
        return {"kind": "ExecCredential", "apiVersion": self.config.api_version, "spec": spec}

    async def _run(self) -> ExecCredential:
        cfg = self.config
        tty = self._stdin_is_tty()
        if cfg.interactive_mode == "Always" and not tty:
            raise ExecPluginError(
                f"exec plugin {cfg.command!r} cannot run: interactiveMode is Always but "
                "standard input is not a terminal")
        interactive = tty and cfg.interactive_mode != "Never"
        env = dict(os.environ)
        env.update(dict(cfg.env))
        env["KUBERNETES_EXEC_INFO"] = orjson.dumps(self.exec_info(interactive)).decode()
        try:
            proc = await asyncio.create_subprocess_exec(
                cfg.command, *cfg.args, env=env,
                stdin=None if interactive else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=None)
        except FileNotFoundError:
            hint = f"\n\n{cfg.install_hint}" if cfg.install_hint else ""
            raise ExecPluginError(f"exec: executable {cfg.command} not found{hint}") from None
        except PermissionError as exc:
            raise ExecPluginError(f"exec: executable {cfg.command} cannot run: {exc}") from None
        stdout, _ = await proc.communicate()
        self.exec_count += 1
        if proc.returncode != 0:
            raise ExecPluginError(
                f"exec: executable {cfg.command} failed with exit code {proc.returncode}")
        cred = parse_exec_credential(stdout, cfg.api_version)
        self._serial += 1
        return ExecCredential(cred.token, cred.client_certificate_data, cred.client_key_data,
                              cred.expiration, serial=self._serial)


def cluster_info(server: str, *, ca_data: bytes | None = None, tls_server_name: str | None = None,
                 insecure: bool = False, proxy_url: str | None = None,
                 disable_compression: bool = False) -> dict[str, Any]:
    """spec.cluster of KUBERNETES_EXEC_INFO for a cluster (client.authentication.k8s.io)."""
    out: dict[str, Any] = {"server": server}
    if tls_server_name:
        out["tls-server-name"] = tls_server_name
    if insecure:
        out["insecure-skip-tls-verify"] = True
    if ca_data:
        out["certificate-authority-data"] = base64.b64encode(ca_data).decode()
    if proxy_url:
        out["proxy-url"] = proxy_url
    if disable_compression:
        out["disable-compression"] = True
    return out
