"""The controller registry: controller name → descriptor with its init function.

kube-controller-manager counterpart: ``NewControllerDescriptors`` /
``ControllerDescriptor`` / ``InitFunc`` (cmd/kube-controller-manager/app) and
``IsControllerEnabled`` plus the ``--controllers`` validation of
k8s.io/controller-manager.

Role: every controller the manager can run is described once, here, by name
(upstream's canonical names: ``replicaset-controller``, ...), its aliases
(the short names older flags used: ``replicaset``), whether ``*`` enables it,
and which option holds its worker count. The manager asks the registry which
controllers ``--controllers`` enables, then calls each one's init function.

Data flow::

    builtin_registry() ─► register(descriptor) × N  (pykcm.manager.builtin; a name or
                          │                          alias seen twice: ValueError)
    --controllers ──────► resolve_enabled(flag) ──► [canonical names, registration order]
                          │ unknown name: ValueError('"foo" is not in the list of
                          ▼                         known controllers')
    ControllerManager ──► descriptor.init_func(ctx, name) ──► RunnableController | None

``--controllers`` semantics (upstream's): for each controller, the first
entry that is its name (or an alias of it) enables it and the first ``-name``
disables it, whichever comes first; otherwise ``*`` anywhere in the list
enables it unless it is disabled by default; with neither, it is off. A
descriptor ``requires_special_handling`` (upstream: only the
serviceaccount-token-controller, which mints the tokens the others may need)
is started first and whatever ``--controllers`` says; its init function
decides (no ``--service-account-private-key-file``: not started).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pykcm.manager.context import ControllerContext

__all__ = [
    "ControllerDescriptor",
    "ControllerRegistry",
    "InitFunc",
    "RunnableController",
    "builtin_registry",
]


@runtime_checkable
class RunnableController(Protocol):
    """What an init function hands back: a controller the manager runs and watches.

    :class:`pykcm.controller.Controller` satisfies it. ``run(workers)`` runs
    until ``shutdown()`` (then returns once the workers have let go of their
    items) or cancellation; ``health_check()`` is None while healthy, else
    the reason, and feeds ``/healthz/<name>``.
    """

    name: str

    async def run(self, workers: int) -> None: ...

    def health_check(self) -> str | None: ...

    def shutdown(self) -> None: ...


InitFunc = Callable[["ControllerContext", str], Awaitable[RunnableController | None]]
"""``init(ctx, name)``: build the controller (register its informer handlers), do not
run it; None means it chose not to start (upstream's ``enabled=false``)."""


@dataclass(frozen=True)
class ControllerDescriptor:
    """One controller the manager knows (upstream ``ControllerDescriptor``).

    ``concurrency`` is the worker count given to ``run``: the name of a
    :class:`~pykcm.manager.options.ControllerManagerOptions` field
    (``"concurrent_replicaset_syncs"``), a fixed number, or None for 1.
    """

    name: str
    init_func: InitFunc
    aliases: tuple[str, ...] = ()
    disabled_by_default: bool = False
    concurrency: str | int | None = None
    requires_special_handling: bool = False


class ControllerRegistry:
    """Descriptors by canonical name, in registration order, with their aliases."""

    def __init__(self) -> None:
        self._descriptors: dict[str, ControllerDescriptor] = {}
        self._aliases: dict[str, str] = {}

    def register(self, descriptor: ControllerDescriptor) -> None:
        """Add a descriptor; ValueError on an empty, duplicate or conflicting name or alias."""
        name = descriptor.name
        if not name:
            raise ValueError("received controller without a name for a registration")
        if name in self._descriptors:
            raise ValueError(f"controller name {name!r} was registered twice")
        if name in self._aliases:
            raise ValueError(f"controller name {name!r} conflicts with an alias of "
                             f"{self._aliases[name]!r}")
        if descriptor.init_func is None:
            raise ValueError(f"controller {name!r} does not have an init function")
        for alias in descriptor.aliases:
            if alias in self._aliases or alias in self._descriptors or alias == name:
                raise ValueError(f"controller {name!r} has a duplicate alias {alias!r}")
        for alias in descriptor.aliases:
            self._aliases[alias] = name
        self._descriptors[name] = descriptor

    def get(self, name: str) -> ControllerDescriptor:
        """The descriptor of a canonical name or an alias (KeyError if unknown)."""
        return self._descriptors[self._aliases.get(name, name)]

    def __contains__(self, name: object) -> bool:
        return name in self._descriptors or name in self._aliases

    def __iter__(self) -> Iterator[ControllerDescriptor]:
        return iter(list(self._descriptors.values()))

    def __len__(self) -> int:
        return len(self._descriptors)

    def known_names(self) -> list[str]:
        """Every canonical name, sorted (upstream ``KnownControllers``)."""
        return sorted(self._descriptors)

    def aliases(self) -> dict[str, str]:
        """alias → canonical name (upstream ``ControllerAliases``)."""
        return dict(self._aliases)

    def disabled_by_default(self) -> list[str]:
        """The names ``*`` does not enable, sorted (upstream ``ControllersDisabledByDefault``)."""
        return sorted(n for n, d in self._descriptors.items() if d.disabled_by_default)

    def canonical(self, controllers_flag: list[str]) -> list[str]:
        """The flag's entries with aliases replaced by canonical names (``-alias`` too);
        ValueError with upstream's message for the first unknown name."""
        out: list[str] = []
        for entry in controllers_flag:
            if entry == "*":
                out.append(entry)
                continue
            bare = entry.removeprefix("-")
            name = self._aliases.get(bare, bare)
            if name not in self._descriptors:
                # Go's %q: a double-quoted string
                raise ValueError(f"{json.dumps(bare, ensure_ascii=False)} is not in the list "
                                 "of known controllers")
            out.append(f"-{name}" if entry.startswith("-") else name)
        return out

    def is_enabled(self, name: str, controllers_flag: list[str]) -> bool:
        """Upstream ``IsControllerEnabled`` over a flag already made canonical."""
        has_star = False
        for entry in controllers_flag:
            if entry == name:
                return True
            if entry == "-" + name:
                return False
            if entry == "*":
                has_star = True
        if not has_star:
            return False
        return not self._descriptors[name].disabled_by_default

    def resolve_enabled(self, controllers_flag: list[str]) -> list[str]:
        """The canonical names to start: the special ones first, then those
        ``--controllers`` enables, in registration order."""
        flag = self.canonical(controllers_flag)
        special = [n for n, d in self._descriptors.items() if d.requires_special_handling]
        return [*special, *(n for n, d in self._descriptors.items()
                            if not d.requires_special_handling and self.is_enabled(n, flag))]


def builtin_registry() -> ControllerRegistry:
    """A registry with pykcm's built-in controllers (see :mod:`pykcm.manager.builtin`)."""
    from pykcm.manager.builtin import register_builtin_controllers

    registry = ControllerRegistry()
    register_builtin_controllers(registry)
    return registry
