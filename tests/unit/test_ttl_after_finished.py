"""TTL-after-finished time computation."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.controllers.ttlafterfinished.ttlafterfinished_controller import (
    job_finish_time,
    needs_cleanup,
    time_left,
)

FINISHED_AT = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def job(ttl: int | None = 100, cond: str | None = "Complete", status: str = "True",
        when: str | None = "2023-11-14T22:13:20Z") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    conditions = []
    if cond is not None:
        c = {"type": cond, "status": status}
        if when is not None:
            c["lastTransitionTime"] = when
        conditions.append(c)
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": spec,
            "status": {"conditions": conditions}}


def test_needs_cleanup() -> None:
    assert needs_cleanup(job())
    assert needs_cleanup(job(cond="Failed"))
    assert needs_cleanup(job(ttl=0))
    assert not needs_cleanup(job(ttl=None))
    assert not needs_cleanup(job(cond=None))
    assert not needs_cleanup(job(cond="FailureTarget"))
    assert not needs_cleanup(job(status="False"))


def test_time_left_counts_from_the_finish_condition() -> None:
    assert job_finish_time(job()) == FINISHED_AT
    assert time_left(job(), FINISHED_AT + 30) == 70
    assert time_left(job(), FINISHED_AT + 100) == 0
    assert time_left(job(ttl=0), FINISHED_AT + 1) == -1
    # Finished "in the future" (clock skew): the whole TTL and then some.
    assert time_left(job(), FINISHED_AT - 10) == 110


def test_errors() -> None:
    with pytest.raises(ValueError, match="should not be cleaned up"):
        time_left(job(ttl=None), FINISHED_AT)
    with pytest.raises(ValueError, match="unable to find the time when the Job ns/j finished"):
        job_finish_time(job(when=None))
    with pytest.raises(ValueError, match="unable to find the status of the finished Job ns/j"):
        job_finish_time(job(cond=None))
