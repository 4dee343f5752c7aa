"""Testing helpers: run the embedded API server for your own controller tests.

With pykcm installed, pytest picks up the `pykcm` plugin automatically and
offers two fixtures:

    def test_my_controller(pykcm_apiserver):
        config = kubernetes.config.load_kube_config(pykcm_apiserver.kubeconfig_path)
        ...

`pykcm_apiserver` is one in-memory server for the whole test session (use a
namespace of your own per test); `pykcm_apiserver_factory(**kwargs)` starts a
private one (e.g. with a data dir) that stops when the test ends.
"""

from typing import Any

__all__ = ["ServerThread"]


def __getattr__(name: str) -> Any:
    # Lazy: pytest loads the plugin in every run; the server loads only when used.
    if name == "ServerThread":
        from pykcm.testing.server_thread import ServerThread

        return ServerThread
    raise AttributeError(name)
