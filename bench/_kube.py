"""The real Kubernetes v1.36 components for the benchmarks, from the kit (pykcm.testing.upstream).

Every benchmark runs its workload against the real component in the same run
when the kit (``../shared/kube-v1.36``, or ``$PYKCM_KUBE_KIT``) is found;
without it the real-component parts are skipped with one line saying so, and
the pykcm figures are still measured.
"""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile

from _common import proc_cpu, proc_rss_mib

from pykcm.testing.upstream import ControlPlane, KitError, KubeKit, find_kit

KUBE_VERSION = "v1.36.2"
ETCD_VERSION = "3.6.13"
NOT_RUN = ("real Kubernetes components not run: {why} (the kube-v1.36 kit: ../shared/kube-v1.36 "
           "beside the checkout, or PYKCM_KUBE_KIT=DIR)")


def kit_or_reason(disabled: bool = False) -> tuple[KubeKit | None, str]:
    """The kit, or None and the one line that says why the real components are not run."""
    if disabled:
        return None, NOT_RUN.format(why="--no-kube")
    try:
        kit = find_kit()
    except KitError as exc:
        return None, NOT_RUN.format(why=str(exc))
    if kit is None:
        return None, NOT_RUN.format(why="no kit found")
    return kit, ""


def durability(fsync: bool) -> str:
    return ("etcd fsyncs every commit (its default)" if fsync else
            "etcd -unsafe-no-fsync (no fsync: survives a killed process, not a power loss)")


class KubeServer:
    """The real etcd + kube-apiserver (the kit's control plane) in a fresh temp directory.

    The same surface as the benchmarks' pykcm server wrappers: url, token,
    ssl (an SSLContext trusting the kit's CA), kubeconfig, cpu_seconds()
    (kube-apiserver + etcd), rss_mib(), stop().
    """

    def __init__(self, kit: KubeKit, label: str, *, fsync: bool = True) -> None:
        self.kit, self.label, self.fsync = kit, label, fsync
        self.work = tempfile.mkdtemp(prefix=f"pykcm-bench-{label}-")
        self.cp: ControlPlane = kit.control_plane(
            os.path.join(self.work, "kube"), etcd_flags=[] if fsync else ["-unsafe-no-fsync"])
        self.url = ""
        self.token = ""
        self.kubeconfig = ""
        self.ca_file = ""
        self.ssl: ssl.SSLContext | None = None
        self._pids: dict[str, int] = {}

    def start(self, timeout: float = 60.0) -> None:
        try:
            self.cp.start()
        except KitError as exc:
            shutil.rmtree(self.work, ignore_errors=True)
            raise RuntimeError(f"{self.label}: {exc}") from None
        self.url, self.token = self.cp.url, self.cp.token
        self.kubeconfig, self.ca_file = self.cp.kubeconfig_path, self.cp.ca_file
        self.ssl = ssl.create_default_context(cafile=self.ca_file)
        self._pids = self.cp.pids()

    @property
    def pids(self) -> dict[str, int]:
        return dict(self._pids)

    def cpu_split(self) -> dict[str, float]:
        return {name: proc_cpu(pid) for name, pid in self._pids.items()}

    def cpu_seconds(self) -> float:
        return sum(self.cpu_split().values())

    def rss_mib(self) -> float | None:
        return sum(proc_rss_mib(pid) for pid in self._pids.values()) or None

    def rss_split(self) -> dict[str, float]:
        return {name: proc_rss_mib(pid) for name, pid in self._pids.items()}

    def stderr_text(self) -> str:
        """The error lines of kube-apiserver's and etcd's logs (klog E..., etcd "error")."""
        out = []
        for comp in ("kube-apiserver", "etcd"):
            for line in self.cp.log(comp).splitlines():
                s = line.removeprefix("??? ")
                if (s[:1] == "E" and s[1:5].isdigit()) or '"level":"error"' in s:
                    out.append(f"{comp}: {s}")
        return "\n".join(out[-40:])

    def stop(self) -> None:
        self.cp.stop()
        self._pids = {}
        shutil.rmtree(self.work, ignore_errors=True)
