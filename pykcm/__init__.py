"""pykcm: the Kubernetes controller manager in Python.

Layers (see DESIGN.md): api → client → cache → informers → workqueue →
leaderelection → controller → controllers → manager; the embedded API server
(`pykcm.apiserver`) and node simulator (`pykcm.sim`) stand beside them and are
reached only over HTTP.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
