"""Finding the kube-v1.36 kit, and the controllers left to the real kube-controller-manager."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pykcm.testing import upstream
from pykcm.testing.upstream import KitError, complement_controllers, find_kit


def _make_kit(root: Path) -> Path:
    kit = root / "shared" / "kube-v1.36"
    (kit / "bin").mkdir(parents=True)
    (kit / "control-plane").write_text("#!/bin/sh\n")
    return kit


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A directory of the test's own; no kit through the environment, the working directory
    or this package's location (each somewhere without one)."""
    monkeypatch.delenv(upstream.KIT_ENV, raising=False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(upstream, "__file__", str(tmp_path / "pkg" / "upstream.py"))
    (tmp_path / "t").mkdir()
    return tmp_path / "t"


def test_the_environment_variable_wins(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = _make_kit(isolated / "elsewhere")
    monkeypatch.setenv(upstream.KIT_ENV, str(kit))
    found = find_kit()
    assert found is not None and found.root == kit.resolve()


def test_an_environment_variable_without_a_kit_is_an_error(
        isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(upstream.KIT_ENV, str(isolated / "nothing-here"))
    with pytest.raises(KitError, match="no kube-v1.36 kit there"):
        find_kit()


def test_none_turns_the_kit_off(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _make_kit(isolated)
    monkeypatch.setenv(upstream.KIT_ENV, "none")
    assert find_kit() is None


def test_found_beside_an_ancestor_of_the_checkout(isolated: Path) -> None:
    kit = _make_kit(isolated)
    checkout = isolated / "main" / "tests"
    checkout.mkdir(parents=True)
    found = find_kit([checkout])
    assert found is not None and found.root == kit.resolve()


def test_found_beside_the_repository_a_clone_came_from(isolated: Path) -> None:
    kit = _make_kit(isolated / "work")
    origin = isolated / "work" / "main"
    origin.mkdir()
    subprocess.run(["git", "init", "-q", str(origin)], check=True)
    clone = isolated / "tmp" / "ci"
    clone.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "remote", "add", "origin", str(origin)], check=True)
    assert find_kit([isolated / "tmp"]) is None          # not a repository: no origin to follow
    found = find_kit([clone])
    assert found is not None and found.root == kit.resolve()


def test_nothing_found(isolated: Path) -> None:
    assert find_kit([isolated]) is None


def test_the_real_manager_runs_everything_pykcm_does_not() -> None:
    flag = complement_controllers(["replicaset-controller", "deployment-controller"])
    # and never the fork's own controllers
    assert flag == ("*,-deployment-controller,-replicaset-controller,"
                    "-service-ca-certificate-publisher-controller")
    # by default: every controller pykcm registers is left out
    default = complement_controllers().split(",")
    assert default[0] == "*" and "-deployment-controller" in default
    assert "-garbage-collector-controller" in default
