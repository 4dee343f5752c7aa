"""Strategies of the batch/v1 resources."""
