"""Strategies of the resource.k8s.io/v1 resources (dynamic resource allocation)."""
