"""Why a pod fits no node: per-node statuses, rejecting plugins and upstream's FitError message."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.framework.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
"""Upstream's ``NoNodeAvailableMsg``."""
NO_NODES_AVAILABLE_ERROR = "no nodes available to schedule pods"
"""Upstream's ``ErrNoNodesAvailable``."""
EXTENDER_NAME = "Extender"
"""The rejector recorded for a pod when an extender filtered out nodes (upstream
``framework.ExtenderName``): extenders register no cluster events, so any event may
make such a pod schedulable."""


@dataclass(frozen=True)
class ExtenderVerdict:
    """What one extender said in a scheduling attempt (explanations and reports show it):
    its name (URL), the verb (``filter``, ``prioritize``, ``preempt``, ``bind``), the
    outcome in words, and the message of each node it failed."""

    extender: str
    verb: str
    result: str
    failed_nodes: dict[str, str] = field(default_factory=dict)


@dataclass
class Diagnosis:
    """What the filters said about the nodes of one scheduling attempt.

    ``node_to_status`` holds the status of every node a filter rejected explicitly;
    nodes absent from it have ``absent_nodes_status`` when it is set (a PreFilter
    rejection or narrowing applies to every such node). ``unschedulable_plugins`` and
    ``pending_plugins`` are the plugins that rejected the pod: the queue moves it back
    only on events they registered.
    """

    node_to_status: dict[str, Status] = field(default_factory=dict)
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    extender_verdicts: list[ExtenderVerdict] = field(default_factory=list)
    """The extenders' calls of the attempt, in order (none without extenders)."""
    rejected_rows: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)
    """Filter's rejections as columns, in the order recorded: per batch, the snapshot
    table rows and their statuses (an object array), as :meth:`add_rejected` put them
    in ``node_to_status``; :meth:`post_filter_statuses` reads the rows by code. The
    scheduler drops them once PostFilter ran: the attempt records keep the Diagnosis."""

    def add_rejected(self, names: np.ndarray, rows: np.ndarray, statuses: np.ndarray) -> None:
        """Record Filter's ``statuses`` of the nodes at table ``rows`` (named ``names``),
        and count their plugins."""
        status_list = statuses.tolist()
        self.node_to_status.update(zip(names.tolist(), status_list, strict=True))
        # Nodes failing alike share a Status object: count each plugin once.
        for status in dict(zip(map(id, status_list), status_list, strict=True)).values():
            self.add_plugin_status(status)
        self.rejected_rows.append((rows, statuses))

    def post_filter_statuses(self, nodes: Sequence[Any], names: np.ndarray) -> NodeStatusMap:
        """What PostFilter gets: ``node_to_status`` and, when ``absent_nodes_status`` is
        set, that status for every other node of ``nodes`` (the snapshot's list, named
        ``names`` in its table's order). With the rows :meth:`add_rejected` recorded,
        the map also knows which of ``nodes`` are ``UNSCHEDULABLE`` as a column
        (:meth:`NodeStatusMap.unschedulable_nodes`), and the absent nodes are added by
        mask instead of node by node."""
        out = NodeStatusMap(self.node_to_status)
        absent = self.absent_nodes_status
        codes = self._codes_by_row(len(nodes))
        if codes is None:
            if absent is not None:
                for name in names.tolist():
                    dict.setdefault(out, name, absent)
            return out
        missing = codes < 0
        if absent is not None:
            dict.update(out, dict.fromkeys(names[missing].tolist(), absent))
            codes[missing] = absent.code
        out.set_unschedulable_rows(nodes, np.flatnonzero(codes == Code.UNSCHEDULABLE))
        return out

    def _codes_by_row(self, n: int) -> np.ndarray | None:
        """Per table row, the code of its status in ``node_to_status`` (-1 without one),
        from the recorded rows; ``None`` when they do not account for ``node_to_status``
        exactly (it was written to directly)."""
        codes = np.full(n, -1, dtype=np.int8)
        for rows, statuses in self.rejected_rows:
            if len(rows) and rows.max() >= n:
                return None
            status_list = statuses.tolist()
            ids = np.fromiter(map(id, status_list), dtype=np.uintp, count=len(status_list))
            _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
            distinct = np.array([status_list[i].code for i in first.tolist()], dtype=np.int8)
            # Batches in order: a node filtered twice (the nominated node first, then
            # with the others) keeps its last status, as the dict does.
            codes[rows] = distinct[inverse]
        if int((codes >= 0).sum()) != len(self.node_to_status):
            return None
        return codes

    def add_plugin_status(self, status: Status) -> None:
        """Count ``status``'s plugin among the rejecting (or pending) plugins."""
        if not status.plugin:
            return
        if status.code is Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)

    def status_of(self, node_name: str) -> Status | None:
        """The status recorded for ``node_name`` (explicit, else the absent-nodes one)."""
        return self.node_to_status.get(node_name, self.absent_nodes_status)


class NodeStatusMap(dict[str, Status]):
    """PostFilter's node-to-status dict, which may also know, as a column, which nodes of
    the snapshot's list Filter rejected with ``UNSCHEDULABLE`` (preemption's potential
    nodes, see ``nodes_where_preemption_might_help``) without a lookup per node.

    Any change to the dict drops that column: the dict's contents alone then decide.
    """

    __slots__ = ("_nodes", "_unschedulable")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._nodes: Sequence[Any] | None = None
        self._unschedulable: np.ndarray | None = None

    def set_unschedulable_rows(self, nodes: Sequence[Any], rows: np.ndarray) -> None:
        """``nodes[i]`` for ``i`` in ``rows`` (ascending) are the nodes of ``nodes`` whose
        status in this dict has code ``UNSCHEDULABLE``."""
        self._nodes, self._unschedulable = nodes, rows

    def unschedulable_nodes(self, nodes: Sequence[Any]) -> list[Any] | None:
        """The nodes of ``nodes`` with an ``UNSCHEDULABLE`` status, in order, when
        ``nodes`` is the very list the column was set for and the dict has not changed
        since; else ``None``."""
        if self._unschedulable is None or nodes is not self._nodes:
            return None
        return list(map(nodes.__getitem__, self._unschedulable.tolist()))

    def _changed(self) -> None:
        self._nodes = self._unschedulable = None

    def __setitem__(self, key: str, value: Status) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._changed()
        super().__delitem__(key)

    def __ior__(self, other: Any) -> NodeStatusMap:
        self._changed()
        return super().__ior__(other)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Status | None = None) -> Status | None:  # type: ignore[override]
        self._changed()
        return super().setdefault(key, default)  # type: ignore[arg-type]

    def pop(self, *args: Any) -> Any:
        self._changed()
        return super().pop(*args)

    def popitem(self) -> tuple[str, Status]:
        self._changed()
        return super().popitem()

    def clear(self) -> None:
        self._changed()
        super().clear()


class FitError(Exception):
    """The pod fits no node. ``str()`` is upstream's FitError message, e.g.
    ``0/6 nodes are available: 2 Insufficient cpu, 4 node(s) had untolerated taint
    {dedicated: gpu}. preemption: ...``."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            # When PreFilter rejected, every node carries the same status; listing them
            # would repeat the PreFilter message, so upstream only counts after Filter.
            reasons: Counter[str] = Counter()
            # Nodes failing alike share a Status object: count the objects, then their
            # reasons once each.
            statuses = d.node_to_status.values()
            by_object = dict(zip(map(id, statuses), statuses, strict=True))
            for key, n in Counter(map(id, statuses)).items():
                for reason in by_object[key].reasons:
                    reasons[reason] += n
            absent = self.num_all_nodes - len(d.node_to_status)
            if absent > 0 and d.absent_nodes_status is not None:
                for reason in d.absent_nodes_status.reasons:
                    reasons[reason] += absent
            # Upstream sorts the "N reason" strings as strings, so "10 x" precedes "2 y".
            histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
            if histogram:
                msg += f" {', '.join(histogram)}."
        if d.post_filter_msg:
            # Upstream appends the PostFilter message as it is ("%v", no separator period):
            # DefaultPreemption's messages end with their own period.
            msg += f" {d.post_filter_msg}"
        return msg
