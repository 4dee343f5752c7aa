"""admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations and
MutatingWebhookConfigurations (kube-apiserver ``pkg/registry/admissionregistration`` and
``pkg/apis/admissionregistration``): stored with upstream's defaults, printer and a warning.

- defaults (SetDefaults_ValidatingWebhook / MutatingWebhook): failurePolicy Fail,
  matchPolicy Equivalent, namespaceSelector and objectSelector ``{}``, timeoutSeconds 10,
  each rule's scope ``*``, a service reference's port 443; mutating ones reinvocationPolicy
  Never;
- validation: the object metadata, each webhook's name required, sideEffects and
  admissionReviewVersions required;
- a warning on create: pykcm's API server stores webhook configurations and never calls
  the webhooks (the standards: a kind nothing acts on says so);
- generation 1 on create, moved when the webhooks change;
- printer: Name, Webhooks (their number), Age.

Deviations: webhooks are not called (no admission webhooks in pykcm); validation is the
required fields only (upstream also checks names, rules, URLs, selectors and match
conditions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    not_supported,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["MutatingWebhookConfigurationStrategy", "ValidatingWebhookConfigurationStrategy"]

_SIDE_EFFECTS: Final = ("None", "NoneOnDryRun")


def _default_webhook(w: dict[str, Any], mutating: bool) -> None:
    w.setdefault("failurePolicy", "Fail")
    w.setdefault("matchPolicy", "Equivalent")
    if w.get("namespaceSelector") is None:
        w["namespaceSelector"] = {}
    if w.get("objectSelector") is None:
        w["objectSelector"] = {}
    w.setdefault("timeoutSeconds", 10)
    if mutating:
        w.setdefault("reinvocationPolicy", "Never")
    for rule in pr.as_list(w.get("rules")):
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")
    service = pr.as_dict(w.get("clientConfig")).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    for i, w in enumerate(pr.as_list(obj.get("webhooks"))):
        w = pr.as_dict(w)
        p = f"webhooks[{i}]"
        if not w.get("name"):
            errs.append(required(f"{p}.name", ""))
        effects = w.get("sideEffects")
        if effects is None:
            errs.append(required(f"{p}.sideEffects", "must specify one of None, NoneOnDryRun"))
        elif effects not in _SIDE_EFFECTS:
            errs.append(not_supported(f"{p}.sideEffects", effects, _SIDE_EFFECTS))
        if not w.get("admissionReviewVersions"):
            errs.append(required(f"{p}.admissionReviewVersions",
                                 "must specify one of v1, v1beta1"))
    return errs


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Webhooks", "integer",
              "Webhooks indicates the number of webhooks registered in this configuration"),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), len(pr.as_list(obj.get("webhooks"))),
                   pr.age(obj, now)])


class _WebhookConfigurationStrategy(Strategy):
    mutating: bool = False
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        for w in pr.as_list(obj.get("webhooks")):
            if isinstance(w, dict):
                _default_webhook(w, self.mutating)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        # (the webhooks are these kinds' spec)
        return new.get("webhooks") != old.get("webhooks")

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _validate(new) + validate_object_meta_update(new.get("metadata"),
                                                            old.get("metadata"))

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return [(f"{self.kind} is stored but its webhooks are never called: pykcm's API "
                 "server does not implement admission webhooks")]


@register
class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    group = "admissionregistration.k8s.io"
    kind = "ValidatingWebhookConfiguration"


@register
class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    group = "admissionregistration.k8s.io"
    kind = "MutatingWebhookConfiguration"
    mutating = True
