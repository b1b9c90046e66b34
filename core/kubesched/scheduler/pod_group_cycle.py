"""The pod group scheduling cycle: every queued pod of a ``scheduling.k8s.io`` PodGroup tried
in one cycle, all or nothing, as kube-scheduler v1.36 does under the GenericWorkload gate.

A pod that names a PodGroup (``spec.schedulingGroup``) is not scheduled on its own: the
cycle takes the group's other queued pods out of the queue, orders them (higher priority
first, then by when each first entered the activeQ) and tries each on the cluster as the
pods before it left it (each one found a node is assumed there, reserved and permitted).
The group is schedulable as soon as one pod's Permit succeeds (for a gang: the
``minCount``-th pod placed). The trial is then undone; if the group is schedulable, each
placed pod is assumed, reserved and permitted again and bound, else every pod is requeued
with its own reason, and the PodGroup's ``PodGroupScheduled`` condition says which.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api import WorkloadPodGroup
from kubesched.api.podgroups import WORKLOAD_POD_GROUP
from kubesched.backend.protocol import PodCondition
from kubesched.cache import CacheError, Snapshot
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import FitError
from kubesched.framework.results import Placement, PodGroupAssignments
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.scheduler.algorithm import ScheduleResult, SchedulingError
from kubesched.scheduler.pod_group_preemption import PodGroupPreemption
from kubesched.scheduler.records import CLEAR_NOMINATION, AttemptRecord

if TYPE_CHECKING:
    from kubesched.scheduler.scheduler import Scheduler

log = logging.getLogger(__name__)

GENERIC_WORKLOAD_GATE = "GenericWorkload"
"""The gate under which a pod of a PodGroup is scheduled in its group's cycle."""
TOPOLOGY_AWARE_GATE = "TopologyAwareWorkloadScheduling"
"""The gate under which a group's cycle tries the group on placements (sets of nodes)."""

ERR_POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
"""Upstream's ``errPodGroupUnschedulable``: the PodGroupScheduled condition's message, and
the prefix of the reason a placed pod of an unschedulable group is requeued with."""

POD_GROUP_SCHEDULED = "PodGroupScheduled"
"""The PodGroup condition the cycle sets: True once the group was scheduled, False with
reason ``Unschedulable`` (or ``SchedulerError``) while it is not."""


@dataclass
class PodTrial:
    """One pod's attempt in its group's cycle: the node it found (``result``), its status
    (success, or why not), its Permit status when it found a node, and how to undo it."""

    qpi: QueuedPodInfo
    state: CycleState
    record: AttemptRecord
    started: float
    status: Status = field(default_factory=Status)
    fit: FitError | None = None
    result: ScheduleResult | None = None
    permit: Status | None = None
    assumed: PodInfo | None = None

    @property
    def placed(self) -> bool:
        """Found a node and passed Reserve and Permit (allowed or waiting)."""
        return self.assumed is not None


@dataclass
class GroupResult:
    """The outcome of a group's trial: ``status`` success (bind the placed pods), a
    rejection (requeue all) or an error; ``trials`` per pod tried, in order."""

    status: Status
    trials: list[PodTrial]
    waiting_on_preemption: bool = False
    """Victims were preempted for the group: it is retried once they are gone."""


def pod_group_key(pod: Any) -> tuple[str, str] | None:
    """``(namespace, PodGroup name)`` of a pod that names a PodGroup, else None."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return pod.metadata.namespace or "default", group.pod_group_name


class PodGroupCycle:
    """Runs pod group scheduling cycles for a :class:`Scheduler` (its queue, cache,
    snapshot and failure handling)."""

    def __init__(self, sched: Scheduler, placements: bool, preemption: bool) -> None:
        self.sched = sched
        self._placements = placements
        """TopologyAwareWorkloadScheduling: try the group on each generated placement."""
        self._preemption = PodGroupPreemption(self) if preemption else None
        """WorkloadAwarePreemption: an unschedulable group preempts as a unit."""

    # -- the cycle ----------------------------------------------------------------------
    def run(self, fwk: Framework, first: QueuedPodInfo) -> None:
        """Schedule the group of ``first`` (just popped) in one cycle."""
        members = self._members(fwk, first)
        if not members:
            return
        try:
            result = self.schedule(fwk, members)
            if self._preemption is not None and result.status.code in (
                Code.UNSCHEDULABLE,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ):
                self._preempt(fwk, members, result)
        except Exception as err:
            # A bug (ours or a plugin's, outside a hook call) must not lose the popped pods:
            # the trial is undone by then, and every pod is requeued with the error.
            log.exception("pod group cycle of %s failed", first.pod_info.key)
            result = GroupResult(Status.from_error(err), [])
        self._submit(fwk, members, result)

    def _preempt(self, fwk: Framework, members: list[QueuedPodInfo], result: GroupResult) -> None:
        """Workload-aware preemption for a group that did not fit; ``result`` then waits for
        the victims to go, or says why none was preempted (upstream appends the reason)."""
        assert self._preemption is not None
        status = self._preemption.run(fwk, members, self._pod_group(fwk, members[0].pod))
        if status.is_success():
            result.waiting_on_preemption = True
        elif status.code == Code.ERROR:
            result.status = status
        elif status.message():
            result.status = Status(result.status.code, *result.status.reasons, status.message())

    def try_without(
        self, fwk: Framework, members: list[QueuedPodInfo], removed: frozenset[str]
    ) -> tuple[Status, int]:
        """Whether the group would fit were the pods with UIDs ``removed`` gone, and how
        many of its pods would then be placed (no PostFilter runs): workload-aware
        preemption's what-if."""
        result = self._schedule_on(fwk, members, None, removed, post_filters=False)
        return result.status, sum(t.placed for t in result.trials)

    def _members(self, fwk: Framework, first: QueuedPodInfo) -> list[QueuedPodInfo]:
        """``first`` and the group's other queued pods, taken out of the queue, without
        the pods being deleted or already assumed, in upstream's order."""
        sched = self.sched
        key = pod_group_key(first.pod)
        members = [first]
        for pod in list(sched.pods.values()):
            if pod.spec.node_name or pod_group_key(pod) != key:
                continue
            uid = pod.metadata.uid
            if uid == first.pod_info.uid:
                continue
            qpi = sched.queue.pop_specific(uid)
            if qpi is not None:
                members.append(qpi)
        kept = []
        for qpi in members:
            if sched._skip_pod_schedule(fwk, qpi.pod_info):
                sched.queue.done(qpi.pod_info.uid)
            else:
                kept.append(qpi)
        # Higher priority first, then the earlier arrival in the activeQ (stable).
        kept.sort(key=lambda q: (-(q.pod.spec.priority or 0), q.initial_attempt_timestamp or 0.0))
        return kept

    def schedule(self, fwk: Framework, members: list[QueuedPodInfo]) -> GroupResult:
        """The group's trial: on the whole cluster, or under TopologyAwareWorkloadScheduling
        on each placement the PlacementGenerate plugins propose (the best one kept)."""
        if self._placements:
            return self._schedule_placements(fwk, members)
        return self._schedule_on(fwk, members, None)

    def _schedule_placements(self, fwk: Framework, members: list[QueuedPodInfo]) -> GroupResult:
        """Upstream's ``podGroupSchedulingPlacementAlgorithm``: try the group on every
        placement; none fits: the first one's outcome; several: the PlacementScore plugins'
        best (ties broken at random)."""
        sched = self.sched
        sched.cache.update_snapshot(sched.snapshot)
        pod_group = self._pod_group(fwk, members[0].pod)
        state = CycleState()
        placements, status = fwk.run_placement_generate_plugins(
            state, pod_group, sched.snapshot.list()
        )
        if not status.is_success():
            return GroupResult(status, [])
        first: GroupResult | None = None
        fitting: list[tuple[Placement, GroupResult]] = []
        for placement in placements:
            result = self._schedule_on(fwk, members, placement)
            if result.status.code == Code.ERROR:
                return result
            first = first or result
            if result.status.is_success():
                fitting.append((placement, result))
        if not fitting:
            first_status = first.status.message() if first is not None else ""
            status = Status(
                Code.UNSCHEDULABLE,
                f"0/{len(placements)} placements are available, first placement status: "
                f"{first_status}",
            )
            return GroupResult(status, first.trials if first is not None else [])
        if len(fitting) == 1:
            return fitting[0][1]
        candidates = [
            PodGroupAssignments(
                placement,
                tuple(
                    (t.qpi.pod, t.result.suggested_host)
                    for t in result.trials
                    if t.placed and t.result is not None
                ),
            )
            for placement, result in fitting
        ]
        # The plugins score against the cluster as it is, without the last trial's pods.
        sched.cache.update_snapshot(sched.snapshot)
        totals, status = fwk.run_placement_score_plugins(state, pod_group, candidates)
        if not status.is_success():
            return GroupResult(status, [])
        best = max(totals)
        winners = [r for (_, r), total in zip(fitting, totals, strict=True) if total == best]
        return winners[sched.rng.randrange(len(winners))]

    def _pod_group(self, fwk: Framework, pod: Any) -> WorkloadPodGroup | None:
        key = pod_group_key(pod)
        if key is None or fwk.lister is None:
            return None
        group = fwk.lister.get_object(WORKLOAD_POD_GROUP, key[0], key[1])
        return group if isinstance(group, WorkloadPodGroup) else None

    def _schedule_on(
        self,
        fwk: Framework,
        members: list[QueuedPodInfo],
        placement: Placement | None,
        removed: frozenset[str] = frozenset(),
        *,
        post_filters: bool = True,
    ) -> GroupResult:
        """Try ``members`` in order on the cluster as it is (on ``placement``'s nodes only,
        when given), then undo the trial: upstream's ``podGroupSchedulingDefaultAlgorithm``."""
        status = Status(Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE)
        trials: list[PodTrial] = []
        try:
            for qpi in members:
                trial = self._try(fwk, qpi, placement, removed, post_filters)
                trials.append(trial)
                if not trial.placed:
                    if trial.status.is_rejected():
                        # The group may still be schedulable without this pod.
                        continue
                    status = Status(
                        Code.ERROR,
                        f"failed to schedule other pod from a pod group: {trial.status.message()}",
                    )
                    break
                if trial.permit is not None and trial.permit.is_success():
                    status = Status()
        finally:
            for trial in reversed(trials):
                if trial.placed:
                    self._undo(fwk, trial)
        return GroupResult(status, trials)

    def _try(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        placement: Placement | None,
        removed: frozenset[str] = frozenset(),
        post_filters: bool = True,
    ) -> PodTrial:
        """Schedule one pod of the group and, if it finds a node, assume, Reserve and
        Permit it there (undone by :meth:`_undo`)."""
        sched = self.sched
        pod_info = qpi.pod_info
        trial = PodTrial(
            qpi, fwk.new_cycle_state(), sched._new_record(fwk, qpi), time.perf_counter()
        )
        record = trial.record
        try:
            # Each pod sees the pods tried before it assumed on their nodes.
            sched.cache.update_snapshot(sched.snapshot)
            snapshot = sched.snapshot
            if placement is not None or removed:
                snapshot = _derived(snapshot, placement, removed)
                fwk.set_snapshot(snapshot)
            record.num_all_nodes = snapshot.num_nodes()
            result = sched.algorithm.schedule_pod(fwk, trial.state, pod_info, snapshot)
        except FitError as fit:
            if post_filters:
                sched._post_filter(fwk, trial.state, pod_info, fit, record, snapshot)
            fit.diagnosis.rejected_rows.clear()
            record.diagnosis = fit.diagnosis
            trial.status, trial.fit = Status(Code.UNSCHEDULABLE, str(fit)), fit
            return trial
        except (SchedulingError, CacheError) as err:
            trial.status = (
                err.status if isinstance(err, SchedulingError) else Status.from_error(err)
            )
            return trial
        finally:
            fwk.set_snapshot(sched.snapshot)
        trial.result = result
        record.node_name = host = result.suggested_host
        record.evaluated_nodes = result.evaluated_nodes
        if sched.record_details:
            record.diagnosis = result.diagnosis
            record.feasible = [ni.name for ni in result.feasible]
            record.scores = result.scores
        assumed = pod_info.assumed_on(host)
        try:
            sched.cache.assume_pod(assumed)
        except CacheError as err:
            trial.status = Status(Code.ERROR, str(err))
            return trial
        # As upstream's assume: an assumed pod is no longer a nominated one, or the next
        # pods of its group would see it twice, on its node and on its nomination. The
        # failure handler nominates it again if the group is not bound.
        sched.queue.nominator.delete_nominated_pod_if_exists(assumed.pod)
        status = fwk.run_reserve_plugins_reserve(trial.state, assumed, host)
        if status.is_success():
            status = fwk.run_permit_plugins(trial.state, assumed, host)
            if status.is_success() or status.is_wait():
                trial.assumed, trial.permit = assumed, status
                return trial
        fwk.run_reserve_plugins_unreserve(trial.state, assumed, host)
        sched._forget(assumed)
        trial.status, trial.fit = sched._on_node_rejection(pod_info, host, status, record)
        return trial

    def _undo(self, fwk: Framework, trial: PodTrial) -> None:
        """Take back a placed pod's trial: no longer waiting, Unreserve, Forget."""
        assumed = trial.assumed
        assert assumed is not None and trial.result is not None
        fwk.waiting_pods.remove(assumed.uid)
        fwk.run_reserve_plugins_unreserve(trial.state, assumed, trial.result.suggested_host)
        self.sched._forget(assumed)

    # -- the outcome --------------------------------------------------------------------
    def _submit(self, fwk: Framework, members: list[QueuedPodInfo], result: GroupResult) -> None:
        """Bind the placed pods of a schedulable group; requeue every pod otherwise (upstream's
        ``submitPodGroupAlgorithmResult``); then set the PodGroupScheduled condition."""
        sched = self.sched
        group = result.status
        bindings = []
        tried = {t.qpi.pod_info.uid: t for t in result.trials}
        # What kept the group out: the plugins that rejected its unplaced pods. A placed pod
        # that waits for the rest of its group waits on the same plugins, so the same
        # cluster events requeue it (and no other: it parks until one comes).
        rejecting = frozenset(
            name
            for t in result.trials
            if t.fit is not None
            for name in t.fit.diagnosis.unschedulable_plugins
        )
        for member in members:
            # A pod the group's cycle never tried (it ended first) shares the group's fate.
            trial = tried.get(member.pod_info.uid) or PodTrial(
                member,
                CycleState(),
                sched._new_record(fwk, member),
                time.perf_counter(),
                status=group,
            )
            qpi, record, started = trial.qpi, trial.record, trial.started
            if group.code == Code.ERROR and trial.status.code != Code.ERROR:
                sched._fail(fwk, qpi, group, None, record, started, CLEAR_NOMINATION)
            elif not trial.placed:
                # As upstream: an error clears the pod's nominated node; a rejection keeps
                # whatever its own PostFilter nominated (None: the nomination is unchanged).
                nominating = (
                    CLEAR_NOMINATION if trial.status.code == Code.ERROR else record.nominated_node
                )
                sched._fail(fwk, qpi, trial.status, trial.fit, record, started, nominating)
            elif group.is_success():
                assert trial.result is not None
                # Its Permit sees the group's pods assumed before it, as in a cycle of its
                # own (GangScheduling counts them in the snapshot); the snapshot the trial
                # left holds the last placement tried, not necessarily the one kept.
                sched.cache.update_snapshot(sched.snapshot)
                binding = sched._assume_reserve_permit(
                    fwk, trial.state, qpi, trial.result, record, started
                )
                if binding is not None:
                    bindings.append(binding)
            elif result.waiting_on_preemption:
                # Placed while victims make room: nominated to the node it was placed on
                # (before preemption, as v1.36.2 does), and retried once they are gone.
                assert trial.result is not None
                host = trial.result.suggested_host
                sched._fail(fwk, qpi, group, None, record, started, host, rejecting)
            else:
                # Placed, but the group is not: the pod waits for the rest of its group.
                assert trial.permit is not None
                status = Status(
                    Code.UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *trial.permit.reasons
                )
                sched._fail(fwk, qpi, status, None, record, started, CLEAR_NOMINATION, rejecting)
        self._set_condition(fwk, members[0].pod, group)
        for binding in bindings:
            sched._start_binding(binding)

    def _set_condition(self, fwk: Framework, pod: Any, status: Status) -> None:
        """Write PodGroupScheduled as the cycle ended; a group once scheduled keeps True."""
        key = pod_group_key(pod)
        lister = fwk.lister
        if key is None or lister is None:
            return
        group = lister.get_object(WORKLOAD_POD_GROUP, key[0], key[1])
        if not isinstance(group, WorkloadPodGroup):
            return
        if status.is_success():
            condition = PodCondition(POD_GROUP_SCHEDULED, "True", "Scheduled", "")
        elif status.is_rejected():
            condition = PodCondition(
                POD_GROUP_SCHEDULED, "False", "Unschedulable", status.message()
            )
        else:
            condition = PodCondition(
                POD_GROUP_SCHEDULED, "False", "SchedulerError", status.message()
            )
        current = next(
            (c for c in group.status.conditions if c.get("type") == POD_GROUP_SCHEDULED), None
        )
        if current is not None and current.get("status") == "True" and condition.status != "True":
            return
        if current is not None and all(
            (current.get(k) or "") == v
            for k, v in (
                ("status", condition.status),
                ("reason", condition.reason),
                ("message", condition.message),
            )
        ):
            return
        try:
            self.sched.backend.update_pod_group_status(group, condition)
        except Exception as err:
            log.warning("could not update status of pod group %s/%s: %s", *key, err)


def _derived(snapshot: Snapshot, placement: Placement | None, removed: frozenset[str]) -> Snapshot:
    """``snapshot`` with only ``placement``'s nodes when given (upstream's
    ``AssumePlacement``) and without the pods whose UIDs are ``removed`` (preemption's
    what-if); assumed pods are kept."""
    names = {ni.name for ni in placement.nodes} if placement is not None else None
    kept = [ni for ni in snapshot.list() if names is None or ni.name in names]
    return Snapshot.from_objects(
        pods=[p for ni in kept for p in ni.pods if p.uid not in removed],
        nodes=[ni.node for ni in kept if ni.node],
    )
