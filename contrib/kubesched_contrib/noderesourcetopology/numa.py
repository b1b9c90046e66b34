"""The kubelet Topology Manager's admission, as the scheduler can predict it from NRT data.

Pure functions over a node's NUMA zones (upstream ``pkg/noderesourcetopology``:
``filter.go``, ``score.go``, ``least_numa.go``, ``numaresources.go``,
``nodeconfig/topologymanager.go``). Amounts are in the scheduler's units: millicores for
cpu, ``Quantity.value()`` for everything else.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubesched import MAX_NODE_SCORE, MIN_NODE_SCORE
from kubesched.api import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    Container,
    Pod,
    pod_requests,
    resource_value,
)

from .api import NodeResourceTopology, Zone

# Topology Manager policies and scopes (kubelet configuration values).
POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"

ATTRIBUTE_SCOPE = "topologyManagerScope"
ATTRIBUTE_POLICY = "topologyManagerPolicy"
ATTRIBUTE_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"

DEFAULT_MAX_NUMA_NODES = 8
LIMIT_NUMA_NODES = 1024
HIGHEST_NUMA_ID = 8
"""The Topology Manager's historical NUMA node limit; LeastNUMANodes scores in its steps."""
MAX_NUMA_ID = 64
"""NUMA ids at or above this are ignored (the kubelet's bitmask is 64 bits wide)."""
MAX_DISTANCE = 255
"""ACPI SLIT's "unknown" distance, used for a missing cost."""

QOS_GUARANTEED = "Guaranteed"
QOS_BURSTABLE = "Burstable"
QOS_BEST_EFFORT = "BestEffort"

_POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
_SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

# The deprecated ``topologyPolicies`` values: (policy, scope).
_LEGACY_POLICIES = {
    "SingleNUMANodePodLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_POD),
    "SingleNUMANodeContainerLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER),
    "BestEffortPodLevel": (POLICY_BEST_EFFORT, SCOPE_POD),
    "BestEffortContainerLevel": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "RestrictedPodLevel": (POLICY_RESTRICTED, SCOPE_POD),
    "RestrictedContainerLevel": (POLICY_RESTRICTED, SCOPE_CONTAINER),
}

_NUMA_ZONE_NAME = re.compile(r"node-(\d+)")

Requests = Mapping[str, int]
Amounts = Mapping[str, int]


# -- what the node runs ---------------------------------------------------------------------
@dataclass(frozen=True)
class TopologyManagerConfig:
    """The node's kubelet Topology Manager settings, as its NRT object reports them."""

    policy: str = POLICY_NONE
    scope: str = SCOPE_CONTAINER
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES


def topology_manager_config(nrt: NodeResourceTopology) -> TopologyManagerConfig:
    """Defaults (none, container, 8), then the deprecated ``topologyPolicies`` (its first
    entry), then the ``attributes``, which win; invalid values are ignored."""
    policy, scope, max_numa = POLICY_NONE, SCOPE_CONTAINER, DEFAULT_MAX_NUMA_NODES
    if nrt.topology_policies:
        policy, scope = _LEGACY_POLICIES.get(nrt.topology_policies[0], (policy, scope))
    for attr in nrt.attributes:
        if attr.name == ATTRIBUTE_SCOPE and attr.value in _SCOPES:
            scope = attr.value
        elif attr.name == ATTRIBUTE_POLICY and attr.value in _POLICIES:
            policy = attr.value
        elif attr.name == ATTRIBUTE_MAX_NUMA_NODES:
            try:
                value = int(attr.value)
            except ValueError:
                continue
            # At least 2: every machine has one NUMA node, and the value divides.
            if value > 1:
                max_numa = min(value, LIMIT_NUMA_NODES)
    return TopologyManagerConfig(policy, scope, max_numa)


@dataclass
class NUMANode:
    """One NUMA zone: its id, what it has available, and its distance to the others."""

    numa_id: int
    resources: dict[str, int]
    costs: dict[int, int] = field(default_factory=dict)

    def copy(self) -> NUMANode:
        """A copy whose resources can be subtracted from."""
        return NUMANode(self.numa_id, dict(self.resources), self.costs)


def numa_id(zone_name: str) -> int | None:
    """``node-3`` -> 3; None for another name or an id beyond the kubelet's bitmask."""
    m = _NUMA_ZONE_NAME.fullmatch(zone_name)
    if m is None:
        return None
    value = int(m.group(1))
    return value if value < MAX_NUMA_ID else None


def numa_nodes(zones: Iterable[Zone]) -> list[NUMANode]:
    """The zones of type ``Node`` named ``node-<id>``, with their available resources and
    costs, in the order of the NRT object."""
    out = []
    for zone in zones:
        if zone.type != "Node":
            continue
        nid = numa_id(zone.name)
        if nid is None:
            continue
        resources = {r.name: resource_value(r.name, r.available) for r in zone.resources}
        costs = {}
        for cost in zone.costs:
            cid = numa_id(cost.name)
            if cid is not None:
                costs[cid] = cost.value
        out.append(NUMANode(nid, resources, costs))
    return out


# -- what the pod asks ------------------------------------------------------------------------
_QOS_RESOURCES = (CPU, MEMORY)


def pod_qos(pod: Pod) -> str:
    """The pod's QoS class (upstream ``GetPodQOS``) from its containers' cpu and memory:
    BestEffort without any, Guaranteed when every container limits both and the requests
    equal the limits, Burstable otherwise."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        # The API server defaults a missing request to the limit.
        for name, q in {**c.resources.limits, **c.resources.requests}.items():
            if name in _QOS_RESOURCES and not q.is_zero():
                requests[name] = requests.get(name, 0) + q.nanos
        found = set()
        for name, q in c.resources.limits.items():
            if name in _QOS_RESOURCES and not q.is_zero():
                found.add(name)
                limits[name] = limits.get(name, 0) + q.nanos
        if len(found) < len(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QOS_BEST_EFFORT
    if (
        guaranteed
        and requests.keys() == limits.keys()
        and all(limits[name] == value for name, value in requests.items())
    ):
        return QOS_GUARANTEED
    return QOS_BURSTABLE


def container_requests(container: Container) -> dict[str, int]:
    """A container's requests in the scheduler's units."""
    return {name: resource_value(name, q) for name, q in container.resources.requests.items()}


def pod_effective_requests(pod: Pod) -> dict[str, int]:
    """What the pod as a whole requests (containers, init containers, sidecars, overhead)."""
    return pod_requests(pod)


def is_native_resource(name: str) -> bool:
    """No domain, or a ``kubernetes.io/`` one (``v1helper.IsNativeResource``)."""
    return "/" not in name or "kubernetes.io/" in name


def includes_non_native(pod: Pod) -> bool:
    """Whether a container or init container requests a non-native (device) resource."""
    return any(
        not is_native_resource(name)
        for c in (*pod.spec.init_containers, *pod.spec.containers)
        for name in c.resources.requests
    )


def is_host_level_resource(name: str) -> bool:
    """Resources that may be reported without NUMA affinity: storage and devices."""
    return name in (EPHEMERAL_STORAGE, "storage") or not is_native_resource(name)


def is_numa_affine_resource(name: str) -> bool:
    """cpu, memory and hugepages: always bound to NUMA nodes."""
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def is_resource_set_suitable(qos: str, name: str, requested: int, available: int) -> bool:
    """Whether ``available`` can serve ``requested``: always for a NUMA-affine resource of a
    pod that is not Guaranteed (the kubelet does not pin it)."""
    if qos != QOS_GUARANTEED and is_numa_affine_resource(name):
        return True
    return available >= requested


# -- Filter: single-numa-node -----------------------------------------------------------------
REASON_CANNOT_ALIGN_POD = "cannot align pod"
REASON_CANNOT_ALIGN_CONTAINER = "cannot align container"
REASON_CANNOT_ALIGN_INIT_CONTAINER = "cannot align init container"


def numa_fit(
    nodes: Sequence[NUMANode], requests: Requests, qos: str, node_resources: Iterable[str]
) -> int | None:
    """The NUMA node the kubelet would pick for ``requests`` under single-numa-node (the
    lowest id that fits every NUMA-affine request), or None when none fits.

    A resource the node does not report at all cannot be met; one that no NUMA zone
    reports is fine if it is a host-level resource (storage, devices without affinity).
    """
    candidates = {n.numa_id for n in nodes}
    all_ids = True
    node_resources = set(node_resources)
    for name, amount in requests.items():
        if amount == 0:
            continue
        if name not in node_resources:
            return None
        fits = set()
        has_affinity = False
        for n in nodes:
            available = n.resources.get(name)
            if available is None:
                continue
            has_affinity = True
            if is_resource_set_suitable(qos, name, amount, available):
                fits.add(n.numa_id)
        if not has_affinity and is_host_level_resource(name):
            continue
        candidates = fits if all_ids else candidates & fits
        all_ids = False
        if not candidates:
            return None
    if all_ids:
        return 0  # nothing constrains: the full bitmask's lowest bit
    return min(candidates)


def subtract_from_numa(nodes: Sequence[NUMANode], nid: int, qos: str, requests: Requests) -> None:
    """Take a container's exclusive requests from NUMA node ``nid`` (a non-Guaranteed pod's
    cpu and memory are shared, not taken)."""
    for n in nodes:
        if n.numa_id != nid:
            continue
        for name, amount in requests.items():
            if qos != QOS_GUARANTEED and is_numa_affine_resource(name):
                continue
            if amount == 0 or name not in n.resources:
                continue
            n.resources[name] -= amount


def single_numa_container_level(
    pod: Pod, nodes: list[NUMANode], node_resources: Iterable[str]
) -> str | None:
    """Each init container, then each container (taking what it gets), must fit one NUMA
    node; the reason it cannot, or None."""
    qos = pod_qos(pod)
    nodes = [n.copy() for n in nodes]
    node_resources = set(node_resources)
    # Init containers run one after the other, before the app containers: none takes.
    for c in pod.spec.init_containers:
        if numa_fit(nodes, container_requests(c), qos, node_resources) is None:
            return REASON_CANNOT_ALIGN_INIT_CONTAINER
    for c in pod.spec.containers:
        reqs = container_requests(c)
        nid = numa_fit(nodes, reqs, qos, node_resources)
        if nid is None:
            return REASON_CANNOT_ALIGN_CONTAINER
        subtract_from_numa(nodes, nid, qos, reqs)
    return None


def single_numa_pod_level(
    pod: Pod, nodes: list[NUMANode], node_resources: Iterable[str]
) -> str | None:
    """The pod's effective request must fit one NUMA node; the reason it cannot, or None."""
    if numa_fit(nodes, pod_effective_requests(pod), pod_qos(pod), node_resources) is None:
        return REASON_CANNOT_ALIGN_POD
    return None


def filter_reason(
    pod: Pod, conf: TopologyManagerConfig, nodes: list[NUMANode], node_resources: Iterable[str]
) -> str | None:
    """Why the kubelet would refuse the pod (single-numa-node only: the other policies
    admit any pod the node has room for), or None."""
    if conf.policy != POLICY_SINGLE_NUMA_NODE:
        return None
    if conf.scope == SCOPE_POD:
        return single_numa_pod_level(pod, nodes, node_resources)
    return single_numa_container_level(pod, nodes, node_resources)


# -- Score strategies -------------------------------------------------------------------------
ScoreStrategy = Callable[[Requests, Mapping[str, int], Mapping[str, int]], int]


def _value(name: str, amount: int) -> int:
    # Quantity.Value(): whole units, rounded up (cpu is held in millicores).
    if name == CPU:
        return -((-amount) // 1000)
    return amount


def _weight(weights: Mapping[str, int], name: str) -> int:
    w = weights.get(name, 1)
    return w if w >= 1 else 1


def _weighted_mean(
    requested: Requests,
    available: Amounts,
    weights: Amounts,
    resource_score: Callable[[int, int], int],
) -> int:
    # Each requested resource scores resource_score(request, capacity) in whole units, 0
    # when the zone lacks it or has less than the request; the mean is weighted.
    total = weight_sum = 0
    for name, amount in requested.items():
        cap = available.get(name, 0)
        score = 0
        if cap != 0 and amount <= cap:
            score = resource_score(_value(name, amount), _value(name, cap))
        w = _weight(weights, name)
        total += score * w
        weight_sum += w
    return total // weight_sum if weight_sum else 0


def most_allocated(requested: Requests, available: Amounts, weights: Amounts) -> int:
    """Weighted mean of ``requested / available`` per resource, 0..100 (packing)."""
    return _weighted_mean(
        requested, available, weights, lambda req, cap: req * MAX_NODE_SCORE // cap
    )


def least_allocated(requested: Requests, available: Amounts, weights: Amounts) -> int:
    """Weighted mean of ``(available - requested) / available``, 0..100 (spreading)."""
    return _weighted_mean(
        requested, available, weights, lambda req, cap: (cap - req) * MAX_NODE_SCORE // cap
    )


def balanced_allocation(requested: Requests, available: Amounts, weights: Amounts) -> int:
    """``(1 - variance) × 100`` of the requested fractions (sample variance, as gonum's);
    0 when a request exceeds what the zone has."""
    fractions = []
    for name, amount in requested.items():
        cap = _value(name, available.get(name, 0))
        fraction = 1.0 if cap == 0 else _value(name, amount) / cap
        if fraction > 1:
            return 0
        fractions.append(fraction)
    if len(fractions) < 2:
        return MAX_NODE_SCORE
    mean = sum(fractions) / len(fractions)
    variance = sum((f - mean) ** 2 for f in fractions) / (len(fractions) - 1)
    return int((1 - variance) * MAX_NODE_SCORE)


def score_for_each_numa(
    requested: Requests, nodes: Sequence[NUMANode], strategy: ScoreStrategy, weights: Amounts
) -> int:
    """The lowest non-zero NUMA score (a zone scoring 0 cannot take the pod at all)."""
    lowest = 0
    for n in nodes:
        score = strategy(requested, n.resources, weights)
        if lowest == 0 or (score != 0 and score < lowest):
            lowest = score
    return lowest


def pod_scope_score(
    pod: Pod, nodes: Sequence[NUMANode], strategy: ScoreStrategy, weights: Mapping[str, int]
) -> int:
    """The pod's effective request scored against each NUMA node."""
    return score_for_each_numa(pod_effective_requests(pod), nodes, strategy, weights)


def container_scope_score(
    pod: Pod, nodes: Sequence[NUMANode], strategy: ScoreStrategy, weights: Mapping[str, int]
) -> int:
    """The mean over init and app containers of each one's score (truncated)."""
    containers = (*pod.spec.init_containers, *pod.spec.containers)
    if not containers:
        return 0
    scores = [
        score_for_each_numa(container_requests(c), nodes, strategy, weights) for c in containers
    ]
    return int(sum(scores) / len(scores))


# -- Score: LeastNUMANodes --------------------------------------------------------------------
def _only_non_numa(nodes: Sequence[NUMANode], requests: Requests) -> bool:
    return not any(name in n.resources for name in requests for n in nodes)


def _avg_distance(nodes: Sequence[NUMANode], combination: Sequence[int]) -> float:
    if not combination:
        return float(MAX_DISTANCE)
    total = 0
    for i in combination:
        for j in combination:
            total += nodes[i].costs.get(nodes[j].numa_id, MAX_DISTANCE)
    return total / (len(combination) ** 2)


def _fits(qos: str, requests: Requests, combined: Mapping[str, int]) -> bool:
    return all(
        amount == 0 or is_resource_set_suitable(qos, name, amount, combined.get(name, 0))
        for name, amount in requests.items()
    )


def numa_nodes_required(
    qos: str, nodes: Sequence[NUMANode], requests: Requests
) -> tuple[list[int] | None, bool]:
    """The indices of the fewest NUMA nodes whose combined resources fit ``requests``,
    closest together among those; and whether their average distance is the least
    possible for that many nodes. ``(None, False)`` when even all of them do not fit."""
    for size in range(1, len(nodes) + 1):
        combinations = list(itertools.combinations(range(len(nodes)), size))
        least = min((_avg_distance(nodes, c) for c in combinations), default=float(MAX_DISTANCE))
        least = min(least, float(MAX_DISTANCE))
        best: list[int] | None = None
        best_distance = float(MAX_DISTANCE + 1)
        for combination in combinations:
            if not all(name in nodes[i].resources for i in combination for name in requests):
                continue
            combined: dict[str, int] = {}
            for i in combination:
                for name, amount in nodes[i].resources.items():
                    combined[name] = combined.get(name, 0) + amount
            if not _fits(qos, requests, combined):
                continue
            distance = _avg_distance(nodes, combination)
            if distance == least:
                return list(combination), True
            if distance < best_distance:
                best_distance, best = distance, list(combination)
        if best is not None:
            return best, False
    return None, False


def _subtract_spread(requests: Requests, nodes: Sequence[NUMANode], indices: Sequence[int]) -> None:
    # Take each request from the chosen NUMA nodes in turn until it is covered.
    for name, amount in requests.items():
        for i in indices:
            if amount == 0:
                break
            available = nodes[i].resources.get(name)
            if available is None:
                continue
            taken = min(amount, available)
            nodes[i].resources[name] = available - taken
            amount -= taken


def least_numa_score(count: int, min_distance: bool) -> int:
    """100 minus 12 per NUMA node needed, plus 6 when they are the closest possible."""
    step = MAX_NODE_SCORE // HIGHEST_NUMA_ID
    score = MAX_NODE_SCORE - count * step
    return score + step // 2 if min_distance else score


def least_numa_container_scope(pod: Pod, nodes: Sequence[NUMANode]) -> int:
    """Score by the most NUMA nodes any container needs (init containers first, each
    taking what it is given, as the kubelet asks for hints)."""
    qos = pod_qos(pod)
    nodes = [n.copy() for n in nodes]
    most = 0
    all_min = True
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        reqs = container_requests(c)
        if _only_non_numa(nodes, reqs):
            continue
        indices, min_distance = numa_nodes_required(qos, nodes, reqs)
        if indices is None:
            return MIN_NODE_SCORE
        all_min = all_min and min_distance
        most = max(most, len(indices))
        _subtract_spread(reqs, nodes, indices)
    if most == 0:
        return MAX_NODE_SCORE
    return least_numa_score(most, all_min)


def least_numa_pod_scope(pod: Pod, nodes: Sequence[NUMANode]) -> int:
    """Score by how many NUMA nodes the pod's effective request needs."""
    reqs = pod_effective_requests(pod)
    if _only_non_numa(nodes, reqs):
        return MAX_NODE_SCORE
    indices, min_distance = numa_nodes_required(pod_qos(pod), nodes, reqs)
    if indices is None:
        return MIN_NODE_SCORE
    return least_numa_score(len(indices), min_distance)
