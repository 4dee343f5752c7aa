"""The node lifecycle controller's metrics (upstream ``pkg/controller/nodelifecycle/metrics.go``).

Role: served on the manager's /metrics with upstream's names (subsystem
``node_collector``): per zone the share of Ready nodes (``zone_health``, a
percentage), the node count (``zone_size``), the not-Ready count
(``unhealthy_nodes_in_zone``) and the NoExecute taints added
(``evictions_total``); the durations of one node's and of a whole monitor pass.
Zones are :func:`~pykcm.controllers.nodelifecycle.node_health.zone_key`'s strings.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["EVICTIONS_TOTAL", "UNHEALTHY_NODES", "UPDATE_ALL_NODES_HEALTH_DURATION",
           "UPDATE_NODE_HEALTH_DURATION", "ZONE_HEALTH", "ZONE_SIZE"]

ZONE_HEALTH = Gauge("node_collector_zone_health",
                    "Gauge measuring percentage of healthy nodes per zone.", ["zone"])
ZONE_SIZE = Gauge("node_collector_zone_size",
                  "Gauge measuring number of registered Nodes per zones.", ["zone"])
UNHEALTHY_NODES = Gauge("node_collector_unhealthy_nodes_in_zone",
                        "Gauge measuring number of not Ready Nodes per zones.", ["zone"])
EVICTIONS_TOTAL = Counter(
    "node_collector_evictions",  # prometheus_client appends _total
    "Number of Node evictions that happened since current instance of NodeController "
    "started.", ["zone"])
UPDATE_NODE_HEALTH_DURATION = Histogram(
    "node_collector_update_node_health_duration_seconds",
    "Duration in seconds for NodeController to update the health of a single node.",
    buckets=[0.001 * 4 ** i for i in range(8)])
UPDATE_ALL_NODES_HEALTH_DURATION = Histogram(
    "node_collector_update_all_nodes_health_duration_seconds",
    "Duration in seconds for NodeController to update the health of all nodes.",
    buckets=[0.01 * 4 ** i for i in range(8)])
