"""Admission: the plugins kube-apiserver runs on a write between decoding and storage.

- ``mutating.py``: ServiceAccount, DefaultTolerationSeconds and Priority (pods).
- ``storage.py``: DefaultStorageClass, StorageObjectInUseProtection and
  PersistentVolumeClaimResize (claims and volumes).
- ``validating.py``: the validating plugins' entry (LimitRanger of
  ``limit_ranger.py``, ResourceQuota of ``resource_quota.py``).

The generic store (rest_storage.py) calls them after the strategy's defaulting
and before its validation, as kube-apiserver's admission chain runs.
"""
