"""The CronJob controller (kube-controller-manager's ``pkg/controller/cronjob``).

:class:`CronJobController` creates Jobs on schedule; ``cron`` is the cron
schedule parser (robfig/cron's standard syntax) and ``utils`` the schedule
arithmetic and Job construction.
"""

from pykcm.controllers.cronjob.cronjob_controller import CronJobController

__all__ = ["CronJobController"]
