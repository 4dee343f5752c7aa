"""Strategies of the autoscaling API group (the Scale of the scale subresources)."""
