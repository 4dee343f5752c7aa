"""Strategies of the policy/v1 resources."""
