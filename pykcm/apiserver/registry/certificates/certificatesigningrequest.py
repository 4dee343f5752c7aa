"""certificates.k8s.io/v1 CertificateSigningRequests (kube-apiserver
``pkg/registry/certificates/certificates`` and ``pkg/apis/certificates/validation``): the
requester's identity, the three write paths (main resource, /status, /approval),
validation and printer.

Data flow: a create records the authenticated user (username, uid, groups, extra; read from
the request's RBAC context, rbac/escalation.CURRENT) in the spec and starts with an empty
status; an update of the main resource keeps the stored spec and status (only metadata
moves); /approval takes the request's conditions (Approved, Denied, ...) and nothing else;
/status takes the status but keeps the stored Approved/Denied conditions and the spec. Both
subresources stamp conditions without lastUpdateTime/lastTransitionTime with now (a
transition time is carried over from an old condition of the same type and status).

Validation: the request a PEM ``CERTIFICATE REQUEST`` with a valid signature; usages
required, known and unique; signerName a domain/path (the legacy-unknown signer refused);
expirationSeconds at least 600; conditions: a type, a status (True only for Approved,
Denied, Failed), Approved and Denied exclusive, each type once; Approved/Denied/Failed never
removed; Approved/Denied only changed through /approval; status.certificate only through
/status, PEM CERTIFICATE blocks only, never replaced once set.

Deviations: an unparsable request is reported with pykcm's own wording after the PEM type
check (Go's x509 parser messages are not reproduced); the "updates may not modify a
condition" message lacks upstream's Go diff; the compatibility tolerances for objects
already stored with bad usages or duplicate conditions are not applied (v1 never stores
them).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final

from cryptography import x509

from pykcm.api.validation import (
    Cause,
    duplicate,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    not_supported,
    required,
    too_long,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.rbac.escalation import CURRENT
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy
from pykcm.apiserver.server_clock import now_rfc3339

__all__ = ["CertificateSigningRequestStrategy", "approval_state"]

USAGES: Final = tuple(sorted((
    "signing", "digital signature", "content commitment", "key encipherment",
    "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
    "decipher only", "any", "server auth", "client auth", "code signing", "email protection",
    "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping",
    "ocsp signing", "microsoft sgc", "netscape sgc")))
_TRUE_ONLY: Final = ("Approved", "Denied", "Failed")
_LEGACY_SIGNER: Final = "kubernetes.io/legacy-unknown"
_PEM_RE: Final = re.compile(
    rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n((?:[A-Za-z0-9+/=]+\r?\n|[^\n:]+: [^\n]*\r?\n)*)"
    rb"-----END \1-----")


def _pem_blocks(data: bytes) -> list[tuple[str, bool, bytes]]:
    """(type, has headers, DER) of each PEM block, as encoding/pem's Decode loop sees it."""
    out: list[tuple[str, bool, bytes]] = []
    for m in _PEM_RE.finditer(data):
        lines = m.group(2).splitlines()
        headers = any(b": " in ln for ln in lines)
        body = b"".join(ln for ln in lines if b": " not in ln)
        try:
            der = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            continue
        out.append((m.group(1).decode(), headers, der))
    return out


def _decode_bytes(value: Any) -> bytes:
    """A []byte field as JSON carries it: base64."""
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value)
    except (binascii.Error, ValueError):
        return b""


def _request_error(request: bytes) -> str | None:
    blocks = _pem_blocks(request)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    try:
        csr = x509.load_der_x509_csr(blocks[0][2])
    except ValueError as exc:
        return f"x509: {exc}"
    if not csr.is_signature_valid:
        return "x509: signature verification failure"
    return None


def _certificate_error(data: bytes) -> str | None:
    if not data:
        return None
    blocks = _pem_blocks(data)
    for kind, headers, der in blocks:
        if kind != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind}"'
        if headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(der)
        except ValueError as exc:
            return f"x509: {exc}"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _signer_name_errors(name: str, path: str) -> list[Cause]:
    """ValidateSignerName."""
    if not name:
        return [required(path, "")]
    segments = name.split("/")
    if len(segments) != 2:
        return [invalid(path, name, "must be a fully qualified domain and path of the form "
                                    "'example.com/signer-name'")]
    domain, rest = segments
    errs: list[Cause] = []
    if len(domain) > 253:
        errs.append(too_long(path, 253))
    labels = domain.split(".")
    for lbl in labels:
        msgs = is_dns1123_label(lbl)
        if msgs:
            errs += [invalid(path, domain, f'validating label "{lbl}": {m}') for m in msgs]
            break
    if len(labels) < 2:
        errs.append(invalid(path, domain, "should be a domain with at least two segments "
                                          "separated by dots"))
    for lbl in rest.split("."):
        msgs = is_dns1123_subdomain(lbl)
        if msgs:
            errs += [invalid(path, rest, f'validating label "{lbl}": {m}') for m in msgs]
            break
    return errs


def _conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(pr.as_dict(c)) for c in pr.as_list(pr.as_dict(obj.get("status")).get("conditions"))]


def _of_type(obj: Mapping[str, Any], t: str) -> list[dict[str, Any]]:
    return [c for c in _conditions(obj) if c.get("type") == t]


def _any_name(name: str, prefix: bool) -> list[str]:
    """ValidateCertificateRequestName: any name is accepted."""
    return []


def _validate(obj: Obj, *, allow_both: bool = False) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False,
                                name_validator=_any_name)
    spec = pr.as_dict(obj.get("spec"))
    request = _decode_bytes(spec.get("request"))
    err = _request_error(request)
    if err is not None:
        # ([]byte printed as its JSON form, base64)
        errs.append(invalid("spec.request", pr.as_str(spec.get("request")), err))
    usages = pr.as_list(spec.get("usages"))
    if not usages:
        errs.append(required("spec.usages", ""))
    for i, u in enumerate(usages):
        if u not in USAGES:
            errs.append(not_supported(f"spec.usages[{i}]", u, USAGES))
    seen: set[str] = set()
    for i, u in enumerate(usages):
        if u in seen:
            errs.append(duplicate(f"spec.usages[{i}]", u))
        seen.add(u)
    signer = pr.as_str(spec.get("signerName"))
    if signer == _LEGACY_SIGNER:
        errs.append(invalid("spec.signerName", signer,
                            "the legacy signerName is not allowed via this API version"))
    else:
        errs += _signer_name_errors(signer, "spec.signerName")
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, int) and seconds < 600:
        errs.append(invalid("spec.expirationSeconds", seconds,
                            "may not specify a duration less than 600 seconds (10 minutes)"))
    errs += _validate_conditions(obj, allow_both)
    cert_err = _certificate_error(_decode_bytes(pr.as_dict(obj.get("status")).get("certificate")))
    if cert_err is not None:
        errs.append(invalid("status.certificate", "<certificate data>", cert_err))
    return errs


def _validate_conditions(obj: Mapping[str, Any], allow_both: bool) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(_conditions(obj)):
        p = f"status.conditions[{i}]"
        t, status = pr.as_str(c.get("type")), pr.as_str(c.get("status"))
        if not t:
            errs.append(required(f"{p}.type", ""))
        allowed = ("True",) if t in _TRUE_ONLY else ("False", "True", "Unknown")
        if not status:
            errs.append(required(f"{p}.status", ""))
        elif status not in allowed:
            errs.append(not_supported(f"{p}.status", status, allowed))
        if not allow_both:
            if t == "Approved":
                approved = True
                if denied:
                    errs.append(invalid("status.conditions", t,
                                        "Approved and Denied conditions are mutually exclusive"))
            elif t == "Denied":
                denied = True
                if approved:
                    errs.append(invalid("status.conditions", t,
                                        "Approved and Denied conditions are mutually exclusive"))
        if t in seen:
            errs.append(duplicate(f"{p}.type", t))
        seen.add(t)
    return errs


def _validate_update(new: Obj, old: Obj, *, approval: bool, certificate: bool) -> list[Cause]:
    both = bool(_of_type(old, "Approved")) and bool(_of_type(old, "Denied"))
    errs = _validate(new, allow_both=both)
    for t in ("Approved", "Denied", "Failed"):
        if len(_of_type(new, t)) < len(_of_type(old, t)):
            errs.append(forbidden("status.conditions",
                                  f'updates may not remove a condition of type "{t}"'))
    if not approval:
        for t in ("Approved", "Denied"):
            o, n = _of_type(old, t), _of_type(new, t)
            if len(n) > len(o):
                errs.append(forbidden("status.conditions",
                                      f'updates may not add a condition of type "{t}"'))
            elif len(n) == len(o) and n != o:
                errs.append(forbidden("status.conditions",
                                      f'updates may not modify a condition of type "{t}"'))
    new_cert = _decode_bytes(pr.as_dict(new.get("status")).get("certificate"))
    old_cert = _decode_bytes(pr.as_dict(old.get("status")).get("certificate"))
    if new_cert != old_cert:
        if not certificate:
            errs.append(forbidden("status.certificate", "updates may not set certificate content"))
        elif old_cert:
            errs.append(forbidden("status.certificate",
                                  "updates may not modify existing certificate content"))
    return errs + validate_object_meta_update(new.get("metadata"), old.get("metadata"))


def _stamp_conditions(new: Obj, old: Mapping[str, Any]) -> None:
    """populateConditionTimestamps: unset times become now; a transition time is carried
    over from an old condition of the same type and status."""
    now = now_rfc3339()
    old_conditions = _conditions(old)
    for c in pr.as_list(pr.as_dict(new.get("status")).get("conditions")):
        if not isinstance(c, dict):
            continue
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            carried = next((o.get("lastTransitionTime") for o in old_conditions
                            if o.get("type") == c.get("type")
                            and o.get("status") == c.get("status")
                            and o.get("lastTransitionTime")), None)
            c["lastTransitionTime"] = carried or now


def approval_state(obj: Mapping[str, Any]) -> tuple[bool, bool]:
    """(approved, denied) from the conditions (certificates.GetCertApprovalCondition)."""
    approved = denied = False
    for c in _conditions(obj):
        if c.get("type") == "Approved":
            approved = True
        elif c.get("type") == "Denied":
            denied = True
    return approved, denied


# --- printer -------------------------------------------------------------------------------

_SPEC: Final = "certificates.v1.CertificateSigningRequestSpec"

_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.AGE_COLUMN,
    # (upstream's descriptions are certificates/v1beta1's SwaggerDoc of signerName, request,
    # expirationSeconds and the status's conditions; pykcm serves no v1beta1 to read them from)
    pr.column("SignerName", "string",
              "Requested signer for the request. It is a qualified name in the form: "
              "`scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a "
              "kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-"
              "client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n"
              "    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned "
              "\"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out "
              "of band. You can select on this field using `spec.signerName`."),
    pr.column("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
    pr.column("RequestedDuration", "string", field_doc(_SPEC, "expirationSeconds")),
    pr.column("Condition", "string",
              "Conditions applied to the request, such as approval or denial."),
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    approved, denied = approval_state(obj)
    if denied:
        status = "Denied"
    elif approved:
        status = "Approved"
    else:
        status = "Pending"
    for c in _conditions(obj):
        if c.get("type") == "Failed":
            status += ",Failed"
    if pr.as_dict(obj.get("status")).get("certificate"):
        status += ",Issued"
    seconds = spec.get("expirationSeconds")
    duration = "<none>" if not isinstance(seconds, int) else pr.human_duration(seconds)
    signer = pr.as_str(spec.get("signerName")) or "<none>"
    return pr.Row([pr.object_name(obj), pr.age(obj, now), signer,
                   pr.as_str(spec.get("username")), duration, status])


@register
class CertificateSigningRequestStrategy(Strategy):
    group = "certificates.k8s.io"
    kind = "CertificateSigningRequest"
    printer = pr.Printer(_COLUMNS, _row)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        auth = CURRENT.get()
        if auth is not None:
            user = auth.user
            if user.name:
                spec["username"] = user.name
            if user.uid:
                spec["uid"] = user.uid
            if user.groups:
                spec["groups"] = list(user.groups)
            if user.extra:
                spec["extra"] = user.extra_dict()
        obj["status"] = {}

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        # only metadata moves through the main resource
        for key in ("spec", "status"):
            if key in old:
                new[key] = old[key]
            else:
                new.pop(key, None)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # (also the /approval write's: the main resource's writes change no condition)
        return _validate_update(new, old, approval=True, certificate=False)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> Obj:
        result = super().prepare_for_status_update(new, old)
        status = dict(pr.as_dict(result.get("status")))
        conditions = [dict(pr.as_dict(c)) for c in pr.as_list(status.get("conditions"))]
        # the stored Approved/Denied conditions stay (preserveConditionInstances), when
        # their number is unchanged
        for t in ("Approved", "Denied"):
            o = _of_type(old, t)
            idx = [i for i, c in enumerate(conditions) if c.get("type") == t]
            if len(idx) == len(o):
                for i, oc in zip(idx, o, strict=True):
                    conditions[i] = oc
        if conditions:
            status["conditions"] = conditions
        result["status"] = status
        _stamp_conditions(result, old)
        return result

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _validate_update(new, old, approval=False, certificate=True)

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> Obj:
        if subresource != "approval":
            return super().prepare_for_subresource_update(subresource, new, old)
        stamped = dict(new)
        stamped["status"] = dict(pr.as_dict(new.get("status")))
        stamped["status"]["conditions"] = [dict(pr.as_dict(c)) for c in
                                           pr.as_list(stamped["status"].get("conditions"))]
        _stamp_conditions(stamped, old)
        result = dict(old)
        result["metadata"] = self.status_write_metadata(new, old["metadata"])
        status = dict(pr.as_dict(old.get("status")))
        conditions = stamped["status"]["conditions"]
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)
        result["status"] = status
        return result
