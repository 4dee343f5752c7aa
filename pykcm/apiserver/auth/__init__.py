"""Authentication and the reviews: bearer and service-account tokens, certificates,
kubeconfig files, access reviews (upstream's ``apiserver/pkg/authentication`` and
``pkg/registry/authorization``). Authorization (RBAC) is ``pykcm.apiserver.rbac``.
"""
