"""scheduling.k8s.io: PriorityClass (and the system classes)."""
