"""What an apply request must carry before the field manager runs.

Role: kube-apiserver's PATCH handler checks of ``PatchOptions``
(``ValidatePatchOptions``) and the name check of an applied object, with its
answers:

- an apply patch without ``?fieldManager=``: 422 ``fieldManager: Required value:
  is required for apply patch``;
- ``?force=true`` on any other patch type: 422 ``force: Forbidden: may not be
  specified for non-apply patch``;
- a ``fieldManager`` longer than 128 bytes: 422 ``Too long``;
- an applied object whose ``metadata.name`` is not the URL's: 400 (an object
  without a name takes the URL's).

Data flow: the handler calls :func:`validate_patch_options` for every PATCH and
:func:`check_applied_name` on the decoded applied object, then
:meth:`~.field_manager.FieldManager.apply`.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver import errors
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager.manager_name import FIELD_MANAGER_MAX_LENGTH

APPLY_PATCH_TYPES = frozenset({"application/apply-patch+yaml", "application/apply-patch+cbor"})


def validate_patch_options(is_apply: bool, field_manager: str | None, force: bool) -> None:
    causes: list[dict[str, Any]] = []
    if is_apply:
        if not field_manager:
            causes.append({"reason": "FieldValueRequired",
                           "message": "Required value: is required for apply patch",
                           "field": "fieldManager"})
    elif force:
        causes.append({"reason": "FieldValueForbidden",
                       "message": "Forbidden: may not be specified for non-apply patch",
                       "field": "force"})
    if field_manager and len(field_manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        causes.append({"reason": "FieldValueTooLong",
                       "message": f"Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes",
                       "field": "fieldManager"})
    if causes:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", causes)


def check_applied_name(applied: dict[str, Any], url_name: str) -> None:
    meta = applied.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if name and name != url_name:
        raise StatusError(400, "BadRequest", f"the name of the object ({name}) does not match "
                                             f"the name on the URL ({url_name})")
