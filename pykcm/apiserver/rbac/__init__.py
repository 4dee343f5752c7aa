"""RBAC in pykcm's API server: rule matching, the authorizer, escalation checks, the
bootstrap policy and impersonation (kube-apiserver's ``plugin/pkg/auth/authorizer/rbac``
and ``pkg/registry/rbac``)."""
