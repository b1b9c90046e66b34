"""``capacity nodes``: the fewest (cheapest) new nodes that let every pod of a workload schedule.

The question cluster-autoscaler and Karpenter estimate, answered by simulation with the
profile's real plugins. The workload is first scheduled on the cluster as it is; that
state is then frozen (every object, bound pods included) and each candidate plan — so
many new nodes of each shape — is simulated from it: the new nodes join, the pods left
pending are scheduled, and the plan works when none is left. Per shape the search
doubles the count until the plan works, then bisects down to the smallest that does;
with several shapes a greedy search mixes them (the shape placing the most pending pods
per unit of cost first), then trims each shape's count. Every answer is compared with
the resource-sum lower bound.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import PODS, KubeObject, Node, Pod, pod_requests
from kubesched.api.nodeaffinity import RequiredNodeAffinity
from kubesched.api.resources import node_allocatable
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.capacity.common import capacity_configuration, frozen_objects
from kubesched.capacity.fastfit import failed_attempt, foreign_plugin
from kubesched.capacity.report import (
    CapacityNodesReport,
    NodeShapeReport,
    PendingPodReport,
    PlanReport,
)
from kubesched.config import EffectiveConfiguration, KubeSchedulerConfiguration
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.framework.types import PodInfo
from kubesched.simulate.driver import DETAIL_SUMMARY, STOP_SETTLED, Simulation, SimulationRun

COST_ANNOTATION = "kubesched.io/cost"
"""The annotation of a node template giving the cost of one such node (default 1)."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_MAX_NODES = 1000
"""The most new nodes a plan may add (``--max-nodes``)."""
_FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
"""The taint effects TaintToleration's Filter honours."""
MIXED_ROUNDS = 8
"""Rounds of the greedy mixed-shape search (each adds a batch of one shape)."""


@dataclass(frozen=True)
class NodeShape:
    """A node template: new nodes are copies named ``NAME-1``, ``NAME-2``..."""

    node: Node
    cost: float

    @property
    def name(self) -> str:
        return self.node.name

    def allocatable(self) -> dict[str, int]:
        return node_allocatable(self.node)

    def new_node(self, index: int) -> Node:
        """The ``index``-th new node of this shape (its hostname label follows its name)."""
        node = self.node.model_copy(deep=True)
        name = f"{self.name}-{index}"
        node.metadata.name = name
        node.metadata.uid = None
        node.metadata.resource_version = None
        node.metadata.labels[HOSTNAME_LABEL] = name
        return node


def node_cost(node: Node, source: str) -> float:
    """The cost of one node: its annotation ``kubesched.io/cost`` (default 1); a
    ``UserInputError`` naming ``source`` and the node when it is not a positive number."""
    raw = node.metadata.annotations.get(COST_ANNOTATION, "1")
    try:
        cost = float(raw)
    except ValueError:
        cost = -1.0
    if not math.isfinite(cost) or cost <= 0:
        raise UserInputError(
            f'metadata.annotations["{COST_ANNOTATION}"]: Invalid value: "{raw}": '
            "must be a positive number",
            source=source,
            obj=f"Node {node.name}",
        )
    return cost


def node_shapes(objects: Iterable[KubeObject], source: str) -> list[NodeShape]:
    """The Node templates of ``objects`` with their cost; a ``UserInputError`` for anything
    else, a bad cost, or two templates of one name."""
    shapes: list[NodeShape] = []
    for obj in objects:
        if not isinstance(obj, Node):
            raise UserInputError(
                "a node template file holds Nodes only", source=source, obj=f"{obj.kind} {obj.key}"
            )
        cost = node_cost(obj, source)
        if any(s.name == obj.name for s in shapes):
            raise UserInputError(
                "two node templates share a name", source=source, obj=f"Node {obj.name}"
            )
        shapes.append(NodeShape(obj, cost))
    if not shapes:
        raise UserInputError("no node template (a Node manifest) found", source=source)
    return shapes


@dataclass
class Outcome:
    """What one plan gives: the workload pods left pending and where the others went."""

    counts: dict[str, int]
    pending: list[Pod]
    placements: dict[str, str]
    per_new_node: dict[str, int]
    empty_new_node: bool
    overhead: dict[str, Counter[str]]
    """Per new node, what the other pods bound to it (DaemonSets') request."""

    def plan(self, shapes: list[NodeShape]) -> PlanReport:
        cost = sum(s.cost * self.counts.get(s.name, 0) for s in shapes)
        return PlanReport(
            nodes={k: v for k, v in self.counts.items() if v},
            totalNodes=sum(self.counts.values()),
            cost=round(cost, 6),
            pending=len(self.pending),
            placements=self.placements,
            podsPerNewNode=self.per_new_node,
        )


@dataclass
class _Search:
    """The simulations of one ``capacity nodes`` question, memoised by plan."""

    frozen: list[KubeObject]
    workload_uids: set[str]
    shapes: list[NodeShape]
    effective: EffectiveConfiguration
    registry: PluginRegistry
    seed: int
    allow_preemption: bool
    fast: bool
    progress: Callable[[int], None] | None = None
    cache: dict[tuple[int, ...], Outcome] = field(default_factory=dict)

    def evaluate(self, counts: dict[str, int]) -> Outcome:
        key = tuple(counts.get(s.name, 0) for s in self.shapes)
        if key in self.cache:
            return self.cache[key]
        new_nodes = [
            s.new_node(i + 1) for s, n in zip(self.shapes, key, strict=True) for i in range(n)
        ]
        sim = Simulation(
            [*self.frozen, *new_nodes],
            config=self.effective,
            registry=self.registry,
            seed=self.seed,
            detail=DETAIL_SUMMARY,
            # The frozen objects come from a cluster that validated them.
            validate=False,
        )
        try:
            settle(sim, self.allow_preemption, self.fast)
            outcome = self.outcome(key, sim.cluster.pods(), {n.name for n in new_nodes})
        finally:
            sim.close()
        return outcome

    def outcome(self, key: tuple[int, ...], pods: Iterable[Pod], names: set[str]) -> Outcome:
        """Record (and return) what the plan ``key`` gave: ``pods`` are every pod of its
        final state, ``names`` its new nodes."""
        workload, others = [], []
        for pod in pods:
            (workload if pod.metadata.uid in self.workload_uids else others).append(pod)
        per_new = Counter(p.spec.node_name for p in workload if p.spec.node_name in names)
        overhead: dict[str, Counter[str]] = {n: Counter() for n in names}
        for pod in others:
            if pod.spec.node_name in overhead:
                overhead[pod.spec.node_name].update(pod_requests(pod))
                overhead[pod.spec.node_name][PODS] += 1
        outcome = Outcome(
            counts={s.name: n for s, n in zip(self.shapes, key, strict=True)},
            pending=[p for p in workload if not p.spec.node_name],
            placements={p.key: p.spec.node_name for p in workload if p.spec.node_name},
            per_new_node={n: per_new.get(n, 0) for n in sorted(names)},
            empty_new_node=any(per_new.get(n, 0) == 0 for n in names),
            overhead=overhead,
        )
        self.cache[key] = outcome
        if self.progress is not None:
            self.progress(len(self.cache))
        return outcome


def _least_overhead(search: _Search) -> dict[str, Counter[str]]:
    """Per shape, the least that other pods (DaemonSets') took of a new node of it in any
    plan simulated: every new node of the shape loses at least that much."""
    least: dict[str, Counter[str]] = {}
    prefixes = {s.name: f"{s.name}-" for s in search.shapes}
    for outcome in search.cache.values():
        for node, taken in outcome.overhead.items():
            shape = next(
                n for n, p in prefixes.items() if node.startswith(p) and node[len(p) :].isdigit()
            )
            if shape not in least:
                least[shape] = Counter(taken)
            else:
                least[shape] = Counter(
                    {r: min(v, taken.get(r, 0)) for r, v in least[shape].items()}
                )
    return least


def capacity_nodes(
    cluster: Iterable[KubeObject],
    workload: Iterable[KubeObject],
    shapes: list[NodeShape],
    *,
    config: KubeSchedulerConfiguration | EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    allow_preemption: bool = False,
    max_nodes: int = DEFAULT_MAX_NODES,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    fast: bool = True,
) -> CapacityNodesReport:
    """The new nodes (of ``shapes``) the ``workload`` needs on ``cluster`` (Python API of
    ``capacity nodes``). ``progress(simulations run)`` is called after each simulation.
    ``fast=False`` simulates the plan without new nodes and every retry of pods that are
    sure to fail again (to check that the shortcuts change nothing)."""
    started = time.perf_counter()
    registry = registry or default_registry()
    effective = capacity_configuration(config, registry, allow_preemption=allow_preemption)
    workload = list(workload)
    frozen, workload_uids, pending, room, settled = _freeze(
        list(cluster), workload, effective, registry, seed, allow_preemption, fast
    )
    search = _Search(
        frozen, workload_uids, shapes, effective, registry, seed, allow_preemption, fast, progress
    )
    # The workload was just scheduled on the cluster as it is: when that run settled, a
    # simulation of the frozen state without new nodes would only fail the same pods again.
    if fast and settled is not None:
        base = search.outcome(tuple(0 for _ in shapes), settled, set())
    else:
        base = search.evaluate({})

    alternatives: list[Outcome] = []
    best: Outcome | None = None
    if not base.pending:
        best = base
    else:
        for shape in shapes:
            at_least, _ = _lower_bound(pending, room, [shape], {})
            found = _search_one_shape(search, shape, len(base.pending), max_nodes, at_least)
            if found is not None:
                alternatives.append(found)
        if len(shapes) > 1:
            mixed = _search_mixed(search, base, max_nodes)
            if mixed is not None:
                alternatives.append(mixed)
        if alternatives:
            best = min(alternatives, key=lambda o: (_cost(o, shapes), sum(o.counts.values())))
    plan = best.plan(shapes) if best is not None else None
    unplaceable = _unplaceable(search, base, shapes, max_nodes) if best is None else []
    lb_nodes, lb_cost = _lower_bound(pending, room, shapes, _least_overhead(search))
    return CapacityNodesReport(
        workloadPods=len(workload_uids),
        pendingWithoutNewNodes=len(base.pending),
        shapes=[
            NodeShapeReport(
                name=s.name,
                cost=s.cost,
                allocatable={k: str(v) for k, v in s.node.status.allocatable.items()},
            )
            for s in shapes
        ],
        feasible=best is not None,
        plan=plan,
        alternatives=[o.plan(shapes) for o in alternatives if o is not best],
        lowerBoundNodes=lb_nodes,
        lowerBoundCost=round(lb_cost, 6),
        optimal=plan is not None and (plan.total_nodes <= lb_nodes or plan.cost <= lb_cost + 1e-9),
        unplaceable=unplaceable,
        simulations=len(search.cache),
        wallTime=round(time.perf_counter() - started, 3),
    )


def _cost(outcome: Outcome, shapes: list[NodeShape]) -> float:
    return sum(s.cost * outcome.counts.get(s.name, 0) for s in shapes)


def _freeze(
    cluster: list[KubeObject],
    workload: list[KubeObject],
    effective: EffectiveConfiguration,
    registry: PluginRegistry,
    seed: int,
    allow_preemption: bool,
    fast: bool,
) -> tuple[list[KubeObject], set[str], list[Pod], dict[str, int], list[Pod] | None]:
    """Schedule the cluster's pods, then the workload's; return every object of the final
    state, the uids of the workload's pods, those left pending, what the cluster can
    still give them (see :func:`_room_left`), and the final state's pods when the run
    settled (None when it stopped otherwise)."""
    sim = Simulation(cluster, config=effective, registry=registry, seed=seed, detail=DETAIL_SUMMARY)
    try:
        sim.run()
        before = {p.metadata.uid for p in sim.cluster.pods()}
        rejected = sim.cluster.apply(workload)
        if rejected:
            raise UserInputError(
                "the cluster refused part of the workload: " + "; ".join(map(str, rejected))
            )
        # Pods that would all fail leave the cluster as it is: no need to attempt them.
        idle = fast and sim.cluster.next_event_time() is None
        if idle and _all_pending_fail(sim, allow_preemption):
            settled = True
        else:
            settled = settle(sim, allow_preemption, fast).stop_reason == STOP_SETTLED
        final = sim.cluster.pods()
        workload_pods = [p for p in final if p.metadata.uid not in before]
        pending = [p for p in workload_pods if not p.spec.node_name]
        room = _room_left(sim, pending, allow_preemption)
        frozen = frozen_objects(sim)
    finally:
        sim.close()
    live = [p for p in final if p.metadata.deletion_timestamp is None]
    uids = {p.metadata.uid or "" for p in workload_pods}
    return frozen, uids, pending, room, live if settled else None


def settle(sim: Simulation, allow_preemption: bool, fast: bool = True) -> SimulationRun:
    """Run ``sim`` until nothing can happen, as ``Simulation.run``, but without the last
    periodic retry of the pending pods when :func:`_all_pending_fail` shows that it
    would fail them all again (``fast=False``: always, to check that it changes nothing)."""
    if not fast:
        return sim.run()
    run = sim.run(periodic_retry=False)
    return run if _all_pending_fail(sim, allow_preemption) else sim.run()


def _all_pending_fail(sim: Simulation, allow_preemption: bool) -> bool:
    """Whether an attempt of every pending pod on ``sim``'s cluster as it is now would
    fail (so that a run would leave it as it is).

    Failing pods do not change the state: with the built-in plugins (deterministic) and
    no preemption, one attempt per distinct pod tells how all its copies would fare.
    """
    if allow_preemption or len(sim.scheduler.queue.nominator):
        return False
    tried: set[str] = set()
    for pod in sim.cluster.pods():
        if pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
            continue
        if pod.status.phase in ("Succeeded", "Failed"):
            continue
        fwk = sim.scheduler.framework_for(pod)
        if fwk is None:
            continue  # another scheduler's pod: never attempted
        if foreign_plugin(fwk) is not None:
            return False
        same = repr((pod.namespace, pod.metadata.labels, pod.spec))
        if same in tried:
            continue
        tried.add(same)
        if failed_attempt(sim, fwk, PodInfo(pod)) is None:
            return False
    return True


def _room_left(sim: Simulation, pending: list[Pod], allow_preemption: bool) -> dict[str, int]:
    """What the existing nodes can still give the pending pods, per resource: the free
    capacity of the nodes at least one of them could ever use (schedulable, its taints
    tolerated, its required node affinity and selector met: properties that new nodes do
    not change) and where the smallest request of each resource still fits. With
    preemption, the whole allocatable of those nodes (any pod on them might be evicted)."""
    signatures: dict[str, tuple[RequiredNodeAffinity, list[Any]]] = {}
    for pod in pending:
        spec = pod.spec
        node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        key = repr((spec.tolerations, spec.node_selector, node_affinity))
        if key not in signatures:
            signatures[key] = (RequiredNodeAffinity(pod), spec.tolerations)

    def usable(node: Node) -> bool:
        if node.spec.unschedulable:
            return False
        return any(
            affinity.matches(node)
            and find_untolerated_taint(node.spec.taints, tolerations, _FILTERED_EFFECTS) is None
            for affinity, tolerations in signatures.values()
        )

    free: dict[str, Counter[str]] = {
        n.name: Counter(node_allocatable(n))  # type: ignore[arg-type]
        for n in sim.cluster.objects("Node")
        if usable(n)  # type: ignore[arg-type]
    }
    if not allow_preemption:
        for pod in sim.cluster.pods():
            if pod.spec.node_name in free:
                free[pod.spec.node_name].subtract(pod_requests(pod))
                free[pod.spec.node_name][PODS] -= 1
    # A node where not even the least any pending pod asks (per resource) fits gives none.
    least: dict[str, int] = {PODS: 1}
    requests = [pod_requests(p) for p in pending]
    for resource in {r for req in requests for r in req}:
        least[resource] = min(req.get(resource, 0) for req in requests)
    room: Counter[str] = Counter()
    for left in free.values():
        if all(left[r] >= v for r, v in least.items()):
            room.update({r: v for r, v in left.items() if v > 0})
    return dict(room)


def _lower_bound(
    pending: list[Pod],
    room: dict[str, int],
    shapes: list[NodeShape],
    overhead: dict[str, Counter[str]],
) -> tuple[int, float]:
    """No plan has fewer new nodes, nor costs less: per resource, what the pending pods
    request beyond the room left on the existing nodes must come from new nodes, each
    offering its allocatable less what other pods (DaemonSets') take of it."""
    need: Counter[str] = Counter()
    for pod in pending:
        need.update(pod_requests(pod))
        need[PODS] += 1
    nodes, cost = 0, 0.0
    for resource, amount in need.items():
        deficit = amount - max(0, room.get(resource, 0))
        offers = [
            (s.allocatable().get(resource, 0) - overhead.get(s.name, Counter())[resource], s.cost)
            for s in shapes
        ]
        offers = [(a, c) for a, c in offers if a > 0]
        if deficit <= 0 or not offers:
            continue
        nodes = max(nodes, math.ceil(deficit / max(a for a, _ in offers)))
        cost = max(cost, deficit * min(c / a for a, c in offers))
    cost = max(cost, nodes * min(s.cost for s in shapes))
    return nodes, cost


def _search_one_shape(
    search: _Search, shape: NodeShape, pending: int, max_nodes: int, at_least: int
) -> Outcome | None:
    """The fewest nodes of ``shape`` that place every workload pod, or None.

    Starts at ``at_least`` (the shape's own lower bound: fewer cannot work) and grows the
    count — by what the pods still pending would need at the pods per new node seen so
    far, at most doubling — until the plan works; gives up at ``max_nodes``, or once
    there are at least as many new nodes as pending pods and one of them stayed empty
    (no pending pod can use another such node). Then bisects between the last count
    that failed and the first that worked.
    """
    if at_least > max_nodes:
        return None
    failed, k = at_least - 1, max(1, at_least)
    while True:
        outcome = search.evaluate({shape.name: k})
        if not outcome.pending:
            break
        failed = k
        if k >= max_nodes or (k >= pending and outcome.empty_new_node):
            return None
        per_node = max(1.0, sum(outcome.per_new_node.values()) / k)
        k = min(max_nodes, 2 * k, k + math.ceil(len(outcome.pending) / per_node))
    works = k
    while works - failed > 1:
        mid = (failed + works) // 2
        if search.evaluate({shape.name: mid}).pending:
            failed = mid
        else:
            works = mid
    return search.evaluate({shape.name: works})


def _search_mixed(search: _Search, base: Outcome, max_nodes: int) -> Outcome | None:
    """A plan mixing shapes: each round adds, of every shape, the batch that places the
    most pending pods per unit of cost (a batch is sized by how many pending pods one new
    node of the shape took); then each shape's count is bisected down while the plan
    still works."""
    counts: dict[str, int] = {}
    current = base
    for _ in range(MIXED_ROUNDS):
        if not current.pending:
            break
        best: tuple[float, Outcome] | None = None
        for shape in search.shapes:
            one = search.evaluate({**counts, shape.name: counts.get(shape.name, 0) + 1})
            took = len(current.pending) - len(one.pending)
            if took <= 0:
                continue
            batch = max(1, math.ceil(len(current.pending) / took))
            batch = min(batch, max_nodes - sum(counts.values()))
            trial = search.evaluate({**counts, shape.name: counts.get(shape.name, 0) + batch})
            gain = len(current.pending) - len(trial.pending)
            score = gain / (batch * shape.cost)
            if gain > 0 and (best is None or score > best[0]):
                best = (score, trial)
        if best is None:
            return None
        current = best[1]
        counts = dict(current.counts)
    if current.pending:
        return None
    for shape in sorted(search.shapes, key=lambda s: -s.cost):
        works, failed = counts.get(shape.name, 0), -1
        while works - failed > 1:
            mid = (failed + works) // 2
            if search.evaluate({**counts, shape.name: mid}).pending:
                failed = mid
            else:
                works = mid
        counts[shape.name] = works
    return search.evaluate(counts)


def _unplaceable(
    search: _Search, base: Outcome, shapes: list[NodeShape], max_nodes: int
) -> list[PendingPodReport]:
    """The pods still pending with the most new nodes tried of every shape, and the
    scheduler's last message for each."""
    widest = search.evaluate({s.name: min(max_nodes, len(base.pending)) for s in shapes})
    return [
        PendingPodReport(pod=p.key, message=scheduling_message(p))
        for p in sorted(widest.pending, key=lambda p: p.key)
    ]


def scheduling_message(pod: Pod) -> str:
    """The message of the pod's ``PodScheduled=False`` condition (the scheduler's last
    word on why it is pending), or ``""``."""
    for cond in pod.status.conditions:
        if cond.type == "PodScheduled" and cond.status == "False":
            return cond.message or cond.reason or ""
    return ""
