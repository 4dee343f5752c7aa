"""The StatefulSet controller's shortcuts give the answers the full path gives.

- parse_pod_name (memoised): the regular expression's answer for any name;
- replica_settled: when it says a replica is settled, process_replica (Parallel) would
  neither write nor stop for it;
- slow_start_batch with ``settled``: the same calls, batches, successes and errors as
  making the settled calls (which do nothing and succeed).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.controllers.statefulset.stateful_set_control import (
    DefaultStatefulSetControl,
    slow_start_batch,
)
from pykcm.controllers.statefulset.stateful_set_utils import (
    new_stateful_set_pod,
    parse_pod_name,
)
from tests.unit.test_statefulset import RecordingPodControl, sts

# -- pod names -----------------------------------------------------------------------------------

name_st = st.one_of(
    st.text(alphabet="ab-0123456789", max_size=14),
    st.builds(lambda p, n: f"{p}-{n}", st.sampled_from(("web", "a-b", "", "x-1")),
              st.integers(min_value=0, max_value=10**12)))


@settings(max_examples=100, deadline=None)
@given(st.lists(name_st, min_size=1, max_size=20))
def test_parse_pod_name_memo_answers_as_the_regular_expression(names: list[str]) -> None:
    fresh = parse_pod_name.__wrapped__
    for name in names + names:  # the second time from the memo
        assert parse_pod_name(name) == fresh(name)


# -- settled replicas --------------------------------------------------------------------------

pod_st = st.fixed_dictionaries({
    "ordinal": st.integers(0, 3),
    "rename": st.sampled_from((None, "web-x", "other-1", "web-07")),
    "phase": st.sampled_from(("", "Pending", "Running", "Succeeded", "Failed", "Unknown")),
    "ready": st.booleans(),
    "terminating": st.booleans(),
    "drop_label": st.booleans(),
    "drop_volume": st.booleans(),
})


def make_pod(s: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    pod = new_stateful_set_pod(s, p["ordinal"])
    meta = pod["metadata"]
    if p["rename"] is not None:
        meta["name"] = p["rename"]
    if p["drop_label"]:
        meta["labels"].pop("statefulset.kubernetes.io/pod-name", None)
    if p["drop_volume"]:
        pod["spec"]["volumes"] = [v for v in pod["spec"].get("volumes") or ()
                                  if "persistentVolumeClaim" not in v]
    if p["terminating"]:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if p["phase"]:
        pod["status"] = {"phase": p["phase"], "conditions": [
            {"type": "Ready", "status": "True" if p["ready"] else "False",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    return pod


@settings(max_examples=100, deadline=None)
@given(pod_st, st.booleans())
def test_a_settled_replica_is_one_process_replica_leaves_alone(
        p: dict[str, Any], claims: bool) -> None:
    s = sts(4, podManagementPolicy="Parallel")
    if not claims:
        del s["spec"]["volumeClaimTemplates"]
    pod = make_pod(s, p)
    if not DefaultStatefulSetControl.replica_settled(s, s, pod):
        return
    pc = RecordingPodControl()
    control = DefaultStatefulSetControl(pc, None, None, None)  # type: ignore[arg-type]
    stop = asyncio.run(control.process_replica(s, s, False, [pod], 0, time.time()))
    assert stop is False
    assert pc.calls == []


def test_replica_settled_covers_the_steady_state() -> None:
    s = sts(2, podManagementPolicy="Parallel")
    del s["spec"]["volumeClaimTemplates"]
    running = make_pod(s, {"ordinal": 1, "rename": None, "phase": "Running", "ready": True,
                           "terminating": False, "drop_label": False, "drop_volume": False})
    assert DefaultStatefulSetControl.replica_settled(s, s, running)
    missing = new_stateful_set_pod(s, 0)  # not created yet: to be created
    assert not DefaultStatefulSetControl.replica_settled(s, s, missing)


# -- slow start with settled calls ----------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.sets(st.integers(0, 39)), st.sets(st.integers(0, 39)))
def test_slow_start_with_settled_calls_is_slow_start_making_them(
        n: int, settled: set[int], failing: set[int]) -> None:
    failing = failing - settled  # a settled call would succeed

    async def run(skip: bool) -> tuple[list[int], int | str]:
        made: list[int] = []

        async def fn(i: int) -> None:
            made.append(i)
            if i in failing:
                raise RuntimeError(f"call {i}")

        def settled_fn(i: int) -> bool:
            return i in settled

        try:
            got: int | str = await slow_start_batch(1, n, fn, settled_fn if skip else None)
        except Exception as exc:  # noqa: BLE001 - compared between the two runs
            got = type(exc).__name__
        return sorted(made), got

    # The batches stop after the first failing one: the calls made show its boundaries.
    full, full_result = asyncio.run(run(False))
    short, short_result = asyncio.run(run(True))
    assert short == [i for i in full if i not in settled]
    assert short_result == full_result
