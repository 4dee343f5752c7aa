"""The controller manager's ClientBuilder: one client per controller, all behind the
leader-election write fence except the lease's own client, none logging server warnings."""

from __future__ import annotations

from pykcm.client import Config, no_warnings
from pykcm.manager.context import ClientBuilder


async def test_the_managers_controller_clients_share_the_leader_fence() -> None:
    builder = ClientBuilder(Config(host="http://127.0.0.1:1"), qps=1, burst=1)
    c = builder.client("replicaset-controller")
    le = builder.new_client("leader-election")
    assert c.write_fence is not None and c.write_fence() is None
    builder.write_fence = lambda: "lost"
    assert c.write_fence() == "lost"            # set after the client was built: still seen
    assert le.write_fence is None               # the lease itself must stay writable
    await c.close()
    await le.close()


def test_the_managers_clients_drop_server_warnings() -> None:
    # kube-controller-manager silences client-go's warnings (it lists deprecated APIs,
    # v1 Endpoints, generically): the library's default logs them
    builder = ClientBuilder(Config(host="http://127.0.0.1:1"), qps=1, burst=1)
    assert Config(host="http://127.0.0.1:1").warning_handler is None
    assert builder.config("garbage-collector-controller").warning_handler is no_warnings
    assert builder.config("leader-election", timeout=5).warning_handler is no_warnings
