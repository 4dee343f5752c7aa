"""pykcm.manager: the controller-manager process (cmd/kube-controller-manager).

    from pykcm.manager import (ControllerDescriptor, ControllerManager,
                               ControllerManagerOptions, ControllerRegistry)

    registry = ControllerRegistry()
    registry.register(ControllerDescriptor("configmap-labeler-controller", init_labeler))
    code = await ControllerManager(ControllerManagerOptions(kubeconfig=path),
                                   registry).run()

Modules: `options` (flags, Go durations, /configz shape), `registry`
(descriptors, --controllers resolution, the built-in registry), `builtin`
(the built-in controllers' descriptors), `context` (ClientBuilder,
ControllerContext), `serving` (/healthz, /metrics, /configz), and
`controller_manager` (start-up, leader election, shutdown).
"""

from pykcm.manager.context import ClientBuilder, ControllerContext
from pykcm.manager.controller_manager import ControllerManager, load_config
from pykcm.manager.options import (
    ControllerManagerOptions,
    OptionsError,
    add_flags,
    format_duration,
    parse_duration,
)
from pykcm.manager.registry import (
    ControllerDescriptor,
    ControllerRegistry,
    InitFunc,
    RunnableController,
    builtin_registry,
)
from pykcm.manager.serving import HealthChecks, ManagerServer, render_health

__all__ = [
    "ClientBuilder",
    "ControllerContext",
    "ControllerDescriptor",
    "ControllerManager",
    "ControllerManagerOptions",
    "ControllerRegistry",
    "HealthChecks",
    "InitFunc",
    "ManagerServer",
    "OptionsError",
    "RunnableController",
    "add_flags",
    "builtin_registry",
    "format_duration",
    "load_config",
    "parse_duration",
    "render_health",
]
