"""PodTopologySpread's PreScore, Score and NormalizeScore (ScheduleAnyway constraints)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.cycle_state import CycleState, StateData, StateKey
from kubesched.framework.node_table import NodeTable
from kubesched.framework.results import MAX_NODE_SCORE, NodeScores
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo

from .common import (
    LABEL_HOSTNAME,
    Constraint,
    domains,
    grouped_snapshot,
    has_all_keys,
    inclusion_mask,
)

if TYPE_CHECKING:
    from .plugin import PodTopologySpread


class PreScoreState(StateData):
    """What PreScore computed for Score and NormalizeScore (upstream ``preScoreState``).

    ``ignored`` are the names of feasible nodes lacking a topology key (scored 0);
    for each constraint ``i`` that is not per hostname, ``pod_counts[i][code]`` is the
    number of matching pods in the domain with that code (codes of ``index[i]``, the
    values' codes over ``table``); ``weights[i]`` is ``log(number of domains + 2)``.
    Read-only after PreScore, so ``clone`` shares it.
    """

    __slots__ = ("constraints", "ignored", "index", "namespace", "pod_counts", "present", "weights")

    def __init__(
        self,
        constraints: Sequence[Constraint],
        ignored: set[str],
        index: list[dict[str, int] | None],
        pod_counts: list[np.ndarray | None],
        present: list[np.ndarray | None],
        weights: list[float],
        namespace: str,
    ) -> None:
        self.constraints = tuple(constraints)
        self.ignored = ignored
        self.index = index
        self.pod_counts = pod_counts
        self.present = present
        self.weights = weights
        self.namespace = namespace

    def topology_value_to_pod_counts(self) -> list[dict[str, int]]:
        """Per constraint, matching pods by scored domain (empty for hostname constraints)."""
        out = []
        for idx, counts, present in zip(self.index, self.pod_counts, self.present, strict=True):
            if idx is None or counts is None or present is None:
                out.append({})
                continue
            out.append({v: int(counts[c]) for v, c in idx.items() if present[c]})
        return out

    def __repr__(self) -> str:
        return (
            f"PreScoreState(ignored={sorted(self.ignored)!r}, "
            f"counts={self.topology_value_to_pod_counts()!r}, weights={self.weights!r})"
        )


PRE_SCORE_STATE_KEY: StateKey[PreScoreState] = StateKey("PreScorePodTopologySpread")


def topology_normalizing_weight(size: int) -> float:
    """``log(size + 2)``: smaller topologies' counts are not watered down by bigger ones."""
    return math.log(size + 2)


def _round_half_away(x: float) -> int:
    # Go's math.Round (half away from zero), not Python's round-half-even; x >= 0.
    t = math.floor(x)
    return t + 1 if x - t >= 0.5 else t


def init_pre_score_state(
    pl: PodTopologySpread,
    pod_info: PodInfo,
    filtered: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    table: NodeTable,
) -> PreScoreState | None:
    """``PreScore``'s computation; ``None`` when the pod has no soft constraints."""
    pod = pod_info.pod
    constraints = pl.get_soft_constraints(pod)
    if not constraints:
        return None
    # Only require every topology label with the pod's own or configured List
    # constraints: nodes without a zone still get hostname spreading by default.
    require_all = bool(pod.spec.topology_spread_constraints) or not pl.system_defaulted
    namespace = pod_info.namespace

    # Rows of the feasible nodes in the all-nodes table (a table of their own if some
    # feasible node is not among all nodes, which the scheduler never does).
    index = table.index
    frows_list = [index.get(ni.name, -1) for ni in filtered]
    if -1 in frows_list:
        ftable = NodeTable(list(filtered))
        frows = np.arange(len(filtered), dtype=np.intp)
    else:
        ftable = table
        frows = np.asarray(frows_list, dtype=np.intp)
    if require_all:
        keep = has_all_keys(ftable, constraints)[frows]
        ignored = {filtered[j].name for j in np.flatnonzero(~keep).tolist()}
        kept = frows[keep]
    else:
        ignored = set()
        kept = frows

    all_base = has_all_keys(table, constraints) if require_all else np.ones(len(table), bool)
    idx_list: list[dict[str, int] | None] = []
    counts_list: list[np.ndarray | None] = []
    present_list: list[np.ndarray | None] = []
    weights: list[float] = []
    for c in constraints:
        if c.topology_key == LABEL_HOSTNAME:
            # Per-node counts are taken in Score.
            idx_list.append(None)
            counts_list.append(None)
            present_list.append(None)
            weights.append(topology_normalizing_weight(len(filtered) - len(ignored)))
            continue
        fdom = domains(ftable, c.topology_key)
        kept_codes = np.unique(fdom.codes[kept])
        dom = domains(table, c.topology_key)
        in_set = np.zeros(len(dom.values), dtype=bool)
        if ftable is table:
            in_set[kept_codes] = True
        else:
            names = {fdom.values[x] for x in kept_codes.tolist()}
            in_set[[dom.index[v] for v in names if v in dom.index]] = True
        weights.append(topology_normalizing_weight(len(kept_codes)))
        mask = inclusion_mask(c, table, pod_info, all_base) & in_set[dom.codes]
        rows = np.flatnonzero(mask)
        node_counts = pl.counter.counts(
            table.infos, rows, c.selector, namespace, grouped_snapshot(pl.handle, table)
        )
        per_domain = np.bincount(
            dom.codes[rows], weights=node_counts, minlength=len(dom.values)
        ).astype(np.int64)
        idx_list.append(dom.index)
        counts_list.append(per_domain)
        present_list.append(in_set)
    return PreScoreState(
        constraints, ignored, idx_list, counts_list, present_list, weights, namespace
    )


def get_pre_score_state(state: CycleState) -> PreScoreState:
    """The PreScore state; ``KeyError`` naming the key if PreScore did not run."""
    return state.read(PRE_SCORE_STATE_KEY)


def score_node(pl: PodTopologySpread, s: PreScoreState, node_info: NodeInfo) -> int:
    """The weighted sum of matching pods in the node's domains (lower is better)."""
    if node_info.name in s.ignored:
        return 0
    node = node_info.node
    labels = node.metadata.labels if node is not None else {}
    score = 0.0
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            cnt = pl.counter.count(node_info, c.selector, s.namespace)
        else:
            code = s.index[i].get(value)
            cnt = 0 if code is None else int(s.pod_counts[i][code])
        score += cnt * s.weights[i] + float(c.max_skew - 1)
    return _round_half_away(score)


def score_batch(pl: PodTopologySpread, s: PreScoreState, batch: NodeBatch) -> np.ndarray:
    """``score_node`` for a batch of nodes, with numpy."""
    n = len(batch)
    table = batch.table
    rows = batch.rows
    score = np.zeros(n, dtype=np.float64)
    for i, c in enumerate(s.constraints):
        dom = domains(table, c.topology_key)
        has = dom.has[rows]
        if c.topology_key == LABEL_HOSTNAME:
            cnt = pl.counter.counts(batch.infos, np.arange(n), c.selector, s.namespace)
        else:
            index = s.index[i]
            codes = dom.codes[rows]
            if dom.index is not index:
                remap = np.array([index.get(v, -1) for v in dom.values], dtype=np.intp)
                codes = remap[codes]
            known = codes >= 0
            cnt = np.zeros(n, dtype=np.int64)
            cnt[known] = s.pod_counts[i][codes[known]]
        term = cnt * s.weights[i] + float(c.max_skew - 1)
        # Adding 0.0 leaves a float unchanged, so the sum equals score_node's bit for bit.
        score += np.where(has, term, 0.0)
    t = np.floor(score)
    result = t.astype(np.int64) + (score - t >= 0.5)
    if s.ignored:
        result[[ni.name in s.ignored for ni in batch.infos]] = 0
    return result


def normalize(s: PreScoreState, scores: NodeScores) -> None:
    """Upstream's NormalizeScore: fewer matching pods score higher; ignored nodes get 0.

    With ``min``/``max`` the lowest/highest raw score of the nodes not ignored (``max``
    at least 0), each becomes ``100 * (max + min - score) // max``, or 100 when
    ``max`` is 0.
    """
    values = scores.values
    if not len(values):
        return
    if s.ignored:
        ignored = np.fromiter((n in s.ignored for n in scores.names), bool, len(values))
    else:
        ignored = np.zeros(len(values), dtype=bool)
    considered = values[~ignored]
    if not len(considered):
        values[:] = 0
        return
    min_score = int(considered.min())
    max_score = max(int(considered.max()), 0)
    if max_score == 0:
        new = np.full(len(values), MAX_NODE_SCORE, dtype=np.int64)
    else:
        new = MAX_NODE_SCORE * (max_score + min_score - values) // max_score
    new[ignored] = 0
    values[:] = new
