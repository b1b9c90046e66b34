"""The snapshot's nodes as numpy columns, for plugins that decide many nodes at once."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from kubesched.api import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kubesched.framework.gomath import INT64_MAX, INT64_MIN
from kubesched.framework.types import NodeInfo

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


class NodeTable:
    """Column arrays over the snapshot's nodes, row ``i`` being ``infos[i]``.

    * ``allocatable[name]`` / ``requested[name]``: int64 per node for cpu
      (millicores), memory, ephemeral-storage, pods (``requested["pods"]`` is the pod
      count) and every scalar resource any node has.
    * ``non_zero_cpu`` / ``non_zero_memory``: the non-zero requested totals scoring uses.
    * ``names`` / ``infos`` and the same as object arrays ``name_array`` / ``info_array``.
    * ``derived(key, compute)``: a per-table cache of arrays that depend only on the
      Node objects (labels, taints), kept until a Node object changes; e.g. the
      label column of one key, computed once for all pods.

    The cache keeps it current incrementally: ``update_row`` when a node's pods
    change, a rebuild when the list of nodes changes.
    """

    __slots__ = (
        "_derived",
        "_read_only",
        "all_rows",
        "allocatable",
        "fence_errors",
        "fenced",
        "index",
        "info_array",
        "infos",
        "name_array",
        "names",
        "node_version",
        "non_zero_cpu",
        "non_zero_memory",
        "requested",
        "saturated",
    )

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        n = len(infos)
        self.infos: list[NodeInfo] = list(infos)
        self.names: list[str] = [ni.name for ni in infos]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        # The same as object arrays: picking a batch's names or NodeInfos by row is then
        # one numpy indexing instead of a Python loop per pod.
        self.name_array = np.array(self.names, dtype=object)
        self.info_array = np.empty(n, dtype=object)
        self.info_array[:] = self.infos
        self.all_rows = np.arange(n, dtype=np.intp)
        """Every row, in order (read-only). A batch whose rows are a slice of it is a
        run of the table: ``NodeBatch.take`` then answers views, not copies."""
        self.all_rows.flags.writeable = False
        self._read_only: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        scalars = sorted(
            {k for ni in infos for k in ni.allocatable.scalar_resources}
            | {k for ni in infos for k in ni.requested.scalar_resources}
        )
        self.allocatable: dict[str, np.ndarray] = {
            r: np.zeros(n, dtype=np.int64) for r in (*BASE_RESOURCES, *scalars)
        }
        self.requested: dict[str, np.ndarray] = {
            r: np.zeros(n, dtype=np.int64) for r in (*BASE_RESOURCES, *scalars)
        }
        self.non_zero_cpu = np.zeros(n, dtype=np.int64)
        self.non_zero_memory = np.zeros(n, dtype=np.int64)
        self._derived: dict[Hashable, Any] = {}
        self.node_version = 0
        self.saturated = np.zeros(n, dtype=bool)
        self.fenced = np.zeros(n, dtype=bool)
        self.fence_errors: dict[str, str] = {}
        for i, ni in enumerate(infos):
            self._write_row(i, ni, node_changed=True)

    def __len__(self) -> int:
        return len(self.names)

    def update_row(self, i: int, node_info: NodeInfo) -> bool:
        """Copy ``node_info`` (the new version of row ``i``'s node) into the columns;
        False when the row could not be written and is fenced instead."""
        old = self.infos[i]
        self.infos[i] = node_info
        self.info_array[i] = node_info
        changed = old.node is not node_info.node
        if changed:
            self._derived.clear()
            self.node_version += 1
        return self._write_row(i, node_info, node_changed=changed)

    def _write_row(self, i: int, ni: NodeInfo, *, node_changed: bool) -> bool:
        self.saturated[i] = False
        try:
            # Allocatable too when the row was fenced: its earlier write may have stopped
            # half-way.
            if node_changed or self.fenced[i]:
                self._write_allocatable(i, ni)
            self._write_requested(i, ni)
        except Exception as err:  # any failure fences the row: never left stale
            self.fenced[i] = True
            self.fence_errors[self.names[i]] = f"{type(err).__name__}: {err}"
            return False
        if self.fenced[i]:
            self.fenced[i] = False
            del self.fence_errors[self.names[i]]
        return True

    def _put(self, col: np.ndarray, i: int, value: int) -> None:
        """``col[i] = value``, saturated to int64 (and the row marked) when it does not fit."""
        if value > INT64_MAX or value < INT64_MIN:
            self.saturated[i] = True
            value = INT64_MAX if value > 0 else INT64_MIN
        col[i] = value

    def _pod_overlay(self) -> NodeTable:
        """A copy sharing what depends only on the Node objects (names, allocatable, the
        ``derived`` cache: the nodes are the same) with its own pod-dependent columns."""
        t = NodeTable.__new__(NodeTable)
        t.names = self.names
        t.index = self.index
        t.name_array = self.name_array
        t.all_rows = self.all_rows
        t._read_only = {}
        t.saturated = self.saturated
        t.fenced = self.fenced
        t.fence_errors = self.fence_errors
        # A new dict of the same arrays: a scalar resource only the added pods request
        # gets its (zero) allocatable column there, not in this table.
        t.allocatable = dict(self.allocatable)
        t._derived = self._derived
        t.node_version = self.node_version
        t.requested = {name: col.copy() for name, col in self.requested.items()}
        t.non_zero_cpu = self.non_zero_cpu.copy()
        t.non_zero_memory = self.non_zero_memory.copy()
        t.infos = self.infos
        t.info_array = self.info_array
        return t

    def with_requested(
        self,
        rows: np.ndarray,
        requested: dict[str, np.ndarray],
        non_zero_cpu: np.ndarray,
        non_zero_memory: np.ndarray,
    ) -> NodeTable:
        """A copy of this table whose pod columns at ``rows`` hold the given values (one
        per row; ``requested`` has a value array for every column of ``requested`` and
        may add columns).

        For a what-if over many nodes at once (preemption's dry run): the copy's
        ``infos`` stay this table's, so a plugin needing the NodeInfos of the changed
        nodes reads them from the batch (``NodeBatch.infos``), which builds them.
        Read-only.
        """
        t = self._pod_overlay()
        for name, values in requested.items():
            col = t.requested.get(name)
            if col is None:  # a resource no node had: zeros elsewhere
                col = t._column(t.requested, name)
            col[rows] = values
        t.non_zero_cpu[rows] = non_zero_cpu
        t.non_zero_memory[rows] = non_zero_memory
        return t

    def derived(self, key: Hashable, compute: Callable[[NodeTable], Any]) -> Any:
        """``compute(self)``, cached until a Node object changes (labels, taints, ...).

        ``key`` must identify what is computed (include the plugin's name).
        """
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = compute(self)
            return value

    def grouped(
        self, key: Hashable, node_key: Callable[[NodeInfo], Hashable]
    ) -> tuple[np.ndarray, list[NodeInfo]]:
        """The rows grouped by ``node_key(node_info)`` (which must read only the Node
        object): ``(group id per row, the first node of each group)``, cached as
        ``derived`` under ``key``. A plugin deciding from, say, a node's taints decides
        once per group and spreads the verdicts with ``verdicts[ids[rows]]``."""
        return self.derived(key, lambda t: _grouped(t, node_key))

    def read_only(self, column: np.ndarray) -> np.ndarray:
        """A read-only view of ``column`` (one of this table's arrays), made once: its
        slices are read-only views at the cost of a plain slice (``NodeBatch.take``)."""
        entry = self._read_only.get(id(column))
        if entry is None or entry[0] is not column:
            view = column.view()
            view.flags.writeable = False
            entry = self._read_only[id(column)] = (column, view)
        return entry[1]

    def label_column(self, key: str) -> np.ndarray:
        """Each node's value of label ``key`` (``None`` where absent), as an object array."""
        return self.derived(("label", key), lambda t: _label_column(t, key))

    def _column(self, columns: dict[str, np.ndarray], name: str) -> np.ndarray:
        col = columns.get(name)
        if col is None:
            col = columns[name] = np.zeros(len(self.names), dtype=np.int64)
            other = self.requested if columns is self.allocatable else self.allocatable
            other.setdefault(name, np.zeros(len(self.names), dtype=np.int64))
        return col

    def _write_allocatable(self, i: int, ni: NodeInfo) -> None:
        a = ni.allocatable
        al = self.allocatable
        put = self._put
        put(al[CPU], i, a.milli_cpu)
        put(al[MEMORY], i, a.memory)
        put(al[EPHEMERAL_STORAGE], i, a.ephemeral_storage)
        put(al[PODS], i, a.allowed_pod_number)
        for name, col in al.items():
            if name not in BASE_RESOURCES:
                put(col, i, a.scalar_resources.get(name, 0))
        for name, value in a.scalar_resources.items():
            if name not in al:
                put(self._column(al, name), i, value)

    def _write_requested(self, i: int, ni: NodeInfo) -> None:
        r = ni.requested
        rq = self.requested
        put = self._put
        put(rq[CPU], i, r.milli_cpu)
        put(rq[MEMORY], i, r.memory)
        put(rq[EPHEMERAL_STORAGE], i, r.ephemeral_storage)
        rq[PODS][i] = len(ni.pods)
        for name, col in rq.items():
            if name not in BASE_RESOURCES:
                put(col, i, r.scalar_resources.get(name, 0))
        for name, value in r.scalar_resources.items():
            if name not in rq:
                put(self._column(rq, name), i, value)
        put(self.non_zero_cpu, i, ni.non_zero_requested.milli_cpu)
        put(self.non_zero_memory, i, ni.non_zero_requested.memory)


def _grouped(
    table: NodeTable, node_key: Callable[[NodeInfo], Hashable]
) -> tuple[np.ndarray, list[NodeInfo]]:
    ids = np.empty(len(table.infos), dtype=np.intp)
    index: dict[Hashable, int] = {}
    firsts: list[NodeInfo] = []
    for row, ni in enumerate(table.infos):
        k = node_key(ni)
        i = index.get(k)
        if i is None:
            i = index[k] = len(firsts)
            firsts.append(ni)
        ids[row] = i
    return ids, firsts


def _label_column(table: NodeTable, key: str) -> np.ndarray:
    col = np.empty(len(table.infos), dtype=object)
    for i, ni in enumerate(table.infos):
        labels = ni.node.metadata.labels if ni.node is not None else None
        col[i] = labels.get(key) if labels else None
    return col
