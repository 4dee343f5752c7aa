"""events.k8s.io/v1 Events: a view of the core Events (same storage)."""
