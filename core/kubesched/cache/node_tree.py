"""Node names grouped by zone, listed zone-interleaved (upstream's nodeTree)."""

from __future__ import annotations

import logging
from itertools import zip_longest

from kubesched.api import Node

__all__ = [
    "LABEL_FAILURE_DOMAIN_BETA_REGION",
    "LABEL_FAILURE_DOMAIN_BETA_ZONE",
    "LABEL_TOPOLOGY_REGION",
    "LABEL_TOPOLOGY_ZONE",
    "NodeTree",
    "zone_key",
]

log = logging.getLogger(__name__)

LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"

_SKIP = object()


def zone_key(node: Node) -> str:
    """The node's zone key: ``region + ":\\x00:" + zone``, or ``""`` without either label.

    Upstream's ``utilnode.GetZoneKey``: the GA ``topology.kubernetes.io`` labels win over
    the deprecated ``failure-domain.beta.kubernetes.io`` ones. The NUL separator keeps
    a region or zone containing ``:`` from colliding with another pair.
    """
    labels = node.metadata.labels
    if not labels:
        return ""
    zone = labels.get(LABEL_TOPOLOGY_ZONE)
    if zone is None:
        zone = labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE, "")
    region = labels.get(LABEL_TOPOLOGY_REGION)
    if region is None:
        region = labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names by zone key, in the order nodes and zones were first seen.

    ``list()`` walks the zones round-robin, one node of each zone per round, skipping
    exhausted zones: zones ``A = [1, 2, 3, 4]`` and ``B = [5, 6]`` list as
    ``1, 5, 2, 6, 3, 4``. The scheduler evaluates nodes in this order, which spreads
    a partial evaluation (``percentageOfNodesToScore``) across zones.

    Not thread-safe: the cache calls it under its lock. ``version`` changes whenever
    the listed order can change (a node added, removed or moved to another zone), so
    a snapshot knows when to rebuild its node list.
    """

    __slots__ = ("_tree", "_zone_of", "_zones", "num_nodes", "version")

    def __init__(self, nodes: list[Node] | None = None) -> None:
        # Per zone, an insertion-ordered dict used as an ordered set: O(1) removal.
        self._tree: dict[str, dict[str, None]] = {}
        self._zones: list[str] = []
        self._zone_of: dict[str, str] = {}
        self.num_nodes = 0
        self.version = 0
        for n in nodes or ():
            self.add_node(n)

    @property
    def zones(self) -> list[str]:
        """The zone keys, in the order they were first seen (a copy)."""
        return list(self._zones)

    def zone_of(self, name: str) -> str | None:
        """The zone key node ``name`` is filed under, or ``None`` if it is not in the tree."""
        return self._zone_of.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def __len__(self) -> int:
        return self.num_nodes

    def add_node(self, node: Node) -> None:
        """Add ``node`` at the end of its zone; a node already in the tree is left alone."""
        name = node.metadata.name or ""
        if name in self._zone_of:
            log.info("did not add node %r to the node tree because it already exists", name)
            return
        self._insert(name, zone_key(node))

    def remove_node(self, node: Node) -> None:
        """Remove ``node``; ``KeyError`` if it is not in the tree.

        The node is found by name, so a stale copy of the Node (other labels) works.
        """
        name = node.metadata.name or ""
        zone = self._zone_of.get(name)
        if zone is None:
            zone = zone_key(node)
            log.error("did not remove node %r from the node tree because it was not found", name)
            shown = zone.replace("\x00", "\\x00")
            raise KeyError(f'node "{name}" in group "{shown}" was not found')
        self._delete(name, zone)

    def update_node(self, old: Node | None, new: Node) -> None:
        """Move the node to its new zone if its zone labels changed; add it if absent."""
        name = new.metadata.name or ""
        new_zone = zone_key(new)
        old_zone = self._zone_of.get(name)
        if old_zone == new_zone:
            return
        if old_zone is not None:
            self._delete(name, old_zone)
        self._insert(name, new_zone)

    def list(self) -> list[str]:
        """All node names, zones interleaved round-robin (see the class docstring)."""
        if len(self._zones) == 1:
            return list(self._tree[self._zones[0]])
        columns = [list(self._tree[z]) for z in self._zones]
        return [
            name
            for round_ in zip_longest(*columns, fillvalue=_SKIP)
            for name in round_
            if name is not _SKIP
        ]

    def _insert(self, name: str, zone: str) -> None:
        members = self._tree.get(zone)
        if members is None:
            members = self._tree[zone] = {}
            self._zones.append(zone)
        members[name] = None
        self._zone_of[name] = zone
        self.num_nodes += 1
        self.version += 1

    def _delete(self, name: str, zone: str) -> None:
        members = self._tree[zone]
        del members[name]
        del self._zone_of[name]
        if not members:
            del self._tree[zone]
            self._zones.remove(zone)
        self.num_nodes -= 1
        self.version += 1

    def __repr__(self) -> str:
        return f"NodeTree(zones={len(self._zones)}, num_nodes={self.num_nodes})"
