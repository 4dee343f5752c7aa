"""Strategies of the flowcontrol.apiserver.k8s.io/v1 resources."""
