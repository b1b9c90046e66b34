"""``capacity fit``: how many more copies of a pod the cluster takes, as the scheduler decides.

This is cluster-capacity's question, answered with kubesched's own scheduler and
profile: copies of the pod are scheduled one after another on the embedded cluster
until one cannot be placed. Copies are created in growing batches: the queue pops
them in creation order (equal priority, then arrival), so a batch is scheduled
exactly as the same copies one by one would be, and only the copies after the
first failure are wasted work. When every filter of the profile is node-local for
the copy, the copies after the first are counted node by node instead
(:mod:`kubesched.capacity.fastfit`), which gives the same answer without a
scheduling cycle per copy.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable

from kubesched.api import KubeObject, Pod
from kubesched.capacity.common import (
    PodTemplate,
    capacity_configuration,
    check_profile,
    node_zone,
    reason_counts,
)
from kubesched.capacity.fastfit import NodeLocalCount, blocker
from kubesched.capacity.report import (
    CapacityFitReport,
    NodeCount,
    StopReport,
    VictimReport,
    ZoneCount,
)
from kubesched.config import EffectiveConfiguration, KubeSchedulerConfiguration
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.scheduler.records import RESULT_SCHEDULED
from kubesched.simulate.driver import DETAIL_FULL, DETAIL_SUMMARY, Simulation

MAX_BATCH = 256
"""The largest batch of copies created at once (batches double from 1 up to this)."""


def _copy(template: Pod, index: int) -> Pod:
    # Shallow but for the metadata: admission copies the pod deeply as it creates it.
    meta = template.metadata.model_copy(
        update={
            "name": f"{template.name}-capacity-{index}",
            "uid": None,
            "resource_version": None,
            "creation_timestamp": None,
            "owner_references": [],
        }
    )
    return template.model_copy(update={"metadata": meta})


class _FitRun:
    """One ``capacity fit`` question on one simulation."""

    def __init__(self, sim: Simulation, template: Pod, allow_preemption: bool) -> None:
        self.sim = sim
        self.template = template
        self.allow_preemption = allow_preemption
        self.created: list[Pod] = []
        """The copies in creation (and so scheduling) order, as created."""

    def create(self, n: int) -> list[Pod]:
        batch = []
        for _ in range(n):
            pod = self.sim.cluster.create(_copy(self.template, len(self.created)))
            self.created.append(pod)  # type: ignore[arg-type]
            batch.append(pod)
        return batch  # type: ignore[return-value]

    def placed(self, pod: Pod) -> bool:
        """Whether the copy was placed: bound on its first attempt, or (when it may
        preempt) bound at all, its first attempt having only nominated a node."""
        live = self.sim.cluster.try_get("Pod", pod.namespace, pod.name)
        if live is None or not live.spec.node_name:  # type: ignore[attr-defined]
            return False
        if self.allow_preemption:
            return True
        attempts = self.sim.attempts.get(pod.metadata.uid or "", [])
        return bool(attempts) and attempts[0].result == RESULT_SCHEDULED

    def remove(self, pods: Iterable[Pod]) -> None:
        for pod in pods:
            if self.sim.cluster.try_get("Pod", pod.namespace, pod.name) is not None:
                self.sim.cluster.delete("Pod", pod.namespace, pod.name, grace_period_seconds=0)


def capacity_fit(
    cluster: Iterable[KubeObject],
    template: PodTemplate,
    *,
    config: KubeSchedulerConfiguration | EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    max_copies: int | None = None,
    allow_preemption: bool = False,
    seed: int = 0,
    progress: Callable[[int, int | None], None] | None = None,
    source: str = "<template>",
    fast: bool = True,
) -> CapacityFitReport:
    """How many copies of ``template`` the ``cluster`` takes (Python API of ``capacity fit``).

    The cluster's own pods are scheduled first; then copies of the template, until one
    cannot be placed or ``max_copies`` are. Without ``allow_preemption`` no PostFilter
    runs (so nothing is preempted); with it, a copy counts when preemption makes room
    for it, and the pods it preempted are reported. ``progress(copies placed, max)`` is
    called after each batch. ``fast=False`` schedules every copy even where counting
    them node by node gives the same answer (to check that it does).
    """
    started = time.perf_counter()
    registry = registry or default_registry()
    effective = capacity_configuration(config, registry, allow_preemption=allow_preemption)
    profile = check_profile(effective, template.pod, source)
    sim = Simulation(cluster, config=effective, registry=registry, seed=seed, detail=DETAIL_SUMMARY)
    try:
        sim.run()
        before = {p.metadata.uid: p for p in sim.cluster.pods() if _occupies(p)}
        cluster_pending = sum(1 for p in before.values() if not p.spec.node_name)
        fit = _FitRun(sim, template.pod, allow_preemption)
        count, stop, per_node = _place_copies(fit, max_copies, progress, fast)
        nodes = {n.name: n for n in sim.cluster.objects("Node")}
        victims = _victims(sim, before)
    finally:
        sim.close()
    per_zone: Counter[str] = Counter()
    for node, n in per_node.items():
        per_zone[node_zone(nodes.get(node))] += n  # type: ignore[arg-type]
    return CapacityFitReport(
        template=template.description,
        profile=profile,
        preemption=allow_preemption,
        count=count,
        stop=stop,
        nodes=[
            NodeCount(node=node, zone=node_zone(nodes.get(node)), count=n)  # type: ignore[arg-type]
            for node, n in sorted(per_node.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        zones=[
            ZoneCount(zone=z, count=n)
            for z, n in sorted(per_zone.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        victims=victims,
        clusterNodes=len(nodes),
        clusterPending=cluster_pending,
        wallTime=round(time.perf_counter() - started, 3),
    )


def _place_copies(
    fit: _FitRun,
    max_copies: int | None,
    progress: Callable[[int, int | None], None] | None,
    fast: bool,
) -> tuple[int, StopReport, Counter[str]]:
    """Create and schedule copies until one fails or ``max_copies`` are placed; return the
    count placed, why it stopped and the copies per node. After the first copy (which
    the scheduler places, and the cluster admits, for real) the rest are counted node by
    node when that is exact."""
    sim = fit.sim
    batch = 1
    while max_copies is None or len(fit.created) < max_copies:
        n = batch if max_copies is None else min(batch, max_copies - len(fit.created))
        first = len(fit.created)
        copies = fit.create(n)
        sim.run()
        failed = next((i for i, pod in enumerate(copies) if not fit.placed(pod)), None)
        if failed is not None:
            count = first + failed
            return count, _explain_failure(fit, count), _per_node(fit, count)
        if progress is not None:
            progress(len(fit.created), max_copies)
        if fast and first == 0 and not fit.allow_preemption:
            counted = _count_node_by_node(fit, max_copies)
            if counted is not None:
                return counted
        # With preemption a copy may take several attempts and evict pods: one at a time.
        if not fit.allow_preemption:
            batch = min(batch * 2, MAX_BATCH)
    return len(fit.created), StopReport(reason="max"), _per_node(fit, len(fit.created))


def _per_node(fit: _FitRun, count: int) -> Counter[str]:
    return Counter(_node_of(fit.sim, pod) for pod in fit.created[:count])


def _count_node_by_node(
    fit: _FitRun, max_copies: int | None
) -> tuple[int, StopReport, Counter[str]] | None:
    """The answer of :func:`_place_copies` from the copies counted node by node, once the
    first is placed; None (the cache as it was) where that would not be exact."""
    sim = fit.sim
    (placed,) = fit.created
    live = sim.cluster.get("Pod", placed.namespace, placed.name)
    fwk = sim.scheduler.framework_for(live)
    if fwk is None or blocker(sim, fwk, live) is not None:  # type: ignore[arg-type]
        return None
    counter = NodeLocalCount(sim, fwk, live)  # type: ignore[arg-type]
    limit = None if max_copies is None else max_copies - 1
    explained = None
    if counter.count(limit):
        count = 1 + len(counter.assumed)
        if max_copies is not None and count >= max_copies:
            if count == max_copies:
                per_node = counter.per_node + Counter({live.spec.node_name: 1})  # type: ignore[attr-defined]
                return count, StopReport(reason="max"), per_node
        else:
            explained = counter.explain(count)
    if explained is None:
        counter.undo()
        return None
    message, diagnosis = explained
    per_node = counter.per_node + Counter({live.spec.node_name: 1})  # type: ignore[attr-defined]
    node_names = [n.name for n in sim.cluster.objects("Node")]
    reasons = reason_counts(diagnosis, node_names, set())
    return count, StopReport(reason="unschedulable", message=message, reasons=reasons), per_node


def _explain_failure(fit: _FitRun, count: int) -> StopReport:
    """Remove the copies from the first failed one on, then schedule that copy again
    keeping its attempt's details, for the message and the per-node reasons."""
    sim = fit.sim
    fit.remove(fit.created[count:])
    del fit.created[count:]
    sim.run()
    sim.set_detail(DETAIL_FULL)
    (probe,) = fit.create(1)
    sim.run()
    records = sim.attempts.get(probe.metadata.uid or "", [])
    record = next((r for r in records if r.result != RESULT_SCHEDULED), None)
    fit.remove([probe])
    fit.created.pop()
    sim.run()
    if record is None:  # it fitted this time: cannot happen with deterministic filters
        return StopReport(reason="unschedulable")
    node_names = [n.name for n in sim.cluster.objects("Node")]
    return StopReport(
        reason="unschedulable",
        message=record.message,
        reasons=reason_counts(record.diagnosis, node_names, set(record.feasible)),
    )


def _occupies(pod: Pod) -> bool:
    return pod.metadata.deletion_timestamp is None and pod.status.phase not in (
        "Succeeded",
        "Failed",
    )


def _node_of(sim: Simulation, pod: Pod) -> str:
    live = sim.cluster.try_get("Pod", pod.namespace, pod.name)
    return (live.spec.node_name if live is not None else None) or ""  # type: ignore[attr-defined]


def _victims(sim: Simulation, before: dict[str | None, Pod]) -> list[VictimReport]:
    """The pods that ran before the copies and were removed since (by preemption)."""
    alive = {p.metadata.uid for p in sim.cluster.pods() if _occupies(p)}
    return sorted(
        (
            VictimReport(pod=p.key, node=p.spec.node_name or "", priority=p.spec.priority or 0)
            for uid, p in before.items()
            if uid not in alive and p.spec.node_name
        ),
        key=lambda v: (v.node, v.pod),
    )
