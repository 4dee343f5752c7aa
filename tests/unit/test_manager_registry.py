"""The controller registry: registration rules and kube-controller-manager's
--controllers semantics (first exact name or -name wins, '*' and disabled-by-default,
aliases, the unknown-name message)."""

from __future__ import annotations

import pytest

from pykcm.controller import Controller
from pykcm.manager import ControllerDescriptor, ControllerRegistry, RunnableController
from pykcm.manager.registry import builtin_registry


async def _init(ctx: object, name: str) -> None:
    return None


def make() -> ControllerRegistry:
    r = ControllerRegistry()
    r.register(ControllerDescriptor("replicaset-controller", _init, aliases=("replicaset",)))
    r.register(ControllerDescriptor("job-controller", _init, aliases=("job",)))
    r.register(ControllerDescriptor("bootstrap-signer-controller", _init,
                                    aliases=("bootstrapsigner",), disabled_by_default=True))
    return r


def test_double_registration_fails() -> None:
    r = make()
    with pytest.raises(ValueError, match="'job-controller' was registered twice"):
        r.register(ControllerDescriptor("job-controller", _init))
    with pytest.raises(ValueError, match="duplicate alias 'job'"):
        r.register(ControllerDescriptor("other-controller", _init, aliases=("job",)))
    with pytest.raises(ValueError, match="duplicate alias 'job-controller'"):
        r.register(ControllerDescriptor("third-controller", _init, aliases=("job-controller",)))
    with pytest.raises(ValueError, match="conflicts with an alias"):
        r.register(ControllerDescriptor("replicaset", _init))
    with pytest.raises(ValueError, match="without a name"):
        r.register(ControllerDescriptor("", _init))
    assert len(r) == 3  # nothing half-registered


def test_names_aliases_disabled() -> None:
    r = make()
    assert r.known_names() == ["bootstrap-signer-controller", "job-controller",
                               "replicaset-controller"]
    assert r.aliases() == {"replicaset": "replicaset-controller", "job": "job-controller",
                           "bootstrapsigner": "bootstrap-signer-controller"}
    assert r.disabled_by_default() == ["bootstrap-signer-controller"]
    assert r.get("job").name == "job-controller" and "job" in r and "nosuch" not in r


@pytest.mark.parametrize(("flag", "enabled"), [
    (["*"], ["replicaset-controller", "job-controller"]),
    ([], []),
    (["job"], ["job-controller"]),
    (["*", "-job"], ["replicaset-controller"]),
    (["-job", "*", "job"], ["replicaset-controller"]),          # first match wins
    (["job-controller", "-job"], ["job-controller"]),           # alias and name are one
    (["*", "bootstrapsigner"], ["replicaset-controller", "job-controller",
                                "bootstrap-signer-controller"]),
    (["-replicaset"], []),                                      # no '*': nothing else
])
def test_resolve_enabled(flag: list[str], enabled: list[str]) -> None:
    assert make().resolve_enabled(flag) == enabled


@pytest.mark.parametrize(("flag", "name"), [
    (["nosuch"], "nosuch"), (["*", "-nosuch"], "nosuch"), (["job", "x-controller"],
                                                           "x-controller")])
def test_unknown_name_message(flag: list[str], name: str) -> None:
    with pytest.raises(ValueError) as e:
        make().resolve_enabled(flag)
    assert str(e.value) == f'"{name}" is not in the list of known controllers'


def test_controller_runtime_is_runnable() -> None:
    assert isinstance(Controller("x", lambda key: None), RunnableController)


def test_builtin_registry_builds() -> None:
    r = builtin_registry()
    # whatever is registered resolves, and '*' enables exactly the on-by-default ones
    on = [d.name for d in r if not d.disabled_by_default]
    assert r.resolve_enabled(["*"]) == on
