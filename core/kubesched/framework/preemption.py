"""The generic preemption evaluator (upstream ``framework/preemption``) for PostFilter plugins.

A PostFilter plugin that preempts builds an :class:`Evaluator` with itself as the
:class:`PreemptionInterface` (eligibility, victim selection, how many candidates) and calls
:meth:`Evaluator.preempt`. The evaluator finds the nodes where preemption might help, dry-runs
the plugin's victim selection on clones of their NodeInfo and CycleState, picks the best
candidate with upstream's ordered criteria, and carries the preemption out through the
cluster client (:class:`PreemptionExecutor`): victims deleted (or, waiting at Permit,
rejected), the nomination of lower-priority pods on that node cleared, ``Preempted`` events
recorded. The pod group cycle's workload-aware preemption carries its victims out through the
same executor.

Upstream reference: ``pkg/scheduler/framework/preemption/preemption.go`` and
``executor.go``: with the ``SchedulerAsyncPreemption`` gate on (the default), the API calls
run after the scheduling cycle (``prepareCandidateAsync``, KEP-4832) and the preemptor (a
pod, or a pod group) is kept out of the active queue until they are done
(:meth:`PreemptionExecutor.is_running_preemption`); with it off they run inside the cycle
(``prepareCandidate``).
"""

from __future__ import annotations

import gc
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter
from typing import Any, Protocol, Self

import numpy as np
from pydantic import Field, model_validator

from kubesched.api import PodDisruptionBudget, compile_label_selector
from kubesched.api.selectors import LabelSelectorMatcher
from kubesched.backend.protocol import NotFoundError, PodCondition
from kubesched.extenders.types import ExtenderError, Victims
from kubesched.framework.args import PluginArgs
from kubesched.framework.cycle_state import CycleState, StateKey
from kubesched.framework.diagnosis import Diagnosis, ExtenderVerdict, FitError
from kubesched.framework.results import PostFilterResult
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

ERR_REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
"""The status of the nodes preemption did not consider (upstream's FitError in ``Preempt``)."""
ERR_REASON_NO_CANDIDATE = "no candidate node for preemption"
ERR_NO_NODES = "no nodes available"
ASYNC_PREEMPTION_GATE = "SchedulerAsyncPreemption"
GOROUTINE_SUCCESS, GOROUTINE_ERROR = "success", "error"
"""The ``result`` label of ``scheduler_preemption_goroutines_*`` (upstream's values)."""

DISRUPTION_TARGET = "DisruptionTarget"
"""The pod condition type set on a victim before it is deleted (``v1.DisruptionTarget``)."""
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
"""The reason of that condition (``v1.PodReasonPreemptionByScheduler``)."""

MAX_INT32 = 2**31 - 1

PREEMPTION_EXPLANATION_KEY: StateKey[PreemptionExplanation] = StateKey("PreemptionExplanation")
"""Where :meth:`Evaluator.preempt` leaves the :class:`PreemptionExplanation` of the attempt in
the cycle's CycleState, for ``simulate --explain`` and tests."""

CRITERIA = (
    "fewest PodDisruptionBudget violations",
    "lowest highest-priority victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of the highest-priority victims",
)
"""The names of ``pick_one_node_for_preemption``'s default criteria, in order."""
ONLY_CANDIDATE = "only candidate"
FIRST_IN_ORDER = "first candidate in search order (all criteria tied)"


# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PDBView:
    """A PodDisruptionBudget as preemption reads it, its selector compiled once per attempt.

    ``selector`` is ``None`` for a nil, empty or invalid selector: upstream's such a PDB
    matches no pod.
    """

    namespace: str
    name: str
    selector: LabelSelectorMatcher | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def of(cls, pdb: PodDisruptionBudget) -> PDBView:
        """The view of ``pdb``."""
        selector = None
        raw = pdb.spec.selector
        if raw is not None and (raw.match_labels or raw.match_expressions):
            try:
                selector = compile_label_selector(raw)
            except ValueError:  # an invalid selector matches nothing
                selector = None
        status = pdb.status
        return cls(
            namespace=pdb.metadata.namespace or "default",
            name=pdb.metadata.name or "",
            selector=selector,
            disruptions_allowed=status.disruptions_allowed if status is not None else 0,
            disrupted_pods=frozenset((status.disrupted_pods or {}) if status is not None else ()),
        )


@dataclass(slots=True)
class Candidate:
    """A node where the preemptor fits once ``victims`` are gone (upstream ``Candidate``).

    ``victims`` are ordered from most to least important (highest priority first).
    """

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int = 0


@dataclass(frozen=True)
class CandidateExplanation:
    """One candidate as ``simulate --explain`` shows it."""

    node: str
    victims: tuple[str, ...]
    """Victim pod keys, most important first."""
    victim_priorities: tuple[int, ...]
    num_pdb_violations: int

    @classmethod
    def of(cls, c: Candidate) -> CandidateExplanation:
        """The explanation of candidate ``c``."""
        return cls(
            node=c.name,
            victims=tuple(v.key for v in c.victims),
            victim_priorities=tuple(v.priority for v in c.victims),
            num_pdb_violations=c.num_pdb_violations,
        )


@dataclass
class PreemptionExplanation:
    """What one preemption attempt considered and decided (stored under
    :data:`PREEMPTION_EXPLANATION_KEY`).

    ``eligible`` False with ``reason`` when the pod may not preempt; otherwise
    ``potential_nodes`` nodes were rejected by Filter with ``Unschedulable``, the dry run
    started at ``offset`` (in the snapshot's node order among them) looking for
    ``wanted_candidates`` candidates, tried ``nodes_tried`` nodes and found
    ``candidates``; ``rejected`` holds, per node tried without success, why. ``chosen``
    is the nominated node, ``decided_by`` the criterion that singled it out, ``victims``
    the pods deleted for it. ``message`` is the PostFilter status message.

    ``candidates`` and ``rejected`` are built from the dry run's result when first read
    (:meth:`set_tried`): most attempts' explanations are never read, and building them
    cost a Python loop per candidate and per node tried on every preemption.
    """

    pod: str
    eligible: bool = True
    reason: str = ""
    potential_nodes: int = 0
    offset: int = 0
    wanted_candidates: int = 0
    nodes_tried: int = 0
    chosen: str | None = None
    decided_by: str = ""
    victims: tuple[str, ...] = ()
    message: str = ""
    extender_verdicts: list[ExtenderVerdict] = field(default_factory=list)
    """What the extenders with a preemptVerb kept of the candidates."""
    _tried: tuple[Sequence[Candidate], Mapping[str, Status]] = field(
        default=((), {}), repr=False, compare=False
    )
    _explained: tuple[list[CandidateExplanation], dict[str, str]] | None = field(
        default=None, repr=False, compare=False
    )

    def set_tried(self, candidates: Sequence[Candidate], statuses: Mapping[str, Status]) -> None:
        """The dry run's candidates and the statuses of the nodes it tried in vain."""
        self._tried, self._explained = (candidates, statuses), None

    def _explain(self) -> tuple[list[CandidateExplanation], dict[str, str]]:
        if self._explained is None:
            candidates, statuses = self._tried
            self._explained = (
                [CandidateExplanation.of(c) for c in candidates],
                {name: s.message() for name, s in statuses.items()},
            )
        return self._explained

    @property
    def candidates(self) -> list[CandidateExplanation]:
        """The candidates found, PDB-respecting ones first, as ``simulate`` shows them."""
        return self._explain()[0]

    @property
    def rejected(self) -> dict[str, str]:
        """Per node tried without success, the message of its dry-run status."""
        return self._explain()[1]


class PreemptionInterface(Protocol):
    """What a preemption plugin decides, the evaluator does the rest (upstream ``Interface``).

    A plugin may also implement ``select_victims_on_nodes(state, pod_info, nodes, pdbs)``
    returning, for every node of ``nodes`` in order, what ``select_victims_on_node``
    would (or ``None`` to decline): the evaluator then dry-runs a chunk of nodes with one
    call (DefaultPreemption does it vectorised, see ``kubesched.framework.preemption_batch``).
    """

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset into the ``num_nodes`` potential nodes and how many candidates
        the dry run should find."""
        ...

    def pod_eligible_to_preempt_others(
        self, pod_info: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Whether the pod may preempt at all, and why not."""
        ...

    def select_victims_on_node(
        self,
        state: CycleState,
        pod_info: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PDBView],
    ) -> tuple[list[PodInfo], int, Status]:
        """The fewest pods to remove from ``node_info`` for the pod to fit, their number of
        PDB violations and a status. ``state`` and ``node_info`` are clones to mutate."""
        ...

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], float]] | None:
        """Custom candidate scores (higher is better), applied in order until one node
        stands out; ``None`` for upstream's default criteria."""
        ...


class DefaultPreemptionArgs(PluginArgs):
    """``DefaultPreemptionArgs``: how many candidate nodes the dry run looks for.

    The dry run stops after :meth:`num_candidates` candidates: more candidates may give a
    better choice of victims, at a higher cost. DefaultPreemption's args, and those of a
    preemption plugin that keeps its search (PreemptionToleration's subclass them); the
    messages are upstream ``ValidateDefaultPreemptionArgs``' as ``field.Error`` renders
    them.
    """

    min_candidate_nodes_percentage: int = Field(
        default=10,
        description="The minimum number of candidates to shortlist, as a percentage of "
        "the nodes where preemption might help. Range 0..100; default 10.",
    )
    min_candidate_nodes_absolute: int = Field(
        default=100,
        description="The minimum absolute number of candidates to shortlist. At least 0; "
        "default 100. Must not be 0 when minCandidateNodesPercentage is 0.",
    )

    @model_validator(mode="after")
    def _validate(self) -> Self:
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        errs: list[str] = []
        if pct < 0 or pct > 100:
            errs.append(
                f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
            )
        if absolute < 0:
            errs.append(
                f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
            )
        if pct == 0 and absolute == 0:
            errs.append(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesAbsolute"
            )
            errs.append(
                "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesPercentage"
            )
        if errs:
            # utilerrors.Aggregate: one message alone, several as "[a, b]".
            raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        return self

    def num_candidates(self, num_nodes: int) -> int:
        """How many candidates to look for among ``num_nodes`` nodes (upstream
        ``calculateNumCandidates``): ``num_nodes × percentage // 100``, at least the
        absolute minimum, at most ``num_nodes``."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        return min(max(n, self.min_candidate_nodes_absolute), num_nodes)


# ---------------------------------------------------------------------------------------
# Shared helpers (upstream util and preemption package functions)
# ---------------------------------------------------------------------------------------


def pod_start_time(pod_info: PodInfo) -> float:
    """The pod's ``status.startTime`` in seconds; a pod not started yet counts as started
    now, later than any pod that has (upstream ``GetPodStartTime`` uses ``time.Now()``)."""
    # Read for every pod a dry run sorts and every victim candidates are compared by:
    # computed once per PodInfo (a new pod version gets a new PodInfo).
    t = pod_info.start_timestamp
    if t is None:
        started = pod_info.pod.status.start_time
        t = pod_info.start_timestamp = started.timestamp() if started is not None else math.inf
    return t


def importance_key(pod_info: PodInfo) -> tuple[int, float]:
    """Sort key putting more important pods first: higher priority, then longer running
    (upstream ``util.MoreImportantPod``)."""
    return (-pod_info.priority, pod_start_time(pod_info))


def more_important_pod(pod1: PodInfo, pod2: PodInfo) -> bool:
    """Upstream ``MoreImportantPod``: higher priority, or equal priority and started earlier."""
    if pod1.priority != pod2.priority:
        return pod1.priority > pod2.priority
    return pod_start_time(pod1) < pod_start_time(pod2)


def earliest_pod_start_time(victims: Sequence[PodInfo]) -> float | None:
    """The earliest start time among the highest-priority ``victims`` (upstream
    ``GetEarliestPodStartTime``); ``None`` without victims."""
    if not victims:
        return None
    top = max(v.priority for v in victims)
    return min(pod_start_time(v) for v in victims if v.priority == top)


def filter_pods_with_pdb_violation(
    pod_infos: Iterable[PodInfo], pdbs: Sequence[PDBView]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pod_infos`` into those whose removal would violate a PDB and the others,
    keeping their order (upstream ``filterPodsWithPDBViolation``).

    Each PDB's ``disruptionsAllowed`` is spent pod by pod in the given order; a pod already
    in a PDB's ``disruptedPods`` does not spend it again. A pod violates when some PDB
    selecting it goes below zero.
    """
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pod_infos:
        violated = False
        for i in pdbs_spent_by(pi, pdbs):
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def pdbs_spent_by(pod_info: PodInfo, pdbs: Sequence[PDBView]) -> list[int]:
    """The indices of the PDBs of ``pdbs`` whose ``disruptionsAllowed`` removing the pod
    spends: those selecting it, unless it is already among their ``disruptedPods``."""
    labels = pod_info.labels
    if not labels:  # a pod without labels matches no PDB
        return []
    return [
        i
        for i, pdb in enumerate(pdbs)
        if pdb.namespace == pod_info.namespace
        and pdb.selector is not None
        and pod_info.name not in pdb.disrupted_pods
        and pdb.selector.matches(labels)
    ]


ERR_REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
"""kube-scheduler's status message for a node without a pod to preempt."""


def select_victims_on_node(
    handle: Any,
    state: CycleState,
    preemptor: PodInfo,
    node_info: NodeInfo,
    pdbs: Sequence[PDBView],
    may_preempt: Callable[[PodInfo], bool],
    *,
    order: Iterable[PodInfo] | None = None,
    decide_first: bool = False,
    no_victims: Callable[[NodeInfo], Status] | None = None,
    after_removal: Callable[[], Status | None] | None = None,
    still_over: Callable[[], bool] | None = None,
    importance: Callable[[PodInfo], Any] = importance_key,
) -> tuple[list[PodInfo], int, Status]:
    """Upstream ``SelectVictimsOnNode`` for a preemption plugin: the fewest pods to remove
    from ``node_info`` for ``preemptor`` to fit, most important first, with how many of
    them violate a PDB, and a status. ``state`` and ``node_info`` are the clones the
    evaluator hands to ``select_victims_on_node``; both are changed.

    ``may_preempt`` says which pods of ``order`` (default: the node's pods, in its order)
    are potential victims. Each is removed through the PreFilter RemovePod extensions: as
    soon as it is chosen, so that the next question sees it gone (a quota that shrinks
    with each removal), or, with ``decide_first``, after every pod was asked about
    (kube-scheduler's DefaultPreemption). A node without a potential victim did not change
    and is not tried again: its status is ``no_victims(node_info)`` (default: kube-
    scheduler's ``UnschedulableAndUnresolvable`` "No preemption victims found for incoming
    pod"). Otherwise, if the preemptor does not fit with them all gone (counting the
    nominated pods), Filter's status says why; ``after_removal``, asked next, may still
    reject the node with a status. Then as many of them as possible are reprieved, added
    back (AddPod extensions) and kept where the preemptor still fits: first the pods whose
    eviction would violate a PDB, then the others, each group by ``importance`` (a sort
    key, most important first). ``still_over``, asked after a reprieve that fits, makes
    that pod a victim after all when it answers True (a quota the pod would exceed); such
    a pod does not count as a PDB violation, as upstream's quota plugins report it.
    """

    def remove(victim: PodInfo) -> Status:
        node_info.remove_pod(victim)
        return handle.run_pre_filter_extension_remove_pod(state, preemptor, victim, node_info)

    pods = list(node_info.pods if order is None else order)
    potential: list[PodInfo] = []
    if decide_first:
        potential = [p for p in pods if may_preempt(p)]
        for p in potential:
            status = remove(p)
            if not status.is_success():
                return [], 0, status
    else:
        for p in pods:
            if may_preempt(p):
                potential.append(p)
                status = remove(p)
                if not status.is_success():
                    return [], 0, status
    if not potential:
        # The node did not change: no need to evaluate it again.
        if no_victims is not None:
            return [], 0, no_victims(node_info)
        return [], 0, Status.unresolvable(ERR_REASON_NO_VICTIMS)
    # Whether the pod fails for inter-pod affinity to one of the victims is not
    # checked, as upstream (affinity to lower-priority pods is not recommended).
    status = handle.run_filter_plugins_with_nominated_pods(state, preemptor, node_info)
    if not status.is_success():
        return [], 0, status
    if after_removal is not None:
        rejected = after_removal()
        if rejected is not None:
            return [], 0, rejected

    victims: list[PodInfo] = []

    def reprieve(p: PodInfo) -> tuple[bool, Status]:
        node_info.add_pod(p)
        status = handle.run_pre_filter_extension_add_pod(state, preemptor, p, node_info)
        if not status.is_success():
            return False, status
        fits = handle.run_filter_plugins_with_nominated_pods(state, preemptor, node_info)
        fits = fits.is_success()
        if not fits or (still_over is not None and still_over()):
            status = remove(p)
            if not status.is_success():
                return False, status
            victims.append(p)
        return fits, Status()

    potential.sort(key=importance)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    num_violating = 0
    for p in violating:
        fits, status = reprieve(p)
        if not status.is_success():
            return [], 0, status
        if not fits:
            num_violating += 1
    for p in non_violating:
        _, status = reprieve(p)
        if not status.is_success():
            return [], 0, status
    # Keep the victims ordered from most to least important (upstream re-sorts only
    # when both groups were non-empty; otherwise they are in order already).
    if violating and non_violating:
        victims.sort(key=importance)
    return victims, num_violating, Status()


def _default_score_funcs(candidates: Sequence[Candidate]) -> list[Callable[[Candidate], float]]:
    def min_pdb_violations(c: Candidate) -> float:
        return -c.num_pdb_violations

    def min_highest_priority(c: Candidate) -> float:
        return -c.victims[0].priority

    def min_sum_priorities(c: Candidate) -> float:
        # Upstream adds MaxInt32+1 to each priority so that all are >= 0: otherwise a node
        # with a few negative-priority victims would lose to one with fewer of them.
        victims = c.victims
        return -(sum(map(_PRIORITY, victims)) + len(victims) * (MAX_INT32 + 1))

    def min_num_pods(c: Candidate) -> float:
        return -len(c.victims)

    def latest_start_time(c: Candidate) -> float:
        earliest = earliest_pod_start_time(c.victims)
        return -math.inf if earliest is None else earliest

    return [
        min_pdb_violations,
        min_highest_priority,
        min_sum_priorities,
        min_num_pods,
        latest_start_time,
    ]


def pick_one_node_for_preemption_explained(
    candidates: Sequence[Candidate],
    score_funcs: Sequence[Callable[[Candidate], float]] | None = None,
) -> tuple[Candidate | None, str]:
    """:func:`pick_one_node_for_preemption` and the name of the criterion that decided."""
    if not candidates:
        return None, ""
    custom = bool(score_funcs)
    if not custom and all(c.victims for c in candidates):
        return _pick_by_default_criteria(candidates)
    funcs = list(score_funcs) if custom else _default_score_funcs(candidates)
    remaining = list(candidates)
    for i, f in enumerate(funcs):
        scores = list(map(f, remaining))
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            name = f"custom score function {i}" if custom else CRITERIA[i]
            return remaining[0], name
    return remaining[0], FIRST_IN_ORDER


def _pick_by_default_criteria(candidates: Sequence[Candidate]) -> tuple[Candidate, str]:
    """The default criteria of :func:`pick_one_node_for_preemption_explained` on candidates
    that all have victims, each criterion one numpy column over every candidate: preemption
    plugins that want every node as a candidate (thousands) would otherwise call five
    Python functions per candidate. The columns hold the same values as
    :func:`_default_score_funcs` (int64 sums are exact for any realistic victim count), so
    the same candidates tie and the same one wins."""
    n = len(candidates)
    victims = list(map(_VICTIMS, candidates))
    lengths = np.fromiter(map(len, victims), dtype=np.int64, count=n)
    starts = np.cumsum(lengths) - lengths
    flat = list(chain.from_iterable(victims))
    priority = np.fromiter(map(_PRIORITY, flat), dtype=np.int64, count=len(flat))
    started = np.fromiter(map(pod_start_time, flat), dtype=np.float64, count=len(flat))
    top = np.maximum.reduceat(priority, starts)
    owner = np.repeat(np.arange(n), lengths)
    earliest = np.minimum.reduceat(np.where(priority == top[owner], started, math.inf), starts)
    columns = (
        -np.fromiter(map(_NUM_PDB_VIOLATIONS, candidates), dtype=np.int64, count=n),
        -priority[starts],
        -(np.add.reduceat(priority, starts) + lengths * (MAX_INT32 + 1)),
        -lengths,
        earliest,
    )
    remaining = np.arange(n)
    for i, column in enumerate(columns):
        scores = column[remaining]
        remaining = remaining[scores == scores.max()]
        if len(remaining) == 1:
            return candidates[int(remaining[0])], CRITERIA[i]
    return candidates[int(remaining[0])], FIRST_IN_ORDER


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate],
    score_funcs: Sequence[Callable[[Candidate], float]] | None = None,
) -> Candidate | None:
    """The best candidate by upstream's ``pickOneNodeForPreemption``.

    Without ``score_funcs``, in order, the candidate with: the fewest PDB violations; the
    lowest priority of its most important victim; the smallest sum of victim priorities
    (each offset by MaxInt32+1); the fewest victims; the latest earliest-start-time among
    its highest-priority victims. Each criterion only breaks the ties of the previous
    ones; when all tie, the first candidate in search order wins (upstream takes the
    first of a Go map iteration, i.e. an arbitrary one).
    """
    return pick_one_node_for_preemption_explained(candidates, score_funcs)[0]


def nodes_where_preemption_might_help(
    nodes: Iterable[NodeInfo], node_to_status: Mapping[str, Status]
) -> list[NodeInfo]:
    """The nodes Filter rejected with ``UNSCHEDULABLE`` (not ``UNSCHEDULABLE_AND_UNRESOLVABLE``),
    in snapshot order. A node missing from ``node_to_status`` counts as unresolvable, as
    upstream's default absent-nodes status.

    The scheduler's map (a :class:`~kubesched.framework.diagnosis.NodeStatusMap` built
    for the snapshot's list) already holds these nodes as a column; for any other
    mapping the statuses are looked up by name with C-level maps, no Python per node.
    """
    column = getattr(node_to_status, "unschedulable_nodes", None)
    if column is not None:
        found = column(nodes)
        if found is not None:
            return found
    nodes = nodes if isinstance(nodes, Sequence) else list(nodes)
    statuses = map(node_to_status.get, map(_NAME, nodes), repeat(_ABSENT))
    codes = np.fromiter(map(_CODE, statuses), dtype=np.int8, count=len(nodes))
    return list(map(nodes.__getitem__, np.flatnonzero(codes == Code.UNSCHEDULABLE).tolist()))


_NAME = attrgetter("name")
_CODE = attrgetter("code")
_PRIORITY = attrgetter("priority")
_VICTIMS = attrgetter("victims")
_NUM_PDB_VIOLATIONS = attrgetter("num_pdb_violations")
_ABSENT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
"""The status :func:`nodes_where_preemption_might_help` gives a node missing from the map."""


def _aggregate(messages: Sequence[str]) -> str:
    # utilerrors.Aggregate's Error(): one message alone, several as "[a, b]".
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


# ---------------------------------------------------------------------------------------
# The evaluator
# ---------------------------------------------------------------------------------------


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (unless it is off already).

    A dry run on thousands of nodes allocates lists, tuples and candidates per node that
    live until the attempt ends; the collector counts them as survivors and runs full
    collections over the whole heap (every pod of the cluster) again and again, which
    cost a quarter of the CPU of a preemption plugin that dry-runs every node (the
    ``preemption`` bench workload at 5,000 nodes). The block's garbage is freed by
    reference counting as before; cycles, if any, wait for the next collection."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Evaluator:
    """Runs a preemption for a PostFilter plugin (upstream ``preemption.Evaluator``).

    ``handle`` is the plugin's Framework; ``interface`` supplies the plugin's decisions;
    ``executor`` carries the chosen preemption out (default: the Framework's
    ``preemption_executor``, which the pod group cycle's preemption shares, so that
    DefaultPreemption's PreEnqueue sees a group's preemption too; for another handle, one
    of the evaluator's own). ``preempt_pod`` may be replaced (tests) by a function
    ``(candidate, preemptor, victim) -> None`` that raises on failure.
    """

    def __init__(
        self,
        plugin_name: str,
        handle: Any,
        interface: PreemptionInterface,
        executor: PreemptionExecutor | None = None,
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface
        if executor is None:
            executor = getattr(handle, "preemption_executor", None) or PreemptionExecutor(handle)
        self.executor: PreemptionExecutor = executor
        self.preempt_pod: Callable[[Candidate, PodInfo, PodInfo], None] = self._preempt_pod
        enabled = getattr(handle, "feature_enabled", None)
        self.async_preemption = enabled is not None and enabled(ASYNC_PREEMPTION_GATE)
        """``SchedulerAsyncPreemption``: the API calls run after the cycle, not in PostFilter."""

    # -- Preempt ---------------------------------------------------------------------------
    def preempt(
        self, state: CycleState, pod_info: PodInfo, node_to_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """Try to make room for ``pod_info``: ``(result, status)`` as upstream's ``Preempt``.

        * ``(None, UNSCHEDULABLE)``: not eligible (the reason says why); the nomination
          is left as it is.
        * ``(PostFilterResult(""), UNSCHEDULABLE)``: no node can be freed; the FitError
          message lists each node's dry-run status; the nomination should be cleared.
        * ``(PostFilterResult(node), SUCCESS)``: the victims on ``node`` are being
          deleted; the pod is nominated to ``node``.
        * ``(None, ERROR)``: a dry run or an API call failed.
        """
        explanation = PreemptionExplanation(pod=pod_info.key)
        state.write(PREEMPTION_EXPLANATION_KEY, explanation)
        with _collection_paused():
            result, status = self._preempt(state, pod_info, node_to_status, explanation)
        explanation.message = status.message()
        return result, status

    def _preempt(
        self,
        state: CycleState,
        pod_info: PodInfo,
        node_to_status: Mapping[str, Status],
        explanation: PreemptionExplanation,
    ) -> tuple[PostFilterResult | None, Status]:
        pod = pod_info.pod
        # 1) Is the preemptor eligible?
        nominated = pod.status.nominated_node_name or ""
        nominated_status = node_to_status.get(nominated) if nominated else None
        if nominated and nominated_status is None:
            nominated_status = Status.unresolvable()
        ok, msg = self.interface.pod_eligible_to_preempt_others(pod_info, nominated_status)
        if not ok:
            explanation.eligible, explanation.reason = False, msg
            return None, Status.unschedulable(msg)

        # 2) Find the candidates.
        all_nodes = self.handle.snapshot.list()
        if not all_nodes:
            return None, Status(Code.ERROR, ERR_NO_NODES)
        candidates, statuses, errors = self.find_candidates(
            state, all_nodes, pod_info, node_to_status, explanation
        )
        if errors and not candidates:
            return None, Status(Code.ERROR, _aggregate(errors))
        if not candidates:
            diagnosis = Diagnosis(
                node_to_status=statuses,
                absent_nodes_status=Status.unresolvable(ERR_REASON_NOT_HELPFUL),
            )
            fit = FitError(pod_info.key, len(all_nodes), diagnosis)
            return PostFilterResult(""), Status.unschedulable(str(fit))

        # 3) The extenders that take part in preemption narrow the candidates.
        candidates, status = self.call_extenders(pod_info, candidates, explanation)
        if not status.is_success():
            return None, status
        # 4) The best candidate.
        best, decided_by = self.select_candidate_explained(candidates)
        if best is None or not best.name:
            return None, Status.unschedulable(ERR_REASON_NO_CANDIDATE)
        explanation.chosen = best.name
        explanation.decided_by = decided_by
        explanation.victims = tuple(v.key for v in best.victims)

        # 5) Carry it out: now, or after the cycle (the pod is nominated meanwhile).
        if self.async_preemption:
            self.prepare_candidate_async(best, pod_info)
            return PostFilterResult(best.name), Status()
        status = self.prepare_candidate(best, pod_info)
        if not status.is_success():
            return None, status
        return PostFilterResult(best.name), Status()

    def call_extenders(
        self,
        pod_info: PodInfo,
        candidates: list[Candidate],
        explanation: PreemptionExplanation,
    ) -> tuple[list[Candidate], Status]:
        """Upstream ``callExtenders``: each interested extender with a preemptVerb gets
        the candidates and their victims and answers the ones it keeps (victims may
        change); an error fails preemption unless the extender is ignorable."""
        extenders = getattr(self.handle, "extenders", ())
        if not extenders or not candidates:
            return candidates, Status()
        pod = pod_info.pod
        victims: dict[str, tuple[list[PodInfo], int]] = {
            c.name: (c.victims, c.num_pdb_violations) for c in candidates
        }
        snapshot = self.handle.snapshot
        for ext in extenders:
            if not ext.supports_preemption or not ext.is_interested(pod):
                continue
            try:
                kept = ext.process_preemption(
                    pod,
                    {
                        node: Victims([p.pod for p in pods], pdb)
                        for node, (pods, pdb) in victims.items()
                    },
                    snapshot.get,
                )
            except ExtenderError as err:
                if ext.passed_over("preempt", err, explanation.extender_verdicts):
                    continue
                return [], Status(Code.ERROR, str(err))
            for node, (pods, _) in list(kept.items()):
                if pods:
                    continue
                if not ext.ignorable:
                    return [], Status(
                        Code.ERROR, f'expected at least one victim pod on node "{node}"'
                    )
                log.info(
                    "Ignored node %s for which extender %s reported no victims", node, ext.name
                )
                del kept[node]
            explanation.extender_verdicts.append(
                ExtenderVerdict(
                    ext.name, "preempt", f"kept {len(kept)} of {len(victims)} candidate(s)"
                )
            )
            victims = kept
            if not victims:
                break
        return [Candidate(node, pods, pdb) for node, (pods, pdb) in victims.items()], Status()

    def find_candidates(
        self,
        state: CycleState,
        all_nodes: Sequence[NodeInfo],
        pod_info: PodInfo,
        node_to_status: Mapping[str, Status],
        explanation: PreemptionExplanation | None = None,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Upstream ``findCandidates``: dry-run the nodes where preemption might help,
        from a random offset, until enough candidates are found.

        Returns the candidates (PDB-respecting ones first), the status of every node tried
        without success, and the messages of dry runs that failed with an error.
        """
        potential = nodes_where_preemption_might_help(all_nodes, node_to_status)
        if not potential:
            return [], {}, []
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        pdbs = self.pdbs_for(potential)
        if explanation is not None:
            explanation.potential_nodes = len(potential)
            explanation.offset = offset
            explanation.wanted_candidates = num_candidates
        return self.dry_run_preemption(
            state, pod_info, potential, pdbs, offset, num_candidates, explanation
        )

    def pdbs_for(self, nodes: Sequence[NodeInfo]) -> list[PDBView]:
        """The PDBs of the namespaces of the pods on ``nodes``, read once for the attempt.

        Upstream lists every PDB of the cluster; only those in a victim's namespace can
        select it, so reading per namespace gives the same answer. With the snapshot's
        pod groups, the namespaces are those of all its pods (a superset: a PDB of
        another namespace selects no victim), read from the groups instead of walking
        every pod of ``nodes`` per preemption.
        """
        lister = getattr(self.handle, "lister", None)
        if lister is None or not hasattr(lister, "list_pod_disruption_budgets"):
            return []
        by_labels = getattr(getattr(self.handle, "snapshot", None), "pods_by_labels", None)
        if by_labels is not None:
            namespaces = sorted({g.sample.namespace for g in by_labels().groups.values()})
        else:
            namespaces = sorted({p.namespace for ni in nodes for p in ni.pods})
        out: list[PDBView] = []
        for ns in namespaces:
            out.extend(PDBView.of(pdb) for pdb in lister.list_pod_disruption_budgets(ns))
        return out

    def dry_run_preemption(
        self,
        state: CycleState,
        pod_info: PodInfo,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[PDBView],
        offset: int,
        num_candidates: int,
        explanation: PreemptionExplanation | None = None,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Upstream ``DryRunPreemption``, the nodes in order from ``offset``.

        Each node's victims are chosen as if on clones of its NodeInfo and of ``state``.
        The search stops once it holds at least one candidate without PDB violations and
        ``num_candidates`` in all; each kind is capped at ``num_candidates``, as
        upstream's fixed-size candidate lists. The nodes are dry-run in chunks (the
        first of ``num_candidates`` nodes, the next sized by the rate of candidates
        found so far): a plugin with
        ``select_victims_on_nodes`` decides a chunk at once, vectorised; the candidates
        and statuses are then taken in node order up to where the search stops, so the
        outcome is the per-node search's. Otherwise ``select_victims_on_node`` runs on
        one node after the other; the Filter plugins that depend only on the node
        (``Framework.node_only_filters``) are checked once per chunk, vectorised, and
        the ``state`` clone of a node where they pass skips them.
        """
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        n = len(potential_nodes)
        order = list(potential_nodes[offset:]) + list(potential_nodes[:offset])
        tried = found = 0
        pos = 0
        chunk = max(num_candidates, 1)
        done = False
        while pos < n and not done:
            if tried:
                # As many more nodes as the candidates still wanted need at the rate
                # found so far, with a margin: nodes dry-run past the stop are wasted.
                wanted = max(num_candidates - found, 1)
                chunk = math.ceil(wanted * 1.2 * tried / found) if found else 2 * tried
                chunk = max(chunk, 16)
            part = order[pos : pos + chunk]
            pos += len(part)
            for node, (victims, num_violations, status) in zip(
                part, self._select_victims(state, pod_info, part, pdbs), strict=True
            ):
                tried += 1
                if status.is_success() and victims:
                    found += 1
                    c = Candidate(node.name, victims, num_violations)
                    bucket = non_violating if num_violations == 0 else violating
                    if len(bucket) < num_candidates:
                        bucket.append(c)
                    if non_violating and len(non_violating) + len(violating) >= num_candidates:
                        done = True
                        break
                    continue
                if status.is_success():
                    status = Status(
                        Code.ERROR, f"expected at least one victim pod on node {node.name!r}"
                    )
                if status.code is Code.ERROR:
                    errors.append(status.message())
                statuses[node.name] = status
        candidates = non_violating + violating
        if explanation is not None:
            explanation.nodes_tried = tried
            explanation.set_tried(candidates, statuses)
        return candidates, statuses, errors

    def _select_victims(
        self,
        state: CycleState,
        pod_info: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PDBView],
    ) -> Iterable[tuple[list[PodInfo], int, Status]]:
        """Each node's ``(victims, PDB violations, status)``, in order: from the plugin's
        ``select_victims_on_nodes`` when it has one and it can decide these nodes at once,
        else from ``select_victims_on_node`` on clones, one node at a time (lazily, so
        that the nodes after the search stops are never dry-run)."""
        batch = getattr(self.interface, "select_victims_on_nodes", None)
        if batch is not None:
            results = batch(state.clone(), pod_info, nodes, pdbs)
            if results is not None:
                yield from results
                return
        node_only = self._node_only_filters_pass(state, pod_info, nodes)
        for j, node in enumerate(nodes):
            node_state = state.clone()
            if node_only is not None and node_only[1][j]:
                # Removing or adding pods cannot change these plugins' verdict, and they
                # pass on this node: the dry run's Filter runs need not call them.
                node_state.skip_filter_plugins |= node_only[0]
            yield self.interface.select_victims_on_node(node_state, pod_info, node.clone(), pdbs)

    def _node_only_filters_pass(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[frozenset[str], Any] | None:
        """The handle's ``node_only_filters_pass`` (a Framework's), or None for a handle
        without it: the dry run then runs every Filter plugin on every node."""
        check = getattr(self.handle, "node_only_filters_pass", None)
        return check(state, pod_info, nodes) if check is not None else None

    # -- SelectCandidate -------------------------------------------------------------------
    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """Upstream ``SelectCandidate``: the one candidate, or the best by
        :func:`pick_one_node_for_preemption` with the plugin's score functions."""
        return self.select_candidate_explained(candidates)[0]

    def select_candidate_explained(
        self, candidates: Sequence[Candidate]
    ) -> tuple[Candidate | None, str]:
        """:meth:`select_candidate` and the criterion that decided."""
        if not candidates:
            return None, ""
        if len(candidates) == 1:
            return candidates[0], ONLY_CANDIDATE
        funcs = self.interface.ordered_score_funcs(candidates)
        return pick_one_node_for_preemption_explained(candidates, funcs)

    # -- prepareCandidate ------------------------------------------------------------------
    def prepare_candidate(self, c: Candidate, pod_info: PodInfo) -> Status:
        """Upstream's synchronous ``prepareCandidate`` for the pod: the executor's
        :meth:`PreemptionExecutor.prepare_candidate`, each victim through
        :attr:`preempt_pod`."""
        return self.executor.prepare_candidate(
            c.name, self.preemptor_of(pod_info), c.victims, self._victim_preempter(c, pod_info)
        )

    def prepare_candidate_async(self, c: Candidate, pod_info: PodInfo) -> None:
        """Upstream's ``prepareCandidateAsync`` for the pod: the executor's
        :meth:`PreemptionExecutor.prepare_candidate_async`, each victim through
        :attr:`preempt_pod`; until the calls are done the pod is "running preemption"
        (:meth:`is_pod_running_preemption`)."""
        self.executor.prepare_candidate_async(
            c.name, self.preemptor_of(pod_info), c.victims, self._victim_preempter(c, pod_info)
        )

    def _victim_preempter(self, c: Candidate, pod_info: PodInfo) -> Callable[[PodInfo], None]:
        # Read at call time: a test may replace preempt_pod after the cycle.
        return lambda victim: self.preempt_pod(c, pod_info, victim)

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption`` (see
        :meth:`PreemptionExecutor.is_running_preemption`)."""
        return self.executor.is_running_preemption(uid)

    @staticmethod
    def preemptor_of(pod_info: PodInfo) -> Preemptor:
        """The executor's view of a preempting pod (upstream ``podExecutorPreemptor``)."""
        pod = pod_info.pod
        return Preemptor(
            uid=pod_info.uid,
            kind=PREEMPTOR_POD,
            scheduler_name=pod.spec.scheduler_name or "default-scheduler",
            priority=pod_info.priority,
            pods={pod_info.key: pod},
            related=pod,
        )

    def _preempt_pod(self, c: Candidate, preemptor: PodInfo, victim: PodInfo) -> None:
        self.executor.preempt_pod(c.name, self.preemptor_of(preemptor), victim, self.plugin_name)

    def clear_lower_priority_nominations(self, pod_info: PodInfo, node_name: str) -> None:
        """Clear the nomination of the pods nominated to ``node_name`` with a lower priority
        than ``pod_info``: they may no longer fit there, and clearing moves them on
        (upstream ``getLowerPriorityNominatedPods`` + ``clearNominatedNodeName``)."""
        self.executor.clear_lower_priority_nominations(pod_info.priority, node_name)


# ---------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------

PREEMPTOR_POD, PREEMPTOR_POD_GROUP = "pod", "podgroup"
"""What preempts, in the victims' condition and ``Preempted`` event (upstream's ``Type()``)."""


@dataclass(frozen=True)
class Preemptor:
    """Who preempts, as the executor needs it (upstream ``ExecutorPreemptor``): one pod, or
    a pod group (its PodGroup's UID and priority, and its pods)."""

    uid: str
    """The pod's UID, or the PodGroup's: what
    :meth:`PreemptionExecutor.is_running_preemption` answers for."""
    kind: str
    """:data:`PREEMPTOR_POD` or :data:`PREEMPTOR_POD_GROUP`."""
    scheduler_name: str
    priority: int
    """Pods nominated to the candidate node with a lower priority lose their nomination."""
    pods: Mapping[str, Any]
    """The preemptor's pods by key: activated when the asynchronous calls fail."""
    related: Any = None
    """The ``related`` object of the victims' ``Preempted`` events (the preempting pod)."""


class PreemptionExecutor:
    """Carries a chosen preemption out through the cluster client (upstream ``Executor``):
    victims marked ``DisruptionTarget`` and deleted (or, waiting at Permit, rejected),
    lower-priority nominations to the node cleared, ``Preempted`` events recorded.

    :meth:`prepare_candidate` makes the calls at once; :meth:`prepare_candidate_async`
    (``SchedulerAsyncPreemption``) hands them to ``handle.run_api_calls`` (``kubesched
    run``: a worker thread after the scheduling cycle; elsewhere they run at once) and,
    until they are done, the preemptor is "running preemption"
    (:meth:`is_running_preemption`), which DefaultPreemption's PreEnqueue reads to keep its
    pods out of the active queue. A profile's Framework holds one executor
    (``preemption_executor``), shared by DefaultPreemption and the pod group cycle's
    workload-aware preemption, as upstream's DefaultPreemption serves both.
    """

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self._lock = threading.Lock()
        # Preemptors whose API calls are not done, and, once only the last victim is
        # left, that victim's key (upstream ``preempting`` / ``lastVictimsPendingPreemption``).
        self._preempting: set[str] = set()
        self._last_victim: dict[str, tuple[str, str]] = {}

    def prepare_candidate(
        self,
        node_name: str,
        preemptor: Preemptor,
        victims: Sequence[PodInfo],
        preempt: Callable[[PodInfo], None],
    ) -> Status:
        """Upstream's synchronous ``prepareCandidate``: ``preempt`` each victim not already
        terminating, then clear the nomination of lower-priority pods nominated to
        ``node_name``. An API failure on a victim ends it with an ``ERROR``; failing to
        clear a nomination is only logged, as upstream."""
        self._observe_victims(len(victims))
        # Graceful deletion already started: another API call is unnecessary.
        pending = [v for v in victims if v.pod.metadata.deletion_timestamp is None]
        err = self._preempt_all(node_name, preemptor, pending, preempt)
        if err is not None:
            return Status.from_error(err)
        self.clear_lower_priority_nominations(preemptor.priority, node_name)
        return Status()

    def prepare_candidate_async(
        self,
        node_name: str,
        preemptor: Preemptor,
        victims: Sequence[PodInfo],
        preempt: Callable[[PodInfo], None],
    ) -> None:
        """Upstream's ``prepareCandidateAsync``: the calls of :meth:`prepare_candidate`
        handed to ``handle.run_api_calls``. Until they are done the preemptor is running
        preemption; if one fails its pods are activated, so that they cannot wait among
        the unschedulable pods for an event that never comes."""
        pending = [v for v in victims if v.pod.metadata.deletion_timestamp is None]
        if not pending:
            # Every victim is terminating already: nothing to call, nothing to wait for.
            return
        self._observe_victims(len(victims))
        uid = preemptor.uid
        with self._lock:
            self._preempting.add(uid)
        metrics = getattr(self.handle, "metrics", None)

        def api_calls() -> None:
            started = time.perf_counter()
            result = GOROUTINE_SUCCESS
            try:
                if not self.clear_lower_priority_nominations(preemptor.priority, node_name):
                    result = GOROUTINE_ERROR
                # Every victim but the last, then the last one registered first: once it
                # is terminating or gone, PreEnqueue lets the preemptor through even if
                # this thread has not returned yet (its deletion may be the last event
                # the preemptor gets).
                *first, last = pending
                if self._preempt_all(node_name, preemptor, first, preempt) is None:
                    with self._lock:
                        self._last_victim[uid] = (last.namespace, last.name)
                    if self._preempt_all(node_name, preemptor, [last], preempt) is not None:
                        result = GOROUTINE_ERROR
                else:
                    result = GOROUTINE_ERROR
            finally:
                with self._lock:
                    self._preempting.discard(uid)
                    self._last_victim.pop(uid, None)
                if metrics is not None:
                    metrics.preemption_goroutines_duration.labels(result).observe(
                        time.perf_counter() - started
                    )
                    metrics.preemption_goroutines_execution.labels(result).inc()
            if result == GOROUTINE_ERROR:
                activate = getattr(self.handle, "activate", None)
                if activate is not None:
                    activate(preemptor.pods)

        run = getattr(self.handle, "run_api_calls", None)
        if run is None:
            api_calls()
        else:
            run(api_calls)

    def _observe_victims(self, count: int) -> None:
        metrics = getattr(self.handle, "metrics", None)
        if metrics is not None:
            metrics.preemption_victims.observe(count)

    @staticmethod
    def _preempt_all(
        node_name: str,
        preemptor: Preemptor,
        victims: Sequence[PodInfo],
        preempt: Callable[[PodInfo], None],
    ) -> Exception | None:
        """``preempt`` the victims one after the other, up to the first failure (logged
        and returned; None when every call succeeded)."""
        for victim in victims:
            try:
                preempt(victim)
            except Exception as err:
                log.error(
                    "could not preempt pod %s for %s %s on node %s: %s",
                    victim.key,
                    preemptor.kind,
                    preemptor.uid,
                    node_name,
                    err,
                )
                return err
        return None

    def is_running_preemption(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption`` / ``IsPodGroupRunningPreemption``: the
        asynchronous API calls of the preemption of the pod or PodGroup ``uid`` are not
        done; once only the last victim is left, done as soon as the cluster shows that
        victim terminating or gone."""
        with self._lock:
            if uid not in self._preempting:
                return False
            last = self._last_victim.get(uid)
        if last is None:
            return True
        lister = getattr(self.handle, "lister", None)
        victim = lister.get_object("Pod", *last) if lister is not None else None
        return victim is not None and victim.metadata.deletion_timestamp is None

    def preempt_pod(
        self, node_name: str, preemptor: Preemptor, victim: PodInfo, plugin_name: str
    ) -> None:
        """Upstream ``PreemptPod``: reject a victim waiting at Permit (as ``plugin_name``);
        otherwise mark it with the ``DisruptionTarget`` condition and delete it (its grace
        period applies). Then record a ``Preempted`` event on it. A victim already gone
        is not an error."""
        handle = self.handle
        get_waiting = getattr(handle, "get_waiting_pod", None)
        waiting = get_waiting(victim.uid) if get_waiting is not None else None
        if waiting is not None:
            waiting.reject(plugin_name, "preempted")
        else:
            client = handle.client
            condition = PodCondition(
                DISRUPTION_TARGET,
                "True",
                REASON_PREEMPTION_BY_SCHEDULER,
                f"{preemptor.scheduler_name}: preempting to accommodate a higher priority "
                f"{preemptor.kind}",
            )
            try:
                if not _has_condition(victim, condition):
                    client.update_pod_status(victim.pod, condition=condition)
                client.delete_pod(victim.pod)
            except NotFoundError:
                log.info("victim pod %s is already deleted", victim.key)
                return
        recorder = getattr(handle, "event_recorder", None)
        if recorder is not None:
            recorder.eventf(
                victim.pod,
                preemptor.related,
                "Normal",
                "Preempted",
                "Preempting",
                f"Preempted by {preemptor.kind} {preemptor.uid} on node {node_name}",
            )

    def clear_lower_priority_nominations(self, priority: int, node_name: str) -> bool:
        """Clear the nomination of the pods nominated to ``node_name`` with a priority below
        ``priority``: they may no longer fit there, and clearing moves them on (upstream
        ``getLowerPriorityNominatedPods`` + ``clearNominatedNodeName``). False when a
        status update failed (logged: not critical, as upstream)."""
        nominator = getattr(self.handle, "nominator", None)
        if nominator is None:
            return True
        lower = [p for p in nominator.nominated_pods_for_node(node_name) if p.priority < priority]
        client = self.handle.client
        cleared = True
        for p in lower:
            try:
                client.update_pod_status(p.pod, clear_nominated_node_name=True)
            except Exception as err:  # not critical, as upstream
                log.warning("cannot clear 'NominatedNodeName' of pod %s: %s", p.key, err)
                cleared = False
            nominator.delete_nominated_pod_if_exists(p.pod)
        return cleared


def _has_condition(victim: PodInfo, want: PodCondition) -> bool:
    for cond in victim.pod.status.conditions or ():
        if cond.type == want.type:
            return (
                cond.status == want.status
                and (cond.reason or "") == want.reason
                and (cond.message or "") == want.message
            )
    return False


__all__ = [
    "ASYNC_PREEMPTION_GATE",
    "CRITERIA",
    "DISRUPTION_TARGET",
    "ERR_REASON_NOT_HELPFUL",
    "ERR_REASON_NO_VICTIMS",
    "FIRST_IN_ORDER",
    "ONLY_CANDIDATE",
    "PREEMPTION_EXPLANATION_KEY",
    "PREEMPTOR_POD",
    "PREEMPTOR_POD_GROUP",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "Candidate",
    "CandidateExplanation",
    "DefaultPreemptionArgs",
    "Evaluator",
    "PDBView",
    "PreemptionExecutor",
    "PreemptionExplanation",
    "PreemptionInterface",
    "Preemptor",
    "earliest_pod_start_time",
    "filter_pods_with_pdb_violation",
    "importance_key",
    "more_important_pod",
    "nodes_where_preemption_might_help",
    "pdbs_spent_by",
    "pick_one_node_for_preemption",
    "pick_one_node_for_preemption_explained",
    "pod_start_time",
    "select_victims_on_node",
]
