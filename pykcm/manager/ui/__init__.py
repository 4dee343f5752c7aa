"""The live view: a web page of a running controller manager's control loop.

``pykcm controller-manager --ui`` (and ``pykcm up``, which passes it on) serves it on a
loopback address: informers, work queues, reconciles, API requests, leader election and
the workloads, updated live through server-sent events fed by the manager's own
informers and metrics (:mod:`~pykcm.manager.ui.live_view`,
:mod:`~pykcm.manager.ui.metrics_window`, :mod:`~pykcm.manager.ui.server`). The page is
plain HTML, JavaScript and CSS in ``static/``, shipped in the package: no build step.
"""

from pykcm.manager.ui.live_view import LiveView
from pykcm.manager.ui.server import UiServer

__all__ = ["LiveView", "UiServer"]
