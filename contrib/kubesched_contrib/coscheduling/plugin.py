"""Coscheduling: gang scheduling of PodGroups, all or nothing (scheduler-plugins' plugin).

Follows kubernetes-sigs/scheduler-plugins ``pkg/coscheduling`` (master, with
``podGroupRejectPercentage``): QueueSort keeps a group's pods together (priority, then
the PodGroup's creation time, then the pod's ``namespace/name``); PreFilter rejects the
pods of a group that cannot reach ``minMember`` or failed recently; Permit holds each
pod (``Wait``) until ``minMember`` pods of the group are assumed or bound, then allows
them all; a rejection or timeout of one waiting pod rejects (and unreserves) the
others through Unreserve; PostFilter rejects the waiting pods of a group whose member
found no node when the group is still far from its quorum.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field, model_validator

from kubesched import (
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ArgsError,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    FakeClock,
    PluginArgs,
    PodInfo,
    QueuedPodInfo,
    Status,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched.api import Pod

from .api import pod_group_full_name, pod_group_label
from .core import (
    POD_GROUP_NOT_FOUND,
    POD_GROUP_NOT_SPECIFIED,
    SUCCESS,
    WAIT,
    PodGroupManager,
    PreFilterError,
    wait_time,
)

NAME = "Coscheduling"

ERR_REASON_POD_GROUP_NOT_FOUND = "PodGroup not found"
"""Permit: the pod names a PodGroup that does not exist."""
ERR_REASON_CANNOT_FIND_POD_GROUP = "can not find pod group"
"""PostFilter: the pod belongs to no (existing) PodGroup."""
ERR_REASON_OPTIMISTIC_REJECTION = "optimistic rejection in PostFilter"
"""What a waiting pod is rejected with when a member of its group found no node."""
ERR_REASON_REJECTION_IN_UNRESERVE = "rejection in Unreserve"
"""What a waiting pod is rejected with when a member of its group was unreserved."""
ERR_REASON_GROUP_REJECTED = (
    "PodGroup {group} gets rejected due to Pod {pod} is unschedulable even after PostFilter"
)
"""PostFilter's message when it rejected the group (``str.format`` template)."""

# The embedded cluster stamps creationTimestamp as this epoch plus virtual time (see
# kubesched.backend.memory.naming); a FakeClock's 0 is that instant.
_SIMULATION_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class CoschedulingArgs(PluginArgs):
    """``CoschedulingArgs`` (scheduler-plugins ``apis/config``), with its v1 defaults."""

    permit_waiting_time_seconds: int = Field(
        default=60,
        description=(
            "How long a group's pods wait at Permit for the quorum when the PodGroup sets "
            "no scheduleTimeoutSeconds (0 means 60)."
        ),
    )
    pod_group_backoff_seconds: int = Field(
        default=0,
        description=(
            "After PostFilter rejected a group, PreFilter rejects its pods for this long "
            "(0: no backoff)."
        ),
    )
    pod_group_reject_percentage: int = Field(
        default=10,
        description=(
            "PostFilter rejects the group only when more than this percentage of "
            "minMember is still unassigned."
        ),
    )

    @model_validator(mode="after")
    def _validate(self) -> CoschedulingArgs:
        # ValidateCoschedulingArgs (upstream's messages, including "greater than 0" for
        # what is a "not negative" check).
        errors: list[ArgsError] = []
        if self.permit_waiting_time_seconds < 0:
            errors.append(
                invalid(
                    ("permitWaitingTimeSeconds",),
                    self.permit_waiting_time_seconds,
                    "must be greater than 0",
                )
            )
        if self.pod_group_backoff_seconds < 0:
            errors.append(
                invalid(
                    ("podGroupBackoffSeconds",),
                    self.pod_group_backoff_seconds,
                    "must be greater than 0",
                )
            )
        if not 0 <= self.pod_group_reject_percentage <= 100:
            errors.append(
                invalid(
                    ("podGroupRejectPercentage",),
                    self.pod_group_reject_percentage,
                    "must be between 0 and 100",
                )
            )
        raise_args_errors("CoschedulingArgs", errors)
        return self


class Coscheduling:
    """Schedules the pods of a PodGroup together: none is bound before ``minMember``
    of them have a node (QueueSort, PreFilter, PostFilter, Reserve, Permit)."""

    name = NAME
    sdk_version = "1.2"
    Args = CoschedulingArgs

    def __init__(self, args: CoschedulingArgs | None, handle: Any) -> None:
        args = args or CoschedulingArgs()
        self.handle = handle
        self.args = args
        self.schedule_timeout = float(args.permit_waiting_time_seconds)
        self.pg_backoff = float(args.pod_group_backoff_seconds) or None
        self.reject_fraction = args.pod_group_reject_percentage / 100
        self.manager = PodGroupManager(handle, self.schedule_timeout)
        self._epoch = self._clock_epoch()

    def _clock_epoch(self) -> datetime:
        """The wall-clock instant of the scheduler clock's 0, to compare PodGroup
        creation timestamps with queue timestamps (clock seconds)."""
        clock = getattr(self.handle, "clock", None)
        if clock is None or isinstance(clock, FakeClock):
            return _SIMULATION_EPOCH
        return datetime.now(UTC) - timedelta(seconds=clock.now())

    def _to_clock(self, when: datetime) -> float:
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return (when - self._epoch).total_seconds()

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A new sibling can complete a group; a new or changed PodGroup can change its
        # minMember / minResources.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD | ActionType.UPDATE)
            ),
        ]

    # -- QueueSort ----------------------------------------------------------------------
    def _queue_time(self, qpi: QueuedPodInfo) -> float:
        ts = qpi.initial_attempt_timestamp
        default = ts if ts is not None else qpi.timestamp
        return self.manager.creation_timestamp(qpi.pod_info.pod, default, self._to_clock)

    @hookimpl
    def less(self, pod_info1: QueuedPodInfo, pod_info2: QueuedPodInfo) -> bool:
        p1, p2 = pod_info1.pod_info.priority, pod_info2.pod_info.priority
        if p1 != p2:
            return p1 > p2
        t1, t2 = self._queue_time(pod_info1), self._queue_time(pod_info2)
        if t1 == t2:
            return pod_info1.pod_info.key < pod_info2.pod_info.key
        return t1 < t2

    # -- PreFilter / PostFilter ---------------------------------------------------------
    @hookimpl
    def pre_filter(self, pod: Pod) -> Status | None:
        # UnschedulableAndUnresolvable: no preemption attempt for a group that cannot run.
        try:
            self.manager.pre_filter(pod)
        except PreFilterError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        return None

    @hookimpl
    def post_filter(self, pod: Pod) -> Status:
        full_name, pg = self.manager.get_pod_group(pod)
        if pg is None:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_CANNOT_FIND_POD_GROUP)
        namespace = pod.metadata.namespace or "default"
        assigned = self.manager.calculate_assigned_pods(pg.name, namespace)
        min_member = pg.spec.min_member
        # Enough pods already placed: do not reject the whole group for this one.
        if assigned >= min_member:
            return Status(Code.UNSCHEDULABLE)
        # A small gap to the quorum: later pods may still make it.
        if (min_member - assigned) / min_member <= self.reject_fraction:
            return Status(Code.UNSCHEDULABLE)
        # Upstream's assumption: if this member fails, its siblings very likely fail too.
        self._reject_waiting_siblings(pod, pg.name, ERR_REASON_OPTIMISTIC_REJECTION)
        if self.pg_backoff is not None and len(self.manager.siblings(pod)) >= min_member:
            self.manager.backoff_pod_group(full_name, self.pg_backoff)
        self.manager.delete_permitted_pod_group(full_name)
        return Status(
            Code.UNSCHEDULABLE,
            ERR_REASON_GROUP_REJECTED.format(group=full_name, pod=pod.metadata.name),
        )

    # -- Reserve / Permit ---------------------------------------------------------------
    @hookimpl
    def reserve(self) -> None:
        # Nothing to claim; being a Reserve plugin is what makes Unreserve run.
        return None

    @hookimpl
    def unreserve(self, pod: Pod) -> None:
        full_name, pg = self.manager.get_pod_group(pod)
        if pg is None:
            return
        self._reject_waiting_siblings(pod, pg.name, ERR_REASON_REJECTION_IN_UNRESERVE)
        self.manager.delete_permitted_pod_group(full_name)

    @hookimpl
    def permit(self, state: CycleState, pod: Pod, pod_info: PodInfo) -> Status | None:
        outcome = self.manager.permit(pod)
        if outcome == POD_GROUP_NOT_SPECIFIED:
            return None
        if outcome == POD_GROUP_NOT_FOUND:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_POD_GROUP_NOT_FOUND)
        if outcome == WAIT:
            _, pg = self.manager.get_pod_group(pod)
            timeout = self.schedule_timeout
            wait = wait_time(pg, self.schedule_timeout)
            if wait != 0:
                timeout = wait
            # Move the siblings up so the group's pods are tried back to back.
            activate = state.get(PODS_TO_ACTIVATE_KEY)
            if activate is not None:
                activate.pods.update(self.manager.pods_to_activate(pod))
            return Status.wait(timeout)
        assert outcome == SUCCESS
        group = pod_group_full_name(pod)
        for waiting in self.handle.iterate_over_waiting_pods():
            if pod_group_full_name(waiting.pod) == group:
                waiting.allow(NAME)
        return None

    def _reject_waiting_siblings(self, pod: Pod, group: str, message: str) -> None:
        namespace = pod.metadata.namespace or "default"
        for waiting in self.handle.iterate_over_waiting_pods():
            wp = waiting.pod
            if (wp.metadata.namespace or "default") == namespace and pod_group_label(wp) == group:
                waiting.reject(NAME, message)
