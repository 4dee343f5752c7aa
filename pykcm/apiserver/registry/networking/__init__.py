"""networking.k8s.io: Ingress, IngressClass, NetworkPolicy, ServiceCIDR, IPAddress (and their
shared IP and CIDR checks)."""
