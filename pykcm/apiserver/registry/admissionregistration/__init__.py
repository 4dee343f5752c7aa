"""Strategies of the admissionregistration.k8s.io/v1 resources."""
