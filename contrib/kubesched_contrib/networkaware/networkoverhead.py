"""NetworkOverhead: place a pod near the pods it talks to (PreFilter, Filter, Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/networkaware/networkoverhead``. For a pod
of an AppGroup whose workload has dependencies, every placed pod of a dependency
workload is compared with each candidate node:

* on the node itself: satisfied, cost 0;
* its node has neither region nor zone label: violated, cost 100;
* same region, same zone: satisfied, cost 1;
* same region, another zone: the NetworkTopology's zone cost (satisfied when at most the
  dependency's ``maxNetworkCost``, else violated); 100 and neither when no cost is given;
* another region: the region cost, likewise.

Filter rejects a node with more violated than satisfied dependencies; Score is the
summed cost, and NormalizeScore turns the cheapest node into 100 and the dearest into
0. Pods outside an AppGroup, or without dependencies, pass and score equally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    Code,
    CycleState,
    NodeBatch,
    NodeInfo,
    NodeScores,
    PluginArgs,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import Pod

from ..normalize import reverse_min_max
from .api import (
    APP_GROUP_KIND,
    APP_GROUP_SELECTOR_LABEL,
    NETWORK_TOPOLOGY_KIND,
    REGION_LABEL,
    USER_DEFINED,
    ZONE_LABEL,
    DependenciesInfo,
    NetworkTopology,
    node_region_zone,
    pod_app_group,
    pod_workload_selector,
)
from .topologicalsort import DEFAULT_NAMESPACES, find_app_group

__all__ = [
    "DEFAULT_NETWORK_TOPOLOGY_NAME",
    "DEFAULT_WEIGHTS_NAME",
    "MAX_COST",
    "NAME",
    "NetworkOverhead",
    "NetworkOverheadArgs",
]

NAME = "NetworkOverhead"

MAX_COST = 100
"""The cost of a dependency whose distance the NetworkTopology does not give."""
SAME_HOSTNAME = 0
SAME_ZONE = 1

DEFAULT_WEIGHTS_NAME = USER_DEFINED
DEFAULT_NETWORK_TOPOLOGY_NAME = "nt-default"

ERR_REASON_NETWORK_REQUIREMENTS = (
    "Node {node} does not meet several network requirements from Workload dependencies: "
    "Satisfied: {satisfied} Violated: {violated}"
)
"""Filter's message (``str.format`` template), upstream's."""


class NetworkOverheadArgs(PluginArgs):
    """``NetworkOverheadArgs`` with scheduler-plugins' v1 defaults."""

    namespaces: list[str] = Field(
        default_factory=lambda: list(DEFAULT_NAMESPACES),
        description=(
            "Namespaces searched, in order, for the AppGroup and the NetworkTopology, and "
            "whose pods count as placed dependencies; empty means [default]."
        ),
    )
    weights_name: str = Field(
        default=DEFAULT_WEIGHTS_NAME,
        description="Which named set of costs (spec.weights[].name) of the NetworkTopology to use.",
    )
    network_topology_name: str = Field(
        default=DEFAULT_NETWORK_TOPOLOGY_NAME,
        description="The name of the NetworkTopology to read the costs from.",
    )

    @model_validator(mode="after")
    def _defaults(self) -> NetworkOverheadArgs:
        # SetDefaults_NetworkOverheadArgs (upstream validates nothing).
        if not self.namespaces:
            object.__setattr__(self, "namespaces", list(DEFAULT_NAMESPACES))
        return self


@dataclass(frozen=True, slots=True)
class _Placed:
    """A placed pod of a dependency workload, against that dependency's tolerance."""

    hostname: str
    region: str
    zone: str
    max_network_cost: int


@dataclass
class _PreFilterState:
    """What PreFilter found for the pod; ``score_equally`` lets every node pass at cost 0."""

    score_equally: bool = True
    placed: Sequence[_Placed] = ()
    region_costs: Mapping[tuple[str, str], int] = field(default_factory=dict)
    zone_costs: Mapping[tuple[str, str], int] = field(default_factory=dict)
    by_location: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)
    by_host: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def _pair(self, region: str, zone: str, p: _Placed) -> tuple[int, int, int]:
        # (satisfied, violated, cost) of one placed dependency pod seen from another node
        # in ``region``/``zone`` (checkMaxNetworkCostRequirements and getAccumulatedCost).
        if not p.region and not p.zone:
            return 0, 1, MAX_COST
        if region == p.region:
            if zone == p.zone:
                return 1, 0, SAME_ZONE
            cost = self.zone_costs.get((zone, p.zone))
        else:
            cost = self.region_costs.get((region, p.region))
        if cost is None:
            return 0, 0, MAX_COST
        return (1, 0, cost) if cost <= p.max_network_cost else (0, 1, cost)

    def location(self, region: str, zone: str) -> tuple[int, int, int]:
        """Totals for a node in ``region``/``zone`` that hosts none of the placed pods."""
        key = (region, zone)
        found = self.by_location.get(key)
        if found is None:
            sat = viol = cost = 0
            for p in self.placed:
                s, v, c = self._pair(region, zone, p)
                sat, viol, cost = sat + s, viol + v, cost + c
            found = self.by_location[key] = (sat, viol, cost)
        return found

    def totals(self, name: str, region: str, zone: str) -> tuple[int, int, int]:
        """``(satisfied, violated, cost)`` of the node ``name`` in ``region``/``zone``."""
        found = self.by_host.get(name)
        return found if found is not None else self.location(region, zone)


PRE_FILTER_KEY: StateKey[_PreFilterState] = StateKey("PreFilter" + NAME)


def _costs(
    topology: NetworkTopology | None, weights_name: str, key: str
) -> dict[tuple[str, str], int]:
    """``(origin, destination) -> cost`` of one topology key in the chosen weights.

    Upstream sorts manually written costs and finds them by binary search; a lookup by
    ``(origin, destination)`` finds the same cost (the first one given, if repeated)."""
    costs: dict[tuple[str, str], int] = {}
    if topology is None:
        return costs
    for weights in topology.spec.weights:
        if weights.name != weights_name:
            continue
        for topo in weights.topology_list:
            if topo.topology_key != key:
                continue
            for origin in topo.origin_list:
                for c in origin.cost_list:
                    costs.setdefault((origin.origin, c.destination), c.network_cost)
    return costs


class NetworkOverhead:
    """Keeps an AppGroup's pods within the network cost their dependencies tolerate,
    and favours the nodes closest to them."""

    name = NAME
    sdk_version = "1.5"
    Args = NetworkOverheadArgs
    reads = (APP_GROUP_KIND, NETWORK_TOPOLOGY_KIND)

    def __init__(self, args: NetworkOverheadArgs | None, handle: Any) -> None:
        args = args or NetworkOverheadArgs()
        self.namespaces = list(args.namespaces)
        self.weights_name = args.weights_name
        self.topology_name = args.network_topology_name
        self.handle = handle

    def _network_topology(self, lister: Any) -> NetworkTopology | None:
        for namespace in self.namespaces:
            found = lister.get_object(NETWORK_TOPOLOGY_KIND, namespace, self.topology_name)
            if found is not None:
                return found
        return None

    def _dependencies(self, pod: Pod, lister: Any) -> tuple[str, list[DependenciesInfo]]:
        group = pod_app_group(pod)
        app_group = find_app_group(lister, self.namespaces, group) if group else None
        if app_group is None:
            return group, []
        selector = pod_workload_selector(pod)
        return group, [
            d
            for w in app_group.spec.workloads
            if w.workload.selector == selector
            for d in w.dependencies
        ]

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        state.write(PRE_FILTER_KEY, _PreFilterState())
        lister = getattr(self.handle, "lister", None)
        if lister is None:
            return None
        # Upstream dereferences a missing AppGroup; here the pod is simply not one of
        # an AppGroup's (scored equally).
        group, dependencies = self._dependencies(pod, lister)
        if not dependencies:
            return None
        by_selector: dict[str, list[int]] = {}
        for d in dependencies:
            by_selector.setdefault(d.workload.selector, []).append(d.max_network_cost)
        snapshot = self.handle.snapshot
        placed: list[_Placed] = []
        # The pods of each dependency workload (from the label index, not by walking
        # every pod of the AppGroup), those of the pod's AppGroup and placed.
        for namespace in self.namespaces:
            for selector, tolerances in by_selector.items():
                for other in lister.list_pods_with_label(
                    namespace, APP_GROUP_SELECTOR_LABEL, selector
                ):
                    host = other.spec.node_name
                    if not host or pod_app_group(other) != group:
                        continue
                    host_info = snapshot.get(host) if snapshot is not None else None
                    if host_info is None:
                        return Status(Code.ERROR, f"pod hostname not found: node {host!r}")
                    region, zone = node_region_zone(host_info.node)
                    placed.extend(_Placed(host, region, zone, m) for m in tolerances)
        topology = self._network_topology(lister)
        pf = _PreFilterState(
            score_equally=False,
            placed=placed,
            region_costs=_costs(topology, self.weights_name, REGION_LABEL),
            zone_costs=_costs(topology, self.weights_name, ZONE_LABEL),
        )
        by_host: dict[str, list[_Placed]] = {}
        for p in placed:
            by_host.setdefault(p.hostname, []).append(p)
        for host, here in by_host.items():
            # A dependency pod on the node itself counts as satisfied at cost 0 instead
            # of what it costs seen from elsewhere in the node's zone.
            region, zone = here[0].region, here[0].zone
            sat, viol, cost = pf.location(region, zone)
            for p in here:
                s, v, c = pf._pair(region, zone, p)
                sat, viol, cost = sat - s + 1, viol - v, cost - c + SAME_HOSTNAME
            pf.by_host[host] = (sat, viol, cost)
        state.write(PRE_FILTER_KEY, pf)
        return None

    def _state(self, state: CycleState) -> _PreFilterState:
        return state.get(PRE_FILTER_KEY) or _PreFilterState()

    @staticmethod
    def _verdict(name: str, satisfied: int, violated: int) -> Status | None:
        if violated > satisfied:
            return Status(
                Code.UNSCHEDULABLE,
                ERR_REASON_NETWORK_REQUIREMENTS.format(
                    node=name, satisfied=satisfied, violated=violated
                ),
            )
        return None

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        pf = self._state(state)
        if pf.score_equally:
            return None
        sat, viol, _ = pf.totals(node_info.name, *node_region_zone(node_info.node))
        return self._verdict(node_info.name, sat, viol)

    def _batch_totals(self, pf: _PreFilterState, nodes: NodeBatch) -> np.ndarray:
        """``(satisfied, violated, cost)`` per node of the batch, one row each."""
        ids, firsts = nodes.table.grouped(
            (NAME, "region-zone"), lambda ni: node_region_zone(ni.node)
        )
        per_group = np.array(
            [pf.location(*node_region_zone(ni.node)) for ni in firsts], dtype=np.int64
        ).reshape(len(firsts), 3)
        totals = per_group[ids[nodes.rows]]
        if pf.by_host:
            index = nodes.table.index
            position = {int(row): i for i, row in enumerate(nodes.rows)}
            for host, values in pf.by_host.items():
                row = index.get(host)
                if row is not None and row in position:
                    totals[position[row]] = values
        return totals

    @hookimpl
    def filter_nodes(self, state: CycleState, nodes: NodeBatch) -> list[Status | None] | None:
        pf = self._state(state)
        if pf.score_equally:
            return None
        totals = self._batch_totals(pf, nodes)
        rejected = totals[:, 1] > totals[:, 0]
        if not rejected.any():
            return None
        names = nodes.names
        return [
            self._verdict(names[i], int(totals[i, 0]), int(totals[i, 1])) if rejected[i] else None
            for i in range(len(names))
        ]

    @hookimpl
    def score(self, state: CycleState, node_info: NodeInfo) -> int:
        pf = self._state(state)
        if pf.score_equally:
            return 0
        return pf.totals(node_info.name, *node_region_zone(node_info.node))[2]

    @hookimpl
    def score_nodes(self, state: CycleState, nodes: NodeBatch) -> np.ndarray:
        pf = self._state(state)
        if pf.score_equally:
            return np.zeros(len(nodes.rows), dtype=np.int64)
        return self._batch_totals(pf, nodes)[:, 2].copy()

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        reverse_min_max(scores)
