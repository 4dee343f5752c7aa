"""The registry: what happens to an object of each resource between the HTTP endpoints and
storage (upstream's ``pkg/registry``).

- ``strategy.py``: the :class:`Strategy` every resource has (defaults, validation,
  status/spec split, generation, warnings, graceful delete, table printer);
  ``lookup.py`` finds the one of a ``ResourceInfo``.
- ``<group>/<resource>.py`` (``core/pod.py``, ``apps/deployment.py``, ...): one
  Strategy subclass per resource with rules of its own, grouped by API group
  (``core`` is the legacy "" group), as ``pkg/registry/<group>/<resource>``.
- ``printers.py``: what the per-kind table printers share.

See docs/architecture.md, "Adding a resource".
"""
