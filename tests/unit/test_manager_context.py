"""The controller manager's ClientBuilder: one client per controller, all behind the
leader-election write fence except the lease's own client."""

from __future__ import annotations

from pykcm.client import Config
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
