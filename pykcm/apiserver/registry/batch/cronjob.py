"""batch/v1 CronJobs (pkg/registry/batch/cronjob): defaults, validation (the schedule as
robfig/cron's standard parser reads it, time zones, the job template) and printer.

Deliberate duplicate: the schedule check here is validation's (messages as
kube-apiserver's); the CronJob controller's own parser is
pykcm/controllers/cronjob/cron.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.go_duration import GoDurationError, parse_go_duration
from pykcm.api.validation import (
    Cause,
    go_label_selector,
    go_quote,
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

# robfig/cron's standard parser (minute hour dom month dow, plus descriptors).
_CRON_BOUNDS: Final = (
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, {m: i + 1 for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)


_CRON_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})




def _cron_int(expr: str) -> int:
    body = expr[1:] if expr[:1] in "+-" else expr
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f'failed to parse int from {expr}: strconv.Atoi: parsing '
                         f'{go_quote(expr)}: invalid syntax')
    n = int(expr)
    if n < 0:
        raise ValueError(f"negative number ({n}) not allowed: {expr}")
    return n


def _cron_range(expr: str, lo: int, hi: int, names: Mapping[str, int] | None) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in ("*", "?"):
        start, end = lo, hi
    else:
        def name_or_int(s: str) -> int:
            if names is not None and s.lower() in names:
                return names[s.lower()]
            return _cron_int(s)

        start = name_or_int(low_and_high[0])
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = name_or_int(low_and_high[1])
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if single:
            end = hi
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < lo:
        raise ValueError(f"beginning of range ({start}) below minimum ({lo}): {expr}")
    if end > hi:
        raise ValueError(f"end of range ({end}) above maximum ({hi}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def _parse_cron(spec: str) -> str | None:
    """cron.ParseStandard's error message for `spec`, or None when it parses."""
    if not spec:
        return "empty spec string"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        i = spec.find(" ")
        if i < 0:
            return f"provided bad location {spec[spec.find('=') + 1:]}: unknown time zone"
        spec = spec[i:].strip()
    if spec.startswith("@"):
        if spec in _CRON_DESCRIPTORS:
            return None
        if spec.startswith("@every "):
            dur = spec[len("@every "):]
            try:
                parse_go_duration(dur)
            except GoDurationError as e:
                return f"failed to parse duration {spec}: {e}"
            return None
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for f, (lo, hi, names) in zip(fields, _CRON_BOUNDS, strict=True):
            for part in f.split(","):
                _cron_range(part, lo, hi, names)
    except ValueError as e:
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
