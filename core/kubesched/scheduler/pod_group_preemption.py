"""Workload-aware preemption (the WorkloadAwarePreemption gate): a pod group that does not
fit preempts lower-priority pods as a unit, over the whole cluster, as kube-scheduler v1.36.

The group preempts with its PodGroup's priority, not its pods'. It preempts nothing when
one of the pods in its cycle has ``preemptionPolicy: Never``. Otherwise every pod of the
cluster whose priority (its PodGroup's, for a pod of a group) is below the group's is a
potential victim; a PodGroup with ``disruptionMode: PodGroup`` is one victim with all its
pods. The group's whole trial is run again with every potential victim gone: if it still
does not fit, nothing is preempted. Otherwise the victims are given back one by one, the
most important first (those whose eviction would break a PodDisruptionBudget before the
others), each kept when the group's trial still succeeds without it and places no fewer
of its pods than the most any trial placed; the rest are preempted (``DisruptionTarget``
condition, deleted, a ``Preempted`` event; a victim already terminating is left to
terminate) and the group is tried again once they are gone.

The victims are preempted through the profile's preemption executor, as a single pod's:
with SchedulerAsyncPreemption on (the default) after the cycle (``kubesched run``: on a
worker thread), DefaultPreemption's PreEnqueue holding the group's pods until the calls
are done; with it off, within the cycle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesched.api import WorkloadPodGroup
from kubesched.api.podgroups import WORKLOAD_POD_GROUP
from kubesched.framework.preemption import (
    ASYNC_PREEMPTION_GATE,
    PREEMPTOR_POD_GROUP,
    PDBView,
    Preemptor,
    filter_pods_with_pdb_violation,
    pod_start_time,
)
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    from kubesched.scheduler.pod_group_cycle import PodGroupCycle

WORKLOAD_AWARE_PREEMPTION_GATE = "WorkloadAwarePreemption"
"""The gate under which an unschedulable pod group preempts as a unit."""

ERR_WITH_CONSTRAINTS = (
    "workload aware preemption is not supported for pod groups with scheduling constraints"
)
"""Why a PodGroup with a topology constraint preempts nothing (v1.36's words)."""
ERR_NO_VICTIMS = "No preemption victims found for incoming preemptor"
"""No pod of the cluster has a lower priority than the group (v1.36's words)."""
PREEMPT_NEVER = "Never"
"""The ``preemptionPolicy`` of a pod that may not preempt."""
ERR_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
"""Why a group with such a pod preempts nothing (v1.36's words)."""
PREEMPTING_PLUGIN = "DefaultPreemption"
"""The plugin a victim waiting at Permit is rejected by: upstream's DefaultPreemption runs
workload-aware preemption."""
DOMAIN = "cluster"
"""The node a group's victims are preempted "on" (the whole cluster is the domain)."""


@dataclass(frozen=True)
class Victim:
    """What is preempted as one: a pod, or every pod of a PodGroup whose disruption mode is
    ``PodGroup``; ``priority`` is the pod's, or its PodGroup's."""

    pods: tuple[PodInfo, ...]
    priority: int
    is_group: bool

    @property
    def uids(self) -> frozenset[str]:
        """The UIDs of its pods."""
        return frozenset(p.uid for p in self.pods)

    def importance(self) -> tuple[int, int, float, int]:
        """Sort key, most important first (upstream ``moreImportantVictim``): higher
        priority; a group before a pod; the pod started first; the larger group."""
        started = min((pod_start_time(p) for p in self.pods), default=math.inf)
        return (-self.priority, 0 if self.is_group else 1, started, -len(self.pods))


class _GroupPriorities:
    """The PodGroups of the cluster's pods, each looked up once, and the priority a pod
    has as a victim: its PodGroup's when it names one that exists, else its own."""

    def __init__(self, fwk: Framework) -> None:
        self._lister = fwk.lister
        self._found: dict[tuple[str, str], WorkloadPodGroup | None] = {}

    def group_of(self, pod_info: PodInfo) -> tuple[tuple[str, str] | None, WorkloadPodGroup | None]:
        """The ``(namespace, name)`` of the PodGroup the pod names (None without one) and
        that PodGroup (None when it does not exist)."""
        spec_group = pod_info.pod.spec.scheduling_group
        if spec_group is None or not spec_group.pod_group_name:
            return None, None
        key = (pod_info.namespace, spec_group.pod_group_name)
        if key not in self._found:
            found = self._lister.get_object(WORKLOAD_POD_GROUP, *key) if self._lister else None
            self._found[key] = found if isinstance(found, WorkloadPodGroup) else None
        return key, self._found[key]

    def priority_of(self, pod_info: PodInfo) -> int:
        """Upstream ``getPodPriority``: the PodGroup's priority, or the pod's."""
        group = self.group_of(pod_info)[1]
        return (group.spec.priority or 0) if group is not None else pod_info.priority


class PodGroupPreemption:
    """Preemption for one pod group's cycle (see the module's documentation)."""

    def __init__(self, cycle: PodGroupCycle) -> None:
        self.cycle = cycle

    def run(
        self, fwk: Framework, members: list[QueuedPodInfo], pod_group: WorkloadPodGroup | None
    ) -> Status:
        """Success when victims were preempted for the group (it waits for them to go);
        otherwise why nothing was."""
        if pod_group is None:
            return Status(Code.UNSCHEDULABLE)
        constraints = pod_group.spec.scheduling_constraints
        if constraints is not None and constraints.topology:
            return Status(Code.UNSCHEDULABLE, ERR_WITH_CONSTRAINTS)
        sched = self.cycle.sched
        sched.cache.update_snapshot(sched.snapshot)
        priority = pod_group.spec.priority or 0
        not_eligible = self._not_eligible(members)
        if not_eligible:
            return Status(Code.UNSCHEDULABLE, not_eligible)
        victims = [v for v in self._victims(fwk, pod_group, members) if v.priority < priority]
        if not victims:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_VICTIMS)
        removed = frozenset().union(*(v.uids for v in victims))
        status, most_placed = self.cycle.try_without(fwk, members, removed)
        if not status.is_success():
            return status
        victims.sort(key=Victim.importance)
        violating, others = self._split_by_pdb(fwk, victims)
        to_preempt = []
        for victim in [*violating, *others]:
            kept = removed - victim.uids
            status, placed = self.cycle.try_without(fwk, members, kept)
            # As v1.36.2: a victim given back must not cost the group a pod it placed
            # (a gang fits with minCount pods, but more of them may have had a node).
            most_placed = max(most_placed, placed)
            if status.is_success() and placed >= most_placed:
                removed = kept
            else:
                to_preempt.append(victim)
        pods = [p for v in sorted(to_preempt, key=Victim.importance) for p in v.pods]
        return self._actuate(fwk, pod_group, members, pods)

    @staticmethod
    def _actuate(
        fwk: Framework,
        pod_group: WorkloadPodGroup,
        members: Sequence[QueuedPodInfo],
        victims: list[PodInfo],
    ) -> Status:
        """Upstream ``actuatePodGroupPreemption``: the victims preempted through the
        profile's executor, after the cycle (SchedulerAsyncPreemption) or now (an API
        failure is then the cycle's error). The condition and event name a
        ``podgroup``, the event says ``on node cluster``; a victim already terminating
        is left alone, as upstream does (no second call, no second event)."""
        executor = fwk.preemption_executor
        preemptor = Preemptor(
            uid=pod_group.metadata.uid or "",
            kind=PREEMPTOR_POD_GROUP,
            # All pods of a group have the same scheduler (upstream reads the first one's).
            scheduler_name=members[0].pod.spec.scheduler_name or "default-scheduler",
            priority=pod_group.spec.priority or 0,
            pods={m.pod_info.key: m.pod for m in members},
        )

        def preempt(victim: PodInfo) -> None:
            executor.preempt_pod(DOMAIN, preemptor, victim, PREEMPTING_PLUGIN)

        if fwk.feature_enabled(ASYNC_PREEMPTION_GATE):
            executor.prepare_candidate_async(DOMAIN, preemptor, victims, preempt)
            return Status()
        return executor.prepare_candidate(DOMAIN, preemptor, victims, preempt)

    @staticmethod
    def _not_eligible(members: Sequence[QueuedPodInfo]) -> str:
        """Why the group may not preempt, or "": one of its pods says ``preemptionPolicy:
        Never``. Unlike a single pod's preemption, kube-scheduler v1.36.2 goes on while a
        victim it preempted earlier still terminates on the node a pod of the group is
        nominated to (recorded: it preempts again, the victim being already on its way)."""
        if any(m.pod.spec.preemption_policy == PREEMPT_NEVER for m in members):
            return ERR_PREEMPTION_POLICY_NEVER
        return ""

    def _victims(
        self, fwk: Framework, pod_group: WorkloadPodGroup, members: Sequence[QueuedPodInfo]
    ) -> list[Victim]:
        """Every pod with a node, one victim each, but the pods of a PodGroup in
        ``PodGroup`` disruption mode, one victim together; the group's own pods left out."""
        own = (pod_group.metadata.namespace or "default", pod_group.name)
        groups = _GroupPriorities(fwk)
        singles: list[Victim] = []
        grouped: dict[tuple[str, str], list[PodInfo]] = {}
        for node_info in self.cycle.sched.snapshot.list():
            for pod_info in node_info.pods:
                key, group = groups.group_of(pod_info)
                if key == own:
                    continue
                if group is not None and group.spec.disruption_mode == "PodGroup":
                    grouped.setdefault(key, []).append(pod_info)  # type: ignore[arg-type]
                else:
                    singles.append(Victim((pod_info,), groups.priority_of(pod_info), False))
        for pods in grouped.values():
            singles.append(Victim(tuple(pods), groups.priority_of(pods[0]), True))
        return singles

    @staticmethod
    def _split_by_pdb(fwk: Framework, victims: list[Victim]) -> tuple[list[Victim], list[Victim]]:
        """The victims whose eviction would break a PodDisruptionBudget, and the others
        (each in the given order)."""
        lister = fwk.lister
        if lister is None or not hasattr(lister, "list_pod_disruption_budgets"):
            return [], victims
        namespaces = sorted({p.namespace for v in victims for p in v.pods})
        pdbs = [
            PDBView.of(pdb) for ns in namespaces for pdb in lister.list_pod_disruption_budgets(ns)
        ]
        violating_pods, _ = filter_pods_with_pdb_violation(
            [p for v in victims for p in v.pods], pdbs
        )
        breaking = {p.uid for p in violating_pods}
        violating = [v for v in victims if v.uids & breaking]
        return violating, [v for v in victims if not v.uids & breaking]
