"""The Job controller (kube-controller-manager's ``pkg/controller/job``).

:class:`JobController` runs a Job's pods to completion; the modules beside
it hold the pure parts of its logic: ``backoff`` (pod-failure backoff),
``pod_failure_policy``, ``success_policy``, ``indexed_job_utils``
(completion indexes and their interval sets), ``tracking_utils`` (the
job-tracking finalizer and uncounted pods) and ``utils`` (conditions and
predicates shared with the TTL-after-finished and CronJob controllers).
"""

from pykcm.controllers.job.job_controller import JobController

__all__ = ["JobController"]
