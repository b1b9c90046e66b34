"""NodeResourceTopologyMatch and the NodeResourceTopology kind (after scheduler-plugins)."""

from .api import NODE_RESOURCE_TOPOLOGY_KIND, NodeResourceTopology
from .plugin import NAME, NodeResourceTopologyMatch, NodeResourceTopologyMatchArgs

__all__ = [
    "NAME",
    "NODE_RESOURCE_TOPOLOGY_KIND",
    "NodeResourceTopology",
    "NodeResourceTopologyMatch",
    "NodeResourceTopologyMatchArgs",
]
