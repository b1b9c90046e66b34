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
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat
from operator import attrgetter, is_
from typing import Any

import numpy as np

from kubesched.api import PODS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.gomath import sat_add_array
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Status
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
        self.pods = list(map(list, pods))
        self.rows = rows if rows is not None else _rows_of(table, self.nodes)
        k = len(self.nodes)
        self._position = dict(zip(self.rows.tolist(), range(k), strict=True))
        counts = np.fromiter(map(len, self.pods), dtype=np.intp, count=k)
        m = int(counts.max()) if k else 0
        # contribution[name][j, i]: what pod i of node j adds to column ``name``; the pods
        # flattened once, each column filled by one numpy assignment (C-level maps over
        # the pods, no Python code per pod).
        flat = list(chain.from_iterable(self.pods))
        js = np.repeat(np.arange(k, dtype=np.intp), counts)
        starts = np.cumsum(counts) - counts
        ids = np.arange(len(flat), dtype=np.intp) - np.repeat(starts, counts)
        requests = list(map(_REQUESTS, flat))
        names = set(table.requested).union(*requests)
        self.contribution = {name: np.zeros((k, m), dtype=np.int64) for name in names}
        for name, col in self.contribution.items():
            if name != PODS:  # the table's pods column counts pods
                col[js, ids] = np.fromiter(
                    map(dict.get, requests, repeat(name), repeat(0)), np.int64, len(flat)
                )
        self.contribution[PODS][js, ids] = 1
        self.non_zero_cpu = np.zeros((k, m), dtype=np.int64)
        self.non_zero_cpu[js, ids] = np.fromiter(map(_NON_ZERO_CPU, flat), np.int64, len(flat))
        self.non_zero_memory = np.zeros((k, m), dtype=np.int64)
        self.non_zero_memory[js, ids] = np.fromiter(
            map(_NON_ZERO_MEMORY, flat), np.int64, len(flat)
        )
        self.kept = np.zeros((k, m), dtype=bool)
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
        out = ~self.kept[at]
        values = {}
        rows = self.rows[at]
        for name, contribution in self.contribution.items():
            values[name] = self.table.requested[name][rows] - (contribution[at] * out).sum(axis=1)
        nz_cpu = self.table.non_zero_cpu[rows] - (self.non_zero_cpu[at] * out).sum(axis=1)
        nz_memory = self.table.non_zero_memory[rows] - (self.non_zero_memory[at] * out).sum(axis=1)
        self._trying = {}
        if trying is not None:
            t = np.asarray(trying, dtype=np.intp)
            for name, contribution in self.contribution.items():
                values[name] = sat_add_array(values[name], contribution[at, t])
            nz_cpu = sat_add_array(nz_cpu, self.non_zero_cpu[at, t])
            nz_memory = sat_add_array(nz_memory, self.non_zero_memory[at, t])
            self._trying = dict(zip(at.tolist(), t.tolist(), strict=True))
        views = None
        if self.extensions is not None:
            # Relative to the snapshot: -1 for a pod removed, 0 for one kept or tried.
            weights = -out.astype(np.int64)
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
        self.kept[positions[fits], trying[fits]] = True
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


_REQUESTS = attrgetter("requests")
_NON_ZERO_CPU = attrgetter("non_zero_cpu")
_NON_ZERO_MEMORY = attrgetter("non_zero_memory")
_NAME = attrgetter("name")


def _rows_of(table: NodeTable, nodes: Sequence[NodeInfo]) -> np.ndarray:
    """The table rows of ``nodes`` by name, -1 for a name the table lacks."""
    names = map(_NAME, nodes)
    return np.fromiter(map(table.index.get, names, repeat(-1)), np.intp, len(nodes))


__all__ = ["NodeCopies"]
