"""Test helpers for plugin authors (and kubesched's own tests): builders, harnesses, fixtures."""

from kubesched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod
from kubesched.testing.framework import FifoSort, RecordingBinder, make_framework, node_batch

__all__ = [
    "FifoSort",
    "NodeBuilder",
    "PodBuilder",
    "RecordingBinder",
    "make_framework",
    "make_node",
    "make_pod",
    "node_batch",
]
