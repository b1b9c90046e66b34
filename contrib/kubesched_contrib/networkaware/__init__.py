"""Network-aware scheduling: AppGroups placed in dependency order, close to each other.

scheduler-plugins' ``pkg/networkaware``: TopologicalSort (QueueSort) and NetworkOverhead
(PreFilter, Filter, Score), with the AppGroup and NetworkTopology kinds.
"""

from .api import AppGroup, NetworkTopology
from .networkoverhead import NetworkOverhead, NetworkOverheadArgs
from .topologicalsort import TopologicalSort, TopologicalSortArgs

__all__ = [
    "AppGroup",
    "NetworkOverhead",
    "NetworkOverheadArgs",
    "NetworkTopology",
    "TopologicalSort",
    "TopologicalSortArgs",
]
