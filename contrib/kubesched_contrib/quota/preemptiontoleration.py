"""PreemptionToleration: preemption that spares pods whose PriorityClass tolerates the preemptor.

Follows kubernetes-sigs/scheduler-plugins ``pkg/preemptiontoleration``: DefaultPreemption's
algorithm, except that a lower-priority pod whose PriorityClass carries the annotations
below is not a victim of a preemptor below ``minimum-preemptable-priority``, for
``toleration-seconds`` after it was scheduled (forever when negative).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesched import (
    Candidate,
    Code,
    CycleState,
    DefaultPreemptionArgs,
    Evaluator,
    FakeClock,
    NodeInfo,
    NodeToStatus,
    PDBView,
    PodInfo,
    PostFilterResult,
    Status,
    hookimpl,
    select_victims_on_node,
    select_victims_on_nodes,
)
from kubesched.api import Pod, PriorityClass

from .victims import (
    ERR_REASON_PREEMPTION_POLICY_NEVER,
    ERR_REASON_TERMINATING,
    no_victims_status,
    node_to_wait_on,
    preempt,
)

__all__ = [
    "ANNOTATION_KEY_MINIMUM_PREEMPTABLE_PRIORITY",
    "ANNOTATION_KEY_PREFIX",
    "ANNOTATION_KEY_TOLERATION_SECONDS",
    "NAME",
    "Policy",
    "PreemptionToleration",
    "PreemptionTolerationArgs",
    "exempted_from_preemption",
    "parse_policy",
]

NAME = "PreemptionToleration"

ANNOTATION_KEY_PREFIX = "preemption-toleration.scheduling.sigs.k8s.io/"
ANNOTATION_KEY_MINIMUM_PREEMPTABLE_PRIORITY = ANNOTATION_KEY_PREFIX + "minimum-preemptable-priority"
"""The lowest preemptor priority that may preempt pods of the class (default: its value + 1)."""
ANNOTATION_KEY_TOLERATION_SECONDS = ANNOTATION_KEY_PREFIX + "toleration-seconds"
"""How long after being scheduled a pod of the class tolerates lower preemptors (default 0:
not at all; negative: forever)."""


# The embedded cluster's virtual time 0 (kubesched.backend.memory.naming): a FakeClock's
# seconds count from there, as the timestamps the embedded cluster writes.
_SIMULATION_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class PreemptionTolerationArgs(DefaultPreemptionArgs):
    """``PreemptionTolerationArgs``: DefaultPreemption's, with its defaults and checks
    (upstream's plugin validates them with ``ValidateDefaultPreemptionArgs``)."""


class Policy:
    """A PriorityClass's preemption toleration (upstream ``Policy``)."""

    __slots__ = ("minimum_preemptable_priority", "toleration_seconds")

    def __init__(self, minimum_preemptable_priority: int, toleration_seconds: int) -> None:
        self.minimum_preemptable_priority = minimum_preemptable_priority
        self.toleration_seconds = toleration_seconds

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and (
            self.minimum_preemptable_priority,
            self.toleration_seconds,
        ) == (other.minimum_preemptable_priority, other.toleration_seconds)

    def __repr__(self) -> str:
        return f"Policy({self.minimum_preemptable_priority}, {self.toleration_seconds})"


def _parse_int(text: str, bounds: tuple[int, int]) -> int:
    # strconv.ParseInt(s, 10, bits): an optional sign and decimal digits, in range.
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def parse_policy(pc: PriorityClass) -> Policy:
    """The policy the class's annotations give; ``ValueError`` for a value that is not
    an integer (of 32 bits for the priority)."""
    annotations = pc.metadata.annotations or {}
    raw = annotations.get(ANNOTATION_KEY_MINIMUM_PREEMPTABLE_PRIORITY)
    minimum = pc.value + 1 if raw is None else _parse_int(raw, _INT32)
    raw = annotations.get(ANNOTATION_KEY_TOLERATION_SECONDS)
    seconds = 0 if raw is None else _parse_int(raw, _INT64)
    return Policy(minimum, seconds)


def _scheduled_at(pod: Pod) -> datetime | None:
    for cond in pod.status.conditions or ():
        if cond.type == "PodScheduled":
            if cond.status != "True" or cond.last_transition_time is None:
                return None
            when = cond.last_transition_time
            return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return None


def exempted_from_preemption(
    victim: Pod, preemptor: Pod, priority_class: PriorityClass | None, now: datetime
) -> bool:
    """Whether ``victim`` (of ``priority_class``, its PriorityClass, None when it names
    none) tolerates preemption by ``preemptor`` at ``now`` (upstream
    ``ExemptedFromPreemption``). A class whose annotations do not parse tolerates nothing.
    """
    if priority_class is None:
        return False
    if preemptor.spec.preemption_policy == "Never":
        return True
    try:
        policy = parse_policy(priority_class)
    except ValueError:
        return False
    if (preemptor.spec.priority or 0) >= policy.minimum_preemptable_priority:
        return False
    if policy.toleration_seconds < 0:
        return True
    scheduled = _scheduled_at(victim)
    if scheduled is None:
        return True
    return scheduled + timedelta(seconds=policy.toleration_seconds) > now


class PreemptionToleration:
    """DefaultPreemption that spares the pods whose PriorityClass tolerates the preemptor
    (the annotations above); the victims and the node are chosen as upstream's."""

    name = NAME
    sdk_version = "1.7"
    Args = PreemptionTolerationArgs
    reads = ("PriorityClass",)
    """Read through the lister: a real cluster's backend watches PriorityClasses."""

    def __init__(self, args: PreemptionTolerationArgs | None, handle: Any) -> None:
        self.args = args or PreemptionTolerationArgs()
        self.handle = handle
        self.evaluator = Evaluator(NAME, handle, self)
        self._now = datetime.now(UTC)

    def now(self) -> datetime:
        """The time toleration is measured at: the embedded cluster's virtual time under
        a virtual clock, else the wall clock."""
        clock = getattr(self.handle, "clock", None)
        if clock is None or isinstance(clock, FakeClock):
            seconds = clock.now() if clock is not None else 0.0
            return _SIMULATION_EPOCH + timedelta(seconds=seconds)
        return datetime.now(UTC)

    @hookimpl
    def post_filter(
        self, state: CycleState, pod_info: PodInfo, filtered_node_status_map: NodeToStatus
    ) -> PostFilterResult | Status:
        self._now = self.now()
        return preempt(self.evaluator, state, pod_info, filtered_node_status_map)

    def _priority_class(self, pod: Pod) -> PriorityClass | None:
        """The pod's PriorityClass (None when it names none); ``LookupError`` when the
        class it names does not exist, which fails the dry run on the node, as upstream."""
        name = pod.spec.priority_class_name
        lister = self.handle.lister
        if not name or lister is None:
            return None
        pc = lister.get_object("PriorityClass", None, name)
        if pc is None:
            raise LookupError(f'priorityclass.scheduling.k8s.io "{name}" not found')
        return pc

    def is_exempted(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Whether ``victim`` tolerates preemption by ``preemptor`` now."""
        return exempted_from_preemption(
            victim.pod, preemptor.pod, self._priority_class(victim.pod), self._now
        )

    # -- PreemptionInterface ---------------------------------------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """``num_nodes × percentage // 100``, at least the absolute minimum, at most
        ``num_nodes``."""
        return self.args.num_candidates(num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset (the handle's seedable ``rng``) and the number of candidates."""
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(
        self, pod_info: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Not with ``preemptionPolicy: Never``; not while a lower-priority pod terminates
        on its nominated node (unless Filter found that node unresolvable)."""
        if pod_info.pod.spec.preemption_policy == "Never":
            return False, ERR_REASON_PREEMPTION_POLICY_NEVER
        node_info = node_to_wait_on(self.handle.snapshot, pod_info, nominated_node_status)
        if node_info is not None:
            for p in node_info.pods:
                if p.pod.metadata.deletion_timestamp is not None and p.priority < pod_info.priority:
                    return False, ERR_REASON_TERMINATING
        return True, ""

    def may_preempt(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Whether ``victim`` has a lower priority and does not tolerate ``preemptor``;
        ``LookupError`` when its PriorityClass does not exist."""
        return victim.priority < preemptor.priority and not self.is_exempted(victim, preemptor)

    def select_victims_on_node(
        self,
        state: CycleState,
        pod_info: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PDBView],
    ) -> tuple[list[PodInfo], int, Status]:
        """Upstream's: every lower-priority pod that does not tolerate the preemptor is
        removed; then as many as possible reprieved (the SDK's ``select_victims_on_node``)."""
        try:
            return select_victims_on_node(
                self.handle,
                state,
                pod_info,
                node_info,
                pdbs,
                lambda p: self.may_preempt(p, pod_info),
                decide_first=True,
                no_victims=lambda ni: no_victims_status(ni, pod_info),
            )
        except LookupError as err:
            return [], 0, Status(Code.ERROR, str(err))

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod_info: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PDBView],
    ) -> list[tuple[list[PodInfo], int, Status]] | None:
        """:meth:`select_victims_on_node` for every node of ``nodes`` at once (the SDK's
        ``select_victims_on_nodes``), or ``None`` when that cannot be done exactly or a
        victim's PriorityClass is missing (the per-node path then reports it on its
        node)."""
        try:
            potential = [[p for p in ni.pods if self.may_preempt(p, pod_info)] for ni in nodes]
        except LookupError:
            return None
        return select_victims_on_nodes(
            self.handle,
            state,
            pod_info,
            nodes,
            potential,
            pdbs,
            no_victims=lambda ni: no_victims_status(ni, pod_info),
        )

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], float]] | None:
        """None: upstream's default criteria."""
        return None
