"""NUMA-aware preemption: a node's NUMA zones as they will be once the victims are gone.

Preemption's dry run removes victims from the node, but the NRT data still counts their
exclusive resources on the zones the kubelet gave them. With ``preemptionMode: Enabled``
the plugin gives each victim container's exclusive requests back to the zone the agent's
NUMA placement (:mod:`.numaplacement`) says it runs on, before checking the preemptor's
alignment (upstream ``pkg/noderesourcetopology/preemption``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubesched.api import Pod, resource_value

from .api import NodeResourceTopology
from .numa import QOS_GUARANTEED, NUMANode, includes_non_native, numa_id, pod_qos
from .numaplacement import PlacementInfo
from .resync import is_exclusive, steady_containers

__all__ = [
    "ERR_EXCEEDS_ALLOCATABLE",
    "ERR_NOTHING_TO_ADD",
    "REASON_MISSING_NUMA_MAPPING",
    "EvictionSimulationError",
    "MissingNUMAMappingError",
    "numa_after_eviction",
    "released_per_numa",
    "zone_allocatable",
]

ERR_NO_VICTIMS = "no victims found, cannot process eviction simulation"
ERR_NO_PLACEMENT = "numa placement info not found, cannot process eviction simulation"
ERR_NO_CONTAINERS = "no containers found in numa placement info, cannot process eviction simulation"
ERR_NOTHING_TO_ADD = "no resources to add, cannot process eviction simulation"
ERR_EXCEEDS_ALLOCATABLE = "resource release request exceeds NUMA allocatable"
REASON_MISSING_NUMA_MAPPING = "eviction simulation in NRT is not possible: missing NUMA mapping"
"""Filter: a victim holds exclusive resources on a NUMA zone the placement does not name."""


class EvictionSimulationError(Exception):
    """The victims' release cannot be simulated; Filter then reads the zones unchanged."""


class MissingNUMAMappingError(EvictionSimulationError):
    """A victim container holding exclusive resources is not in the placement: the
    node's NRT data is behind its pods (Filter rejects the node and asks for a resync)."""

    def __init__(self, namespace: str, pod: str, container: str) -> None:
        super().__init__(f"no NUMA mapping for container {namespace}/{pod}/{container}")


def released_per_numa(
    victims: Iterable[Pod], placement: PlacementInfo | None, nrt_resources: frozenset[str]
) -> dict[int, dict[str, int]]:
    """What the victims' steady containers hold exclusively, by the NUMA node they run on
    (amounts in the scheduler's units). Victims the kubelet pins nothing of (not
    Guaranteed, no device) are skipped."""
    victims = list(victims)
    if not victims:
        raise EvictionSimulationError(ERR_NO_VICTIMS)
    if placement is None:
        raise EvictionSimulationError(ERR_NO_PLACEMENT)
    if not placement.containers:
        raise EvictionSimulationError(ERR_NO_CONTAINERS)
    out: dict[int, dict[str, int]] = {}
    for victim in victims:
        qos = pod_qos(victim)
        if qos != QOS_GUARANTEED and not includes_non_native(victim):
            continue
        namespace = victim.metadata.namespace or "default"
        for container in steady_containers(victim):
            exclusive = {
                name: resource_value(name, q)
                for name, q in container.resources.requests.items()
                if is_exclusive(qos, name, q, nrt_resources)
            }
            if not exclusive:
                continue
            nid = placement.numa_affinity(namespace, victim.metadata.name, container.name)
            if nid is None:
                raise MissingNUMAMappingError(namespace, victim.metadata.name, container.name)
            released = out.setdefault(nid, {})
            for name, amount in exclusive.items():
                released[name] = released.get(name, 0) + amount
    if not out:
        raise EvictionSimulationError(ERR_NOTHING_TO_ADD)
    return out


def zone_allocatable(nrt: NodeResourceTopology) -> dict[int, dict[str, int]]:
    """Each NUMA zone's allocatable resources, by NUMA node id."""
    out: dict[int, dict[str, int]] = {}
    for zone in nrt.zones:
        nid = numa_id(zone.name)
        if zone.type == "Node" and nid is not None:
            out[nid] = {r.name: resource_value(r.name, r.allocatable) for r in zone.resources}
    return out


def numa_after_eviction(
    numa: Iterable[NUMANode],
    allocatable: Mapping[int, Mapping[str, int]],
    victims: Iterable[Pod],
    placement: PlacementInfo | None,
    nrt_resources: frozenset[str],
) -> list[NUMANode]:
    """Copies of ``numa`` with the victims' exclusive resources available again on their
    zones (a resource a zone does not report is not added). Raises
    :class:`EvictionSimulationError` when that cannot be worked out, or when a zone would
    get more than it has allocatable: one inconsistency voids the whole simulation."""
    released = released_per_numa(victims, placement, nrt_resources)
    out = [n.copy() for n in numa]
    for n in out:
        for name, amount in released.get(n.numa_id, {}).items():
            if name not in n.resources:
                continue
            available = n.resources[name] + amount
            if available > allocatable.get(n.numa_id, {}).get(name, 0):
                raise EvictionSimulationError(ERR_EXCEEDS_ALLOCATABLE)
            n.resources[name] = available
    return out
