"""The distribution: `python -m build` makes an sdist and a wheel that install and run.

The source files the build reads (pyproject.toml, README.md, LICENSE, pykcm/) are copied
to a temporary folder first, so the build's `build/` and `*.egg-info` never touch the
shared working tree; the wheel is built from the sdist (build's default), which also
proves the sdist complete. `--no-isolation` uses this venv's setuptools (the test extra
pins one new enough for PEP 639 licence metadata): no registry is needed.

In the fresh venv, `pykcm --version` answers and `pykcm up` starts (banner) and serves
the live view's page from the wheel's files, then stops cleanly on SIGINT.

The fresh venv has no pip and no dependencies of its own: the main venv's pip installs
the wheel into it with `--no-deps --no-index`, and a `.pth` file appends the main venv's
site-packages for pykcm's dependencies (a `.pth` inside an appended folder is not
processed, so the main venv's editable pykcm cannot shadow the installed wheel).
"""

from __future__ import annotations

import email
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

import pykcm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "pykcm", src / "pykcm",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                    str(src)], check=True, capture_output=True, timeout=300)
    return out


def _wheel(dist: Path) -> Path:
    (whl,) = dist.glob("pykcm-*.whl")
    return whl


def test_build_makes_an_sdist_and_a_wheel_of_the_one_version(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert names == [f"pykcm-{pykcm.__version__}-py3-none-any.whl",
                     f"pykcm-{pykcm.__version__}.tar.gz"]


def test_wheel_holds_the_license_typing_marker_data_and_metadata(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as z:
        files = set(z.namelist())
        info = f"pykcm-{pykcm.__version__}.dist-info"
        meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
        license_text = z.read(f"{info}/licenses/LICENSE").decode()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert "pykcm/py.typed" in files
    assert any(f.startswith("pykcm/apiserver/_data/") for f in files)
    assert {"pykcm/manager/ui/static/index.html", "pykcm/manager/ui/static/app.js",
            "pykcm/manager/ui/static/style.css"} <= files
    assert meta["Version"] == pykcm.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    assert "Typing :: Typed" in meta.get_all("Classifier", [])


def test_wheel_installs_into_a_fresh_venv_and_runs(dist: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--no-index", "--disable-pip-version-check",
                    str(_wheel(dist))], check=True, capture_output=True, timeout=120)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "main-venv-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    version = subprocess.run([str(env_dir / "bin" / "pykcm"), "--version"],
                             check=True, capture_output=True, text=True, timeout=60)
    assert version.stdout.strip() == f"pykcm {pykcm.__version__}"
    # Not from the checkout: `python -c` puts the working directory first on sys.path.
    where = subprocess.run([str(py), "-c", "import pykcm.cli.up, pykcm; print(pykcm.__file__)"],
                           check=True, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(env_dir)
    _up_serves_the_live_view(env_dir / "bin" / "pykcm", tmp_path)


def _up_serves_the_live_view(pykcm_bin: Path, tmp_path: Path) -> None:
    """`pykcm up` from the wheel starts (its banner) and serves the page it ships."""
    out_path = tmp_path / "up.out"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([str(pykcm_bin), "up", "--data-dir", str(tmp_path / "data"),
                                 "--port", "0", "--nodes", "1", "--no-status"],
                                stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 90
        banner = ""
        while "live view: " not in banner:
            assert proc.poll() is None, f"pykcm up exited: {out_path.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no banner: {out_path.read_text()[-2000:]}"
            time.sleep(0.2)
            banner = out_path.read_text()
        url = banner.split("live view: ", 1)[1].split()[0]
        with urllib.request.urlopen(url, timeout=10) as page:
            assert b"/static/app.js" in page.read()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out_path.read_text()[-2000:]
