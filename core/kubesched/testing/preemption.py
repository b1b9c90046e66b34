"""Preemption from the outside: DryRunPreemption and SelectCandidate on a snapshot.

Upstream tests ``DryRunPreemption`` and ``SelectCandidate`` directly with a fixed
random offset; these helpers do the same through a profile's PostFilter plugin that
drives a ``kubesched.Evaluator`` (DefaultPreemption, or a third party's), without
deleting anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.framework.preemption import Candidate, Evaluator, nodes_where_preemption_might_help
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.testing.run import NodesLike, PodLike, as_pod_info, run_filter, snapshot_of

__all__ = ["PreemptionDryRun", "dry_run_preemption", "dry_run_preemption_each_offset"]


@dataclass
class PreemptionDryRun:
    """One dry run: from ``offset`` among the ``potential`` nodes (those Filter rejected
    with ``Unschedulable``, in snapshot order), looking for ``num_candidates``.

    ``candidates`` are those found (PDB-respecting first), ``statuses`` why each node
    tried without success is no candidate, ``errors`` the messages of dry runs that
    failed; ``chosen`` is SelectCandidate's pick and ``decided_by`` the criterion that
    singled it out.
    """

    offset: int
    num_candidates: int
    potential: list[str]
    candidates: list[Candidate]
    statuses: dict[str, Status] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    chosen: Candidate | None = None
    decided_by: str = ""

    @property
    def victims(self) -> dict[str, list[str]]:
        """Each candidate's victims (pod keys, most important first), by node."""
        return {c.name: [v.key for v in c.victims] for c in self.candidates}


def _status(value: Status | Code | str) -> Status:
    if isinstance(value, Status):
        return value
    if isinstance(value, Code):
        return Status(value)
    return Status(Code.UNSCHEDULABLE, value)


def _evaluator(fw: Framework, plugin: str) -> Evaluator:
    evaluator = getattr(fw.plugin(plugin), "evaluator", None)
    if not isinstance(evaluator, Evaluator):
        raise TypeError(f"plugin {plugin!r} has no 'evaluator' (a kubesched.Evaluator)")
    return evaluator


def _prepare(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    pods: Iterable[PodLike],
    plugin: str,
    node_statuses: Mapping[str, Status | Code | str] | None,
    absent_status: Status | None,
):
    absent = absent_status if absent_status is not None else Status.unresolvable()
    snap = snapshot_of(nodes, pods)
    pi = as_pod_info(pod)
    state = fw.new_cycle_state()
    if node_statuses is None:
        # What the scheduler hands PostFilter: every node's status after PreFilter/Filter.
        statuses = dict(run_filter(fw, pi, snap, state=state))
    else:
        fw.set_snapshot(snap)
        fw.run_pre_filter_plugins(state, pi, snap.list())
        given = {name: _status(s) for name, s in node_statuses.items()}
        statuses = {ni.name: given.get(ni.name, absent) for ni in snap.list()}
    evaluator = _evaluator(fw, plugin)
    potential = nodes_where_preemption_might_help(snap.list(), statuses)
    return state, pi, evaluator, potential


def _dry_run(state, pi, evaluator: Evaluator, potential, offset: int | None) -> PreemptionDryRun:
    if not potential:
        return PreemptionDryRun(offset or 0, 0, [], [])
    random_offset, num = evaluator.interface.get_offset_and_num_candidates(len(potential))
    start = random_offset if offset is None else offset % len(potential)
    pdbs = evaluator.pdbs_for(potential)
    candidates, statuses, errors = evaluator.dry_run_preemption(
        state, pi, potential, pdbs, start, num
    )
    chosen, decided_by = evaluator.select_candidate_explained(candidates)
    return PreemptionDryRun(
        start, num, [ni.name for ni in potential], candidates, statuses, errors, chosen, decided_by
    )


def dry_run_preemption(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    *,
    pods: Iterable[PodLike] = (),
    plugin: str = "DefaultPreemption",
    offset: int | None = 0,
    node_statuses: Mapping[str, Status | Code | str] | None = None,
    absent_status: Status | None = None,
) -> PreemptionDryRun:
    """DryRunPreemption then SelectCandidate of PostFilter plugin ``plugin`` for ``pod``.

    ``nodes`` and ``pods`` (bound pods: ``.node(name)``) make the snapshot. The nodes'
    statuses are what PreFilter and Filter say, as the scheduler hands them to
    PostFilter, unless ``node_statuses`` gives them (a ``Status``, a ``Code``, or an
    ``Unschedulable`` reason per node): nodes it leaves out get ``absent_status``
    (default ``UnschedulableAndUnresolvable``, upstream's absent-nodes status). The dry
    run starts at ``offset`` among the potential nodes (``None``: the plugin's own
    random offset from the handle's ``rng``). Nothing is deleted.
    """
    absent = absent_status if absent_status is not None else Status.unresolvable()
    state, pi, evaluator, potential = _prepare(fw, pod, nodes, pods, plugin, node_statuses, absent)
    return _dry_run(state, pi, evaluator, potential, offset)


def dry_run_preemption_each_offset(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    *,
    pods: Iterable[PodLike] = (),
    plugin: str = "DefaultPreemption",
    node_statuses: Mapping[str, Status | Code | str] | None = None,
    absent_status: Status | None = None,
) -> list[PreemptionDryRun]:
    """:func:`dry_run_preemption` from every possible offset, in order (one run when no
    node is a potential one): for asserting what holds whatever the random start."""
    absent = absent_status if absent_status is not None else Status.unresolvable()
    state, pi, evaluator, potential = _prepare(fw, pod, nodes, pods, plugin, node_statuses, absent)
    return [
        _dry_run(state.clone(), pi, evaluator, potential, i) for i in range(max(1, len(potential)))
    ]
