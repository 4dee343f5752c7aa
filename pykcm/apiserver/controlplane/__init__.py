"""What kube-apiserver runs for itself beside serving requests (upstream's
``pkg/controlplane``): the ``kubernetes`` Service, Service IP and port allocation, the
identity Lease, the objects it creates at start.
"""
