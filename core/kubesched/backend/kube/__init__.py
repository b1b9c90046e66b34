"""The ``kube`` cluster backend: a real cluster through its API server (informers, writes)."""

from kubesched.backend.kube.client import (
    ForbiddenError,
    GoneError,
    KubeClient,
    UnreachableError,
    load_configuration,
)
from kubesched.backend.kube.cluster import RESOURCES, KubeCluster
from kubesched.backend.kube.events import EventBroadcaster
from kubesched.backend.kube.informer import Informer, Resource

__all__ = [
    "RESOURCES",
    "EventBroadcaster",
    "ForbiddenError",
    "GoneError",
    "Informer",
    "KubeClient",
    "KubeCluster",
    "Resource",
    "UnreachableError",
    "load_configuration",
]
