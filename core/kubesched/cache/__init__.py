"""The scheduler cache: assumed and bound pods per node, the node tree and snapshots."""

from kubesched.cache.cache import Cache, CacheDump, CacheError, PodState
from kubesched.cache.node_tree import NodeTree, zone_key
from kubesched.cache.snapshot import Snapshot, new_snapshot

__all__ = [
    "Cache",
    "CacheDump",
    "CacheError",
    "NodeTree",
    "PodState",
    "Snapshot",
    "new_snapshot",
    "zone_key",
]
