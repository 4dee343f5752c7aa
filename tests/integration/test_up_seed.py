"""`pykcm up --seed N` hands the seed to the API server, the simulator and the controller
manager (each seeds its own source from it) and fixes their string-hash order
(PYTHONHASHSEED); two clusters of one seed name a Deployment's ReplicaSet and pods alike
(another seed: other pod names); a bad seed is one argparse line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pykcm.testing.cluster import Cluster

KUBECTL = str(Path(sys.executable).parent / "kubectl")


def _children_environ(pid: int) -> list[dict[str, str]]:
    """The environments of ``pid``'s child processes (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
                continue
            raw = Path(f"/proc/{entry}/environ").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        out.append(dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0")
                        if "=" in kv))
    return out


def test_up_passes_its_seed_to_each_component(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-m", "pykcm", "up", "--data-dir", str(tmp_path),
                          "--port", "0", "--nodes", "1", "--no-status", "--no-ui",
                          "--seed", "42"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # an explicit PYTHONHASHSEED would win over the seed's
                         env={k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"})
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if "export KUBECONFIG" in line:
                break
        envs = _children_environ(p.pid)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert len(envs) == 3 and all(e.get("PYTHONHASHSEED") == "42" for e in envs)
    for component in ("apiserver", "sim", "controller-manager"):
        # each log starts with the command line its process was started with
        header = (tmp_path / "logs" / f"{component}.log").read_text().splitlines()[1]
        assert header.endswith(" --seed 42"), (component, header)


def test_a_bad_seed_is_refused_in_one_line(tmp_path: Path) -> None:
    for cmd in (["up", "--data-dir", str(tmp_path / "d")], ["apiserver"], ["sim"],
                ["controller-manager"]):
        r = subprocess.run([sys.executable, "-m", "pykcm", *cmd, "--seed", "-3"],
                           capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stderr.strip().splitlines()[-1].endswith("argument --seed: -3 is negative"), \
            (cmd, r.stderr)
    assert not (tmp_path / "d").exists()


def _kubectl(c: Cluster, *args: str) -> str:
    r = subprocess.run([KUBECTL, "--kubeconfig", c.kubeconfig_path, "--request-timeout=20s",
                        *args], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r.stdout


def _deployment_names(data_dir: Path, seed: int) -> tuple[list[str], list[str]]:
    """(ReplicaSet names, pod names) of a 3-replica Deployment in a fresh seeded cluster."""
    c = Cluster(nodes=1, data_dir=str(data_dir))
    c._argv += ["--seed", str(seed)]  # Cluster has no seed parameter (yet)
    with c:
        _kubectl(c, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
        deadline = time.monotonic() + 60
        while True:
            pods = json.loads(_kubectl(c, "get", "pods", "-l", "app=web", "-o", "json"))["items"]
            if len(pods) == 3:
                break
            assert time.monotonic() < deadline, "3 pods"
            time.sleep(0.2)
        rss = json.loads(_kubectl(c, "get", "replicasets", "-l", "app=web", "-o",
                                  "json"))["items"]
        return (sorted(r["metadata"]["name"] for r in rss),
                sorted(p["metadata"]["name"] for p in pods))


def test_two_clusters_of_one_seed_name_a_deployments_pods_alike(tmp_path: Path) -> None:
    first = _deployment_names(tmp_path / "a", 7)
    assert _deployment_names(tmp_path / "b", 7) == first
    rss, pods = _deployment_names(tmp_path / "c", 8)
    assert rss == first[0]  # the ReplicaSet is named by its template's hash, not at random
    assert set(pods).isdisjoint(first[1])
