"""Strategies of the autoscaling API group: HorizontalPodAutoscalers (autoscaling/v2, with the
v1 view's conversion) and the Scale of the scale subresources."""
