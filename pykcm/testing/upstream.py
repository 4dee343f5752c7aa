"""The real Kubernetes v1.36 control plane in tests: the oracle pykcm is measured against.

A *kit* (``kube-v1.36``: ``control-plane`` script, the real kube-apiserver,
etcd, kube-controller-manager and client-go's ``informerbench``) starts a
real control plane on free loopback ports in about 4 s. This module finds the
kit and runs its pieces beside pykcm's:

    kit = find_kit()                       # PYKCM_KUBE_KIT, else beside the repository
    with kit.control_plane(tmp_dir) as cp:  # etcd + kube-apiserver (+ kcm on request)
        cp.kubeconfig_path, cp.url, cp.token, cp.ca_file

    KubeControllerManager(kit, kubeconfig, work_dir, controllers=[...])  # the real one, any server
    KubeCluster(kit, work_dir)   # the real API server + pykcm's controller manager + pykcm sim

Where the kit is looked for, first hit wins: ``$PYKCM_KUBE_KIT`` (``none``:
nowhere); a
``shared/kube-v1.36`` beside an ancestor of the working directory or of this
package (a checkout next to ``shared/``); the same beside the repository
this checkout was cloned from (a local ``git clone`` of such a checkout).

Deliberate choices:

- A real cluster's controller manager runs ~38 controllers; pykcm has fewer.
  On the real API server pykcm's manager runs its own and the real
  kube-controller-manager runs *the rest* (node lifecycle, pod GC, resource
  quotas, ...: :func:`complement_controllers`), as a mixed deployment
  would. Without them the real API server's admission (the not-ready taint on
  new Nodes, the ``default`` ServiceAccount a pod needs) leaves pods Pending
  or refused, and that would test the missing controllers, not pykcm's.
  The set shrinks by itself as pykcm registers more controllers.
- Leader election is off for every manager started here: each test owns its
  managers, and two managers never run the same controller on one server.
- Everything binds 127.0.0.1 on ports picked here or by the kit, logs to
  files in a directory the caller owns, and stops on ``stop()``/exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, Self

__all__ = [
    "KIT_ENV",
    "WORKLOAD_CONTROLLERS",
    "ControlPlane",
    "KitError",
    "KubeCluster",
    "KubeControllerManager",
    "KubeKit",
    "PykcmProcess",
    "complement_controllers",
    "find_kit",
    "pykcm_controller_names",
    "request_json",
    "support_controller_manager",
]

KIT_ENV = "PYKCM_KUBE_KIT"
KIT_DIR = Path("shared") / "kube-v1.36"


class KitError(RuntimeError):
    """The kit is missing or one of its components failed to start (the message says which)."""


# -- finding the kit -------------------------------------------------------------------------

def _is_kit(p: Path) -> bool:
    return (p / "control-plane").is_file() and (p / "bin").is_dir()


def _origin_path(repo: Path) -> Path | None:
    """The local path this checkout was cloned from, if it was cloned from a local path."""
    try:
        r = subprocess.run(["git", "-C", str(repo), "config", "--get", "remote.origin.url"],
                           capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    url = r.stdout.strip()
    if not url or "://" in url and not url.startswith("file://"):
        return None
    p = Path(url.removeprefix("file://"))
    return p if p.is_absolute() and p.is_dir() else None


def find_kit(start: Iterable[Path] = ()) -> KubeKit | None:
    """The kit: ``$PYKCM_KUBE_KIT``, else beside this checkout or its origin (see module doc).

    An explicit ``PYKCM_KUBE_KIT`` that holds no kit raises :class:`KitError`
    (a typo should not silently skip the tests it was meant to enable);
    ``PYKCM_KUBE_KIT=none`` means "no kit" (runs without the upstream tests).
    """
    env = os.environ.get(KIT_ENV)
    if env == "none":
        return None
    if env:
        p = Path(env).expanduser().resolve()
        if not _is_kit(p):
            raise KitError(f"{KIT_ENV}={env}: no kube-v1.36 kit there "
                           "(expected its control-plane script and bin/)")
        return KubeKit(p)
    roots = [*start, Path.cwd(), Path(__file__).resolve().parent]
    seen: set[Path] = set()
    for root in roots:
        for anc in (root.resolve(), *root.resolve().parents):
            if anc in seen:
                continue
            seen.add(anc)
            if _is_kit(anc / KIT_DIR):
                return KubeKit(anc / KIT_DIR)
    for root in roots:
        origin = _origin_path(root)
        if origin is not None:
            for anc in (origin, *origin.parents):
                if _is_kit(anc / KIT_DIR):
                    return KubeKit(anc / KIT_DIR)
    return None


# -- small HTTP and process helpers ----------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def request_json(url: str, token: str | None = None, ca_file: str | None = None, *,
                 method: str = "GET", body: Any = None, timeout: float = 10.0,
                 content_type: str = "application/json") -> tuple[int, Any]:
    """One HTTPS request with the standard library: (status, parsed JSON or text)."""
    # without a CA: a loopback test server's self-signed serving certificate
    ctx = (ssl.create_default_context(cafile=ca_file) if ca_file
           else ssl._create_unverified_context())
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            code, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        code, raw = e.code, e.read()
    try:
        return code, json.loads(raw)
    except ValueError:
        return code, raw.decode(errors="replace")


def _wait(pred: Callable[[], bool], what: str, timeout: float,
          alive: Callable[[], str | None] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None:
            died = alive()
            if died:
                raise KitError(f"{what}: {died}")
        try:
            if pred():
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        time.sleep(0.1)
    raise KitError(f"{what}: not ready within {timeout:.0f} s")


def _tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


class _Process:
    """A child process with its output in a log file; SIGTERM, then SIGKILL, on stop."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log.write(f"--- {time.strftime('%H:%M:%S')} {shlex.join(self.argv)}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.env,
                                     start_new_session=True)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def exited(self) -> str | None:
        """None while running, else a one-paragraph account with the log's tail."""
        if self.proc is None or self.proc.poll() is None:
            return None
        return (f"{self.name} exited with {self.proc.returncode}; last lines of "
                f"{self.log_path}:\n{_tail(self.log_path)}")

    def stop(self, timeout: float = 15.0) -> None:
        p = self.proc
        if p is not None and p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
                p.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


# -- the kit ---------------------------------------------------------------------------------

class KubeKit:
    """A ``kube-v1.36`` kit directory: its ``control-plane`` script and binaries."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.script = root / "control-plane"
        self._paths: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"KubeKit({str(self.root)!r})"

    def binary(self, name: str) -> str:
        """Path of an unpacked binary (kube-apiserver, kube-controller-manager, etcd,
        informerbench), unpacking it on first use."""
        if name not in self._paths:
            r = subprocess.run([str(self.script), "path", name], capture_output=True,
                               text=True, timeout=120, check=False)
            if r.returncode != 0:
                raise KitError(f"control-plane path {name}: {r.stderr.strip()}")
            self._paths[name] = r.stdout.strip().splitlines()[-1]
        return self._paths[name]

    def control_plane(self, directory: str | Path, *, with_controller_manager: bool = False,
                      kcm_flags: Sequence[str] = (), apiserver_flags: Sequence[str] = (),
                      etcd_flags: Sequence[str] = (), timeout: float = 60.0) -> ControlPlane:
        """A control plane whose state lives in ``directory`` (not started yet)."""
        return ControlPlane(self, Path(directory), with_controller_manager=with_controller_manager,
                            kcm_flags=kcm_flags, apiserver_flags=apiserver_flags,
                            etcd_flags=etcd_flags, timeout=timeout)


class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager) started by the kit's script."""

    def __init__(self, kit: KubeKit, directory: Path, *, with_controller_manager: bool = False,
                 kcm_flags: Sequence[str] = (), apiserver_flags: Sequence[str] = (),
                 etcd_flags: Sequence[str] = (), timeout: float = 60.0) -> None:
        self.kit = kit
        self.dir = directory
        self.with_controller_manager = with_controller_manager
        self.kcm_flags = list(kcm_flags)
        self.apiserver_flags = list(apiserver_flags)
        self.etcd_flags = list(etcd_flags)  # e.g. ["-unsafe-no-fsync"]
        self.timeout = timeout
        self.env: dict[str, str] = {}
        # The support manager running beside it, if the owner started one
        # (:func:`support_controller_manager`); tests that need a quiet server stop it.
        self.support: KubeControllerManager | None = None

    @property
    def kubeconfig_path(self) -> str:
        return self.env["KUBECONFIG"]

    @property
    def url(self) -> str:
        return self.env["KUBE_APISERVER_URL"]

    @property
    def ca_file(self) -> str:
        return self.env["KUBE_CA_FILE"]

    @property
    def token(self) -> str:
        return Path(self.env["KUBE_TOKEN_FILE"]).read_text().strip()

    @property
    def ca_pem(self) -> bytes:
        return Path(self.ca_file).read_bytes()

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    def start(self) -> Self:
        self.dir.mkdir(parents=True, exist_ok=True)
        argv = [str(self.kit.script), "start", str(self.dir), "--timeout", str(int(self.timeout))]
        if self.with_controller_manager:
            argv.append("--with-controller-manager")
        if self.kcm_flags:
            argv += ["--kcm-flags", shlex.join(self.kcm_flags)]
        if self.apiserver_flags:
            argv += ["--apiserver-flags", shlex.join(self.apiserver_flags)]
        if self.etcd_flags:
            argv += ["--etcd-flags", shlex.join(self.etcd_flags)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=4 * self.timeout + 60,
                           check=False)
        if r.returncode != 0:
            raise KitError(f"control-plane start failed ({r.returncode}):\n{r.stderr[-3000:]}")
        self.env = {}
        for line in (self.dir / "env").read_text().splitlines():
            key, _, value = line.partition("=")
            self.env[key] = shlex.split(value)[0] if value else ""
        return self

    def stop(self) -> None:
        subprocess.run([str(self.kit.script), "stop", str(self.dir)], capture_output=True,
                       timeout=60, check=False)

    def pids(self) -> dict[str, int]:
        """The running components' process ids by name (etcd, kube-apiserver, ...), from the
        kit's ``DIR/pids``; empty when stopped."""
        out: dict[str, int] = {}
        try:
            lines = (self.dir / "pids").read_text().splitlines()
        except OSError:
            return out
        for line in lines:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                out[parts[0]] = int(parts[1])
        return out

    def log(self, component: str) -> str:
        """kube-apiserver, etcd or kube-controller-manager's log."""
        try:
            return (self.dir / f"{component}.log").read_text(errors="replace")
        except OSError:
            return ""

    def get(self, path: str) -> tuple[int, Any]:
        return request_json(self.url + path, self.token, self.ca_file)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- controller managers ---------------------------------------------------------------------

def pykcm_controller_names() -> list[str]:
    """The controllers pykcm's manager has (every registered one)."""
    from pykcm.manager.registry import builtin_registry

    return sorted(builtin_registry().known_names())


FORK_ONLY_CONTROLLERS = ("service-ca-certificate-publisher-controller",)
"""Controllers of the kit's OpenShift-fork kube-controller-manager that upstream's has not
(the service CA publisher puts an ``openshift-service-ca.crt`` ConfigMap in every
namespace): never run, a plain Kubernetes cluster has none of their objects."""


def complement_controllers(pykcm_names: Iterable[str] | None = None) -> str:
    """kube-controller-manager's ``--controllers`` for everything pykcm does not run
    (upstream's controllers only: not :data:`FORK_ONLY_CONTROLLERS`)."""
    names = pykcm_controller_names() if pykcm_names is None else list(pykcm_names)
    return ",".join(["*", *(f"-{n}" for n in sorted([*names, *FORK_ONLY_CONTROLLERS]))])


WORKLOAD_CONTROLLERS = ("certificatesigningrequest-approving-controller",
                        "certificatesigningrequest-cleaner-controller",
                        "certificatesigningrequest-signing-controller",
                        "cronjob-controller", "daemonset-controller", "deployment-controller",
                        "disruption-controller", "endpoints-controller", "endpointslice-controller",
                        "endpointslice-mirroring-controller",
                        "garbage-collector-controller", "horizontal-pod-autoscaler-controller",
                        "job-controller", "namespace-controller",
                        "persistentvolume-binder-controller",
                        "persistentvolume-protection-controller",
                        "persistentvolumeclaim-protection-controller",
                        "pod-garbage-collector-controller", "replicaset-controller",
                        "replicationcontroller-controller", "resourcequota-controller",
                        "statefulset-controller",
                        "ttl-after-finished-controller", "ttl-controller")
"""The controllers that act on what a test creates (workloads, Services, deletion): a real
API server shared by tests that run their own controllers in-process gets every other
controller from the real kube-controller-manager (service accounts, root CA, node
lifecycle, ...). Node lifecycle stays there: kube-apiserver's TaintNodesByCondition
admission gives every new Node the ``not-ready:NoSchedule`` taint, which only that
controller removes once the node is Ready (the tests' simulated nodes need it)."""

TOKEN_CONTROLLER = "serviceaccount-token-controller"
"""kube-controller-manager starts it whatever ``--controllers`` says, whenever it has
``--service-account-private-key-file``: leaving it out means not passing the key."""


def support_controller_manager(cp: ControlPlane, leave_out: Iterable[str] | None = None
                               ) -> KubeControllerManager:
    """The real kube-controller-manager running every controller but ``leave_out``
    (default: every controller pykcm has, for a cluster where pykcm's manager runs them)."""
    names = pykcm_controller_names() if leave_out is None else list(leave_out)
    return KubeControllerManager.for_control_plane(
        cp, controllers=complement_controllers(names), name="support-controller-manager",
        kube_api_qps=100, kube_api_burst=200,
        service_account_key=TOKEN_CONTROLLER not in names)


class KubeControllerManager:
    """The real kube-controller-manager v1.36.2 against any API server.

    ``controllers`` is its ``--controllers`` list (a string as on its command
    line, or names). The files its controllers need (service-account signing
    key, root CA) are passed when the caller has them; a controller that
    needs a missing one is simply not started by kube-controller-manager.
    """

    def __init__(self, kit: KubeKit, kubeconfig: str, work_dir: str | Path, *,
                 controllers: str | Sequence[str], name: str = "kube-controller-manager",
                 root_ca_file: str | None = None, service_account_key_file: str | None = None,
                 cluster_signing: tuple[str, str] | None = None,
                 delegate_auth: bool = True, kube_api_qps: float | None = None,
                 kube_api_burst: int | None = None, extra_flags: Sequence[str] = ()) -> None:
        self.kit = kit
        self.kubeconfig = kubeconfig
        self.work_dir = Path(work_dir)
        self.controllers = controllers if isinstance(controllers, str) else ",".join(controllers)
        self.port = 0
        flags = [f"--kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
                 f"--controllers={self.controllers}", "--leader-elect=false",
                 "--use-service-account-credentials=false",
                 "--service-cluster-ip-range=10.96.0.0/12"]
        if delegate_auth:
            flags += [f"--authentication-kubeconfig={kubeconfig}",
                      f"--authorization-kubeconfig={kubeconfig}"]
        if root_ca_file:
            flags.append(f"--root-ca-file={root_ca_file}")
        if service_account_key_file:
            flags.append(f"--service-account-private-key-file={service_account_key_file}")
        if cluster_signing:
            flags += [f"--cluster-signing-cert-file={cluster_signing[0]}",
                      f"--cluster-signing-key-file={cluster_signing[1]}"]
        if kube_api_qps is not None:
            flags.append(f"--kube-api-qps={kube_api_qps:g}")
        if kube_api_burst is not None:
            flags.append(f"--kube-api-burst={kube_api_burst}")
        self.flags = [*flags, *extra_flags]
        self._proc: _Process | None = None
        self.log_path = self.work_dir / f"{name}.log"
        self.name = name

    @classmethod
    def for_control_plane(cls, cp: ControlPlane, *, controllers: str | Sequence[str],
                          name: str = "kube-controller-manager",
                          service_account_key: bool = True, **kw: Any
                          ) -> KubeControllerManager:
        """With the control plane's own PKI (SA key, root CA, CSR signer), like the kit's;
        ``service_account_key=False``: without the key (no token controller)."""
        pki = cp.pki
        return cls(cp.kit, cp.kubeconfig_path, cp.dir, controllers=controllers, name=name,
                   root_ca_file=str(pki / "ca.crt"),
                   service_account_key_file=str(pki / "sa.key") if service_account_key
                   else None,
                   cluster_signing=(str(pki / "ca.crt"), str(pki / "ca.key")), **kw)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The running process's id (None when stopped), e.g. to read its CPU time."""
        return self._proc.pid if self._proc is not None else None

    def start(self, timeout: float = 60.0) -> Self:
        for _ in range(3):  # a port picked here may be taken before kcm binds it: retry
            self.port = _free_port()
            cert_dir = self.work_dir / f"{self.name}-certs"
            cert_dir.mkdir(parents=True, exist_ok=True)
            self._proc = _Process(self.name, [self.kit.binary("kube-controller-manager"),
                                              *self.flags, f"--secure-port={self.port}",
                                              f"--cert-dir={cert_dir}"], self.log_path)
            self._proc.start()
            proc = self._proc
            try:
                _wait(lambda: request_json(self.url + "/healthz", timeout=2)[0] == 200,
                      self.name, timeout, proc.exited)
                return self
            except KitError as e:
                self.stop()
                if "address already in use" not in str(e):
                    raise
        raise KitError(f"{self.name}: no free port after 3 tries")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def error_lines(self) -> list[str]:
        """klog error lines (``E1201 ...``) of this run's log."""
        out = []
        for line in self.log().splitlines():
            s = line.removeprefix("??? ")
            if s[:1] == "E" and s[1:5].isdigit():
                out.append(s)
        return out

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PykcmProcess:
    """``python -m pykcm <command> ...`` as a child process (controller-manager, sim, up)."""

    def __init__(self, name: str, args: Sequence[str], log_path: str | Path,
                 ready: Callable[[], bool] | None = None) -> None:
        self.name = name
        self._proc = _Process(name, [sys.executable, "-m", "pykcm", *args], Path(log_path))
        self._ready = ready
        self.port = 0  # the controller manager's plain-HTTP /healthz and /metrics port

    @property
    def pid(self) -> int | None:
        """The running process's id (None when stopped), e.g. to read its CPU time."""
        return self._proc.pid

    def start(self, timeout: float = 60.0) -> Self:
        self._proc.start()
        if self._ready is not None:
            try:
                _wait(self._ready, self.name, timeout, self._proc.exited)
            except KitError:
                self.stop()
                raise
        return self

    def exited(self) -> str | None:
        return self._proc.exited()

    def stop(self, timeout: float = 15.0) -> None:
        self._proc.stop(timeout)

    def log(self) -> str:
        return self._proc.log()

    @staticmethod
    def controller_manager(kubeconfig: str, log_path: str | Path, *, controllers: str = "*",
                           kube_api_qps: float = 20.0, kube_api_burst: int = 30,
                           extra: Sequence[str] = ()) -> PykcmProcess:
        """pykcm's controller manager (leader election off), ready when /healthz says ok."""
        port = _free_port()

        def healthy() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                return bool(r.status == 200)

        p = PykcmProcess("controller-manager", [
            "controller-manager", "--kubeconfig", kubeconfig, "--controllers", controllers,
            "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
            "--port", str(port), "--kube-api-qps", f"{kube_api_qps:g}",
            "--kube-api-burst", str(kube_api_burst), *extra], log_path, healthy)
        p.port = port
        return p

    @staticmethod
    def sim(kubeconfig: str, log_path: str | Path, *, nodes: int = 3, max_pods: int = 110,
            node_prefix: str = "pykcm-node", extra: Sequence[str] = (),
            max_grace_period: float | None = 0.0,
            api: tuple[str, str, str] | None = None) -> PykcmProcess:
        """Simulated nodes; ready when ``api`` = (url, token, ca_file) lists them all Ready."""
        def registered() -> bool:
            assert api is not None
            code, body = request_json(api[0] + "/api/v1/nodes", api[1], api[2])
            if code != 200:
                return False
            ready = 0
            for n in body["items"]:
                if not n["metadata"]["name"].startswith(node_prefix + "-"):
                    continue
                conds = {c["type"]: c["status"] for c in n.get("status", {}).get("conditions", [])}
                taints = n.get("spec", {}).get("taints") or []
                if conds.get("Ready") == "True" and not any(
                        t.get("key") == "node.kubernetes.io/not-ready" for t in taints):
                    ready += 1
            return ready >= nodes

        return PykcmProcess("sim", ["sim", "--kubeconfig", kubeconfig, "--nodes", str(nodes),
                                    "--max-pods", str(max_pods), "--node-prefix", node_prefix,
                                    *(["--max-grace-period", f"{max_grace_period:g}"]
                                      if max_grace_period is not None else []),
                                    *extra],
                            log_path, registered if api is not None else None)


# -- clusters: either API server, either controller manager ---------------------------------

class KubeCluster:
    """An API server with simulated nodes and a controller manager, each real or pykcm's.

    ``apiserver="kube"``: the real kube-apiserver + etcd, where the real
    kube-controller-manager also runs the controllers pykcm does not have
    (module doc). ``apiserver="pykcm"``: ``pykcm up --no-controller-manager``.
    ``manager="pykcm"`` runs pykcm's controller manager with ``controllers``;
    ``manager="kube"`` runs the real kube-controller-manager with them
    instead. So ``(kube, pykcm)`` is pykcm on a real cluster (the production
    path), ``(pykcm, kube)`` the real manager on pykcm's server, ``(kube,
    kube)`` the reference run of a differential test. ``pykcm sim`` provides
    the nodes in every case. The interface matches
    :class:`pykcm.testing.cluster.Cluster` (``kubeconfig_path``, ``url``,
    ``log(component)``). With a ``control_plane`` of the caller's, ``support=False``
    says that its support manager already runs (:func:`support_controller_manager`).
    """

    def __init__(self, kit: KubeKit, work_dir: str | Path, *, apiserver: str = "kube",
                 manager: str = "pykcm", nodes: int = 3, controllers: str = "*",
                 kube_api_qps: float = 20.0, kube_api_burst: int = 30, max_pods: int = 110,
                 control_plane: ControlPlane | None = None, support: bool = True,
                 manager_flags: Sequence[str] = ()) -> None:
        if apiserver not in ("pykcm", "kube"):
            raise ValueError(f"apiserver must be 'pykcm' or 'kube', not {apiserver!r}")
        if manager not in ("pykcm", "kube"):
            raise ValueError(f"manager must be 'pykcm' or 'kube', not {manager!r}")
        self.kit = kit
        self.work_dir = Path(work_dir)
        self.apiserver_kind = apiserver
        self.manager_kind = manager
        self.nodes = nodes
        self.controllers = controllers
        self.qps, self.burst, self.max_pods = kube_api_qps, kube_api_burst, max_pods
        self.manager_flags = list(manager_flags)  # more flags for pykcm's manager
        self._own_cp = control_plane is None
        self._want_support = support
        self.cp: ControlPlane | None = None
        self.embedded: Any = None  # pykcm.testing.cluster.Cluster when apiserver == "pykcm"
        if apiserver == "kube":
            self.cp = control_plane or kit.control_plane(self.work_dir / "kube")
        self.support: KubeControllerManager | None = None
        self.sim: PykcmProcess | None = None
        self.manager: PykcmProcess | KubeControllerManager | None = None
        self.kubeconfig_path = ""
        self.url = ""
        self.token = ""
        self.ca_file = ""

    def log(self, component: str) -> str:
        """controller-manager (the manager under test), sim, apiserver (either kind),
        support-controller-manager, etcd."""
        if component == "controller-manager":
            return self.manager.log() if self.manager is not None else ""
        if component == "support-controller-manager":
            return self.support.log() if self.support is not None else ""
        if self.embedded is not None:
            return str(self.embedded.log(component))
        if component == "sim":
            return self.sim.log() if self.sim is not None else ""
        assert self.cp is not None
        return self.cp.log("kube-apiserver" if component == "apiserver" else component)

    def start(self, timeout: float = 60.0) -> Self:
        try:
            if self.cp is not None:
                self._start_kube(timeout)
            else:
                from pykcm.testing.cluster import Cluster

                self.embedded = Cluster(nodes=self.nodes, max_pods=self.max_pods,
                                        data_dir=str(self.work_dir / "pykcm"),
                                        controller_manager=False).start(timeout)
                self.kubeconfig_path = self.embedded.kubeconfig_path
                self.url = self.embedded.url
                self.ca_file = str(Path(self.embedded.data_dir) / "pki" / "ca.crt")
                self.token = (Path(self.embedded.data_dir) / "admin.token").read_text().strip()
            if self.manager is None:
                self.start_manager(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_kube(self, timeout: float) -> None:
        assert self.cp is not None
        if self._own_cp:
            self.cp.start()
        self.kubeconfig_path, self.url = self.cp.kubeconfig_path, self.cp.url
        self.token, self.ca_file = self.cp.token, self.cp.ca_file
        if self._want_support:
            self.support = support_controller_manager(self.cp).start(timeout)
        if self.nodes > 0:
            # The sim is ready once its Nodes lost the not-ready taint kube-apiserver gives
            # them, which the node lifecycle controller (the manager under test's) removes.
            self.start_manager(timeout)
            self.sim = PykcmProcess.sim(
                self.kubeconfig_path, self.work_dir / "logs" / "sim.log", nodes=self.nodes,
                max_pods=self.max_pods, api=(self.url, self.token, self.ca_file)).start(timeout)

    def start_manager(self, timeout: float = 60.0, *, manager: str | None = None,
                      controllers: str | None = None) -> None:
        """(Re)start the manager under test, optionally another kind or controller set."""
        self.stop_manager()
        if manager is not None:
            self.manager_kind = manager
        if controllers is not None:
            self.controllers = controllers
        if self.manager_kind == "pykcm":
            # the control plane's PKI, as the real manager gets it (token Secrets, root CA)
            pki = [f"--root-ca-file={self.cp.pki / 'ca.crt'}",
                   f"--service-account-private-key-file={self.cp.pki / 'sa.key'}"] \
                if self.cp is not None else []
            self.manager = PykcmProcess.controller_manager(
                self.kubeconfig_path, self.work_dir / "logs" / "controller-manager.log",
                controllers=self.controllers, kube_api_qps=self.qps,
                kube_api_burst=self.burst, extra=[*pki, *self.manager_flags]).start(timeout)
            return
        names = pykcm_controller_names() if self.controllers == "*" else self.controllers
        if self.cp is not None:
            self.manager = KubeControllerManager.for_control_plane(
                self.cp, controllers=names, kube_api_qps=self.qps,
                kube_api_burst=self.burst).start(timeout)
        else:
            # pykcm's server has no SubjectAccessReview to delegate authorization to; its
            # service-account key (pykcm up's pki/sa.key) lets the token controller run
            self.manager = KubeControllerManager(
                self.kit, self.kubeconfig_path, self.work_dir, controllers=names,
                root_ca_file=self.ca_file,
                service_account_key_file=str(Path(self.embedded.data_dir) / "pki" / "sa.key"),
                delegate_auth=False, kube_api_qps=self.qps,
                kube_api_burst=self.burst).start(timeout)

    def stop_manager(self) -> None:
        if self.manager is not None:
            self.manager.stop()
            self.manager = None

    def stop(self) -> None:
        self.stop_manager()
        for p in (self.sim, self.support):
            if p is not None:
                p.stop()
        self.sim = self.support = None
        if self.embedded is not None:
            self.embedded.stop()
            self.embedded = None
        if self.cp is not None and self._own_cp:
            self.cp.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
