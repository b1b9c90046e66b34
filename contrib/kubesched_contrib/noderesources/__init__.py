"""Resource-based scoring plugins from kubernetes-sigs/scheduler-plugins' ``noderesources``."""

from .allocatable import NAME, NodeResourcesAllocatable, NodeResourcesAllocatableArgs

__all__ = ["NAME", "NodeResourcesAllocatable", "NodeResourcesAllocatableArgs"]
