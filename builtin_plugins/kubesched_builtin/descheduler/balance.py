"""Balance strategies: RemoveDuplicates, LowNodeUtilization, HighNodeUtilization and
RemovePodsViolatingTopologySpreadConstraint."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, model_validator

from kubesched.api import LabelSelector, Node, Pod, compile_label_selector
from kubesched.deschedule import DeschedulerHandle, percent

from .common import Namespaces, StrategyArgs, owner_kinds_excluded, selects

RESOURCES = ("cpu", "memory", "pods")
MAX_PERCENT = 100.0
Classified = tuple[dict[str, dict[str, float]], dict[str, float], dict[str, float]]
"""Each node's utilisation (percent per resource), the low and the high thresholds."""


class DuplicatesArgs(StrategyArgs):
    """RemoveDuplicates' args."""

    exclude_owner_kinds: list[str] = Field(
        default_factory=list, description="owner kinds whose pods are never duplicates"
    )
    namespaces: Namespaces | None = None


class RemoveDuplicates:
    """Spreads the pods of one owner (same kind, name and images) that share a node: on
    each node, pods beyond the average the nodes they fit could hold are evicted."""

    name = "RemoveDuplicates"
    Args = DuplicatesArgs

    def __init__(self, args: DuplicatesArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    @staticmethod
    def _key(pod: Pod) -> tuple[str, ...] | None:
        ref = pod.metadata.controller_ref
        if ref is None:
            return None
        images = sorted(c.image or "" for c in pod.spec.containers)
        return (pod.namespace or "", ref.kind, ref.name, *images)

    def balance(self, nodes: list[Node]) -> None:
        """Evict duplicates above ``ceil(pods of the owner / nodes they fit)`` per node."""
        a = self.args
        per_key: dict[tuple[str, ...], dict[str, list[Pod]]] = {}
        for node in nodes:
            for pod in self.handle.evictable_pods_on_node(node.name):
                if a.namespaces is not None and not a.namespaces.admits(pod.namespace or ""):
                    continue
                if owner_kinds_excluded(pod, a.exclude_owner_kinds):
                    continue
                key = self._key(pod)
                if key is not None:
                    per_key.setdefault(key, {}).setdefault(node.name, []).append(pod)
        for key, by_node in per_key.items():
            if all(len(pods) < 2 for pods in by_node.values()):
                continue
            sample = next(iter(by_node.values()))[0]
            targets = [
                n for n in nodes if self.handle.pod_fits_node(sample, n, resources=False) is None
            ]
            if len(targets) < 2:
                continue  # nowhere else to go
            total = sum(len(pods) for pods in by_node.values())
            upper = math.ceil(total / len(targets))
            for node_name, pods in by_node.items():
                for pod in pods[upper:]:
                    self.handle.evict(
                        pod,
                        f"duplicate of {key[1]}/{key[2]} on node {node_name} "
                        f"({len(pods)} there, at most {upper} per node)",
                    )


class UtilizationArgs(StrategyArgs):
    """LowNodeUtilization's args: percentages of allocatable (cpu, memory, pods)."""

    thresholds: dict[str, float] = Field(
        description="a node under all of these is underutilised (percent)"
    )
    target_thresholds: dict[str, float] = Field(
        default_factory=dict, description="a node over any of these is overutilised (percent)"
    )
    use_deviation_thresholds: bool = Field(
        False, description="thresholds are deviations from the mean utilisation"
    )
    number_of_nodes: int = Field(
        0, ge=0, description="act only when more nodes than this are underutilised"
    )
    evictable_namespaces: Namespaces | None = None

    @model_validator(mode="after")
    def _check(self) -> UtilizationArgs:
        _validate_thresholds(self.thresholds, "thresholds")
        _validate_thresholds(self.target_thresholds, "targetThresholds")
        if set(self.thresholds) != set(self.target_thresholds):
            raise ValueError("thresholds and targetThresholds configured different resources")
        for r, v in self.thresholds.items():
            if not self.use_deviation_thresholds and v > self.target_thresholds[r]:
                raise ValueError(f"thresholds' {r} percentage is greater than targetThresholds'")
        # The descheduler defaults cpu, memory and pods that are not given.
        default = 0.0 if self.use_deviation_thresholds else MAX_PERCENT
        for r in RESOURCES:
            self.thresholds.setdefault(r, default)
            self.target_thresholds.setdefault(r, default)
        return self


class HighArgs(StrategyArgs):
    """HighNodeUtilization's args."""

    thresholds: dict[str, float] = Field(
        description="a node under all of these is underutilised and emptied (percent)"
    )
    number_of_nodes: int = Field(0, ge=0)
    evictable_namespaces: Namespaces | None = None

    @model_validator(mode="after")
    def _check(self) -> HighArgs:
        _validate_thresholds(self.thresholds, "thresholds")
        for r in RESOURCES:
            self.thresholds.setdefault(r, MAX_PERCENT)
        return self


def _validate_thresholds(values: dict[str, float], name: str) -> None:
    if not values and name == "thresholds":
        raise ValueError("no resource threshold is configured")
    for r, v in values.items():
        if r not in RESOURCES:
            raise ValueError(f"{name}: resource {r} is not supported (cpu, memory, pods)")
        if not 0 <= v <= MAX_PERCENT:
            raise ValueError(f"{name}: {r} threshold not in [0, 100] range")


def _usage_percent(handle: DeschedulerHandle, node: Node) -> dict[str, float]:
    usage = handle.node_usage(node)
    cap = handle.node_capacity(node)
    return {r: percent(usage[r], cap[r]) for r in RESOURCES}


def classify(
    handle: DeschedulerHandle,
    nodes: list[Node],
    low: dict[str, float],
    high: dict[str, float],
    deviation: bool,
) -> Classified:
    """Each node's utilisation (percent per resource) and the absolute low and high
    thresholds (with ``deviation``: around the mean)."""
    usage = {n.name: _usage_percent(handle, n) for n in nodes}
    if not deviation or not nodes:
        return usage, dict(low), dict(high)
    mean = {r: sum(u[r] for u in usage.values()) / len(usage) for r in RESOURCES}
    return (
        usage,
        {r: max(0.0, mean[r] - low[r]) for r in RESOURCES},
        {r: min(MAX_PERCENT, mean[r] + high[r]) for r in RESOURCES},
    )


def is_under(u: dict[str, float], low: dict[str, float]) -> bool:
    """Whether usage ``u`` is under every low threshold."""
    return all(u[r] < low[r] for r in RESOURCES)


def is_over(u: dict[str, float], high: dict[str, float]) -> bool:
    """Whether usage ``u`` is over some high threshold."""
    return any(u[r] > high[r] for r in RESOURCES)


def _eviction_order(pods: list[Pod]) -> list[Pod]:
    # Lowest priority first, then BestEffort before the others (the descheduler's order).
    def qos(p: Pod) -> int:
        has = any(
            c.resources is not None and (c.resources.requests or c.resources.limits)
            for c in p.spec.containers
        )
        return 1 if has else 0

    return sorted(pods, key=lambda p: (p.spec.priority or 0, qos(p)))


def evict_from_sources(
    handle: DeschedulerHandle,
    sources: list[Node],
    destinations: list[Node],
    high: dict[str, float],
    room_below: dict[str, float],
    namespaces: Namespaces | None,
    reason: str,
) -> None:
    """Evict pods from ``sources`` (busiest first) while each stays over ``high`` and the
    ``destinations`` have room below ``room_below`` (percent) for what is moved."""
    room = {r: 0.0 for r in RESOURCES}
    for n in destinations:
        cap = handle.node_capacity(n)
        used = handle.node_usage(n)
        for r in RESOURCES:
            room[r] += max(0.0, room_below[r] * cap[r] / MAX_PERCENT - used[r])
    sources = sorted(sources, key=lambda n: -sum(_usage_percent(handle, n).values()))
    for node in sources:
        pods = [
            p
            for p in handle.evictable_pods_on_node(node.name)
            if namespaces is None or namespaces.admits(p.namespace or "")
        ]
        for pod in _eviction_order(pods):
            if not is_over(_usage_percent(handle, node), high):
                break
            if any(room[r] <= 0 for r in RESOURCES):
                return
            before = handle.node_usage(node)
            if handle.evict(pod, reason.format(node=node.name)):
                after = handle.node_usage(node)
                for r in RESOURCES:
                    room[r] -= before[r] - after[r]


class LowNodeUtilization:
    """Moves pods from overutilised nodes (over any ``targetThresholds``) while
    underutilised ones (under all ``thresholds``) can take them."""

    name = "LowNodeUtilization"
    Args = UtilizationArgs

    def __init__(self, args: UtilizationArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def classify(self, nodes: list[Node]) -> Classified:
        """Each node's utilisation and the low and high thresholds in force."""
        a = self.args
        return classify(
            self.handle, nodes, a.thresholds, a.target_thresholds, a.use_deviation_thresholds
        )

    def balance(self, nodes: list[Node]) -> None:
        """Evict from overutilised nodes while underutilised ones have room."""
        usage, low, high = self.classify(nodes)
        under = [n for n in nodes if is_under(usage[n.name], low)]
        over = [n for n in nodes if is_over(usage[n.name], high)]
        if not under or len(under) <= self.args.number_of_nodes or len(under) == len(nodes):
            return
        if not over:
            return
        evict_from_sources(
            self.handle,
            over,
            under,
            high,
            high,
            self.args.evictable_namespaces,
            "node {node} is overutilised (over targetThresholds)",
        )


class HighNodeUtilization:
    """Empties underutilised nodes (under all ``thresholds``) onto the others, so that
    pods pack onto fewer nodes (with a scoring strategy of MostAllocated)."""

    name = "HighNodeUtilization"
    Args = HighArgs

    def __init__(self, args: HighArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def classify(self, nodes: list[Node]) -> Classified:
        """Each node's utilisation, ``thresholds`` and 100 % as the high mark."""
        full = {r: MAX_PERCENT for r in RESOURCES}
        return classify(self.handle, nodes, self.args.thresholds, full, False)

    def balance(self, nodes: list[Node]) -> None:
        """Evict every evictable pod of the underutilised nodes while the others have room."""
        usage, low, _ = self.classify(nodes)
        under = [n for n in nodes if is_under(usage[n.name], low)]
        if not under or len(under) <= self.args.number_of_nodes or len(under) == len(nodes):
            return
        others = [n for n in nodes if n not in under]
        # Every pod of an underutilised node goes: below zero is never reached, so "over
        # the high mark" is "has any pod" here.
        evict_from_sources(
            self.handle,
            under,
            others,
            {r: -1.0 for r in RESOURCES},
            {r: MAX_PERCENT for r in RESOURCES},
            self.args.evictable_namespaces,
            "node {node} is underutilised (under thresholds)",
        )


class SpreadArgs(StrategyArgs):
    """RemovePodsViolatingTopologySpreadConstraint's args."""

    constraints: list[str] = Field(
        default_factory=lambda: ["DoNotSchedule"],
        description="whenUnsatisfiable values whose constraints are balanced",
    )
    topology_balance_node_fit: bool = Field(
        True, description="only count domains with a node the moved pod fits"
    )
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None

    @model_validator(mode="after")
    def _known(self) -> SpreadArgs:
        for c in self.constraints:
            if c not in ("DoNotSchedule", "ScheduleAnyway"):
                raise ValueError(f'constraints: unsupported value "{c}"')
        return self


class RemovePodsViolatingTopologySpreadConstraint:
    """Evicts pods from the most crowded topology domains of a spread constraint whose
    skew (most minus fewest matching pods) is over ``maxSkew``, one at a time, counting
    each evicted pod in the emptiest domain, until the skew is met."""

    name = "RemovePodsViolatingTopologySpreadConstraint"
    Args = SpreadArgs

    def __init__(self, args: SpreadArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def balance(self, nodes: list[Node]) -> None:
        """Bring every selected constraint's skew down to its ``maxSkew``."""
        a = self.args
        pods = [(n, p) for n in nodes for p in self.handle.pods_on_node(n.name)]
        done: set[tuple[str, str, str]] = set()
        for _, owner in pods:
            if not selects(owner, a.namespaces, a.label_selector):
                continue
            for c in owner.spec.topology_spread_constraints:
                if c.when_unsatisfiable not in a.constraints:
                    continue
                key = (owner.namespace or "", c.topology_key, repr(c.label_selector))
                if key in done:
                    continue
                done.add(key)
                self._balance(c, owner, nodes, pods)

    def _balance(self, c: Any, owner: Pod, nodes: list[Node], pods: list[tuple[Node, Pod]]) -> None:
        selector = compile_label_selector(c.label_selector)
        domains: dict[str, list[Pod]] = {}
        for n in nodes:
            value = n.metadata.labels.get(c.topology_key)
            if value is None:
                continue
            if (
                self.args.topology_balance_node_fit
                and self.handle.pod_fits_node(owner, n, resources=False) is not None
            ):
                continue
            domains.setdefault(value, [])
        for n, p in pods:
            value = n.metadata.labels.get(c.topology_key)
            if (
                value in domains
                and p.namespace == owner.namespace
                and selector.matches(p.metadata.labels)
            ):
                domains[value].append(p)
        if len(domains) < 2:
            return
        counts = {d: len(ps) for d, ps in domains.items()}
        while True:
            most = max(counts, key=lambda d: (counts[d], d))
            fewest = min(counts, key=lambda d: (counts[d], d))
            if counts[most] - counts[fewest] <= c.max_skew:
                return
            movable = [p for p in domains[most] if self.handle.not_evictable(p) is None]
            if not movable:
                return
            pod = movable[-1]
            domains[most].remove(pod)
            counts[most] -= 1
            counts[fewest] += 1
            self.handle.evict(
                pod,
                f"{c.topology_key}={most} has {counts[most] + 1} pods, "
                f"{fewest} {counts[fewest] - 1} (maxSkew {c.max_skew})",
            )
