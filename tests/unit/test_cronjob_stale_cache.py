"""CronJobController.sync waits for its own status write to reach the cache.

On fake informers and a fake client. The case is the one the differential
test cronjob-starting-deadline found: the history limit deletes a finished
Job and the status write drops it from ``status.active``; the Job's deletion
queues another sync, which must not read the CronJob as it was before that
write (it would report the Job as missing: a MissingJob event and a 409 that
kube-controller-manager does not produce).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.controllers.cronjob import CronJobController
from pykcm.controllers.cronjob.cronjob_controller import StaleCacheError
from tests.unit.fake_informer import FakeInformer

NOW = 1_800_000_000.0


class FakeClient:
    """update_status answers with the next resourceVersion; get finds nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.rv = 10

    async def update_status(self, resource: str, body: Mapping[str, Any],
                            namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("update_status", resource))
        self.rv += 1
        out = dict(body)
        out["metadata"] = {**body["metadata"], "resourceVersion": str(self.rv)}
        return out

    async def delete(self, resource: str, name: str, namespace: str | None = None,
                     **kw: Any) -> None:
        self.calls.append(("delete", name))

    async def get(self, resource: str, name: str, namespace: str | None = None) -> Any:
        from pykcm.client.errors import NotFound
        self.calls.append(("get", name))
        raise NotFound({"kind": "Status", "code": 404, "reason": "NotFound", "message": name})


class FakeClock:
    def now(self) -> float:
        return NOW


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


JOB_UID = "job-uid"


def cronjob(rv: str, active: bool) -> dict[str, Any]:
    status: dict[str, Any] = {"lastScheduleTime": "2027-01-15T08:00:00Z"}
    if active:
        status["active"] = [{"kind": "Job", "namespace": "ns", "name": "cj-1",
                             "uid": JOB_UID, "apiVersion": "batch/v1"}]
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "cj", "namespace": "ns", "uid": "cj-uid",
                         "resourceVersion": rv, "creationTimestamp": "2027-01-15T07:00:00Z"},
            "spec": {"schedule": "0 8 * * *", "timeZone": "Etc/UTC",
                     "successfulJobsHistoryLimit": 0,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}},
            "status": status}


def finished_job() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "cj-1", "namespace": "ns", "uid": JOB_UID,
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                                              "name": "cj", "uid": "cj-uid",
                                              "controller": True}]},
            "status": {"startTime": "2027-01-15T08:00:01Z",
                       "completionTime": "2027-01-15T08:00:05Z", "succeeded": 1,
                       "conditions": [{"type": "Complete", "status": "True"}]}}


async def test_sync_after_own_status_write_waits_for_the_cache() -> None:
    cj_inf, job_inf = FakeInformer("cronjobs"), FakeInformer("jobs")
    client, recorder = FakeClient(), FakeRecorder()
    ctl = CronJobController(cronjob_informer=cast(Any, cj_inf), job_informer=cast(Any, job_inf),
                            client=cast(Any, client), recorder=cast(Any, recorder),
                            clock=FakeClock())
    cj_inf.indexer.add(cronjob("9", active=True))
    job_inf.indexer.add(finished_job())
    await ctl.sync("ns/cj")  # the history limit deletes the Job; status written at 11
    assert ("delete", "cj-1") in client.calls
    assert [r for r, _ in recorder.events] == ["SuccessfulDelete"]
    assert client.calls[-1] == ("update_status", "cronjobs")

    # The Job's deletion reaches the cache before the CronJob's status write does.
    job_inf.indexer.delete(finished_job())
    calls = len(client.calls)
    with pytest.raises(StaleCacheError, match="read version: 9 is not as new as written "
                                               "version: 11"):
        await ctl.sync("ns/cj")
    assert len(client.calls) == calls and [r for r, _ in recorder.events] == ["SuccessfulDelete"]

    # Once the cache has the write, the sync goes on: no Job is missing.
    cj_inf.indexer.update(cronjob("11", active=False))
    await ctl.sync("ns/cj")
    assert [r for r, _ in recorder.events] == ["SuccessfulDelete"]
    assert ("get", "cj-1") not in client.calls


async def test_a_replaced_cronjob_is_not_held_back() -> None:
    cj_inf, job_inf = FakeInformer("cronjobs"), FakeInformer("jobs")
    client, recorder = FakeClient(), FakeRecorder()
    ctl = CronJobController(cronjob_informer=cast(Any, cj_inf), job_informer=cast(Any, job_inf),
                            client=cast(Any, client), recorder=cast(Any, recorder),
                            clock=FakeClock())
    cj_inf.indexer.add(cronjob("9", active=True))
    job_inf.indexer.add(finished_job())
    await ctl.sync("ns/cj")
    job_inf.indexer.delete(finished_job())
    # Deleted and created again under the same name: another UID, an older-looking cache
    # entry is no reason to wait.
    other = cronjob("3", active=False)
    other["metadata"]["uid"] = "other-uid"
    cj_inf.indexer.update(other)
    await ctl.sync("ns/cj")  # no StaleCacheError
    assert ctl._written == {}  # the record of the old CronJob's write is dropped
