"""Preemption's dry run on many nodes at once: victims removed and added back as numpy columns.

Upstream's ``SelectVictimsOnNode`` runs on one node at a time: clone the NodeInfo and the
CycleState, remove every pod the preemptor may preempt, run Filter, then add the pods
back one by one, running Filter after each. With ``NodeCopies`` a preemption plugin
runs each of these steps for a whole chunk of nodes as one vectorised Filter run over
a table whose pod columns describe every node's copy. That equals the per-node run
when adding or removing a pod changes only the NodeInfo. When a PreFilter
AddPod/RemovePod extension is active for the pod (required inter-pod affinity, ...),
adding or removing a pod also changes that plugin's PreFilter state: the plugin then
describes each copy's state as numpy columns too (its ``pre_filter_copies``, see
``Framework.pre_filter_copies``), handed to its ``filter_nodes`` in the batch's
``copies``. ``NodeCopies.of`` returns ``None`` when an active extension's plugin has no
such method, and the preemption plugin takes the per-node path.

:func:`select_victims_on_nodes` is the SDK's batched victim selection built on it:
``select_victims_on_node``'s steps for a chunk of nodes at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain, compress, count, repeat
from operator import attrgetter, eq, is_
from typing import Any

import numpy as np

from kubesched.api import PODS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.gomath import sat_add_array
from kubesched.framework.node_table import NodeTable
from kubesched.framework.preemption import (
    ERR_REASON_NO_VICTIMS,
    PDBView,
    filter_pods_with_pdb_violation,
    importance_key,
    pdbs_spent_by,
    pod_start_time,
)
from kubesched.framework.status import Status, not_none_mask
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo


class NodeCopies:
    """Copies of some of the snapshot's nodes, each with some of its pods removed, as
    pod columns over the snapshot's table.

    ``pods[j]`` are the pods of ``nodes[j]`` the what-if may remove, in the node's order.
    At first all are removed; :meth:`filter` runs Filter (counting nominated pods) on the
    copies of chosen nodes, optionally with one more of their pods added (``trying``),
    and :meth:`record` records, for a whole step, whether those pods stay. A plugin that
    reads a batch's ``infos`` gets NodeInfo copies built by replaying the same
    ``remove_pod``/``add_pod`` calls as the per-node dry run, so they equal its copies
    pod for pod; vectorised plugins only read the columns.
    """

    def __init__(
        self,
        handle: Any,
        table: NodeTable,
        nodes: Sequence[NodeInfo],
        pods: Sequence[Sequence[PodInfo]],
        extensions: dict[str, Any] | None = None,
        rows: np.ndarray | None = None,
    ) -> None:
        self.handle = handle
        # Per plugin with an active PreFilter extension, its states of the copies.
        self.extensions = extensions
        self.table = table
        self.nodes = list(nodes)
        self.pods = list(pods)
        self.rows = rows if rows is not None else _rows_of(table, self.nodes)
        k = len(self.nodes)
        self._position = dict(zip(self.rows.tolist(), range(k), strict=True))
        counts = np.fromiter(map(len, self.pods), dtype=np.intp, count=k)
        m = int(counts.max()) if k else 0
        # contribution[name][j, i]: what pod i of node j adds to column ``name``; the pods'
        # requests as flat columns (kept per node between dry runs, see ``_PodColumns``),
        # each matrix filled by one numpy assignment.
        flat = _cached_columns(self.nodes, self.pods, counts)
        if flat is None:
            flat = _pod_columns(list(chain.from_iterable(self.pods)))
        requested, columns, nz_cpu, nz_memory = flat
        js = np.repeat(np.arange(k, dtype=np.intp), counts)
        starts = np.cumsum(counts) - counts
        ids = np.arange(len(nz_cpu), dtype=np.intp) - np.repeat(starts, counts)
        names = requested.union(table.requested)
        self.contribution = {name: np.zeros((k, m), dtype=np.int64) for name in names}
        for name, col in self.contribution.items():
            # The table's pods column counts pods; a column no pod requests stays 0.
            if name in columns:
                col[js, ids] = columns[name]
        self.contribution[PODS][js, ids] = 1
        # The columns the pods change: the others stay the table's in every copy.
        self._moving = [name for name in self.contribution if name == PODS or name in requested]
        self.non_zero_cpu = np.zeros((k, m), dtype=np.int64)
        self.non_zero_cpu[js, ids] = nz_cpu
        self.non_zero_memory = np.zeros((k, m), dtype=np.int64)
        self.non_zero_memory[js, ids] = nz_memory
        self.kept = np.zeros((k, m), dtype=bool)
        # What each copy lacks against the snapshot's node, per column the pods change:
        # at first every pod's share; a pod kept gives its share back (:meth:`record`).
        self._removed = {name: self.contribution[name].sum(axis=1) for name in self._moving}
        self._removed_nz_cpu = self.non_zero_cpu.sum(axis=1)
        self._removed_nz_memory = self.non_zero_memory.sum(axis=1)
        # The reprieve steps recorded so far, each ``(positions, pods tried, fits)``
        # (positions ascending): the add_pod / remove_pod calls after the removals, for
        # the NodeInfo copies.
        self._steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._trying: dict[int, int] = {}

    @classmethod
    def of(
        cls,
        handle: Any,
        state: CycleState,
        nodes: Sequence[NodeInfo],
        pods: Sequence[Sequence[PodInfo]],
        pod_info: PodInfo | None = None,
    ) -> NodeCopies | None:
        """The copies of ``nodes``, or ``None`` when the batched dry run would not equal
        the per-node one: the handle is not a Framework with a node table, ``nodes`` are
        not the snapshot's, a PreFilter extension is active for the pod (``pod_info``)
        whose plugin cannot describe the copies' states, or a pod requests a resource
        the table has no column for."""
        active = getattr(handle, "pre_filter_extensions_active", None)
        table = getattr(getattr(handle, "snapshot", None), "table", None)
        if active is None or table is None:
            return None
        rows = _rows_of(table, nodes)
        # Every node is the snapshot's own NodeInfo (identity tests in C).
        if (rows < 0).any() or not all(map(is_, table.info_array[rows].tolist(), nodes)):
            return None
        # A saturated row is not the sum of its pods: taking a victim's requests off it
        # would not give the copy's totals, which the per-node dry run counts exactly.
        if table.saturated[rows].any():
            return None
        extensions = None
        if active(state):
            if pod_info is None:
                return None
            extensions = handle.pre_filter_copies(state, pod_info, table, rows.tolist(), pods)
            if extensions is None:
                return None
        copies = cls(handle, table, nodes, pods, extensions, rows)
        if len(copies.contribution) != len(table.requested):
            return None
        return copies

    def filter(
        self,
        state: CycleState,
        pod_info: PodInfo,
        positions: Sequence[int],
        trying: Sequence[int] | None = None,
    ) -> tuple[np.ndarray, Status | None]:
        """Filter verdicts (``run_filter_batch_with_nominated_pods``'s) for the copies of
        the nodes at ``positions``, each with its kept pods and, with ``trying``, pod
        ``trying[x]`` of node ``positions[x]`` added as well."""
        at = np.asarray(positions, dtype=np.intp)
        rows = self.rows[at]
        values = {name: self.table.requested[name][rows] for name in self.contribution}
        for name, removed in self._removed.items():
            values[name] = values[name] - removed[at]
        nz_cpu = self.table.non_zero_cpu[rows] - self._removed_nz_cpu[at]
        nz_memory = self.table.non_zero_memory[rows] - self._removed_nz_memory[at]
        self._trying = {}
        if trying is not None:
            t = np.asarray(trying, dtype=np.intp)
            for name in self._moving:
                values[name] = sat_add_array(values[name], self.contribution[name][at, t])
            nz_cpu = sat_add_array(nz_cpu, self.non_zero_cpu[at, t])
            nz_memory = sat_add_array(nz_memory, self.non_zero_memory[at, t])
            self._trying = dict(zip(at.tolist(), t.tolist(), strict=True))
        views = None
        if self.extensions is not None:
            # Relative to the snapshot: -1 for a pod removed, 0 for one kept or tried.
            weights = -(~self.kept[at]).astype(np.int64)
            if trying is not None:
                weights[np.arange(len(at)), t] = 0
            views = {name: c.view(at, weights) for name, c in self.extensions.items()}
        table = self.table.with_requested(rows, values, nz_cpu, nz_memory)
        batch = NodeBatch(table, rows, build=self._copy, copies=views)
        return self.handle.run_filter_batch_with_nominated_pods(state, pod_info, batch)

    def record(self, positions: np.ndarray, trying: np.ndarray, fits: np.ndarray) -> None:
        """One reprieve step: pod ``trying[x]`` of the node at ``positions[x]`` (ascending)
        stays on its copy where ``fits[x]`` (it was reprieved), else it is taken off again
        (it is a victim)."""
        at, kept = positions[fits], trying[fits]
        self.kept[at, kept] = True
        for name, removed in self._removed.items():
            removed[at] -= self.contribution[name][at, kept]
        self._removed_nz_cpu[at] -= self.non_zero_cpu[at, kept]
        self._removed_nz_memory[at] -= self.non_zero_memory[at, kept]
        self._steps.append((positions, trying, fits))

    def _copy(self, row: int) -> NodeInfo:
        """The NodeInfo copy of the node at ``row`` in its current state."""
        j = self._position[row]
        copy = self.nodes[j].clone()
        for p in self.pods[j]:
            copy.remove_pod(p)
        # Replay the steps as the per-node dry run made them: add the pod tried, and
        # remove it again unless it fitted.
        for positions, trying, fits in self._steps:
            x = int(np.searchsorted(positions, j))
            if x < len(positions) and positions[x] == j:
                p = self.pods[j][int(trying[x])]
                copy.add_pod(p)
                if not fits[x]:
                    copy.remove_pod(p)
        i = self._trying.get(j)
        if i is not None:
            copy.add_pod(self.pods[j][i])
        return copy


Victims = tuple[list[PodInfo], int, Status]
"""One node's dry-run result: its victims (most important first), how many of them
violate a PDB, and a status."""


def select_victims_on_nodes(
    handle: Any,
    state: CycleState,
    preemptor: PodInfo,
    nodes: Sequence[NodeInfo],
    potential: Sequence[Sequence[PodInfo]],
    pdbs: Sequence[PDBView],
    *,
    no_victims: Callable[[NodeInfo], Status] | None = None,
    after_removal: Callable[[int], Status | None] | None = None,
    still_over: Callable[[int, PodInfo], bool] | None = None,
    importance: Callable[[PodInfo], Any] = importance_key,
) -> list[Victims] | None:
    """``select_victims_on_node`` on every node of ``nodes`` at once, given each node's
    potential victims ``potential[j]`` (in the order they would be removed), or ``None``
    when that cannot be done exactly (see :class:`NodeCopies`): the plugin then dry-runs
    node by node. For a preemption plugin's optional ``select_victims_on_nodes``, with
    the evaluator's ``state`` clone (changed here) and the snapshot's NodeInfos.

    The same steps, each one vectorised Filter run over all the nodes still in play:
    every potential victim removed; then, step ``k``, each node's ``k``-th pod in reprieve
    order (PDB-violating pods first, each group by ``importance``) added back and kept
    where the preemptor still fits. The PreFilter AddPod/RemovePod extensions are not
    run: a plugin that keeps its own per-node account (a quota) does so in
    ``after_removal(j)``, asked for the node at position ``j`` once the preemptor fits
    there with all its potential victims gone (a status rejects the node), and in
    ``still_over(j, pod)``, asked after each reprieve of ``pod`` that fits, in the node's
    reprieve order (True makes the pod a victim after all). ``no_victims`` and
    ``importance`` are ``select_victims_on_node``'s. A Filter error returns ``None``, so
    that the per-node path reports it node by node.
    """
    copies = NodeCopies.of(handle, state, nodes, potential, preemptor)
    if copies is None:
        return None
    k = len(nodes)
    counts = np.fromiter(map(len, potential), dtype=np.intp, count=k)
    results: list[Victims | None] = [None] * k
    at = np.flatnonzero(counts)
    verdicts, error = copies.filter(state, preemptor, at) if len(at) else (at, None)
    if error is not None:
        return None
    failed = not_none_mask(verdicts)
    for j, verdict in zip(at[failed].tolist(), verdicts[failed].tolist(), strict=True):
        results[j] = ([], 0, verdict)
    play = at[~failed]
    if after_removal is not None and len(play):
        rejected = list(map(after_removal, play.tolist()))
        for j, status in zip(play.tolist(), rejected, strict=True):
            if status is not None:
                results[j] = ([], 0, status)
        play = play[np.fromiter((s is None for s in rejected), dtype=bool, count=len(play))]
    if len(play):
        # Every node still in play passed every Filter plugin; those that depend only
        # on the node pass whatever pods are added back: the steps need not run them.
        state.skip_filter_plugins |= getattr(handle, "node_only_filters", frozenset())
        reprieved = _reprieve(
            state, preemptor, copies, potential, play, pdbs, still_over, importance
        )
        if reprieved is None:
            return None
        for j, v in zip(play.tolist(), reprieved, strict=True):
            results[j] = v
    if no_victims is None:
        # The nodes without a pod to preempt share one Status, as the nodes Filter
        # rejects alike.
        shared = Status.unresolvable(ERR_REASON_NO_VICTIMS)
        return [([], 0, shared) if r is None else r for r in results]
    return [([], 0, no_victims(nodes[j])) if r is None else r for j, r in enumerate(results)]


def _reprieve_order(
    potential: Sequence[Sequence[PodInfo]],
    play: np.ndarray,
    pdbs: Sequence[PDBView],
    importance: Callable[[PodInfo], Any],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node in ``play``, the reprieve order (indices into its potential pods) and how
    many of them lead with a PDB violation: as ``(order, lengths, violating)`` arrays,
    ``order`` padded with -1, one row per node."""
    pods = [potential[j] for j in play.tolist()]
    n = len(pods)
    lengths = np.fromiter(map(len, pods), dtype=np.intp, count=n)
    width = int(lengths.max())
    order = np.full((n, width), -1, dtype=np.intp)
    violating = np.zeros(n, dtype=np.intp)
    if importance is importance_key:
        # Upstream's order, most important first (higher priority, then earlier start,
        # ties in the node's order: a stable sort) for all nodes with one lexsort.
        flat = list(chain.from_iterable(pods))
        owner = np.repeat(np.arange(n, dtype=np.intp), lengths)
        starts = np.cumsum(lengths) - lengths
        local = np.arange(len(flat), dtype=np.intp) - np.repeat(starts, lengths)
        priority = np.fromiter(map(_PRIORITY, flat), np.int64, len(flat))
        started = np.fromiter(map(pod_start_time, flat), np.float64, len(flat))
        # ``ranked`` keeps each node's pods where ``flat`` has them, reordered.
        ranked = np.lexsort((local, started, -priority, owner))
        if pdbs:
            violated = _pdb_violations(flat, pdbs, ranked, owner, starts)
            # The violating pods first, each group in importance order.
            ranked = ranked[np.lexsort((np.arange(len(flat)), ~violated, owner))]
            violating = np.bincount(owner, weights=violated, minlength=n).astype(np.intp)
        order[owner, local] = local[ranked]
        return order, lengths, violating
    for r, ps in enumerate(pods):
        index = {id(p): i for i, p in enumerate(ps)}
        ordered = sorted(ps, key=importance)
        first, rest = filter_pods_with_pdb_violation(ordered, pdbs)
        order[r, : len(ps)] = [index[id(p)] for p in (*first, *rest)]
        violating[r] = len(first)
    return order, lengths, violating


def _pdb_violations(
    flat: list[PodInfo],
    pdbs: Sequence[PDBView],
    ranked: np.ndarray,
    owner: np.ndarray,
    starts: np.ndarray,
) -> np.ndarray:
    """``filter_pods_with_pdb_violation`` on every node's pods at once: for the pods in
    ``ranked`` order (each node's, ``owner``, contiguous from ``starts``, in importance
    order), whether removing them violates a PDB. Each PDB's budget is spent per node, pod
    by pod in that order: a pod violates when, counting it, more pods of its node spent
    some PDB selecting it than the PDB allows."""
    spends = np.zeros((len(flat), len(pdbs)), dtype=np.int64)
    for q, pi in enumerate(flat):
        spends[q, pdbs_spent_by(pi, pdbs)] = 1
    spends = spends[ranked]
    spent = np.cumsum(spends, axis=0)
    # Counted per node: less what the nodes before it spent.
    before = np.vstack((np.zeros((1, len(pdbs)), dtype=np.int64), spent))[starts[owner]]
    allowed = np.array([p.disruptions_allowed for p in pdbs], dtype=np.int64)
    return ((spends > 0) & (spent - before > allowed)).any(axis=1)


def _reprieve(
    state: CycleState,
    preemptor: PodInfo,
    copies: NodeCopies,
    potential: Sequence[Sequence[PodInfo]],
    play: np.ndarray,
    pdbs: Sequence[PDBView],
    still_over: Callable[[int, PodInfo], bool] | None,
    importance: Callable[[PodInfo], Any],
) -> list[Victims] | None:
    """The victims of the nodes at ``play`` (where the preemptor fits once all their
    potential pods are gone): step ``s`` adds back each node's ``s``-th pod in reprieve
    order, all nodes in one Filter run, and keeps it where the preemptor still fits (and
    ``still_over`` does not object). ``None`` on a Filter error."""
    order, lengths, violating = _reprieve_order(potential, play, pdbs, importance)
    victim = np.zeros(order.shape, dtype=bool)
    unfit = np.zeros(order.shape, dtype=bool)
    for step in range(order.shape[1]):
        sel = np.flatnonzero(lengths > step)
        positions, trying = play[sel], order[sel, step]
        verdicts, error = copies.filter(state, preemptor, positions, trying)
        if error is not None:
            return None
        fits = ~not_none_mask(verdicts)
        kept = fits
        if still_over is not None and fits.any():
            kept = fits.copy()
            for x in np.flatnonzero(fits).tolist():
                j = int(positions[x])
                if still_over(j, potential[j][int(trying[x])]):
                    kept[x] = False
        copies.record(positions, trying, kept)
        victim[sel, step] = ~kept
        unfit[sel, step] = ~fits
    # The victims in reprieve order, and how many of them violate a PDB (those among a
    # node's first ``violating`` pods that did not fit: one ``still_over`` made a victim
    # does not count, as select_victims_on_node).
    num_violating = (unfit & (np.arange(order.shape[1]) < violating[:, None])).sum(axis=1)
    rows, steps = np.nonzero(victim)
    out: list[Victims] = []
    ends = np.cumsum(victim.sum(axis=1)).tolist()
    chosen = order[rows, steps].tolist()
    # Both groups non-empty: the victims are re-sorted, as select_victims_on_node does.
    resort = ((violating > 0) & (violating < lengths)).tolist()
    fit = Status()  # shared: nodes that fit alike share a Status
    start = 0
    for j, end, n, again in zip(play.tolist(), ends, num_violating.tolist(), resort, strict=True):
        victims = list(map(potential[j].__getitem__, chosen[start:end]))
        start = end
        if again:
            victims.sort(key=importance)
        out.append((victims, n, fit))
    return out


_PRIORITY = attrgetter("priority")
_REQUESTS = attrgetter("requests")
_NON_ZERO_CPU = attrgetter("non_zero_cpu")
_NON_ZERO_MEMORY = attrgetter("non_zero_memory")
_NAME = attrgetter("name")


Columns = tuple[set[str], dict[str, np.ndarray], np.ndarray, np.ndarray]
"""Pods' requests as flat columns: the resource names they request, each name's column
(the pods column aside), and their non-zero CPU and memory."""


def _pod_columns(pods: Sequence[PodInfo]) -> Columns:
    """The columns of ``pods``, in their order (C-level maps over the pods)."""
    requests = list(map(_REQUESTS, pods))
    requested = set().union(*requests)
    n = len(pods)
    columns = {
        name: np.fromiter(map(dict.get, requests, repeat(name), repeat(0)), np.int64, n)
        for name in requested
        if name != PODS
    }
    nz_cpu = np.fromiter(map(_NON_ZERO_CPU, pods), np.int64, n)
    nz_memory = np.fromiter(map(_NON_ZERO_MEMORY, pods), np.int64, n)
    return requested, columns, nz_cpu, nz_memory


class _NodeColumns:
    """One node's pods as columns (``_pod_columns``), kept between dry runs while the
    node is unchanged: a preemption plugin that dry-runs every node would else
    read every pod of the cluster again for each preemptor. ``position`` finds a pod
    (by identity: the PodInfos are held here, so their ids stay theirs) in ``values``,
    whose rows are ``names``' columns, then the non-zero CPU and memory."""

    __slots__ = ("names", "pods", "position", "size", "values")

    def __init__(self, node: NodeInfo) -> None:
        self.pods = list(node.pods)
        self.size = len(self.pods)
        self.position = {id(p): i for i, p in enumerate(self.pods)}
        requested, columns, nz_cpu, nz_memory = _pod_columns(self.pods)
        # The pods column counts pods, whatever a pod asks for it.
        self.names = tuple(sorted(requested.difference((PODS,))))
        rows = [columns[name] for name in self.names]
        self.values = np.vstack([*rows, nz_cpu, nz_memory]) if self.pods else _EMPTY


_EMPTY = np.zeros((2, 0), dtype=np.int64)
_NODE_COLUMNS: dict[tuple[str, int], _NodeColumns] = {}
"""Each node's current ``_NodeColumns`` by ``(name, generation)``: a node's generations are
unique process-wide, so a node finds its entry exactly when it has not changed since."""
_GENERATION_OF: dict[str, int] = {}
"""The generation of each node name's entry, to drop it once the node has changed."""


def _node_columns(nodes: Sequence[NodeInfo]) -> list[_NodeColumns]:
    """The nodes' current ``_NodeColumns``, built again for those that changed (looked up
    by C-level maps: thousands of nodes per dry run, most of them unchanged)."""
    keys = list(zip(map(_NAME, nodes), map(_GENERATION, nodes), strict=True))
    entries = list(map(_NODE_COLUMNS.get, keys))
    for x in compress(count(), map(is_, entries, repeat(None))):
        name, generation = keys[x]
        _NODE_COLUMNS.pop((name, _GENERATION_OF.get(name, -1)), None)
        entries[x] = _NODE_COLUMNS[keys[x]] = _NodeColumns(nodes[x])
        _GENERATION_OF[name] = generation
    if len(_NODE_COLUMNS) > 2 * len(keys) + _KEPT_BEYOND:
        # Nodes deleted since (or another cluster's, in this process) keep their pods
        # alive here: keep only this dry run's nodes once the others outnumber them.
        _forget_nodes_but(dict(zip(keys, entries, strict=True)))
    return entries


_KEPT_BEYOND = 1024
"""How many entries of nodes outside a dry run are kept before they are forgotten."""


def _forget_nodes_but(kept: dict[tuple[str, int], _NodeColumns]) -> None:
    """Keep the ``_NodeColumns`` of ``kept`` only."""
    _NODE_COLUMNS.clear()
    _NODE_COLUMNS.update(kept)
    _GENERATION_OF.clear()
    _GENERATION_OF.update(kept.keys())


def _cached_columns(
    nodes: Sequence[NodeInfo], pods: Sequence[Sequence[PodInfo]], counts: np.ndarray
) -> Columns | None:
    """``_pod_columns`` of every node's ``pods`` flattened, gathered from the nodes'
    ``_NodeColumns``; None when the nodes' pods request different resource names or a
    pod is not its node's (the columns are then read from the pods)."""
    at = np.flatnonzero(counts).tolist()
    if not at:
        return None
    entries = _node_columns(list(map(nodes.__getitem__, at)))
    names = entries[0].names
    if len(set(map(_NAMES, entries))) > 1:
        return None
    values = np.concatenate(list(map(_VALUES, entries)), axis=1)
    chosen = list(map(pods.__getitem__, at))
    # The pods are often all of their node's, in its order (compared by identity, in C):
    # the columns are then the entries' as they are.
    if not all(map(eq, map(_PODS, entries), chosen)):
        sizes = np.fromiter(map(_SIZE, entries), np.intp, len(entries))
        offsets = np.cumsum(sizes) - sizes
        # Each pod's position on its node: per node, its positions' lookup mapped over
        # the ids of its pods.
        ids = map(map, repeat(id), chosen)
        try:
            local = np.fromiter(
                chain.from_iterable(map(map, map(_LOOKUP, entries), ids)),
                np.intp,
                int(counts.sum()),
            )
        except KeyError:
            return None
        values = values[:, local + np.repeat(offsets, counts[at])]
    return set(names), dict(zip(names, values, strict=False)), values[-2], values[-1]


_GENERATION = attrgetter("generation")
_NAMES = attrgetter("names")
_SIZE = attrgetter("size")
_PODS = attrgetter("pods")
_LOOKUP = attrgetter("position.__getitem__")
_VALUES = attrgetter("values")


def _rows_of(table: NodeTable, nodes: Sequence[NodeInfo]) -> np.ndarray:
    """The table rows of ``nodes`` by name, -1 for a name the table lacks."""
    names = map(_NAME, nodes)
    return np.fromiter(map(table.index.get, names, repeat(-1)), np.intp, len(nodes))


__all__ = ["NodeCopies", "Victims", "select_victims_on_nodes"]
