"""bench/endpointslices.py: what counts as converged slices and Endpoints (no timings)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_path = Path(__file__).resolve().parents[2] / "bench" / "endpointslices.py"
_spec = importlib.util.spec_from_file_location("bench_endpointslices", _path)
assert _spec is not None and _spec.loader is not None
bench: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)  # it puts bench/ on sys.path for its own imports
converged, endpoints_endpoints = bench.converged, bench.endpoints_endpoints
slice_endpoints, wave_readiness = bench.slice_endpoints, bench.wave_readiness


def eps_slice(*eps: tuple[str, bool | None], family: str = "IPv4") -> dict[str, object]:
    return {"addressType": family, "endpoints": [
        {"addresses": [ip], "conditions": {} if ready is None else {"ready": ready}}
        for ip, ready in eps]}


def test_slices_reduce_to_address_and_ready_a_missing_ready_is_ready() -> None:
    s = eps_slice(("10.0.0.1", True), ("10.0.0.2", False), ("10.0.0.3", None))
    assert slice_endpoints(s) == (("10.0.0.1", True), ("10.0.0.2", False), ("10.0.0.3", True))
    assert slice_endpoints(eps_slice(("fd00::1", True), family="IPv6")) == ()


def test_endpoints_reduce_to_ready_and_not_ready_addresses() -> None:
    ep = {"subsets": [{"addresses": [{"ip": "10.0.0.1"}],
                       "notReadyAddresses": [{"ip": "10.0.0.2"}]}]}
    assert endpoints_endpoints(ep) == (("10.0.0.1", True), ("10.0.0.2", False))
    assert endpoints_endpoints({"metadata": {}}) == ()


def test_converged_needs_every_ip_once_with_its_readiness_and_nothing_else() -> None:
    want = {"10.0.0.1": True, "10.0.0.2": False}
    assert converged({"a": (("10.0.0.1", True),), "b": (("10.0.0.2", False),)}, want)
    assert not converged({"a": (("10.0.0.1", True), ("10.0.0.2", True))}, want)  # readiness
    assert not converged({"a": (("10.0.0.1", True),)}, want)  # one missing
    assert not converged({"a": (("10.0.0.1", True), ("10.0.0.2", False)),
                          "b": (("10.0.0.2", False),)}, want)  # in two slices
    assert not converged({"a": (("10.0.0.1", True), ("10.0.0.2", False),
                                ("10.0.0.3", True))}, want)  # one too many
    # nothing expected: an (empty) object must exist, as the controllers always write one
    assert converged({"placeholder": ()}, {}) and not converged({}, {})


def test_waves_alternate_from_ready() -> None:
    assert [wave_readiness(k) for k in range(6)] == [True, False, True, False, True, False]
