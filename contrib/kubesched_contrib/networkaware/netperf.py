"""The NetworkTopology's ``NetperfCosts``: the network costs measured between the nodes.

diktyo-io's networktopology-controller reads the latencies that netperf measured between
every two nodes from a ConfigMap (key ``netperf.p90.latency.milliseconds.origin.<node>.
destination.<node>``, value an integer number of milliseconds) and turns them into a
cost per pair of regions and per pair of zones of one region: :func:`netperf_weights`
does the same, with the same arithmetic, so that NetworkOverhead with
``weightsName: NetperfCosts`` sees the costs it would see on a real cluster.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence

from kubesched import go_div
from kubesched.api import Node, Quantity

from .api import (
    NETPERF_COSTS,
    REGION_LABEL,
    USER_DEFINED,
    ZONE_LABEL,
    CostInfo,
    OriginInfo,
    TopologyInfo,
    WeightInfo,
    node_region_zone,
)

__all__ = [
    "DEFAULT_BANDWIDTH_CAPACITY",
    "NETPERF_KEY",
    "netperf_key",
    "netperf_weights",
]

NETPERF_KEY = "netperf.p90.latency.milliseconds.origin.{origin}.destination.{destination}"
"""The ConfigMap key of the latency measured from node ``origin`` to node ``destination``."""

DEFAULT_BANDWIDTH_CAPACITY = Quantity("1G")
"""A link's bandwidth capacity when the ``UserDefined`` weights give none."""

_ZERO = Quantity("0")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


def netperf_key(origin: str, destination: str) -> str:
    """The ConfigMap key of the latency from node ``origin`` to node ``destination``."""
    return NETPERF_KEY.format(origin=origin, destination=destination)


def _go_atoi(text: str | None) -> int | None:
    """``text`` as Go's ``strconv.Atoi`` reads it (optional sign, decimal digits, 64-bit),
    or None where Atoi fails."""
    if text is None:
        return None
    if len(text) < 19 and text.isascii() and text.isdigit():
        return int(text)  # the usual case, without the regular expression
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


class _Graph:
    """Regions (or zones) joined by undirected, weighted links; a cost is the shortest
    path's (Dijkstra), as upstream's ``util.Graph``. Only the cheapest of parallel links
    can be on a shortest path, so one weight per pair is kept."""

    def __init__(self) -> None:
        self.links: dict[str, dict[str, int]] = {}
        # Costs asked since the links last changed: once the costs settle, most new
        # measurements change no link, and every node pair asks.
        self._paths: dict[tuple[str, str], int | None] = {}

    def add(self, a: str, b: str, weight: int) -> None:
        for x, y in ((a, b), (b, a)):
            out = self.links.setdefault(x, {})
            if y not in out or weight < out[y]:
                out[y] = weight
                self._paths.clear()

    def path(self, origin: str, destination: str) -> int | None:
        """The cost of the cheapest path, None when the two are not connected."""
        key = (origin, destination)
        if key not in self._paths:
            self._paths[key] = self._dijkstra(origin, destination)
        return self._paths[key]

    def _dijkstra(self, origin: str, destination: str) -> int | None:
        heap = [(0, origin)]
        visited: set[str] = set()
        while heap:
            cost, point = heapq.heappop(heap)
            if point in visited:
                continue
            if point == destination:
                return cost
            visited.add(point)
            for other, weight in self.links.get(point, {}).items():
                if other not in visited:
                    heapq.heappush(heap, (cost + weight, other))
        return None


def _find_origin(origins: Sequence[OriginInfo], origin: str) -> OriginInfo | None:
    """Upstream's ``FindOriginCosts``: a binary search, so an origin list that is not in
    name order may hide an origin that it lists."""
    low, high = 0, len(origins) - 1
    while low <= high:
        mid = (low + high) // 2
        found = origins[mid].origin
        if found == origin:
            return origins[mid]
        if found < origin:
            low = mid + 1
        else:
            high = mid - 1
    return None


def _capacity(user_defined: Sequence[OriginInfo], origin: str, destination: str) -> Quantity:
    """The bandwidth capacity from ``origin`` to ``destination``: the ``UserDefined``
    cost's (found by binary search after sorting the origin's costs by destination, in
    place, as upstream does), 1G when it is not listed or zero."""
    found = _find_origin(user_defined, origin)
    if found is None or not found.cost_list:
        return DEFAULT_BANDWIDTH_CAPACITY
    found.cost_list.sort(key=lambda c: c.destination)
    costs = found.cost_list
    low, high = 0, len(costs) - 1
    while low <= high:
        mid = (low + high) // 2
        if costs[mid].destination == destination:
            # A listed cost without a capacity is Go's zero Quantity, which is not
            # resource.MustParse("0"): upstream keeps it as 0.
            capacity = costs[mid].bandwidth_capacity
            if capacity is None:
                return _ZERO
            return DEFAULT_BANDWIDTH_CAPACITY if capacity.is_zero() else capacity
        if costs[mid].destination < destination:
            low = mid + 1
        else:
            high = mid - 1
    return DEFAULT_BANDWIDTH_CAPACITY


def _origin_list(
    points: Iterable[str],
    linked: Iterable[tuple[str, str]],
    graph: _Graph,
    user_defined: Sequence[OriginInfo],
    allocated: Mapping[tuple[str, str], Quantity],
) -> list[OriginInfo]:
    """One ``originList``: every point as an origin, with a cost to each point it is
    ``linked`` to, both sorted by name."""
    links = set(linked)
    origins = []
    for a in points:
        costs = [
            CostInfo(
                destination=b,
                bandwidth_capacity=_capacity(user_defined, a, b),
                bandwidth_allocated=allocated.get((a, b), _ZERO),
                network_cost=graph.path(a, b) or 0,
            )
            for b in points
            if (a, b) in links
        ]
        costs.sort(key=lambda c: c.destination)
        origins.append(OriginInfo(origin=a, cost_list=costs))
    origins.sort(key=lambda o: o.origin)
    return origins


def netperf_weights(
    nodes: Sequence[Node],
    measurements: Mapping[str, str],
    weights: Sequence[WeightInfo],
    allocated: Mapping[tuple[str, str], Quantity],
    zone_pairs: set[tuple[str, str]],
) -> tuple[list[WeightInfo], list[tuple[str, str]]]:
    """The NetworkTopology's new ``spec.weights`` from the nodes and the netperf
    ``measurements`` (a ConfigMap's data), and the node pairs measured by no integer.

    As diktyo's controller: the result is the ``UserDefined`` weights as given (their
    region origins, and the costs of each origin it looked up, sorted by name) then
    ``NetperfCosts``; any other weights are dropped. For every two nodes (in name order)
    of different regions, the measurement (0 when missing) averaged with the regions'
    current cost (integer halves) becomes a link between them; likewise for two zones of
    one region. A cost is the cheapest path over those links, so a region pair may cost
    less through a third region. Every region is an origin with a cost to every other
    one; every zone an origin with a cost to the zones that share a region with it
    (``zone_pairs``, which this adds to: like upstream's, it keeps pairs from earlier
    computations). A link's ``bandwidthCapacity`` is the ``UserDefined`` one, 1G by
    default; its ``bandwidthAllocated`` is ``allocated[(origin, destination)]``, 0 by
    default.
    """
    ordered = sorted(nodes, key=lambda n: n.metadata.name or "")
    user = [w.model_copy(deep=True) for w in weights if w.name == USER_DEFINED]
    user_topology: list[TopologyInfo] = []
    user_regions: list[OriginInfo] = []
    user_zones: list[OriginInfo] = []
    for w in user:
        user_topology = w.topology_list
        for topo in w.topology_list:
            if topo.topology_key == REGION_LABEL:
                user_regions = topo.origin_list
            if topo.topology_key == ZONE_LABEL:
                user_zones = topo.origin_list
    # Upstream sorts the region origins (not the zone ones) in place before its lookups.
    user_regions.sort(key=lambda o: o.origin)

    regions, zones = _Graph(), _Graph()
    missing: list[tuple[str, str]] = []
    located = [(n.metadata.name or "", *node_region_zone(n)) for n in ordered]
    for n1, r1, z1 in located:
        prefix = netperf_key(n1, "")
        for n2, r2, z2 in located:
            if n1 == n2:
                continue
            cost = _go_atoi(measurements.get(prefix + n2))
            if cost is None:
                missing.append((n1, n2))
                cost = 0
            if r1 != r2:
                graph, a, b = regions, r1, r2
            elif z1 != z2:
                zone_pairs.add((z1, z2))
                graph, a, b = zones, z1, z2
            else:
                continue
            current = graph.path(a, b)
            graph.add(a, b, cost if current is None else go_div(cost + current, 2))

    region_names = list(dict.fromkeys(r for _, r, _ in located))
    zone_names = list(dict.fromkeys(z for _, _, z in located))
    netperf = WeightInfo(
        name=NETPERF_COSTS,
        topology_list=[
            TopologyInfo(
                topology_key=REGION_LABEL,
                origin_list=_origin_list(
                    region_names,
                    ((a, b) for a in region_names for b in region_names if a != b),
                    regions,
                    user_regions,
                    allocated,
                ),
            ),
            TopologyInfo(
                topology_key=ZONE_LABEL,
                origin_list=_origin_list(zone_names, zone_pairs, zones, user_zones, allocated),
            ),
        ],
    )
    return [WeightInfo(name=USER_DEFINED, topology_list=user_topology), netperf], missing
