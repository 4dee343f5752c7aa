"""Server-side apply and managedFields (structured-merge-diff v6 and apimachinery's
``managedfields``, as kube-apiserver v1.36 runs them).

A library: :class:`FieldManager` computes an object's ``metadata.managedFields``
for Update operations and merges applied configurations by schema. Not yet wired
into the server's PATCH handler (``application/apply-patch+yaml`` still answers 415).
One concept per module: ``path`` (elements), ``path_set``, ``fields_v1``, ``schema``,
``typed``, ``to_field_set``, ``compare``, ``merge``, ``remove_items``, ``updater``,
``managed_fields``, ``conflicts``, ``manager_name``, ``reset_fields``, ``scale_handler``,
``validate``, ``field_manager``, ``apply_options``, ``factory`` (the manager of a served endpoint, and how
the server is to call it).
"""

from pykcm.apiserver.fieldmanager.field_manager import FieldManager
from pykcm.apiserver.fieldmanager.path_set import PathSet

__all__ = ["FieldManager", "PathSet"]
