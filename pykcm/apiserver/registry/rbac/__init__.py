"""rbac.authorization.k8s.io strategies: Role, ClusterRole, RoleBinding, ClusterRoleBinding."""
