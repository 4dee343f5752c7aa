"""batch/v1 CronJobs (pkg/registry/batch/cronjob): defaults, validation (the schedule as
robfig/cron's standard parser reads it, time zones, the job template) and printer.

The schedule is read by the one cron parser of every layer, pykcm/api/cron.py (robfig's
ParseStandard, its messages as kube-apiserver's, the CronJob controller's parser too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.cron import CronParseError, parse_standard
from pykcm.api.validation import (
    Cause,
    go_label_selector,
    invalid,
    not_supported,
    required,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.batch.job import JOB_SELECTOR_DESCRIPTION, validate_job_spec_common
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import (
    TEMPLATE_ORDER,
    GoOrder,
    child_dict,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_map,
    as_str,
    nonnegative_field,
    validate_meta,
)

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

_CRONJOB_SPEC: Final = GoOrder(
    "schedule", "timeZone", "startingDeadlineSeconds", "concurrencyPolicy", "suspend",
    "jobTemplate", "successfulJobsHistoryLimit", "failedJobsHistoryLimit")


def _default_cronjob(obj: Obj, create: bool) -> None:
    spec = child_dict(obj, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    set_default(spec, "suspend", False)
    set_default(spec, "successfulJobsHistoryLimit", 3)
    set_default(spec, "failedJobsHistoryLimit", 1)
    job_template = child_dict(spec, "jobTemplate")
    child_dict(job_template, "metadata")
    # Only the pod template inside is defaulted; JobSpec fields are not
    # (SetDefaults_Job runs on Job objects, not on a CronJob's jobTemplate).
    default_pod_template(child_dict(child_dict(job_template, "spec"), "template"))
    TEMPLATE_ORDER.apply(job_template)
    _CRONJOB_SPEC.apply(spec)
    child_dict(obj, "status")


# --- validation ------------------------------------------------------------------------

def _parse_cron(spec: str) -> str | None:
    """ParseCronScheduleWithPanicRecovery's error message for ``spec``, or None when it
    parses."""
    try:
        parse_standard(spec)
    except CronParseError as e:
        return str(e)
    return None


def _validate_time_zone(tz: Any, path: str) -> list[Cause]:
    if tz is None:
        return []
    tzs = as_str(tz)
    if not tzs:
        return [invalid(path, tzs, "timeZone must be nil or non-empty string")]
    errs: list[Cause] = []
    if tzs.lower() == "local":
        errs.append(invalid(path, tzs, "timeZone must be an explicit time zone as defined in "
                                       "https://www.iana.org/time-zones"))
    try:
        import zoneinfo

        if zoneinfo.available_timezones() and tzs not in ("UTC",):
            zoneinfo.ZoneInfo(tzs)
    except (ValueError, KeyError, OSError):
        errs.append(invalid(path, tzs, f"unknown time zone {tzs}"))
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError and friends
        errs.append(invalid(path, tzs, f"unknown time zone {tzs}"))
    return errs


def _validate_cronjob(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = as_map(obj.get("spec"))
    errs: list[Cause] = []
    schedule = as_str(spec.get("schedule"))
    if not schedule:
        errs.append(required("spec.schedule"))
    else:
        err = _parse_cron(schedule)
        if err is not None:
            errs.append(invalid("spec.schedule", schedule, err))
        allow_tz = old is not None and "TZ" in as_str(as_map(old.get("spec")).get("schedule"))
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            errs.append(invalid("spec.schedule", schedule,
                                "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
        elif not allow_tz and "TZ" in schedule:
            errs.append(invalid("spec.schedule", schedule,
                                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    errs.extend(nonnegative_field(spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds"))
    old_tz = None if old is None else as_map(old.get("spec")).get("timeZone")
    if old is None or old_tz != spec.get("timeZone"):
        errs.extend(_validate_time_zone(spec.get("timeZone"), "spec.timeZone"))
    policy = as_str(spec.get("concurrencyPolicy"))
    if not policy:
        errs.append(required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    jt = as_map(spec.get("jobTemplate"))
    jspec = as_map(jt.get("spec"))
    errs.extend(validate_job_spec_common(jspec, "spec.jobTemplate.spec"))
    if jspec.get("selector") is not None:
        errs.append(invalid("spec.jobTemplate.spec.selector", go_label_selector(as_map(jspec["selector"])),
                            "`selector` will be auto-generated"))
    if jspec.get("manualSelector") is True:
        errs.append(not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false")))
    errs.extend(nonnegative_field(spec, "successfulJobsHistoryLimit", "spec.successfulJobsHistoryLimit"))
    errs.extend(nonnegative_field(spec, "failedJobsHistoryLimit", "spec.failedJobsHistoryLimit"))
    return errs


def _create_cronjob(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, True)
    name = as_str(meta_of(obj).get("name"))
    # Job names get an 11-character suffix and must stay DNS-1035-label sized.
    if len(name) > 52:
        errs.append(invalid("metadata.name", name, "must be no more than 52 characters"))
    errs.extend(_validate_cronjob(obj, None))
    return errs


def _update_cronjob(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_cronjob(new, old))
    return errs


# --- printer ---------------------------------------------------------------------------

_CRON_JOB_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Schedule", "string",
         "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    pr.column("Timezone", "string",
         "The time zone name for the given schedule, see "
         "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this "
         "will default to the time zone of the kube-controller-manager process. The set of "
         "valid time zone names and the time zone offset is loaded from the system-wide time "
         "zone database by the API server during CronJob validation and the controller "
         "manager during execution. If no system-wide time zone database can be found a "
         "bundled version of the database is used instead. If the time zone name becomes "
         "invalid during the lifetime of a CronJob or due to a change in host configuration, "
         "the controller will stop creating new new Jobs and will create a system event with "
         "the reason UnknownTimeZone. More information can be found in "
         "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
    pr.column("Suspend", "boolean",
         "This flag tells the controller to suspend subsequent executions, it does not apply "
         "to already started executions.  Defaults to false."),
    pr.column("Active", "integer", "A list of pointers to currently running jobs."),
    pr.column("Last Schedule", "string",
         "Information when was the last time the job was successfully scheduled."),
    pr.AGE_COLUMN,
    pr.column("Containers", "string", pr.CONTAINERS_DESCRIPTION, priority=1),
    pr.column("Images", "string", pr.IMAGES_DESCRIPTION, priority=1),
    pr.column("Selector", "string", JOB_SELECTOR_DESCRIPTION, priority=1),
)


def _cron_job_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    last_schedule = "<none>"
    if pr.has(status, "lastScheduleTime"):
        last_schedule = pr.since(status.get("lastScheduleTime"), now)
    time_zone = pr.as_str(spec.get("timeZone")) if pr.has(spec, "timeZone") else "<none>"
    job_spec = pr.as_dict(pr.as_dict(spec.get("jobTemplate")).get("spec"))
    names, images = pr.layout_container_cells(
        pr.as_dict(pr.as_dict(job_spec.get("template")).get("spec")).get("containers"))
    return pr.Row([
        pr.object_name(obj), pr.as_str(spec.get("schedule")), time_zone, pr.bool_ptr(spec.get("suspend")),
        len(pr.as_list(status.get("active"))), last_schedule, pr.age(obj, now),
        names, images, pr.format_label_selector(job_spec.get("selector")),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class CronJobStrategy(Strategy):
    group = "batch"
    kind = "CronJob"
    printer = pr.Printer(_CRON_JOB_COLUMNS, _cron_job_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_cronjob(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_cronjob(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_cronjob(new, old)
