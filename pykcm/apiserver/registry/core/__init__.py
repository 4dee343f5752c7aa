"""Strategies of the core ("" group, /api/v1) resources."""
