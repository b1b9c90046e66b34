"""Balance strategies: RemoveDuplicates, LowNodeUtilization, HighNodeUtilization and
RemovePodsViolatingTopologySpreadConstraint."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from kubesched.api import (
    LabelSelector,
    Node,
    Pod,
    RequiredNodeAffinity,
    TopologySpreadConstraint,
    compile_label_selector,
    find_untolerated_taint,
)
from kubesched.deschedule import DeschedulerHandle, percent
from kubesched_builtin.podtopologyspread.common import merge_label_set_with_selector

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


class EvictionLimits(StrategyArgs):
    """LowNodeUtilization's ``evictionLimits``."""

    node: int | None = Field(None, ge=0, description="at most this many evictions per node")


ONLY_THRESHOLDING_RESOURCES = "OnlyThresholdingResources"


class _EvictionModes(StrategyArgs):
    """``evictionModes`` of the utilisation strategies, and the resources the user gave
    thresholds for (before the missing ones are defaulted)."""

    eviction_modes: list[str] = Field(
        default_factory=list,
        description="OnlyThresholdingResources: evict only pods requesting a resource that "
        "has a threshold",
    )
    _given: tuple[str, ...] = PrivateAttr(default=())

    @field_validator("eviction_modes")
    @classmethod
    def _known_modes(cls, v: list[str]) -> list[str]:
        for mode in v:
            if mode != ONLY_THRESHOLDING_RESOURCES:
                raise ValueError(f"invalid eviction mode {mode}")
        return v

    def requested(self) -> tuple[str, ...] | None:
        """With OnlyThresholdingResources, the resources a pod must request (one of) to
        be evicted; else None."""
        return self._given if ONLY_THRESHOLDING_RESOURCES in self.eviction_modes else None


class UtilizationArgs(_EvictionModes):
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
    eviction_limits: EvictionLimits | None = None
    metrics_utilization: dict[str, Any] | None = Field(
        None, description="refused: utilisation is always requests over allocatable"
    )

    @model_validator(mode="after")
    def _check(self) -> UtilizationArgs:
        _exclude_only(self.evictable_namespaces)
        if self.metrics_utilization is not None:
            raise ValueError(
                "metricsUtilization is not modelled: utilisation is the pods' requests "
                "over allocatable"
            )
        _validate_thresholds(self.thresholds, "thresholds")
        _validate_thresholds(self.target_thresholds, "targetThresholds")
        self._given = tuple(self.thresholds)
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


class HighArgs(_EvictionModes):
    """HighNodeUtilization's args."""

    thresholds: dict[str, float] = Field(
        description="a node under all of these is underutilised and emptied (percent)"
    )
    number_of_nodes: int = Field(0, ge=0)
    evictable_namespaces: Namespaces | None = None

    @model_validator(mode="after")
    def _check(self) -> HighArgs:
        _exclude_only(self.evictable_namespaces)
        _validate_thresholds(self.thresholds)
        self._given = tuple(self.thresholds)
        for r in RESOURCES:
            self.thresholds.setdefault(r, MAX_PERCENT)
        return self


def _exclude_only(namespaces: Namespaces | None) -> None:
    if namespaces is not None and namespaces.include:
        raise ValueError("only Exclude namespaces can be set, inclusion is not supported")


def _validate_thresholds(values: dict[str, float], name: str | None = None) -> None:
    """The descheduler's ``validateThresholds``; LowNodeUtilization's messages say which
    of its two maps (``name``) is wrong, HighNodeUtilization's do not."""
    prefix = f"{name} config is not valid: " if name else ""
    if not values:
        raise ValueError(f"{prefix}no resource threshold is configured")
    for r, v in values.items():
        if r not in RESOURCES:
            raise ValueError(f"{prefix}resource {r} is not supported (cpu, memory, pods)")
        if not 0 <= v <= MAX_PERCENT:
            raise ValueError(f"{prefix}{r} threshold not in [0, 100] range")


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


def _requests_any(pod: Pod, resources: tuple[str, ...]) -> bool:
    return any(
        r in c.resources.requests
        for c in (*pod.spec.containers, *pod.spec.init_containers)
        if c.resources is not None
        for r in resources
    )


def evict_from_sources(
    handle: DeschedulerHandle,
    sources: list[Node],
    destinations: list[Node],
    high: dict[str, float],
    room_below: dict[str, float],
    namespaces: Namespaces | None,
    reason: str,
    node_limit: int | None = None,
    requested: tuple[str, ...] | None = None,
) -> None:
    """Evict pods from ``sources`` (busiest first) while each stays over ``high`` and the
    ``destinations`` have room below ``room_below`` (percent) for what is moved; at most
    ``node_limit`` from each source, and (``requested``) only pods with a container or
    init container requesting one of these resources."""
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
            if (namespaces is None or namespaces.admits(p.namespace or ""))
            and (requested is None or _requests_any(p, requested))
        ]
        taken = 0
        for pod in _eviction_order(pods):
            if not is_over(_usage_percent(handle, node), high) or taken == node_limit:
                break
            if any(room[r] <= 0 for r in RESOURCES):
                return
            before = handle.node_usage(node)
            if handle.evict(pod, reason.format(node=node.name)):
                taken += 1
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
            self.args.eviction_limits.node if self.args.eviction_limits else None,
            self.args.requested(),
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
            requested=self.args.requested(),
        )


SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")


class SpreadArgs(StrategyArgs):
    """RemovePodsViolatingTopologySpreadConstraint's args, with the descheduler's defaults."""

    constraints: list[str] = Field(
        default_factory=lambda: ["DoNotSchedule"],
        description="whenUnsatisfiable values whose constraints are balanced",
    )
    include_soft_constraints: bool = Field(
        False, description="deprecated: adds ScheduleAnyway to constraints"
    )
    topology_balance_node_fit: bool = Field(
        True,
        description="evict a pod only if it fits a node of a domain below the ideal average",
    )
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None

    @model_validator(mode="after")
    def _known(self) -> SpreadArgs:
        for c in self.constraints:
            if c not in SPREAD_ACTIONS:
                raise ValueError(f"constraint {c} is not one of [{' '.join(SPREAD_ACTIONS)}]")
        if self.include_soft_constraints and "ScheduleAnyway" not in self.constraints:
            self.constraints.append("ScheduleAnyway")
        return self


class _Constraint:
    """One topology spread constraint as the descheduler balances it: its ``labelSelector``
    narrowed by ``matchLabelKeys`` (the owner pod's values), and the node inclusion policies
    with the owner pod's required node affinity and tolerations. Equal constraints (the
    same for every replica of a workload) are balanced once."""

    def __init__(self, c: TopologySpreadConstraint, owner: Pod) -> None:
        self.max_skew = c.max_skew
        self.key = c.topology_key
        labels = owner.metadata.labels
        self.selector = merge_label_set_with_selector(
            {k: labels[k] for k in c.match_label_keys if k in labels},
            compile_label_selector(c.label_selector),
        )
        # Unset policies: nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore (upstream's).
        self.honor_affinity = (c.node_affinity_policy or "Honor") == "Honor"
        self.honor_taints = (c.node_taints_policy or "Ignore") == "Honor"
        self.affinity = RequiredNodeAffinity(owner) if self.honor_affinity else None
        self.tolerations = owner.spec.tolerations if self.honor_taints else []
        spec = owner.spec
        na = spec.affinity.node_affinity if spec.affinity is not None else None
        # The pod's node constraints and tolerations tell constraints apart only where a
        # policy honours them (the descheduler compares them always; elsewhere they change
        # nothing the balancing sees).
        self._identity = (
            self.max_skew,
            self.key,
            self.selector,
            self.honor_affinity,
            self.honor_taints,
            repr(spec.node_selector) if self.honor_affinity else "",
            repr(na.required_during_scheduling_ignored_during_execution)
            if self.honor_affinity and na is not None
            else "",
            repr(self.tolerations),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Constraint) and self._identity == other._identity

    def __hash__(self) -> int:
        return hash(self._identity)

    def includes(self, node: Node) -> bool:
        """Whether ``node`` counts for the constraint (its node inclusion policies)."""
        if self.affinity is not None and not self.affinity.matches(node):
            return False
        return not (
            self.honor_taints
            and find_untolerated_taint(
                node.spec.taints, self.tolerations, ("NoSchedule", "NoExecute")
            )
            is not None
        )


def _keep_longest(pod: Pod) -> tuple[int, int]:
    # The descheduler pops pods off the back of a domain: pods with a node selector or node
    # affinity stay longest, then, within each group, the list runs in ascending priority
    # (so the highest priority is popped first, as upstream's comparator does, pods without
    # a priority counting lowest).
    spec = pod.spec
    pinned = bool(spec.node_selector) or (
        spec.affinity is not None and spec.affinity.node_affinity is not None
    )
    return (0 if pinned else 1, spec.priority if spec.priority is not None else -(2**31))


class RemovePodsViolatingTopologySpreadConstraint:
    """Balances the domains of every topology spread constraint of the evictable pods (the
    descheduler's ``balanceDomains``): sort the domains by size, and move pods from the
    largest to the smallest, each time at most half the skew beyond ``maxSkew``, never
    taking a large domain below the ideal average nor filling a small one above it."""

    name = "RemovePodsViolatingTopologySpreadConstraint"
    Args = SpreadArgs

    def __init__(self, args: SpreadArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def balance(self, nodes: list[Node]) -> None:
        """Pick the pods to move for every constraint of every namespace, then evict them."""
        a = self.args
        by_namespace: dict[str, list[Pod]] = {}
        for n in nodes:
            # Node by node, each node's pods by name: the order the pods of a domain are
            # taken from the back (the descheduler's own tests list them so).
            for p in sorted(self.handle.evictable_pods_on_node(n.name), key=lambda p: p.name):
                if selects(p, a.namespaces, a.label_selector):
                    by_namespace.setdefault(p.namespace or "", []).append(p)
        chosen: dict[str, tuple[Pod, str]] = {}
        for pods in by_namespace.values():
            constraints: list[_Constraint] = []
            for pod in pods:
                for c in pod.spec.topology_spread_constraints:
                    # A constraint without a labelSelector selects no pod: nothing to spread.
                    if c.when_unsatisfiable not in a.constraints or c.label_selector is None:
                        continue
                    tsc = _Constraint(c, pod)
                    if tsc not in constraints:
                        constraints.append(tsc)
            for tsc in constraints:
                self._balance_domains(tsc, pods, nodes, chosen)
        for pod, reason in chosen.values():
            self.handle.evict(pod, reason)

    def _balance_domains(
        self,
        tsc: _Constraint,
        pods: list[Pod],
        nodes: list[Node],
        chosen: dict[str, tuple[Pod, str]],
    ) -> None:
        node_of = {n.name: n for n in nodes}
        domains: dict[str, list[Pod]] = {
            n.metadata.labels[tsc.key]: []
            for n in nodes
            if tsc.key in n.metadata.labels and tsc.includes(n)
        }
        for pod in pods:
            node = node_of.get(pod.spec.node_name or "")
            if node is None or not tsc.selector.matches(pod.metadata.labels):
                continue
            value = node.metadata.labels.get(tsc.key)
            if value is not None:
                # As upstream: a pod on a node the policies leave out still opens its domain.
                domains.setdefault(value, []).append(pod)
        sizes = [len(d) for d in domains.values()]
        if not sizes or max(sizes) - min(sizes) <= tsc.max_skew:
            return
        ideal = sum(sizes) / len(domains)
        ordered = sorted(
            ((value, sorted(ps, key=_keep_longest)) for value, ps in domains.items()),
            key=lambda d: len(d[1]),
        )
        below = [d for d, ps in ordered if len(ps) < ideal]
        targets = [n for n in nodes if n.metadata.labels.get(tsc.key) in below and tsc.includes(n)]
        i, j = 0, len(ordered) - 1
        while i < j:
            if len(ordered[j][1]) <= ideal:
                j -= 1
            small, large = ordered[i][1], ordered[j][1]
            skew = len(large) - len(small)
            if skew <= tsc.max_skew:
                i += 1
                continue
            move = int(
                min(
                    math.ceil(len(large) - ideal),
                    math.ceil(ideal - len(small)),
                    math.ceil((skew - tsc.max_skew) / 2),
                )
            )
            if move <= 0:
                i += 1
                continue
            moving = large[len(large) - move :]
            for pod in moving:
                # A pod that fits no node of a small domain is counted as moved all the
                # same (upstream's heuristic), but stays.
                if self.args.topology_balance_node_fit and not self.handle.fits_other_node(
                    pod, targets
                ):
                    continue
                chosen.setdefault(
                    pod.metadata.uid or pod.key,
                    (
                        pod,
                        f"{tsc.key}={ordered[j][0]} has {len(large)} matching pods, "
                        f"{ordered[i][0]} {len(small)} (maxSkew {tsc.max_skew}, "
                        f"ideal {ideal:g})",
                    ),
                )
            del large[len(large) - move :]
            small.extend(moving)
