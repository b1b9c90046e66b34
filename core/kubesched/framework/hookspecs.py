"""The extension points of the scheduling framework, as pluggy hookspecs.

This module is the reference manual of the plugin API. Extension points appear in
the order a pod meets them (see docs/concepts.md and KEP-624, "Scheduling Framework").

Conventions shared by every hook:

* A plugin implements a hook by defining a method of the same name marked with
  ``@kubesched.hookimpl``. It may accept any subset of the hook's parameters, by
  name (pluggy's rule): ``def filter(self, pod, node_info)`` is valid.
* ``pod`` is the pod being scheduled (``kubesched.api.Pod``); ``pod_info`` is the same
  pod with what the scheduler pre-computed for it (requests, parsed affinity terms,
  tolerations: ``kubesched.PodInfo``). Read ``pod_info`` on hot paths.
* ``state`` is the cycle's ``CycleState``: write at PreFilter/PreScore, read later.
* Hooks that return a ``Status`` may return ``None`` for success. The framework
  fills in the status's ``plugin``.
* An exception raised by a hook becomes an ``ERROR`` status attributed to the
  plugin: the scheduling attempt ends, the pod goes to backoff, nothing else breaks.
* The framework calls each profile's plugins itself, one plugin at a time in the
  profile's configured order, and never broadcasts a hook through pluggy: the
  ``firstresult`` flags below are informational.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kubesched.framework.plugin import hookspec

if TYPE_CHECKING:
    from kubesched.api import Pod, WorkloadPodGroup
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.events import ClusterEventWithHint
    from kubesched.framework.results import (
        NodeScores,
        Placement,
        PodGroupAssignments,
        PostFilterResult,
        PreFilterResult,
    )
    from kubesched.framework.status import Status
    from kubesched.framework.types import NodeBatch, NodeInfo, NodeToStatus, PodInfo, QueuedPodInfo


# ---------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------


@hookspec
def events_to_register() -> Sequence[ClusterEventWithHint]:
    """The cluster events that may make a pod this plugin rejected schedulable again.

    Called once per profile when the framework is built. When a pod's scheduling
    attempt fails, the queue remembers which plugins rejected it; the pod leaves the
    unschedulable pods only on an event one of those plugins registered here, and
    only if that registration's queueing hint (if any) returns ``QUEUE``.

    A plugin that rejects pods (PreEnqueue, PreFilter, Filter, Reserve, Permit) and
    does not implement this hook is treated as interested in every event, which is
    correct but wakes pods needlessly.
    """


@hookspec
def sign_pod(pod: Pod, pod_info: PodInfo) -> Sequence[tuple[str, object]] | Status | None:
    """Sign: the parts of the pod this plugin's PreFilter, Filter, PreScore and Score read.

    Opportunistic batching (the ``OpportunisticBatching`` gate, upstream's ``SignPlugin``)
    gives a pod the node ranked next by the previous pod's cycle when both have the same
    signature, instead of filtering and scoring every node again. The signature is the
    pod's ``schedulerName`` and every plugin's fragments: ``(key, value)`` pairs of
    JSON-serialisable values, keyed by upstream's signer names (two plugins reading the
    same field give the same key). Return ``None`` or ``[]`` when the plugin reads nothing
    of the pod, and an ``UNSCHEDULABLE`` status (with the reason) when the pod cannot be
    signed: its verdicts depend on more than the pod and the node (other pods' placement,
    as topology spreading does). A profile with a PreFilter, Filter, PreScore or Score
    plugin that does not implement this hook, or with extenders, never batches.
    """


# ---------------------------------------------------------------------------------------
# Queueing
# ---------------------------------------------------------------------------------------


@hookspec
def pre_enqueue(pod: Pod, pod_info: PodInfo) -> Status | None:
    """PreEnqueue: may the pod enter the active queue?

    Runs when a pod is added to the scheduling queue, and again when an event moves
    it. Any non-success status keeps the pod among the gated pods (it is not
    scheduled and does not count as a failed attempt) until an event this plugin
    registered re-runs PreEnqueue and all PreEnqueue plugins succeed. Legal codes:
    ``SUCCESS`` and ``UNSCHEDULABLE_AND_UNRESOLVABLE`` (or ``PENDING``); the reason is
    shown as the pod's pending reason. Must be cheap: it runs on every enqueue.
    """


@hookspec(firstresult=True)
def less(pod_info1: QueuedPodInfo, pod_info2: QueuedPodInfo) -> bool:
    """QueueSort: should ``pod_info1`` be popped before ``pod_info2``?

    Orders the active queue (a heap). Exactly one QueueSort plugin is enabled per
    profile, and all profiles must use the same one, because the queue is shared.
    Must be a strict weak order and must not fail.
    """


# ---------------------------------------------------------------------------------------
# Scheduling cycle (one pod at a time)
# ---------------------------------------------------------------------------------------


@hookspec
def pre_filter(
    state: CycleState, pod: Pod, pod_info: PodInfo, nodes: Sequence[NodeInfo]
) -> PreFilterResult | Status | None:
    """PreFilter: check the pod, and pre-compute for Filter, once per scheduling cycle.

    ``nodes`` are all nodes of the snapshot. Returns:

    * ``None`` or a success status: go on.
    * a ``PreFilterResult`` naming a set of nodes: only those nodes are evaluated by
      Filter (results of several plugins are intersected; an empty intersection makes
      the pod unschedulable with "node(s) didn't satisfy plugin(s) [...]").
    * ``SKIP``: this plugin's Filter (and its ``pre_filter_add_pod``/``remove_pod``)
      is not run for this pod in this cycle.
    * ``UNSCHEDULABLE`` / ``UNSCHEDULABLE_AND_UNRESOLVABLE``: the pod is rejected for
      every node (each node gets this status in the diagnosis) and PostFilter runs as
      when Filter rejects every node.
    * ``ERROR``: the attempt ends and the pod is retried after backoff.
    """


@hookspec
def pre_filter_add_pod(
    state: CycleState,
    pod: Pod,
    pod_info: PodInfo,
    pod_info_to_add: PodInfo,
    node_info: NodeInfo,
) -> Status | None:
    """PreFilter extension: update this plugin's PreFilter state as if
    ``pod_info_to_add`` ran on ``node_info``.

    Used by preemption's what-if and to count nominated pods: the framework calls it
    on a clone of ``state`` and of the NodeInfo. Plugins whose Filter depends on
    other pods (ports, affinity, spread, resources already in NodeInfo) implement it;
    a non-success status aborts the what-if for that node.
    """


@hookspec
def pre_filter_remove_pod(
    state: CycleState,
    pod: Pod,
    pod_info: PodInfo,
    pod_info_to_remove: PodInfo,
    node_info: NodeInfo,
) -> Status | None:
    """PreFilter extension: update this plugin's PreFilter state as if
    ``pod_info_to_remove`` no longer ran on ``node_info`` (a preemption victim)."""


@hookspec
def filter(state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
    """Filter: can the pod run on this node?

    Runs for each candidate node, plugin after plugin in configured order, and stops
    for a node at the first plugin that does not succeed. ``UNSCHEDULABLE`` rejects
    the node but lets preemption consider it; ``UNSCHEDULABLE_AND_UNRESOLVABLE``
    rejects it for preemption too; ``ERROR`` ends the whole attempt. The reasons are
    counted into the pod's diagnosis ("3 Insufficient cpu"), so use the same text
    for the same cause. Must not change ``node_info``.
    """


@hookspec
def filter_nodes(
    state: CycleState, pod: Pod, pod_info: PodInfo, nodes: NodeBatch
) -> Sequence[Status | None] | None:
    """Filter, vectorised: the verdicts for many nodes at once (optional).

    A plugin that implements ``filter`` may also implement this; the framework then
    calls it instead of ``filter`` on batches of candidate nodes. It returns one entry
    per node of ``nodes``, in order: ``None`` where the node passes, otherwise the
    status ``filter`` would have returned for that node (statuses may be shared
    between nodes). Returning ``None`` instead of a sequence says every node passes
    (the common case, without building a sequence of ``None`` per node). ``nodes``
    offers the NodeInfos and the snapshot's column arrays for the same nodes, so a
    plugin can decide with numpy instead of a Python loop.
    It must agree with ``filter`` on every node; ``kubesched.testing`` checks that.
    """


@hookspec
def post_filter(
    state: CycleState, pod: Pod, pod_info: PodInfo, filtered_node_status_map: NodeToStatus
) -> PostFilterResult | Status | None:
    """PostFilter: the pod fits no node; try to make room (preemption).

    Runs, in configured order, only when Filter rejected every node, until a plugin
    succeeds: a ``PostFilterResult`` (without a ``status``) nominating a node, or a
    success status; the pod is then retried. ``UNSCHEDULABLE`` means this plugin could
    not help and the next one is tried; a ``PostFilterResult`` carrying that status can
    still clear or change the pod's nomination and explain itself (``details``).
    ``UNSCHEDULABLE_AND_UNRESOLVABLE`` stops the PostFilter plugins; ``ERROR`` ends
    the attempt. ``filtered_node_status_map`` holds every node's Filter status.
    """


@hookspec
def pre_score(
    state: CycleState, pod: Pod, pod_info: PodInfo, nodes: Sequence[NodeInfo]
) -> Status | None:
    """PreScore: pre-compute for Score, once per cycle, over the feasible ``nodes``.

    ``SKIP`` skips this plugin's Score for this cycle; any other non-success status
    ends the attempt as an error.
    """


@hookspec
def score(state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> int | Status:
    """Score: rank a feasible node; return an integer (any range before normalisation).

    Runs for each feasible node. After ``normalize_score`` (if the plugin has it) the
    score must lie in 0..100 (``MAX_NODE_SCORE``), else the attempt ends with an
    ``ERROR`` naming the plugin. The framework multiplies it by the plugin's weight
    and sums over plugins. Returning a non-success ``Status`` ends the attempt.
    """


@hookspec
def score_nodes(
    state: CycleState, pod: Pod, pod_info: PodInfo, nodes: NodeBatch
) -> Sequence[int] | Status:
    """Score, vectorised: the raw scores for many nodes at once (optional).

    Returns one integer per node of ``nodes``, in order (a numpy integer array is
    best), equal to what ``score`` returns for each node, or a non-success status.
    """


@hookspec
def normalize_score(
    state: CycleState, pod: Pod, pod_info: PodInfo, scores: NodeScores
) -> Status | None:
    """NormalizeScore: rescale this plugin's scores of all feasible nodes in place.

    ``scores.values`` is a numpy int64 array aligned with ``scores.names``; change it
    in place (``kubesched.default_normalize_score`` does upstream's common
    rescaling to 0..100, optionally reversed). Runs once per cycle after all scores.
    """


@hookspec
def reserve(state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str) -> Status | None:
    """Reserve: the pod was assumed on ``node_name``; claim what the plugin tracks.

    Runs in configured order after the node is chosen. A non-success status fails the
    attempt: ``unreserve`` then runs on every Reserve plugin in reverse order, the
    assumed pod is forgotten and the pod is requeued.
    """


@hookspec
def unreserve(state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str) -> None:
    """Unreserve: undo ``reserve`` after a later failure (Reserve, Permit, binding).

    Runs in reverse configured order on every Reserve plugin, whether or not its
    ``reserve`` ran. Must be idempotent and must not fail.
    """


@hookspec
def permit(state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str) -> Status | None:
    """Permit: approve, reject or delay the binding of the pod to ``node_name``.

    Success approves; ``Status.wait(timeout)`` delays the binding cycle until every
    waiting plugin allows the pod through the Handle's waiting pods, or one rejects it,
    or the longest timeout passes (capped at 15 minutes) and it is rejected;
    ``UNSCHEDULABLE`` rejects (Unreserve, forget, requeue); ``ERROR`` likewise.
    """


# ---------------------------------------------------------------------------------------
# Binding cycle (concurrent with the next scheduling cycles)
# ---------------------------------------------------------------------------------------


@hookspec
def pre_bind(state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str) -> Status | None:
    """PreBind: prepare the node or cluster before binding (volumes, devices).

    Runs in configured order after Permit approved. A non-success status fails the
    binding: Unreserve in reverse order, the assumed pod is forgotten, requeued.
    ``SKIP`` counts as success. Not called in a binding cycle in which the plugin's
    ``pre_bind_pre_flight`` returned ``SKIP``. A plugin that waits for the cluster (a
    driver, a controller) pauses between its looks with ``handle.pause(seconds)``, never
    ``time.sleep``: other pods are scheduled meanwhile, ``simulate`` spends virtual time,
    and a scheduler shutting down ends the pause (``pause`` returns False).
    """


@hookspec
def pre_bind_pre_flight(
    state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str
) -> Status | None:
    """PreBindPreFlight: whether this PreBind plugin has work to do for the pod on
    ``node_name``, asked at the start of the binding cycle (SDK 1.7).

    Asked only with the ``NominatedNodeNameForExpectation`` gate on, before any wait at
    Permit. Success (or None) means PreBind will act (bind volumes, allocate devices): the
    scheduler then writes ``status.nominatedNodeName`` so other components see where the
    pod is going while PreBind works. ``SKIP`` means nothing to do: this plugin's
    ``pre_bind`` is not called in this binding cycle. ``ERROR`` (or any other code, which
    is unsupported) fails the binding at once: Unreserve, forget, requeue with backoff.
    It must be cheap and change nothing. A PreBind plugin without this hook counts as
    having work to do.
    """


@hookspec
def bind(state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str) -> Status | None:
    """Bind: bind the pod to ``node_name`` through the cluster client.

    Bind plugins are asked in configured order until one does not return ``SKIP``;
    its status is the binding's result. Any other non-success status fails the
    binding (Unreserve, forget, requeue with backoff).
    """


@hookspec
def post_bind(state: CycleState, pod: Pod, pod_info: PodInfo, node_name: str) -> None:
    """PostBind: informational, after a successful bind (clean-up, notification)."""


# ---------------------------------------------------------------------------------------
# Pod group cycle (TopologyAwareWorkloadScheduling)
# ---------------------------------------------------------------------------------------


@hookspec
def generate_placements(
    state: CycleState, pod_group: WorkloadPodGroup, parent: Placement
) -> Sequence[Placement] | Status:
    """PlacementGenerate: split ``parent`` (at first every node) into the placements a pod
    group may be scheduled on, each tried in turn with every pod of the group.

    Runs once per pod group cycle under the TopologyAwareWorkloadScheduling gate; the
    plugins run in configured order, each on every placement of the one before. Return
    ``[parent]`` when the group is none of this plugin's business; an empty list leaves
    the group nowhere to go; ``ERROR`` ends the cycle (every pod of the group is requeued).
    """


@hookspec
def score_placement(
    state: CycleState, pod_group: WorkloadPodGroup, assignments: PodGroupAssignments
) -> int | Status:
    """PlacementScore: score one placement on which the group's trial succeeded.

    Asked only when the group could go on two placements or more; the placement with
    the highest weighted total wins (ties broken at random). ``ERROR`` ends the cycle.
    """


@hookspec
def normalize_placement_score(
    state: CycleState, pod_group: WorkloadPodGroup, scores: list[int]
) -> Status | None:
    """Rescale this plugin's placement scores (one per successful placement, in the order
    they were scored) in place, to 0..100, before the weights apply."""
