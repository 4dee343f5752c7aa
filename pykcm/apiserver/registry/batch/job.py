"""batch/v1 Jobs (pkg/registry/batch/job): defaults, the generated selector, validation, status
rules and printer.

- Defaults: parallelism/completions/backoffLimit, NonIndexed, the pod template's;
  on create (PrepareForCreate, once the uid is set) the generated selector and
  the job-name/controller-uid template labels unless ``manualSelector``.
- Validation: the job spec, pod failure policy, generated labels (prefixed ones
  required of new Jobs), upstream's update rules (a suspended Job may change its
  scheduling directives), status counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    duplicate,
    go_label_selector,
    invalid,
    is_dns1123_label,
    is_qualified_name,
    not_supported,
    required,
    too_many,
    validate_label_selector,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.apps import workload_validation as wv
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import (
    MAX_INT32,
    META_ORDER,
    SELECTOR_ORDER,
    GoOrder,
    child_dict,
    dicts_in,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_int,
    as_list,
    as_map,
    as_str,
    go_labels,
    immutable,
    nonnegative_field,
    semantic_equal,
    validate_meta,
)

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

_JOB_SPEC: Final = GoOrder(
    "parallelism", "completions", "activeDeadlineSeconds", "podFailurePolicy", "successPolicy",
    "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes", "selector", "manualSelector",
    "template", "ttlSecondsAfterFinished", "completionMode", "suspend", "podReplacementPolicy",
    "managedBy")


def generate_job_selector(obj: Obj) -> None:
    """The Job strategy's generateSelector (upstream runs it on create when
    manualSelector is not true): template labels ``controller-uid``,
    ``batch.kubernetes.io/controller-uid``, ``job-name`` and
    ``batch.kubernetes.io/job-name`` (kept if the user set them, so that
    validation can reject a mismatch), and a selector on the controller uid.
    Needs ``metadata.uid``.
    """
    meta = child_dict(obj, "metadata")
    spec = child_dict(obj, "spec")
    if spec.get("manualSelector") is True:
        return
    name = str(meta.get("name") or "")
    uid = str(meta.get("uid") or "")
    template = child_dict(spec, "template")
    tmeta = child_dict(template, "metadata")
    labels = child_dict(tmeta, "labels")
    for key in ("job-name", "batch.kubernetes.io/job-name"):
        labels.setdefault(key, name)
    for key in ("controller-uid", "batch.kubernetes.io/controller-uid"):
        labels.setdefault(key, uid)
    selector = child_dict(spec, "selector")
    match_labels = child_dict(selector, "matchLabels")
    match_labels.setdefault("batch.kubernetes.io/controller-uid", uid)
    SELECTOR_ORDER.apply(selector)
    META_ORDER.apply(tmeta)


def _default_job(obj: Obj, create: bool) -> None:
    spec = child_dict(obj, "spec")
    meta = child_dict(obj, "metadata")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    set_default(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template = child_dict(spec, "template")
    tmeta = template.get("metadata")
    tlabels = tmeta.get("labels") if isinstance(tmeta, dict) else None
    # Job labels default to the template's. Go shares the map, so the labels the
    # selector generation adds to the template below show up on the Job too.
    own_labels = bool(meta.get("labels"))
    if isinstance(tlabels, dict) and not own_labels:
        meta["labels"] = dict(tlabels)
    set_default(spec, "completionMode", "NonIndexed")
    set_default(spec, "suspend", False)
    pfp = spec.get("podFailurePolicy")
    if isinstance(pfp, dict):
        for rule in dicts_in(pfp.get("rules")):
            for pattern in dicts_in(rule.get("onPodConditions")):
                if not pattern.get("status"):
                    pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if pfp is not None else "TerminatingOrFailed"
    set_default(spec, "manualSelector", False)
    default_pod_template(template)
    if create and meta.get("uid"):
        generate_job_selector(obj)
        # (and one without template labels gets them when the stored Job is read back)
        tlabels = child_dict(template, "metadata").get("labels")
        if isinstance(tlabels, dict) and tlabels and not own_labels:
            meta["labels"] = dict(tlabels)
    _JOB_SPEC.apply(spec)
    META_ORDER.apply(meta)
    child_dict(obj, "status")


# --- validation ------------------------------------------------------------------------

_JOB_LEGACY_UID: Final = "controller-uid"


_JOB_LEGACY_NAME: Final = "job-name"


_JOB_UID: Final = "batch.kubernetes.io/controller-uid"


_JOB_NAME: Final = "batch.kubernetes.io/job-name"


_MAX_PARALLELISM_FOR_INDEXED_JOB: Final = 100000


def _has_label(labels: Mapping[str, Any], key: str, expected: str) -> list[Cause]:
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [required(path, expected)]
    if labels[key] != expected:
        return [invalid(path, go_labels(labels), f"must be '{expected}'")]
    return []


def _validate_generated_selector(obj: Mapping[str, Any], require_prefixed: bool) -> list[Cause]:
    spec = as_map(obj.get("spec"))
    if spec.get("manualSelector") is True:
        return []
    meta = meta_of(obj)
    uid, name = as_str(meta.get("uid")), as_str(meta.get("name"))
    errs: list[Cause] = []
    if not uid:
        errs.append(required("metadata.uid"))
    labels = as_map(as_map(as_map(spec.get("template")).get("metadata")).get("labels"))
    errs.extend(_has_label(labels, _JOB_LEGACY_UID, uid))
    errs.extend(_has_label(labels, _JOB_LEGACY_NAME, name))
    if require_prefixed:
        errs.extend(_has_label(labels, _JOB_UID, uid))
        errs.extend(_has_label(labels, _JOB_NAME, name))
        expected = {_JOB_UID: uid}
    else:
        expected = {_JOB_LEGACY_UID: uid}
    sel = spec.get("selector")
    try:
        compiled = selector_from_label_selector(None if sel is None else as_map(sel))
    except SelectorParseError:
        errs.append(invalid("spec.selector", go_label_selector(as_map(sel)), "invalid label selector"))
        return errs
    if not compiled.matches(expected):
        errs.append(invalid("spec.selector", go_label_selector(None if sel is None else as_map(sel)),
                            "`selector` not auto-generated"))
    return errs


def validate_job_spec_common(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """Upstream's validateJobSpec (shared by Jobs and CronJob job templates), in its order."""
    errs: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                "ttlSecondsAfterFinished", "backoffLimitPerIndex"):
        errs.extend(nonnegative_field(spec, key, f"{path}.{key}"))
    mfi = as_int(spec.get("maxFailedIndexes"))
    if spec.get("maxFailedIndexes") is not None:
        errs.extend(nonnegative_field(spec, "maxFailedIndexes", f"{path}.maxFailedIndexes"))
        if spec.get("backoffLimitPerIndex") is None:
            errs.append(required(f"{path}.backoffLimitPerIndex",
                                 "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    completions = as_int(spec.get("completions"))
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(not_supported(f"{path}.completionMode", as_str(mode),
                                      ("NonIndexed", "Indexed")))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(required(f"{path}.completions", "when completion mode is Indexed"))
            par = as_int(spec.get("parallelism"))
            if par is not None and par > _MAX_PARALLELISM_FOR_INDEXED_JOB:
                errs.append(invalid(f"{path}.parallelism", par,
                                    f"must be less than or equal to "
                                    f"{_MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is "
                                    "Indexed"))
            if completions is not None and mfi is not None and mfi > completions:
                errs.append(invalid(f"{path}.maxFailedIndexes", mfi,
                                    "must be less than or equal to completions"))
            if mfi is not None and mfi > 100_000:
                errs.append(invalid(f"{path}.maxFailedIndexes", mfi,
                                    "must be less than or equal to 100000"))
    if mode in (None, "NonIndexed"):
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(key) is not None:
                errs.append(invalid(f"{path}.{key}", as_int(spec.get(key)),
                                    "requires indexed completion mode"))
    pfp = spec.get("podFailurePolicy")
    if pfp is not None:
        errs.extend(_validate_pod_failure_policy(spec, as_map(pfp), f"{path}.podFailurePolicy"))
    prp = spec.get("podReplacementPolicy")
    if prp is not None:
        if spec.get("podFailurePolicy") is not None:
            if prp != "Failed":
                errs.append(not_supported(f"{path}.podReplacementPolicy", as_str(prp), ("Failed",)))
        elif prp not in ("TerminatingOrFailed", "Failed"):
            errs.append(not_supported(f"{path}.podReplacementPolicy", as_str(prp),
                                      ("TerminatingOrFailed", "Failed")))
    tmpl = as_map(spec.get("template"))
    errs.extend(podspec.validate_pod_template_spec(tmpl, f"{path}.template"))
    restart = as_str(as_map(tmpl.get("spec")).get("restartPolicy"))
    rpath = f"{path}.template.spec.restartPolicy"
    # Defaulting turns an unset restartPolicy into Always, so both mean "not set".
    if restart in ("Always", ""):
        errs.append(required(rpath, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(not_supported(rpath, restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(invalid(rpath, restart,
                            'only "Never" is supported when podFailurePolicy is specified'))
    return errs


_PFP_ACTIONS: Final = ("Count", "FailIndex", "FailJob", "Ignore")


def _validate_pod_failure_policy(spec: Mapping[str, Any], pfp: Mapping[str, Any],
                                 path: str) -> list[Cause]:
    errs: list[Cause] = []
    rules = as_list(pfp.get("rules"))
    if len(rules) > 20:
        errs.append(too_many(f"{path}.rules", len(rules), 20))
    tspec = as_map(as_map(spec.get("template")).get("spec"))
    names = {as_str(as_map(c).get("name")) for f in ("containers", "initContainers")
             for c in as_list(tspec.get(f))}
    for i, rule in enumerate(rules):
        rule = as_map(rule)
        rpath = f"{path}.rules[{i}]"
        action = as_str(rule.get("action"))
        if not action:
            errs.append(required(f"{rpath}.action",
                                 'valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(invalid(f"{rpath}.action", action,
                                    "requires the backoffLimitPerIndex to be set"))
        elif action not in _PFP_ACTIONS:
            errs.append(not_supported(f"{rpath}.action", action, _PFP_ACTIONS))
        oec = rule.get("onExitCodes")
        if oec is not None:
            errs.extend(_validate_on_exit_codes(as_map(oec), f"{rpath}.onExitCodes", names))
        opc = as_list(rule.get("onPodConditions"))
        for j, pat in enumerate(opc):
            pat = as_map(pat)
            ppath = f"{rpath}.onPodConditions[{j}]"
            ctype = as_str(pat.get("type"))
            errs.extend(invalid(f"{ppath}.type", ctype, m) for m in is_qualified_name(ctype))
            status = as_str(pat.get("status"))
            if not status:
                errs.append(required(f"{ppath}.status",
                                     'valid values: ["False" "True" "Unknown"]'))
            elif status not in ("False", "True", "Unknown"):
                errs.append(not_supported(f"{ppath}.status", status,
                                          ("False", "True", "Unknown")))
        if oec is not None and opc:
            errs.append(Cause("FieldValueInvalid", rpath,  # the value is omitted
                              "specifying both OnExitCodes and OnPodConditions is not supported"))
        if oec is None and not opc:
            errs.append(Cause("FieldValueInvalid", rpath,
                              "specifying one of OnExitCodes and OnPodConditions is required"))
    return errs


def _validate_on_exit_codes(oec: Mapping[str, Any], path: str, names: set[str]) -> list[Cause]:
    errs: list[Cause] = []
    op = as_str(oec.get("operator"))
    if not op:
        errs.append(required(f"{path}.operator", 'valid values: ["In" "NotIn"]'))
    elif op not in ("In", "NotIn"):
        errs.append(not_supported(f"{path}.operator", op, ("In", "NotIn")))
    cname = oec.get("containerName")
    if cname is not None and cname not in names:
        errs.append(invalid(f"{path}.containerName", as_str(cname),
                            "must be one of the container or initContainer names in the pod "
                            "template"))
    values = [v for v in as_list(oec.get("values")) if isinstance(v, int)]
    if not values:
        errs.append(invalid(f"{path}.values", GoValue("null" if oec.get("values") is None
                                                      else "[]"), "at least one value is required"))
    elif len(values) > 255:
        errs.append(too_many(f"{path}.values", len(values), 255))
    seen: set[int] = set()
    ordered = True
    for j, v in enumerate(values):
        if op == "In" and v == 0:
            errs.append(invalid(f"{path}.values[{j}]", v, "must not be 0 for the In operator"))
        if v in seen:
            errs.append(duplicate(f"{path}.values[{j}]", v))
        seen.add(v)
        if j > 0 and values[j - 1] > v:
            ordered = False
    if not ordered:
        errs.append(invalid(f"{path}.values", GoValue(json.dumps(values, separators=(",", ":"))),
                            "must be ordered"))
    return errs


def _validate_job_spec(spec: Mapping[str, Any]) -> list[Cause]:
    """Upstream's ValidateJobSpec: the common checks plus the selector."""
    errs = validate_job_spec_common(spec, "spec")
    sel = spec.get("selector")
    if sel is None:
        errs.append(required("spec.selector"))
    else:
        errs.extend(validate_label_selector(as_map(sel), "spec.selector"))
    try:
        compiled = selector_from_label_selector(None if sel is None else as_map(sel))
    except SelectorParseError:
        return errs
    labels = as_map(as_map(spec.get("template")).get("metadata")).get("labels")
    if not compiled.matches(as_map(labels)):
        errs.append(invalid("spec.template.metadata.labels", go_labels(labels),
                            "`selector` does not match template `labels`"))
    return errs


def _validate_job(obj: Mapping[str, Any], require_prefixed: bool) -> list[Cause]:
    errs = validate_meta(obj, True)
    errs.extend(_validate_generated_selector(obj, require_prefixed))
    spec = as_map(obj.get("spec"))
    errs.extend(_validate_job_spec(spec))
    completions = as_int(spec.get("completions"))
    if spec.get("completionMode") == "Indexed" and completions is not None and completions > 0:
        name = as_str(meta_of(obj).get("name"))
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(invalid("metadata.name", name,
                                f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


def _create_job(obj: Mapping[str, Any]) -> list[Cause]:
    return _validate_job(obj, True)


def _update_job(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    ospec = as_map(old.get("spec"))
    old_labels = as_map(as_map(as_map(ospec.get("template")).get("metadata")).get("labels"))
    require_prefixed = _JOB_NAME in old_labels and _JOB_UID in old_labels
    errs = _validate_job(new, require_prefixed)
    errs.extend(validate_object_meta_update(new.get("metadata"), old.get("metadata")))
    nspec = as_map(new.get("spec"))
    # completions: immutable, except that an Indexed Job may scale it together
    # with parallelism (ElasticIndexedJob).
    if not semantic_equal(nspec.get("completions"), ospec.get("completions")):
        if nspec.get("completionMode") != "Indexed":
            errs.extend(immutable(nspec.get("completions"), ospec.get("completions"),
                                   "spec.completions"))
        elif nspec.get("completions") is not None and (
                nspec.get("completions") != nspec.get("parallelism")):
            errs.append(invalid("spec.completions", nspec.get("completions"),
                                "can only be modified in tandem with spec.parallelism"))
    nsel = nspec.get("selector")
    if not semantic_equal(nsel, ospec.get("selector")):
        errs.append(invalid("spec.selector", go_label_selector(None if nsel is None else as_map(nsel)),
                            FIELD_IMMUTABLE_ERROR_MSG))
    # The pod template is immutable, except that a suspended Job that never
    # started may change its scheduling directives.
    ntmpl, otmpl = dict(as_map(nspec.get("template"))), dict(as_map(ospec.get("template")))
    suspended = ospec.get("suspend") is True
    not_started = not as_map(old.get("status")).get("startTime")
    if suspended and not_started:
        nts, ots = dict(as_map(ntmpl.get("spec"))), dict(as_map(otmpl.get("spec")))
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            ots[key] = nts.get(key)
        naff, oaff = nts.get("affinity"), ots.get("affinity")
        if isinstance(oaff, Mapping):
            oaff = {k: v for k, v in oaff.items() if k != "nodeAffinity"}
            if isinstance(naff, Mapping) and naff.get("nodeAffinity") is not None:
                oaff["nodeAffinity"] = naff["nodeAffinity"]
            ots["affinity"] = oaff
        elif isinstance(naff, Mapping):
            ots["affinity"] = {"nodeAffinity": naff.get("nodeAffinity")}
        nmeta, ometa = dict(as_map(ntmpl.get("metadata"))), dict(as_map(otmpl.get("metadata")))
        ometa["labels"] = nmeta.get("labels")
        ometa["annotations"] = nmeta.get("annotations")
        otmpl["metadata"] = ometa
        otmpl["spec"] = ots
    if not semantic_equal(ntmpl, otmpl):
        errs.append(invalid("spec.template", ntmpl, FIELD_IMMUTABLE_ERROR_MSG))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy",
                "successPolicy"):
        errs.extend(immutable(nspec.get(key), ospec.get(key), f"spec.{key}"))
    return errs


def _status_job(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    s = as_map(new.get("status"))
    errs = wv.status_nonnegative(s, ("active", "succeeded", "failed", "ready", "terminating"))
    ready, active = as_int(s.get("ready")), as_int(s.get("active")) or 0
    if ready is not None and ready > active:
        errs.append(invalid("status.ready", ready, "cannot set more ready pods than active"))
    return errs


# --- printer ---------------------------------------------------------------------------

JOB_SELECTOR_DESCRIPTION: Final = (
    "A label query over pods that should match the pod count. Normally, the system sets this "
    "field for you. More info: " + pr.LABEL_SELECTORS_URL
)


_JOB_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Status", "string", "Status of the job."),
    pr.column("Completions", "string",
         "The number of pods which reached phase Succeeded. The value increases monotonically "
         "for a given spec. However, it may decrease in reaction to scale down of elastic "
         "indexed jobs."),
    pr.column("Duration", "string", "Time required to complete the job."),
    pr.AGE_COLUMN,
    pr.column("Containers", "string", pr.CONTAINERS_DESCRIPTION, priority=1),
    pr.column("Images", "string", pr.IMAGES_DESCRIPTION, priority=1),
    pr.column("Selector", "string", JOB_SELECTOR_DESCRIPTION, priority=1),
)


def _job_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    succeeded = pr.as_int(status.get("succeeded"))
    if pr.has(spec, "completions"):
        completions = f"{succeeded}/{pr.as_int(spec.get('completions'))}"
    else:
        parallelism = pr.as_int(spec.get("parallelism"))
        if parallelism > 1:
            completions = f"{succeeded}/1 of {parallelism}"
        else:
            completions = f"{succeeded}/1"
    start = pr.parse_timestamp_ns(status.get("startTime"))
    completion = pr.parse_timestamp_ns(status.get("completionTime"))
    if start is None:
        job_duration = ""
    elif completion is None:
        job_duration = pr.human_duration_ns(now - start)
    else:
        job_duration = pr.human_duration_ns(completion - start)

    def has_condition(ctype: str) -> bool:
        for cond in pr.as_list(status.get("conditions")):
            cond = pr.as_dict(cond)
            if cond.get("type") == ctype:
                return cond.get("status") == "True"
        return False

    if has_condition("Complete"):
        job_status = "Complete"
    elif has_condition("Failed"):
        job_status = "Failed"
    elif pr.has(pr.as_dict(obj.get("metadata")), "deletionTimestamp"):
        job_status = "Terminating"
    elif has_condition("Suspended"):
        job_status = "Suspended"
    elif has_condition("FailureTarget"):
        job_status = "FailureTarget"
    else:
        job_status = "Running"
    names, images = pr.layout_container_cells(pr.pod_template_spec(obj).get("containers"))
    return pr.Row([
        pr.object_name(obj), job_status, completions, job_duration, pr.age(obj, now),
        names, images, pr.format_label_selector(spec.get("selector")),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class JobStrategy(Strategy):
    group = "batch"
    kind = "Job"
    printer = pr.Printer(_JOB_COLUMNS, _job_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_job(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_job(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_job(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_job(new, old)
