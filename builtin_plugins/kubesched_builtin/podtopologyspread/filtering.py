"""PodTopologySpread's PreFilter, its add/remove-pod extensions and Filter (DoNotSchedule)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api import RequiredNodeAffinity
from kubesched.framework.cycle_state import CycleState, StateData, StateKey
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Status
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo

from .common import (
    Constraint,
    domains,
    grouped_snapshot,
    has_all_keys,
    inclusion_mask,
    match_node_inclusion_policies,
    node_labels_match_spread_constraints,
)

if TYPE_CHECKING:
    from .plugin import PodTopologySpread

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
"""Filter's reason when placing the pod on the node would exceed a constraint's maxSkew."""
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
"""Filter's reason when the node lacks a DoNotSchedule constraint's topology key."""

_MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two domains with the fewest matching pods of one constraint (upstream
    ``criticalPaths``): ``paths[0]`` always holds the global minimum; ``paths[1]`` is at
    least that but, after updates, not necessarily the second minimum (upstream's
    caveat: preemption only adds or removes pods of one node per what-if)."""

    __slots__ = ("paths",)

    def __init__(self, paths: list[list] | None = None) -> None:
        self.paths: list[list] = paths or [["", _MAX_INT32], ["", _MAX_INT32]]

    def update(self, value: str, num: int) -> None:
        """Record that domain ``value`` now has ``num`` matching pods (upstream's rule)."""
        p = self.paths
        if value == p[0][0]:
            i = 0
        elif value == p[1][0]:
            i = 1
        else:
            i = -1
        if i >= 0:
            p[i][1] = num
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = [value, num]
        elif num < p[1][1]:
            p[1] = [value, num]

    @property
    def min_match_num(self) -> int:
        """The global minimum of matching pods."""
        return self.paths[0][1]

    def clone(self) -> CriticalPaths:
        """An independent copy."""
        return CriticalPaths([list(self.paths[0]), list(self.paths[1])])

    def __repr__(self) -> str:
        return f"CriticalPaths({self.paths!r})"


class ConstraintCounts:
    """Matching pods per domain of one constraint, over the eligible nodes.

    Domains are the codes of ``common.Domains`` (``values`` / ``index``);
    ``counts[code]`` is the number of matching pods and ``present[code]`` whether the
    domain is eligible (upstream: a key of ``TpValueToMatchNum[i]``).
    ``domains_num`` is how many are present. A domain seen first by
    ``pre_filter_add_pod`` is appended (the shared value list is copied first).
    """

    __slots__ = ("counts", "domains_num", "index", "paths", "present", "values")

    def __init__(
        self,
        values: list[str],
        index: dict[str, int],
        counts: np.ndarray,
        present: np.ndarray,
        domains_num: int,
        paths: CriticalPaths,
    ) -> None:
        self.values = values
        self.index = index
        self.counts = counts
        self.present = present
        self.domains_num = domains_num
        self.paths = paths

    def match_num(self, value: str) -> int:
        """Matching pods in domain ``value`` (0 for an unknown domain)."""
        code = self.index.get(value)
        return 0 if code is None else int(self.counts[code])

    def min_match_num(self, min_domains: int) -> int:
        """The global minimum, 0 while fewer than ``min_domains`` domains are eligible."""
        if self.domains_num < min_domains:
            return 0
        return self.paths.min_match_num

    def add(self, value: str, delta: int) -> None:
        """``TpValueToMatchNum[i][value] += delta`` and the critical paths' update."""
        code = self.index.get(value)
        if code is None:
            self.values = [*self.values, value]
            self.index = {**self.index, value: len(self.values) - 1}
            code = len(self.values) - 1
            self.counts = np.append(self.counts, 0)
            self.present = np.append(self.present, False)
        if not self.present[code]:
            self.present[code] = True
            self.domains_num += 1
        self.counts[code] += delta
        self.paths.update(value, int(self.counts[code]))

    def as_dict(self) -> dict[str, int]:
        """Matching pods by eligible domain (upstream ``TpValueToMatchNum[i]``)."""
        return {self.values[c]: int(self.counts[c]) for c in np.flatnonzero(self.present).tolist()}

    def clone(self) -> ConstraintCounts:
        return ConstraintCounts(
            self.values,
            self.index,
            self.counts.copy(),
            self.present.copy(),
            self.domains_num,
            self.paths.clone(),
        )


class PreFilterState(StateData):
    """What PreFilter computed for Filter (upstream ``preFilterState``).

    ``constraints`` are the pod's DoNotSchedule constraints (or the default ones),
    ``counts[i]`` the matching pods per domain of constraint ``i`` with its critical
    paths and number of eligible domains, ``self_match[i]`` whether the pod itself
    matches constraint ``i``'s selector. ``pre_filter_add_pod``/``remove_pod`` change
    ``counts`` on a clone.
    """

    __slots__ = ("constraints", "counts", "self_match")

    def __init__(
        self,
        constraints: Sequence[Constraint],
        counts: list[ConstraintCounts],
        self_match: Sequence[bool],
    ) -> None:
        self.constraints = tuple(constraints)
        self.counts = counts
        self.self_match = tuple(self_match)

    def clone(self) -> PreFilterState:
        # Constraints are immutable and shared; counts change under add/remove pod.
        return PreFilterState(self.constraints, [c.clone() for c in self.counts], self.self_match)

    def tp_value_to_match_num(self) -> list[dict[str, int]]:
        """Per constraint, matching pods by eligible domain (for tests and debugging)."""
        return [c.as_dict() for c in self.counts]

    def __repr__(self) -> str:
        return f"PreFilterState({self.tp_value_to_match_num()!r})"


PRE_FILTER_STATE_KEY: StateKey[PreFilterState] = StateKey("PreFilterPodTopologySpread")


def cal_pre_filter_state(
    pl: PodTopologySpread,
    pod_info: PodInfo,
    constraints: Sequence[Constraint],
    table: NodeTable,
) -> PreFilterState:
    """``calPreFilterState``: count matching pods per domain over the eligible nodes.

    A node is eligible for a constraint when it has every constraint's topology key
    and passes the constraint's node inclusion policies. Labels and policies are
    decided with numpy over ``table`` (whose rows are all nodes); pods are walked once
    per eligible node and constraint (and remembered across cycles by generation).
    """
    if not constraints:
        return PreFilterState((), [], ())
    namespace = pod_info.namespace
    snapshot = grouped_snapshot(pl.handle, table)
    base = has_all_keys(table, constraints)
    counts: list[ConstraintCounts] = []
    for c in constraints:
        dom = domains(table, c.topology_key)
        eligible = np.flatnonzero(inclusion_mask(c, table, pod_info, base))
        node_counts = pl.counter.counts(table.infos, eligible, c.selector, namespace, snapshot)
        codes = dom.codes[eligible]
        n_domains = len(dom.values)
        per_domain = np.bincount(codes, weights=node_counts, minlength=n_domains).astype(np.int64)
        present = np.bincount(codes, minlength=n_domains) > 0
        paths = CriticalPaths()
        present_codes = np.flatnonzero(present)
        # Feeding the domains in ascending order of counts yields exactly the two
        # smallest, as feeding them all in any (Go map) order does.
        order = np.argsort(per_domain[present_codes], kind="stable")[:2]
        for code in present_codes[order].tolist():
            paths.update(dom.values[code], int(per_domain[code]))
        counts.append(
            ConstraintCounts(dom.values, dom.index, per_domain, present, len(present_codes), paths)
        )
    labels = pod_info.labels
    self_match = [c.selector.matches(labels) for c in constraints]
    return PreFilterState(constraints, counts, self_match)


def update_with_pod(
    s: PreFilterState,
    updated: PodInfo,
    preemptor: PodInfo,
    node_info: NodeInfo,
    delta: int,
) -> None:
    """``updateWithPod``: count ``updated`` in (``delta`` 1) or out of (-1) its domains."""
    node = node_info.node
    if updated.namespace != preemptor.namespace or node is None:
        return
    labels = node.metadata.labels
    if not node_labels_match_spread_constraints(labels, s.constraints):
        return
    required = RequiredNodeAffinity(preemptor.pod)
    pod_labels = updated.labels
    for i, c in enumerate(s.constraints):
        if not c.selector.matches(pod_labels):
            continue
        if not match_node_inclusion_policies(c, preemptor, node, required):
            continue
        s.counts[i].add(labels[c.topology_key], delta)


def get_pre_filter_state(state: CycleState) -> PreFilterState:
    """The PreFilter state; ``KeyError`` naming the key if PreFilter did not run."""
    return state.read(PRE_FILTER_STATE_KEY)


def _node_label_not_match() -> Status:
    # A fresh Status per call: the framework writes the plugin name into it.
    return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)


def _constraints_not_match() -> Status:
    return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


def filter_node(s: PreFilterState, node_info: NodeInfo) -> Status | None:
    """Filter for one node: every constraint's skew on the node's domain within maxSkew."""
    if not s.constraints:
        return None
    node = node_info.node
    # A NodeInfo without its Node has no labels (the snapshot lists none such).
    labels = node.metadata.labels if node is not None else {}
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return _node_label_not_match()
        counts = s.counts[i]
        # 'existing matching num' + 'if self-match (1 or 0)' - 'global minimum' <= 'maxSkew'
        skew = counts.match_num(value) + s.self_match[i] - counts.min_match_num(c.min_domains)
        if skew > c.max_skew:
            return _constraints_not_match()
    return None


class CopyCounts:
    """The PreFilter counts of copies of some nodes with some of their pods removed or
    added back, as numpy columns (preemption's batched dry run, nominated pods).

    A pod counted on node ``j`` changes only ``j``'s own domain of each constraint, and
    Filter on ``j`` reads that domain's count and the global minimum, i.e. the first
    critical path. Upstream's critical-path update, applied only to ``j``'s domain
    ``v``, leaves a state that depends on little of the history: once ``v`` is one of
    the two paths (it was, or an update brought it in because its count fell below the
    second path's), the minimum is ``min(count of v, the other path's count)``;
    otherwise it is unchanged. The copies' pods ``pods[j]`` are all removed first, in
    order, as preemption's dry run does, so the lowest count ``v`` ever had is its
    count with all of them removed. Each copy is thus the shared counts plus, per
    constraint, a delta (summed with numpy over the copy's pods), whether an update
    happened and the lowest count reached.
    """

    def __init__(
        self,
        s: PreFilterState,
        pod_info: PodInfo,
        table: NodeTable,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> None:
        self.s = s
        self.namespace = pod_info.namespace
        self.rows = np.asarray(rows, dtype=np.intp)
        self.size = len(table)
        k, m = len(self.rows), max((len(ps) for ps in pods), default=0)
        base = has_all_keys(table, s.constraints)
        # Per constraint: whether a pod on the copy counts there (upstream's
        # updateWithPod: the node has every key and passes the inclusion policies),
        # the copy's domain code and that domain's count in the shared state.
        self.eligible: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.count: list[np.ndarray] = []
        self._matches: dict[Any, tuple[bool, ...]] = {}
        for c, counts in zip(s.constraints, s.counts, strict=True):
            dom = domains(table, c.topology_key)
            if dom.index is not counts.index:
                raise LookupError("the table is not the one PreFilter counted on")
            eligible = inclusion_mask(c, table, pod_info, base)[self.rows]
            codes = dom.codes[self.rows]
            if (eligible & ~counts.present[codes]).any():
                # A domain PreFilter did not see would be added: not modelled here.
                raise LookupError("a copy's domain is not among the counted ones")
            self.eligible.append(eligible)
            self.codes.append(codes)
            self.count.append(counts.counts[codes])
        self.contribution = [np.zeros((k, m), dtype=np.int64) for _ in s.constraints]
        for j, ps in enumerate(pods):
            for i, p in enumerate(ps):
                for x, hit in enumerate(self.matches(p)):
                    if hit and self.eligible[x][j]:
                        self.contribution[x][j, i] = 1

    def matches(self, other: PodInfo) -> tuple[bool, ...]:
        """Per constraint, whether counting ``other`` changes it (``update_with_pod``)."""
        key = (other.namespace, frozenset(other.labels.items()))
        out = self._matches.get(key)
        if out is None:
            same = other.namespace == self.namespace
            out = self._matches[key] = tuple(
                same and c.selector.matches(other.labels) for c in self.s.constraints
            )
        return out

    def view(self, positions: np.ndarray, weights: np.ndarray) -> CopyView:
        """The copies at ``positions`` whose pod ``i`` counts ``weights[x, i]`` times
        relative to the snapshot (-1 removed, 0 as it is, 1 added)."""
        deltas, updated, lowest = [], [], []
        for x, col in enumerate(self.contribution):
            chosen = col[positions]
            removed = chosen.sum(axis=1)
            deltas.append((chosen * weights).sum(axis=1))
            updated.append(removed > 0)
            lowest.append(self.count[x][positions] - removed)
        return CopyView(self, positions, deltas, updated, lowest)


class CopyView:
    """Per copy of a node and constraint: the delta of its domain's count, whether an
    update touched the critical paths and the lowest count the domain reached;
    ``filter_nodes`` reads it from a batch's ``copies``."""

    __slots__ = ("copies", "deltas", "lowest", "positions", "slot", "updated")

    def __init__(
        self,
        copies: CopyCounts,
        positions: np.ndarray,
        deltas: list[np.ndarray],
        updated: list[np.ndarray],
        lowest: list[np.ndarray],
    ) -> None:
        self.copies = copies
        self.positions = np.asarray(positions, dtype=np.intp)
        self.deltas = deltas
        self.updated = updated
        self.lowest = lowest
        self.slot = np.full(copies.size, -1, dtype=np.intp)
        self.slot[copies.rows[self.positions]] = np.arange(len(self.positions))

    def with_added(self, rows: np.ndarray, pods: Sequence[Sequence[PodInfo]]) -> CopyView:
        """The copies at table ``rows`` with ``pods[x]`` added, in order, to the copy of
        ``rows[x]`` (the pods nominated to it)."""
        at = self.slot[rows]
        copies = self.copies
        positions = self.positions[at]
        deltas, updated, lowest = [], [], []
        for x in range(len(copies.s.constraints)):
            added = np.array(
                [sum(1 for p in ps if copies.matches(p)[x]) for ps in pods], dtype=np.int64
            )
            added *= copies.eligible[x][positions]
            delta = self.deltas[x][at]
            was = self.updated[x][at]
            # The first pod added raises the count to one above the copy's: the lowest
            # count of this update run.
            first = copies.count[x][positions] + delta + 1
            low = np.where(was, np.minimum(self.lowest[x][at], first), first)
            hit = added > 0
            deltas.append(delta + added)
            updated.append(was | hit)
            lowest.append(np.where(hit, low, self.lowest[x][at]))
        return CopyView(copies, positions, deltas, updated, lowest)

    def match_and_minimum(
        self, rows: np.ndarray, x: int, min_domains: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """For the copies of ``rows`` and constraint ``x``: the delta of the copy's
        domain count and the global minimum (``min_match_num``) on the copy."""
        at = self.slot[rows]
        copies = self.copies
        counts = copies.s.counts[x]
        positions = self.positions[at]
        delta = self.deltas[x][at]
        now = copies.count[x][positions] + delta
        (v0, n0), (v1, n1) = counts.paths.paths
        code0, code1 = counts.index.get(v0, -1), counts.index.get(v1, -1)
        codes = copies.codes[x][positions]
        minimum = np.where(
            codes == code0,
            np.minimum(now, n1),
            np.where(
                codes == code1,
                np.minimum(now, n0),
                np.where(self.lowest[x][at] < n1, np.minimum(now, n0), n0),
            ),
        )
        minimum = np.where(self.updated[x][at], minimum, n0)
        if counts.domains_num < min_domains:
            minimum = np.zeros(len(at), dtype=np.int64)
        return delta, minimum


def filter_batch(s: PreFilterState, batch: NodeBatch, view: CopyView | None = None) -> np.ndarray:
    """Filter for a batch of nodes, with numpy: the same verdicts as ``filter_node``;
    with ``view``, on copies of the nodes whose counts differ by ``view``'s."""
    n = len(batch)
    if not s.constraints or n == 0:
        return np.full(n, None, dtype=object)
    table = batch.table
    rows = batch.rows
    undecided = np.ones(n, dtype=bool)
    # 0: passes so far, 1: missing label, 2: skew too large; the first constraint
    # (in order) that rejects a node decides its reason, as in filter_node.
    reason = np.zeros(n, dtype=np.int8)
    for i, c in enumerate(s.constraints):
        dom = domains(table, c.topology_key)
        counts = s.counts[i]
        has = dom.has[rows]
        missing = undecided & ~has
        reason[missing] = 1
        undecided &= has
        if not undecided.any():
            break
        codes = dom.codes[rows]
        if dom.index is not counts.index:
            # The batch's table is not the one PreFilter counted on: translate codes.
            remap = np.array([counts.index.get(v, -1) for v in dom.values], dtype=np.intp)
            codes = remap[codes]
        known = codes >= 0
        match = np.zeros(n, dtype=np.int64)
        match[known] = counts.counts[codes[known]]
        if view is None:
            minimum: Any = counts.min_match_num(c.min_domains)
        else:
            delta, minimum = view.match_and_minimum(rows, i, c.min_domains)
            match += delta
        skew = match + int(s.self_match[i]) - minimum
        violated = undecided & (skew > c.max_skew)
        reason[violated] = 2
        undecided &= ~violated
        if not undecided.any():
            break
    out = np.full(n, None, dtype=object)
    # One Status object per reason, shared by its nodes (the framework expects that).
    for code, make in ((1, _node_label_not_match), (2, _constraints_not_match)):
        at = reason == code
        if at.any():
            out[at] = make()
    return out
