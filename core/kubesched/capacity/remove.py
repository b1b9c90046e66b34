"""``capacity remove``: which nodes can go, checked by draining each in simulation.

The scale-down half of what cluster-autoscaler and Karpenter decide, with the profile's
real plugins instead of their own simplified scheduler. The cluster is first scheduled
as it is. A node is a candidate when its utilisation is under the
threshold (cluster-autoscaler's ``--scale-down-utilization-threshold``: the larger of its
cpu and memory requests over allocatable; on a GPU node, its GPU requests) and it is
not annotated ``cluster-autoscaler.kubernetes.io/scale-down-disabled``. The candidates
are tried in order — empty nodes first, as cluster-autoscaler deletes them first, then
the least utilised — and greedily: for each, the pods on it are checked against
cluster-autoscaler's drainability rules (:func:`blocking_reason`) and the disruption
budgets left by the removals already accepted; then the node is removed from the
simulated cluster, its DaemonSet and mirror pods with it, and its other pods come back
pending for the profile to place. The removal holds when every one of them is placed,
and the next candidate is tried on the cluster it left; otherwise the node and its pods
are put back.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubesched.api import KubeObject, Node, Pod, PodDisruptionBudget, pod_requests
from kubesched.api.resources import node_allocatable
from kubesched.api.selectors import LabelSelectorMatcher, compile_label_selector
from kubesched.capacity.common import capacity_configuration, node_zone
from kubesched.capacity.nodes import node_cost, scheduling_message, settle
from kubesched.capacity.report import CapacityRemoveReport, KeptNodeReport, RemovedNodeReport
from kubesched.config import EffectiveConfiguration, KubeSchedulerConfiguration
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.simulate.driver import DETAIL_SUMMARY, Simulation

DEFAULT_UTILIZATION_THRESHOLD = 0.5
"""cluster-autoscaler's ``--scale-down-utilization-threshold`` default."""
DEFAULT_GPU_UTILIZATION_THRESHOLD = 0.5
"""cluster-autoscaler's ``--scale-down-gpu-utilization-threshold`` default."""
GPU_RESOURCE = "nvidia.com/gpu"
"""The resource that makes a node a GPU node (whose utilisation is its GPUs')."""
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
"""Node annotation: ``"true"`` keeps the node whatever its utilisation."""
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
"""Pod annotation: ``"true"`` lifts the controller, kube-system and local-storage rules;
``"false"`` blocks the node."""
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
"""Pod annotation: comma-separated names of local volumes that do not block the node."""
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
REPLICATED_KINDS = frozenset({"ReplicationController", "Job", "ReplicaSet", "StatefulSet"})
"""The controllers cluster-autoscaler counts as replicating their pods (with its default
``--skip-nodes-with-custom-controller-pods``)."""


@dataclass(frozen=True)
class DrainOptions:
    """cluster-autoscaler's scale-down options that ``capacity remove`` honours."""

    utilization_threshold: float = DEFAULT_UTILIZATION_THRESHOLD
    gpu_utilization_threshold: float = DEFAULT_GPU_UTILIZATION_THRESHOLD
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_system_pods: bool = True
    ignore_daemonsets_utilization: bool = False
    ignore_mirror_pods_utilization: bool = False


def _is_daemonset_pod(pod: Pod) -> bool:
    ref = pod.metadata.controller_ref
    return ref is not None and ref.kind == "DaemonSet"


def _is_mirror_pod(pod: Pod) -> bool:
    return MIRROR_ANNOTATION in pod.metadata.annotations


def _is_terminal(pod: Pod) -> bool:
    """Whether the pod will never run again (cluster-autoscaler's ``IsPodTerminal``)."""
    phase, policy = pod.status.phase, pod.spec.restart_policy
    if policy == "Never" and phase in ("Succeeded", "Failed"):
        return True
    if policy == "OnFailure" and phase == "Succeeded":
        return True
    return phase == "Failed"


def _has_blocking_local_storage(pod: Pod) -> bool:
    """A hostPath volume, or an emptyDir not in memory, not listed as safe to evict."""
    listed = pod.metadata.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES, "")
    safe = set(listed.split(",")) if listed else set()
    for volume in pod.spec.volumes:
        if volume.name in safe:
            continue
        if volume.source("hostPath") is not None:
            return True
        empty_dir = volume.source("emptyDir")
        if empty_dir is not None and (empty_dir or {}).get("medium") != "Memory":
            return True
    return False


@dataclass(frozen=True)
class Blocker:
    """Why one pod keeps its node (cluster-autoscaler's ``BlockingPodReason`` and message)."""

    reason: str
    message: str


class DisruptionBudgets:
    """The disruptions each PodDisruptionBudget still allows, spent as removals are
    accepted (cluster-autoscaler's ``RemainingPdbTracker``)."""

    def __init__(self, pdbs: Iterable[PodDisruptionBudget]) -> None:
        self._pdbs: list[tuple[PodDisruptionBudget, LabelSelectorMatcher]] = []
        self.remaining: dict[str, int] = {}
        for pdb in pdbs:
            try:
                matcher = compile_label_selector(pdb.spec.selector)
            except ValueError:
                continue  # the disruption controller gives such a PDB no budget either
            self._pdbs.append((pdb, matcher))
            self.remaining[pdb.key] = pdb.status.disruptions_allowed

    def matching(self, pod: Pod) -> list[str]:
        """The keys of the PDBs covering ``pod``."""
        return [
            pdb.key
            for pdb, matcher in self._pdbs
            if pdb.namespace == pod.namespace and matcher.matches(pod.metadata.labels)
        ]

    def shortfall(self, pods: Iterable[Pod]) -> tuple[Pod, str] | None:
        """The first pod whose move some PDB cannot afford (after the pods before it), and
        that PDB; None when the budgets allow every move."""
        left = dict(self.remaining)
        for pod in pods:
            for key in self.matching(pod):
                if left[key] < 1:
                    return pod, key
                left[key] -= 1
        return None

    def spend(self, pods: Iterable[Pod]) -> None:
        """Record the moves of ``pods`` as disruptions."""
        for pod in pods:
            for key in self.matching(pod):
                self.remaining[key] -= 1


def blocking_reason(
    pod: Pod, options: DrainOptions, budgets: DisruptionBudgets, controllers: set[tuple[str, str]]
) -> Blocker | None:
    """The drainability rule of cluster-autoscaler that stops ``pod`` from being moved,
    or None; ``controllers`` holds (kind, namespace/name) of every controller object of
    the cluster. The caller leaves out the pods that go with the node (mirror, DaemonSet
    and finished pods) and those being deleted. A
    ``safe-to-evict: "true"`` pod is then only subject to its disruption budget, which
    :meth:`DisruptionBudgets.shortfall` checks for every pod moved."""
    ref = pod.metadata.controller_ref
    known = ref is not None and ref.kind in REPLICATED_KINDS
    if known and (ref.kind, f"{pod.namespace}/{ref.name}") not in controllers:
        return Blocker("ControllerNotFound", f"{ref.kind} {ref.name} of {pod.key} is not available")
    if pod.metadata.annotations.get(SAFE_TO_EVICT) == "true":
        return None
    if not known:
        return Blocker("NotReplicated", f"{pod.key} is not replicated")
    if (
        options.skip_nodes_with_system_pods
        and pod.namespace == "kube-system"
        and not budgets.matching(pod)
    ):
        return Blocker(
            "UnmovableKubeSystemPod",
            f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {pod.name}",
        )
    if pod.metadata.annotations.get(SAFE_TO_EVICT) == "false":
        return Blocker(
            "NotSafeToEvictAnnotation", f"pod annotated as not safe to evict present: {pod.name}"
        )
    if options.skip_nodes_with_local_storage and _has_blocking_local_storage(pod):
        return Blocker("LocalStorageRequested", f"pod with local storage present: {pod.name}")
    return None


@dataclass(frozen=True)
class Utilization:
    """A node's utilisation as cluster-autoscaler computes it, and the resource it comes
    from (cpu or memory, whichever is higher; the GPUs on a GPU node)."""

    value: float
    resource: str
    gpu: bool


def node_utilization(node: Node, pods: Iterable[Pod], options: DrainOptions) -> Utilization | str:
    """The node's utilisation, or why it cannot be computed (a resource with no
    allocatable)."""
    allocatable = node_allocatable(node)
    requested: Counter[str] = Counter()
    for pod in pods:
        if pod.status.phase in ("Succeeded", "Failed"):
            continue  # not in the scheduler's view of the node either
        if options.ignore_daemonsets_utilization and _is_daemonset_pod(pod):
            continue
        if options.ignore_mirror_pods_utilization and _is_mirror_pod(pod):
            continue
        requested.update(pod_requests(pod))
    resources = [GPU_RESOURCE] if allocatable.get(GPU_RESOURCE, 0) > 0 else ["cpu", "memory"]
    best: Utilization | None = None
    for resource in resources:
        if allocatable.get(resource, 0) <= 0:
            return f"{resource} is 0 at {node.name}"
        value = requested[resource] / allocatable[resource]
        if best is None or value > best.value:
            best = Utilization(value, resource, resource == GPU_RESOURCE)
    assert best is not None
    return best


def _unbound(pod: Pod) -> Pod:
    """``pod`` as its controller would make it again after an eviction: pending, unbound."""
    copy = pod.model_copy(deep=True)
    copy.spec.node_name = None
    copy.status = type(pod.status)(phase="Pending")
    copy.metadata.resource_version = None
    return copy


@dataclass
class _Candidate:
    """A node under the threshold, to try."""

    node: Node
    utilization: Utilization
    empty: bool


def capacity_remove(
    cluster: Iterable[KubeObject],
    *,
    config: KubeSchedulerConfiguration | EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    options: DrainOptions | None = None,
    max_removals: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int | None], None] | None = None,
    source: str = "cluster",
) -> CapacityRemoveReport:
    """The nodes of ``cluster`` that can be removed, greedily, in the order a
    consolidating autoscaler tries them (Python API of ``capacity remove``).
    ``progress(candidates tried, candidates)`` is called after each."""
    started = time.perf_counter()
    options = options or DrainOptions()
    registry = registry or default_registry()
    effective = capacity_configuration(config, registry, allow_preemption=False)
    sim = Simulation(
        list(cluster), config=effective, registry=registry, seed=seed, detail=DETAIL_SUMMARY
    )
    try:
        sim.run()
        return _consolidate(sim, options, max_removals, progress, source, started)
    finally:
        sim.close()


def _consolidate(
    sim: Simulation,
    options: DrainOptions,
    max_removals: int | None,
    progress: Callable[[int, int | None], None] | None,
    source: str,
    started: float,
) -> CapacityRemoveReport:
    """Try the candidates of ``sim``'s settled cluster one by one, on that cluster."""
    cluster = sim.cluster
    nodes = sorted(
        (n for n in cluster.objects("Node") if isinstance(n, Node)), key=lambda n: n.name
    )
    costs = {n.name: node_cost(n, source) for n in nodes}
    budgets = DisruptionBudgets(
        b for b in cluster.objects("PodDisruptionBudget") if isinstance(b, PodDisruptionBudget)
    )
    controllers = {
        (kind, obj.key) for kind in sorted(REPLICATED_KINDS) for obj in cluster.objects(kind)
    }

    kept: list[KeptNodeReport] = []
    candidates: list[_Candidate] = []
    for node in nodes:
        pods = _live_pods(sim, node.name)
        util = node_utilization(node, pods, options)
        if isinstance(util, str):
            kept.append(_kept(node, None, "UnexpectedError", util))
            continue
        if node.metadata.annotations.get(SCALE_DOWN_DISABLED) == "true":
            kept.append(
                _kept(node, util, "ScaleDownDisabledAnnotation", f"{SCALE_DOWN_DISABLED}=true")
            )
            continue
        threshold = options.gpu_utilization_threshold if util.gpu else options.utilization_threshold
        if util.value >= threshold:
            kept.append(
                _kept(
                    node,
                    util,
                    "NotUnderutilized",
                    f"{util.resource} utilisation {util.value:.2f} is not below {threshold:g}",
                )
            )
            continue
        movable = [p for p in pods if not _dropped(p)]
        candidates.append(_Candidate(node, util, not movable))
    candidates.sort(key=lambda c: (not c.empty, c.utilization.value, c.node.name))

    removed: list[RemovedNodeReport] = []
    simulations = 0
    for tried, cand in enumerate(candidates):
        if max_removals is not None and len(removed) >= max_removals:
            kept.append(
                _kept(
                    cand.node,
                    cand.utilization,
                    "MaxRemovalsReached",
                    f"--max-removals {max_removals} nodes already removed",
                )
            )
        else:
            verdict = _drain(sim, cand, options, budgets, controllers)
            simulations += verdict.simulated
            if verdict.kept is not None:
                kept.append(verdict.kept)
            else:
                assert verdict.report is not None
                removed.append(verdict.report)
                budgets.spend(verdict.moved)
        if progress is not None:
            progress(tried + 1, len(candidates))

    kept.sort(key=lambda k: k.name)
    return CapacityRemoveReport(
        profiles=[p.scheduler_name for p in sim.effective.profiles],
        utilizationThreshold=options.utilization_threshold,
        gpuUtilizationThreshold=options.gpu_utilization_threshold,
        nodes=len(nodes),
        removable=removed,
        kept=kept,
        cost=round(sum(costs.values()), 6),
        costSaved=round(sum(costs[r.name] for r in removed), 6),
        podsMoved=sum(len(r.moved) for r in removed),
        simulations=simulations,
        wallTime=round(time.perf_counter() - started, 3),
    )


def _live_pods(sim: Simulation, node: str) -> list[Pod]:
    """The pods bound to ``node`` that are not being deleted."""
    return [p for p in sim.cluster.pods_on_node(node) if p.metadata.deletion_timestamp is None]


def _dropped(pod: Pod) -> bool:
    """Pods that go with their node instead of moving: DaemonSet and mirror pods, and
    pods that will never run again."""
    return _is_daemonset_pod(pod) or _is_mirror_pod(pod) or _is_terminal(pod)


def _kept(
    node: Node, util: Utilization | None, reason: str, message: str, blocking_pod: str | None = None
) -> KeptNodeReport:
    return KeptNodeReport(
        name=node.name,
        zone=node_zone(node),
        utilization=None if util is None else round(util.value, 4),
        utilizationResource=None if util is None else util.resource,
        reason=reason,
        message=message,
        blockingPod=blocking_pod,
    )


@dataclass
class _Verdict:
    """What draining one candidate gave: kept (and why), or removed."""

    simulated: bool
    kept: KeptNodeReport | None = None
    report: RemovedNodeReport | None = None
    moved: tuple[Pod, ...] = ()


def _drain(
    sim: Simulation,
    cand: _Candidate,
    options: DrainOptions,
    budgets: DisruptionBudgets,
    controllers: set[tuple[str, str]],
) -> _Verdict:
    """Check the removal of ``cand.node`` and play it on ``sim``'s cluster: the node and
    its pods go, the movable pods come back pending and the scheduler places them. When
    one finds no node, the cluster is put back as it was."""
    node, util = cand.node, cand.utilization
    pods = _live_pods(sim, node.name)
    movable = [p for p in pods if not _dropped(p)]
    for pod in movable:
        blocker = blocking_reason(pod, options, budgets, controllers)
        if blocker is not None:
            return _Verdict(
                False,
                _kept(node, util, "BlockedByPod", f"{blocker.reason}: {blocker.message}", pod.key),
            )
    short = budgets.shortfall(movable)
    if short is not None:
        pod, pdb = short
        return _Verdict(
            False,
            _kept(
                node,
                util,
                "BlockedByPod",
                f"NotEnoughPdb: not enough pod disruption budget to move {pod.key} "
                f"(PodDisruptionBudget {pdb})",
                pod.key,
            ),
        )
    report = RemovedNodeReport(
        name=node.name,
        zone=node_zone(node),
        utilization=round(util.value, 4),
        utilizationResource=util.resource,
        empty=not movable,
        moved={},
        droppedPods=len(pods) - len(movable),
    )
    cluster = sim.cluster
    before = [p.model_copy(deep=True) for p in pods]
    node_before = cluster.get("Node", None, node.name).model_copy(deep=True)
    # The controllers are held: the pods come back as their controllers would make them
    # again, under the same names (a ReplicaSet sees its own pods, not missing ones).
    with cluster.paused_controllers():
        for pod in pods:
            cluster.delete("Pod", pod.namespace, pod.name, grace_period_seconds=0)
        cluster.delete("Node", None, node.name)
        for pod in movable:
            cluster.create(_unbound(pod), owned=True)
    if not movable:
        sim.run(periodic_retry=False)
        return _Verdict(False, report=report)
    settle(sim, allow_preemption=False)
    placed = {p.metadata.uid: p for p in cluster.pods() if p.spec.node_name}
    stuck = [p for p in movable if p.metadata.uid not in placed]
    if not stuck:
        report.moved = dict(
            sorted(
                (placed[p.metadata.uid].key, placed[p.metadata.uid].spec.node_name or "")
                for p in movable
            )
        )
        return _Verdict(True, report=report, moved=tuple(movable))
    first = min(stuck, key=lambda p: p.key)
    current = cluster.try_get("Pod", first.namespace, first.name)
    why = scheduling_message(current) if isinstance(current, Pod) else ""
    kept = _kept(
        node,
        util,
        "NoPlaceToMovePods",
        f"{len(stuck)} of {len(movable)} pod(s) found no other node; "
        f"{first.key}: {why or 'not scheduled'}",
        first.key,
    )
    with cluster.paused_controllers():
        for pod in movable:
            if cluster.try_get("Pod", pod.namespace, pod.name) is not None:
                cluster.delete("Pod", pod.namespace, pod.name, grace_period_seconds=0)
        node_before.metadata.resource_version = None
        cluster.create(node_before, owned=True)
        for pod in before:
            pod.metadata.resource_version = None
            cluster.create(pod, owned=True)
    sim.run(periodic_retry=False)
    return _Verdict(True, kept)
