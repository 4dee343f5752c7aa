"""Strategies of the certificates.k8s.io/v1 resources."""
