"""`pykcm up --seed N` hands the seed to the API server, the simulator and the controller
manager (each seeds its own source from it); a bad seed is one argparse line."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


def test_up_passes_its_seed_to_each_component(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-m", "pykcm", "up", "--data-dir", str(tmp_path),
                          "--port", "0", "--nodes", "1", "--no-status", "--no-ui",
                          "--seed", "42"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if "export KUBECONFIG" in line:
                break
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
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
