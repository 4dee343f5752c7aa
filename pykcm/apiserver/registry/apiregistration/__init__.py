"""Strategies of the apiregistration.k8s.io/v1 resources."""
