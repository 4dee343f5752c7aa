"""Strategies of the coordination.k8s.io/v1 resources."""
