"""CustomResourceDefinitions and the resources they define (upstream's apiextensions-apiserver).

- ``definitions.py``: CRD objects: defaults, validation, accepted names and the
  Established/NamesAccepted conditions (the apiextensions controllers' answer).
- ``custom_resources.py``: the served versions of each established CRD (registry,
  selectable fields, printer columns, scale paths).
- ``schema.py``: structural schemas: pruning, defaulting, validation (with
  ``go_regexp.py``: RE2 patterns as Go's regexp reads them).

Their strategies are registry/apiextensions/ (customresourcedefinition.py,
customresource.py); the generic store and the handlers call into this package.
"""
