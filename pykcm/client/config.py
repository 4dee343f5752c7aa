"""Client configuration: explicit, from kubeconfig files, or in-cluster.

`Config` is client-go's `rest.Config`: where the server is, how to trust it,
who we are, and how hard we may push (qps/burst, timeout, retries).

`load_kube_config()` reads kubeconfig files as kubectl does: the files of
`KUBECONFIG` (or `~/.kube/config`) are merged, the first file to define a
cluster, user or context name wins, and `current-context` comes from the first
file that sets it. Relative file paths in a file (certificate-authority,
client-certificate, client-key, tokenFile, an exec command with a path
separator) are resolved against that file's directory.

`load_incluster_config()` is client-go's `rest.InClusterConfig()`: the
service-account token (re-read as it rotates), CA and namespace mounted in
every pod, and the `kubernetes` Service's address from the environment.

Auth methods pykcm does not support (auth-provider plugins: oidc, gcp, azure)
fail with a `ConfigError` naming them.

A server's `Warning` headers (deprecated APIs, dropped fields) go to
`Config.warning_handler`: logged by default, as client-go's `WarningLogger`;
`no_warnings` drops them (client-go's `NoWarnings`).
"""

from __future__ import annotations

import base64
import binascii
import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from pykcm import __version__
from pykcm.client.exec_credential import (
    INTERACTIVE_MODES,
    SUPPORTED_API_VERSIONS,
    ExecConfig,
    ExecPluginError,
)

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "Config",
    "ConfigError",
    "TokenSource",
    "WarningHandler",
    "default_user_agent",
    "kube_config_from_dict",
    "load_config",
    "load_incluster_config",
    "load_kube_config",
    "no_warnings",
]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EXEC_EXTENSION_NAME = "client.authentication.k8s.io/exec"

PathArg = str | os.PathLike[str]

WarningHandler = Callable[[str], None]
"""Takes the text of one ``Warning`` header of a server's answer (client-go's
``rest.WarningHandler``)."""


def no_warnings(message: str) -> None:
    """A :data:`WarningHandler` that drops every warning (client-go's ``rest.NoWarnings``)."""


class TokenSource(Protocol):
    """A bearer token that changes over time (client-go's ``oauth2.TokenSource`` behind a
    ``ResettableTokenSourceWrapTransport``): ``token()`` the current one, fetched or
    refreshed as its source sees fit; ``reset()`` after a 401, so the next call fetches."""

    async def token(self) -> str: ...

    def reset(self) -> None: ...


class ConfigError(Exception):
    """The configuration cannot be used (missing, malformed, or unsupported)."""


def _go_arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "i386": "386", "i686": "386"}.get(
        machine, machine or "unknown")


def default_user_agent(component: str | None = None) -> str:
    """`pykcm/<version> (<os>/<arch>) <component>`, the component defaulting to argv[0]."""
    if component is None:
        component = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "pykcm"
    ua = f"pykcm/{__version__} ({platform.system().lower() or 'unknown'}/{_go_arch()})"
    return f"{ua} {component}" if component else ua


@dataclass
class Config:
    """How to reach and authenticate to an API server (client-go rest.Config)."""

    host: str
    # TLS: the CA to trust (PEM data or a file; neither: the system's roots),
    # or no verification at all; the name to verify the server's certificate for.
    ca_data: bytes | None = None
    ca_file: str | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    # Identity: a bearer token, or a token file re-read as it rotates (it wins
    # over `token`), basic auth, a client certificate, or an exec plugin.
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    client_cert_data: bytes | None = None
    client_cert_file: str | None = None
    client_key_data: bytes | None = None
    client_key_file: str | None = None
    exec_provider: ExecConfig | None = None
    # A token from code (a TokenRequest, ...): wins over every other credential.
    token_source: TokenSource | None = None
    # Impersonation (kubectl --as, --as-group, --as-uid).
    impersonate_user: str | None = None
    impersonate_uid: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    impersonate_extra: dict[str, list[str]] = field(default_factory=dict)
    proxy_url: str | None = None
    disable_compression: bool = False
    # Client-side rate limit: qps <= 0 is unlimited (the default for library use).
    qps: float = 0.0
    burst: int = 10
    user_agent: str | None = None
    # Per-request timeout in seconds (None: none); watches are exempt.
    timeout: float | None = None
    # Retries of 429 (any verb) and 5xx/connection errors (reads): client-go's.
    max_retries: int = 10
    # Connections for requests, kept alive and reused; a burst beyond them waits for
    # one (watches have their own, one each): pykcm.client.connections.
    max_connections_per_host: int = 25
    backoff_base: float = 1.0
    backoff_max: float = 10.0
    # The namespace of the context (or the pod, in cluster).
    namespace: str = "default"
    # What to do with the server's Warning headers (None: log each at WARNING level).
    warning_handler: WarningHandler | None = None

    def __post_init__(self) -> None:
        host = self.host.strip()
        if not host:
            raise ConfigError("no server host is set")
        if "://" not in host:
            host = "https://" + host
        self.host = host.rstrip("/")
        scheme = self.host.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            raise ConfigError(f"server {self.host!r}: unsupported scheme {scheme!r}")
        if self.insecure and (self.ca_data or self.ca_file):
            raise ConfigError("specifying a root certificates file with the insecure flag is "
                              "not allowed")
        if (self.client_cert_data or self.client_cert_file) and not (
                self.client_key_data or self.client_key_file):
            raise ConfigError("a client certificate is set without its key")
        if (self.client_key_data or self.client_key_file) and not (
                self.client_cert_data or self.client_cert_file):
            raise ConfigError("a client key is set without its certificate")
        if self.max_connections_per_host < 1:
            raise ConfigError(f"max_connections_per_host {self.max_connections_per_host}: "
                              "at least one connection is needed")
        if self.proxy_url and not self.proxy_url.lower().startswith(("http://", "https://")):
            raise ConfigError(f"proxy-url {self.proxy_url!r}: only http and https proxies are "
                              "supported")

    @property
    def is_tls(self) -> bool:
        return self.host.lower().startswith("https://")

    def read_ca_data(self) -> bytes | None:
        """The CA bundle as PEM bytes (read from ca_file if that is how it is given)."""
        if self.ca_data:
            return self.ca_data
        if self.ca_file:
            try:
                with open(self.ca_file, "rb") as f:
                    return f.read()
            except OSError as exc:
                raise ConfigError(f"reading certificate-authority {self.ca_file}: "
                                  f"{exc.strerror or exc}") from None
        return None


# -- kubeconfig ------------------------------------------------------------------------


def _kubeconfig_paths(path: PathArg | Sequence[PathArg] | None) -> tuple[list[str], bool]:
    """The files to merge, and whether they were given explicitly (then they must exist)."""
    if path is not None:
        if isinstance(path, (str, os.PathLike)):
            return [os.fspath(path)], True
        return [os.fspath(p) for p in path], True
    env = os.environ.get("KUBECONFIG", "")
    if env:
        paths: list[str] = []
        for p in env.split(os.pathsep):
            if p and p not in paths:
                paths.append(p)
        if paths:
            return paths, False
    return [os.path.join(os.path.expanduser("~"), ".kube", "config")], False


def _read_kubeconfig(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(f"reading kubeconfig {path}: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"kubeconfig {path}: invalid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path}: expected a mapping at the top level")
    return doc


def _resolve(base: str, p: Any) -> Any:
    if isinstance(p, str) and p and not os.path.isabs(p):
        p = os.path.expanduser(p)
        if not os.path.isabs(p):
            return os.path.normpath(os.path.join(base, p))
    return p


def _resolve_paths(doc: dict[str, Any], base: str) -> None:
    """Make a file's relative paths absolute against its own directory (in place)."""
    for entry in doc.get("clusters") or []:
        c = entry.get("cluster") if isinstance(entry, dict) else None
        if isinstance(c, dict) and c.get("certificate-authority"):
            c["certificate-authority"] = _resolve(base, c["certificate-authority"])
    for entry in doc.get("users") or []:
        u = entry.get("user") if isinstance(entry, dict) else None
        if not isinstance(u, dict):
            continue
        for key in ("client-certificate", "client-key", "tokenFile"):
            if u.get(key):
                u[key] = _resolve(base, u[key])
        ex = u.get("exec")
        if isinstance(ex, dict) and isinstance(ex.get("command"), str) and \
                os.sep in ex["command"]:
            ex["command"] = _resolve(base, ex["command"])


_NAMED_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


def merge_kubeconfigs(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Merge parsed kubeconfigs as kubectl does: the first definition of a name wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "preferences": {}}
    seen: dict[str, set[str]] = {s: set() for s, _ in _NAMED_SECTIONS}
    for doc in docs:
        if not merged.get("current-context") and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for section, _ in _NAMED_SECTIONS:
            for entry in doc.get(section) or []:
                if not isinstance(entry, dict) or not entry.get("name"):
                    continue
                name = str(entry["name"])
                if name in seen[section]:
                    continue
                seen[section].add(name)
                merged[section].append(entry)
        prefs = doc.get("preferences")
        if isinstance(prefs, dict):
            for k, v in prefs.items():
                merged["preferences"].setdefault(k, v)
    return merged


def load_kube_config(path: PathArg | Sequence[PathArg] | None = None,
                     context: str | None = None) -> Config:
    """A Config from kubeconfig files (`path`, else KUBECONFIG, else ~/.kube/config)."""
    paths, explicit = _kubeconfig_paths(path)
    docs: list[dict[str, Any]] = []
    for p in paths:
        if not explicit and not os.path.exists(p):
            continue  # kubectl skips missing KUBECONFIG entries
        doc = _read_kubeconfig(p)
        _resolve_paths(doc, os.path.dirname(os.path.abspath(p)))
        docs.append(doc)
    if not docs:
        raise ConfigError(f"no kubeconfig found (looked for {os.pathsep.join(paths)})")
    return kube_config_from_dict(merge_kubeconfigs(docs), context,
                                 source=os.pathsep.join(paths))


def _named(doc: dict[str, Any], section: str, key: str, name: str) -> dict[str, Any] | None:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(key)
            return value if isinstance(value, dict) else {}
    return None


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value).encode(), validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"{what}: invalid base64 data: {exc}") from None


def _check_file(path: str, what: str) -> None:
    if not os.access(path, os.R_OK):
        raise ConfigError(f"{what} {path}: cannot read the file")


def kube_config_from_dict(doc: Mapping[str, Any], context: str | None = None, *,
                          source: str = "kubeconfig") -> Config:
    """A Config from one parsed (already merged) kubeconfig."""
    data = dict(doc)
    ctx_name = context or data.get("current-context") or ""
    if not ctx_name:
        raise ConfigError(f"{source}: no context chosen: current-context is not set and no "
                          "context was given")
    ctx = _named(data, "contexts", "context", ctx_name)
    if ctx is None:
        raise ConfigError(f"{source}: context {ctx_name!r} not found")
    cluster_name = ctx.get("cluster") or ""
    if not cluster_name:
        raise ConfigError(f"{source}: context {ctx_name!r} names no cluster")
    cluster = _named(data, "clusters", "cluster", cluster_name)
    if cluster is None:
        raise ConfigError(f"{source}: cluster {cluster_name!r} (of context {ctx_name!r}) not "
                          "found")
    server = cluster.get("server") or ""
    if not server:
        raise ConfigError(f"{source}: cluster {cluster_name!r} has no server")
    user_name = ctx.get("user") or ""
    user: dict[str, Any] = {}
    if user_name:
        found = _named(data, "users", "user", user_name)
        if found is None:
            raise ConfigError(f"{source}: user {user_name!r} (of context {ctx_name!r}) not "
                              "found")
        user = found

    kw: dict[str, Any] = {"host": str(server), "namespace": ctx.get("namespace") or "default"}
    if cluster.get("certificate-authority-data"):
        kw["ca_data"] = _b64(cluster["certificate-authority-data"],
                             f"cluster {cluster_name!r} certificate-authority-data")
    elif cluster.get("certificate-authority"):
        _check_file(cluster["certificate-authority"],
                    f"cluster {cluster_name!r} certificate-authority")
        kw["ca_file"] = cluster["certificate-authority"]
    kw["insecure"] = bool(cluster.get("insecure-skip-tls-verify"))
    if cluster.get("tls-server-name"):
        kw["tls_server_name"] = str(cluster["tls-server-name"])
    if cluster.get("proxy-url"):
        kw["proxy_url"] = str(cluster["proxy-url"])
    kw["disable_compression"] = bool(cluster.get("disable-compression"))

    who = f"user {user_name!r}"
    ap = user.get("auth-provider")
    if ap:
        pname = ap.get("name") if isinstance(ap, dict) else None
        raise ConfigError(
            f"{source}: {who} authenticates with the auth-provider {pname or '(unnamed)'!r}, "
            "which pykcm does not support (auth-provider plugins such as oidc, gcp and azure "
            "were removed from client-go); use an exec credential plugin instead "
            "(for OIDC, e.g. kubelogin)")
    if user.get("token"):
        kw["token"] = str(user["token"]).strip()
    if user.get("tokenFile"):
        _check_file(user["tokenFile"], f"{who} tokenFile")
        kw["token_file"] = user["tokenFile"]
    if user.get("username") or user.get("password"):
        kw["username"] = str(user.get("username") or "")
        kw["password"] = str(user.get("password") or "")
    if user.get("client-certificate-data"):
        kw["client_cert_data"] = _b64(user["client-certificate-data"],
                                      f"{who} client-certificate-data")
    elif user.get("client-certificate"):
        _check_file(user["client-certificate"], f"{who} client-certificate")
        kw["client_cert_file"] = user["client-certificate"]
    if user.get("client-key-data"):
        kw["client_key_data"] = _b64(user["client-key-data"], f"{who} client-key-data")
    elif user.get("client-key"):
        _check_file(user["client-key"], f"{who} client-key")
        kw["client_key_file"] = user["client-key"]
    if user.get("as"):
        kw["impersonate_user"] = str(user["as"])
    if user.get("as-uid"):
        kw["impersonate_uid"] = str(user["as-uid"])
    if user.get("as-groups"):
        kw["impersonate_groups"] = tuple(str(g) for g in user["as-groups"])
    if user.get("as-user-extra"):
        kw["impersonate_extra"] = {str(k): [str(x) for x in (v or [])]
                                   for k, v in dict(user["as-user-extra"]).items()}
    ex = user.get("exec")
    if ex:
        kw["exec_provider"] = _exec_config(ex, cluster, who, source)
    try:
        return Config(**kw)
    except ConfigError as exc:
        raise ConfigError(f"{source}: context {ctx_name!r}: {exc}") from None


def _exec_config(ex: Any, cluster: dict[str, Any], who: str, source: str) -> ExecConfig:
    if not isinstance(ex, dict):
        raise ConfigError(f"{source}: {who}: exec must be a mapping")
    api_version = ex.get("apiVersion") or ""
    if api_version not in SUPPORTED_API_VERSIONS:
        raise ConfigError(
            f"{source}: {who}: exec plugin apiVersion {api_version!r} is not supported "
            f"(supported: {', '.join(SUPPORTED_API_VERSIONS)})")
    mode = ex.get("interactiveMode") or ""
    if not mode:
        if api_version.endswith("/v1"):
            raise ConfigError(f"{source}: {who}: exec plugin: interactiveMode must be specified "
                              f"for {api_version}")
        mode = "IfAvailable"
    if mode not in INTERACTIVE_MODES:
        raise ConfigError(f"{source}: {who}: exec plugin: invalid interactiveMode {mode!r}")
    env: list[tuple[str, str]] = []
    for item in ex.get("env") or []:
        if not isinstance(item, dict) or not item.get("name"):
            raise ConfigError(f"{source}: {who}: exec plugin env entries need a name")
        env.append((str(item["name"]), str(item.get("value") or "")))
    cluster_config = None
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, dict) and ext.get("name") == EXEC_EXTENSION_NAME:
            cluster_config = ext.get("extension")
    try:
        return ExecConfig(
            command=str(ex.get("command") or ""),
            args=tuple(str(a) for a in ex.get("args") or ()),
            env=tuple(env),
            api_version=api_version,
            install_hint=str(ex.get("installHint") or ""),
            provide_cluster_info=bool(ex.get("provideClusterInfo")),
            interactive_mode=mode,
            cluster_config=cluster_config,
        )
    except ExecPluginError as exc:
        raise ConfigError(f"{source}: {who}: {exc}") from None


# -- in-cluster ------------------------------------------------------------------------


def load_incluster_config(*, service_account_dir: str = SERVICE_ACCOUNT_DIR,
                          environ: Mapping[str, str] | None = None) -> Config:
    """The config of a pod: the kubernetes Service from the env, the mounted service account."""
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
                          "and KUBERNETES_SERVICE_PORT must be defined")
    token_path = os.path.join(service_account_dir, "token")
    try:
        with open(token_path) as f:
            token = f.read().strip()
    except OSError as exc:
        raise ConfigError(f"in-cluster configuration: reading the service account token "
                          f"{token_path}: {exc.strerror or exc}") from None
    if not token:
        raise ConfigError(f"in-cluster configuration: the service account token {token_path} "
                          "is empty")
    ca_path = os.path.join(service_account_dir, "ca.crt")
    ns_path = os.path.join(service_account_dir, "namespace")
    namespace = "default"
    try:
        with open(ns_path) as f:
            namespace = f.read().strip() or "default"
    except OSError:
        pass
    hostport = f"[{host}]:{port}" if ":" in host and not host.startswith("[") else \
        f"{host}:{port}"
    return Config(
        host=f"https://{hostport}",
        ca_file=ca_path if os.path.exists(ca_path) else None,
        token=token,
        token_file=token_path,
        namespace=namespace,
    )


def load_config(context: str | None = None) -> Config:
    """Kubeconfig when one is found (KUBECONFIG or ~/.kube/config), else in-cluster."""
    paths, _ = _kubeconfig_paths(None)
    if any(os.path.exists(p) for p in paths):
        return load_kube_config(None, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return load_incluster_config()
    raise ConfigError(f"no configuration found: no kubeconfig ({os.pathsep.join(paths)}) and "
                      "not running in a cluster (KUBERNETES_SERVICE_HOST is not set)")
