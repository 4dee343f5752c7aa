"""Service address allocation: cluster IPs and node ports, as kube-apiserver assigns them.

`rest_storage` asks for an address when a Service is created (and gives it
back when the Service is deleted). The allocator's view of what is taken is
rebuilt from the stored Services on first use, so it survives restarts
without state of its own. Defaults are kube-apiserver's: service CIDR
10.96.0.0/12 (10.96.0.1 belongs to the `kubernetes` Service) and node ports
30000-32767.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from pykcm.api.validation import Cause, invalid

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
NODE_PORT_RANGE = (30000, 32767)


class ServiceAllocator:
    def __init__(self, cidr: str = DEFAULT_SERVICE_CIDR,
                 node_ports: tuple[int, int] = NODE_PORT_RANGE) -> None:
        self.net = ipaddress.ip_network(cidr)
        self.node_ports = node_ports
        self._ips: set[str] = set()
        self._ports: set[int] = set()
        self._next_ip = int(self.net.network_address) + 2
        self._next_port = node_ports[0]
        self.loaded = False

    def load(self, services: Iterable[dict[str, Any]]) -> None:
        for svc in services:
            self.note(svc)
        self.loaded = True

    def note(self, svc: dict[str, Any]) -> None:
        spec = svc.get("spec") or {}
        for ip in spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []):
            if ip and ip != "None":
                self._ips.add(ip)
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and p.get("nodePort"):
                self._ports.add(int(p["nodePort"]))
        if spec.get("healthCheckNodePort"):
            self._ports.add(int(spec["healthCheckNodePort"]))

    def release(self, svc: dict[str, Any]) -> None:
        spec = svc.get("spec") or {}
        for ip in spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []):
            self._ips.discard(ip)
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and p.get("nodePort"):
                self._ports.discard(int(p["nodePort"]))
        if spec.get("healthCheckNodePort"):
            self._ports.discard(int(spec["healthCheckNodePort"]))

    def allocate(self, svc: dict[str, Any]) -> list[Cause]:
        """Fill spec.clusterIP(s) and nodePorts of a new Service; causes on failure."""
        spec = svc.setdefault("spec", {})
        stype = spec.get("type") or "ClusterIP"
        causes: list[Cause] = []
        if stype != "ExternalName":
            ip = spec.get("clusterIP") or (spec.get("clusterIPs") or [None])[0]
            if ip == "None":
                spec["clusterIP"] = "None"
                spec["clusterIPs"] = ["None"]
            elif ip:
                try:
                    addr = ipaddress.ip_address(ip)
                except ValueError:
                    addr = None
                if addr is None or addr not in self.net:
                    causes.append(invalid(
                        "spec.clusterIPs", [ip],
                        f"failed to allocate IP {ip}: the provided network does not match the "
                        "current range"))
                elif ip in self._ips:
                    causes.append(invalid(
                        "spec.clusterIPs", [ip],
                        f"failed to allocate IP {ip}: provided IP is already allocated"))
                else:
                    spec["clusterIP"] = ip
                    spec["clusterIPs"] = [ip]
            else:
                new_ip = self._free_ip()
                if new_ip is None:
                    causes.append(invalid("spec.clusterIPs", [], "failed to allocate a serviceIP: "
                                          "range is full"))
                else:
                    spec["clusterIP"] = new_ip
                    spec["clusterIPs"] = [new_ip]
        if stype in ("NodePort", "LoadBalancer"):
            causes.extend(self.allocate_node_ports(svc))
        if not causes:
            self.note(svc)
        return causes

    def allocate_node_ports(self, svc: dict[str, Any]) -> list[Cause]:
        """Node ports for the ports that have none (and the health check port of a
        LoadBalancer with externalTrafficPolicy Local); causes for a bad requested one."""
        spec = svc.setdefault("spec", {})
        causes: list[Cause] = []
        for i, p in enumerate(spec.get("ports") or []):
            if not isinstance(p, dict):
                continue
            want = p.get("nodePort")
            path = f"spec.ports[{i}].nodePort"
            if want:
                if want in self._ports:
                    causes.append(invalid(path, want, "provided port is already allocated"))
                elif not self.node_ports[0] <= want <= self.node_ports[1]:
                    causes.append(invalid(
                        path, want,
                        f"provided port is not in the valid range. The range of valid ports "
                        f"is {self.node_ports[0]}-{self.node_ports[1]}"))
            else:
                port = self._free_port()
                if port is None:
                    causes.append(invalid(path, 0, "range is full"))
                else:
                    p["nodePort"] = port
        if (spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
                and not spec.get("healthCheckNodePort")):
            port = self._free_port()
            if port is not None:
                spec["healthCheckNodePort"] = port
        return causes

    def peek_ip(self) -> str | None:
        """The address the next allocation would take (nothing is reserved)."""
        saved = self._next_ip
        try:
            return self._free_ip()
        finally:
            self._next_ip = saved

    def _free_ip(self) -> str | None:
        size = self.net.num_addresses
        base = int(self.net.network_address)
        for _ in range(size):
            cand = self._next_ip
            self._next_ip += 1
            if self._next_ip >= base + size - 1:
                self._next_ip = base + 2
            ip = str(ipaddress.ip_address(cand))
            if ip not in self._ips:
                return ip
        return None

    def _free_port(self) -> int | None:
        lo, hi = self.node_ports
        for _ in range(hi - lo + 1):
            cand = self._next_port
            self._next_port = lo if cand >= hi else cand + 1
            if cand not in self._ports:
                return cand
        return None
