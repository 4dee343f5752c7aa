"""Strategies of the storage.k8s.io/v1 resources."""
