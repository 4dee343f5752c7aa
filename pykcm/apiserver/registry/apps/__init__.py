"""Strategies of the apps/v1 resources."""
