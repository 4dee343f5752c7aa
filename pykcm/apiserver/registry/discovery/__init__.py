"""Strategies of the discovery.k8s.io/v1 resources."""
