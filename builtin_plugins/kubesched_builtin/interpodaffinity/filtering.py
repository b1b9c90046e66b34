"""InterPodAffinity's PreFilter (with its add/remove-pod extension) and Filter.

PreFilter walks the pods once and counts, per topology pair (label key, value):
existing pods whose required anti-affinity terms select the incoming pod, and
existing pods that match the incoming pod's required affinity / anti-affinity
terms. Filter is then a few dictionary lookups on the node's label values
(upstream ``filtering.go``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched import NodeBatch, NodeInfo, PodInfo, StateData, StateKey, Status
from kubesched.framework.pod_groups import PodGroupIndex

from .terms import (
    IncomingTerm,
    NamespaceLabels,
    bump,
    matches_all,
    node_labels,
    per_value_array,
    topology_codes,
)

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
"""An existing pod's required anti-affinity term selects the incoming pod in the node's domain."""
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
"""The node is not in a domain running a pod that matches all required affinity terms."""
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
"""The node's domain runs a pod that the incoming pod's required anti-affinity terms select."""

TopologyCounts = dict[str, dict[str, int]]
"""Counts by topology key, then by label value (upstream ``topologyToMatchedTermCount``).
A pair is present only with a non-zero count, so an empty mapping means no pair."""


class PreFilterState(StateData):
    """What PreFilter computes for Filter (upstream ``preFilterState``).

    ``existing_anti_affinity_counts``, ``affinity_counts`` and
    ``anti_affinity_counts`` change under ``pre_filter_add_pod`` /
    ``pre_filter_remove_pod``, hence ``clone`` copies them; the terms and the
    namespace labels are shared.
    """

    __slots__ = (
        "affinity_counts",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_affinity_terms",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod_info",
        "self_match",
    )

    def __init__(
        self,
        pod_info: PodInfo,
        affinity_terms: tuple[IncomingTerm, ...],
        anti_affinity_terms: tuple[IncomingTerm, ...],
        namespace_labels: Mapping[str, str],
        existing_anti_affinity_counts: TopologyCounts,
        affinity_counts: TopologyCounts,
        anti_affinity_counts: TopologyCounts,
    ) -> None:
        self.pod_info = pod_info
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts
        # Whether the pod matches all its own affinity terms: the first pod of a group
        # with affinity to itself may go anywhere its topology keys exist.
        self.self_match = matches_all(affinity_terms, pod_info)

    def clone(self) -> PreFilterState:
        """A copy whose counts can change independently."""
        c = PreFilterState.__new__(PreFilterState)
        c.pod_info = self.pod_info
        c.affinity_terms = self.affinity_terms
        c.anti_affinity_terms = self.anti_affinity_terms
        c.namespace_labels = self.namespace_labels
        c.self_match = self.self_match
        c.existing_anti_affinity_counts = _copy(self.existing_anti_affinity_counts)
        c.affinity_counts = _copy(self.affinity_counts)
        c.anti_affinity_counts = _copy(self.anti_affinity_counts)
        return c

    def update_with_pod(self, other: PodInfo, node_info: NodeInfo, multiplier: int) -> None:
        """Count (``multiplier`` 1) or uncount (-1) ``other`` running on ``node_info``."""
        labels = node_labels(node_info)
        pod_info = self.pod_info
        for t in other.required_anti_affinity_terms:
            if t.matches(pod_info, self.namespace_labels):
                bump(self.existing_anti_affinity_counts, t.topology_key, labels, multiplier)
        if matches_all(self.affinity_terms, other):
            for it in self.affinity_terms:
                bump(self.affinity_counts, it.topology_key, labels, multiplier)
        for it in self.anti_affinity_terms:
            if it.matches(other):
                bump(self.anti_affinity_counts, it.topology_key, labels, multiplier)


PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey("PreFilterInterPodAffinity")


def _copy(counts: TopologyCounts) -> TopologyCounts:
    return {k: dict(v) for k, v in counts.items()}


def compute_pre_filter_state(
    pod_info: PodInfo,
    all_nodes: Sequence[NodeInfo],
    nodes_with_required_anti_affinity_pods: Sequence[NodeInfo],
    lister: Any,
    snapshot: Any = None,
) -> PreFilterState:
    """Upstream's PreFilter computation, without the Skip decision.

    With ``snapshot`` (whose ``list()`` is ``all_nodes``), the counts come from its pod
    group indexes, one decision per group of alike pods instead of one per pod; the
    result is the same as walking the nodes.
    """
    namespaces = NamespaceLabels(lister)
    affinity_terms = tuple(IncomingTerm(t, namespaces) for t in pod_info.required_affinity_terms)
    anti_terms = tuple(IncomingTerm(t, namespaces) for t in pod_info.required_anti_affinity_terms)
    ns_labels = namespaces.snapshot_of(pod_info.namespace)
    if snapshot is not None:
        existing = grouped_existing_anti_affinity_counts(
            pod_info, ns_labels, snapshot.pods_by_affinity_terms()
        )
        affinity, anti = grouped_incoming_counts(
            affinity_terms, anti_terms, snapshot.pods_by_labels()
        )
    else:
        existing = existing_anti_affinity_counts(
            pod_info, ns_labels, nodes_with_required_anti_affinity_pods
        )
        affinity, anti = incoming_affinity_anti_affinity_counts(
            affinity_terms, anti_terms, all_nodes
        )
    return PreFilterState(pod_info, affinity_terms, anti_terms, ns_labels, existing, affinity, anti)


def _add_domains(counts: TopologyCounts, key: str, domains: Mapping[str, int]) -> None:
    """Add a group's per-value pod counts to ``counts[key]`` (all positive)."""
    if not domains:
        return
    inner = counts.get(key)
    if inner is None:
        counts[key] = dict(domains)
        return
    for v, n in domains.items():
        inner[v] = inner.get(v, 0) + n


def grouped_existing_anti_affinity_counts(
    pod_info: PodInfo, ns_labels: Mapping[str, str], index: PodGroupIndex
) -> TopologyCounts:
    """:func:`existing_anti_affinity_counts` from the pods grouped by their terms."""
    counts: TopologyCounts = {}
    for group in index.groups.values():
        for t in group.sample.required_anti_affinity_terms:
            if t.matches(pod_info, ns_labels):
                _add_domains(counts, t.topology_key, index.domains(group, t.topology_key))
    return counts


def grouped_incoming_counts(
    affinity_terms: tuple[IncomingTerm, ...],
    anti_terms: tuple[IncomingTerm, ...],
    index: PodGroupIndex,
) -> tuple[TopologyCounts, TopologyCounts]:
    """:func:`incoming_affinity_anti_affinity_counts` from the pods grouped by labels."""
    affinity: TopologyCounts = {}
    anti: TopologyCounts = {}
    if not affinity_terms and not anti_terms:
        return affinity, anti
    for group in index.groups.values():
        pod = group.sample
        if affinity_terms and matches_all(affinity_terms, pod):
            for t in affinity_terms:
                _add_domains(affinity, t.topology_key, index.domains(group, t.topology_key))
        for t in anti_terms:
            if t.matches(pod):
                _add_domains(anti, t.topology_key, index.domains(group, t.topology_key))
    return affinity, anti


def existing_anti_affinity_counts(
    pod_info: PodInfo, ns_labels: Mapping[str, str], nodes: Sequence[NodeInfo]
) -> TopologyCounts:
    """Per topology pair, how many required anti-affinity terms of existing pods select
    the incoming pod (upstream ``getExistingAntiAffinityCounts``)."""
    counts: TopologyCounts = {}
    for ni in nodes:
        if ni.node is None:
            continue
        labels = node_labels(ni)
        for existing in ni.pods_with_required_anti_affinity:
            for t in existing.required_anti_affinity_terms:
                if t.matches(pod_info, ns_labels):
                    bump(counts, t.topology_key, labels, 1)
    return counts


def incoming_affinity_anti_affinity_counts(
    affinity_terms: tuple[IncomingTerm, ...],
    anti_terms: tuple[IncomingTerm, ...],
    nodes: Sequence[NodeInfo],
) -> tuple[TopologyCounts, TopologyCounts]:
    """Per topology pair, the existing pods that match all the incoming pod's required
    affinity terms, and those matching each of its required anti-affinity terms
    (upstream ``getIncomingAffinityAntiAffinityCounts``)."""
    affinity: TopologyCounts = {}
    anti: TopologyCounts = {}
    if not affinity_terms and not anti_terms:
        return affinity, anti
    keys = {t.topology_key for t in affinity_terms} | {t.topology_key for t in anti_terms}
    single = affinity_terms[0] if len(affinity_terms) == 1 else None
    for ni in nodes:
        if ni.node is None or not ni.pods:
            continue
        labels = node_labels(ni)
        # A node without any of the topology keys cannot add to any pair.
        if not any(k in labels for k in keys):
            continue
        pods = ni.pods
        if affinity_terms:
            if single is not None:
                n = sum(1 for p in pods if single.matches(p))
            else:
                n = sum(1 for p in pods if matches_all(affinity_terms, p))
            if n:
                # Every matching pod counts once per term, all on this node's values.
                for t in affinity_terms:
                    bump(affinity, t.topology_key, labels, n)
        for t in anti_terms:
            if t.topology_key in labels:
                n = sum(1 for p in pods if t.matches(p))
                if n:
                    bump(anti, t.topology_key, labels, n)
    return affinity, anti


def is_skippable(s: PreFilterState) -> bool:
    """Upstream's Skip: no existing anti-affinity pair and no required terms of the pod."""
    return (
        not s.existing_anti_affinity_counts and not s.affinity_terms and not s.anti_affinity_terms
    )


# -- Filter --------------------------------------------------------------------------------


def affinity_rejected() -> Status:
    """The status of a node failing the pod's required affinity: preemption cannot help."""
    return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)


def anti_affinity_rejected() -> Status:
    """The status of a node failing the pod's required anti-affinity."""
    return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)


def existing_anti_affinity_rejected() -> Status:
    """The status of a node where an existing pod's anti-affinity forbids the pod."""
    return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)


def _first_pod_exception(s: PreFilterState) -> bool:
    # upstream satisfyPodAffinity: when no pod anywhere matches the terms and the pod
    # matches its own terms, any node having all the topology keys is acceptable.
    return not s.affinity_counts and s.self_match


def filter_node(s: PreFilterState, labels: Mapping[str, str]) -> Status | None:
    """Filter for one node given its labels (upstream ``Filter``)."""
    if s.affinity_terms:
        pods_exist = True
        for t in s.affinity_terms:
            v = labels.get(t.topology_key)
            if v is None:
                # All topology labels must exist on the node.
                return affinity_rejected()
            inner = s.affinity_counts.get(t.topology_key)
            if inner is None or inner.get(v, 0) <= 0:
                pods_exist = False
        if not pods_exist and not _first_pod_exception(s):
            return affinity_rejected()
    if s.anti_affinity_counts:
        for t in s.anti_affinity_terms:
            v = labels.get(t.topology_key)
            if v is not None:
                inner = s.anti_affinity_counts.get(t.topology_key)
                if inner is not None and inner.get(v, 0) > 0:
                    return anti_affinity_rejected()
    # Equivalent to upstream's walk over the node's labels: a pair (k, v) with a
    # positive count rejects the node when the node's value of k is v.
    for key, inner in s.existing_anti_affinity_counts.items():
        v = labels.get(key)
        if v is not None and inner.get(v, 0) > 0:
            return existing_anti_affinity_rejected()
    return None


EXISTING, AFFINITY, ANTI = 0, 1, 2
"""Which of the PreFilter state's three counts a (kind, topology key) delta adjusts."""

Kind = tuple[int, str]


class CopyCounts:
    """The PreFilter counts of copies of some nodes with some of their pods removed or
    added back, as numpy columns (preemption's batched dry run, nominated pods).

    A pod counted or uncounted on node ``j`` changes only the pairs of ``j``'s own label
    values, and Filter on ``j`` reads only those pairs (plus, for the first-pod
    exception, whether any affinity pair is left). So each copy is the shared state plus
    one delta per (count, topology key): ``contribution[kind][j, i]`` is what pod ``i``
    of ``pods[j]`` adds, computed once; a :meth:`view` sums the chosen pods' deltas over
    the chunk in one numpy call per (count, key). The counts are sums, so the order in
    which the per-node path adds and removes the pods does not matter.
    """

    def __init__(
        self,
        s: PreFilterState,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> None:
        self.s = s
        self.table = table
        self.rows = np.asarray(rows, dtype=np.intp)
        k, m = len(self.rows), max((len(ps) for ps in pods), default=0)
        # Pods alike in what ``of`` reads contribute alike: decided once per kind of pod.
        self._of: dict[Any, dict[Kind, int]] = {}
        self.contribution: dict[Kind, np.ndarray] = {}
        for j, ps in enumerate(pods):
            for i, p in enumerate(ps):
                for kind, n in self.of(p).items():
                    col = self.contribution.get(kind)
                    if col is None:
                        col = self.contribution[kind] = np.zeros((k, m), dtype=np.int64)
                    col[j, i] = n

    def of(self, other: PodInfo) -> dict[Kind, int]:
        """What counting ``other`` adds to each (count, key), as ``update_with_pod``
        with the node's labels left out (a node without the key ignores the delta)."""
        key = (
            other.namespace,
            frozenset(other.labels.items()),
            other.required_anti_affinity_terms,
        )
        out = self._of.get(key)
        if out is None:
            out = self._of[key] = self._decide(other)
        return out

    def _decide(self, other: PodInfo) -> dict[Kind, int]:
        s = self.s
        out: dict[Kind, int] = {}
        for t in other.required_anti_affinity_terms:
            if t.matches(s.pod_info, s.namespace_labels):
                kind = (EXISTING, t.topology_key)
                out[kind] = out.get(kind, 0) + 1
        if matches_all(s.affinity_terms, other):
            for it in s.affinity_terms:
                kind = (AFFINITY, it.topology_key)
                out[kind] = out.get(kind, 0) + 1
        for it in s.anti_affinity_terms:
            if it.matches(other):
                kind = (ANTI, it.topology_key)
                out[kind] = out.get(kind, 0) + 1
        return out

    def view(self, positions: np.ndarray, weights: np.ndarray) -> CopyView:
        """The copies at ``positions`` whose pod ``i`` counts ``weights[x, i]`` times
        (-1 removed, 0 as in the snapshot, 1 added)."""
        deltas = {
            kind: (col[positions] * weights).sum(axis=1) for kind, col in self.contribution.items()
        }
        return CopyView(self, self.rows[positions], deltas)


class CopyView:
    """Per copy of a node, what its pods removed or added change in each (count, key);
    ``filter_nodes`` reads it from a batch's ``copies``."""

    __slots__ = ("copies", "deltas", "rows", "slot")

    def __init__(self, copies: CopyCounts, rows: np.ndarray, deltas: dict[Kind, np.ndarray]):
        self.copies = copies
        self.rows = rows
        self.deltas = deltas
        self.slot = np.full(len(copies.table.names), -1, dtype=np.intp)
        self.slot[rows] = np.arange(len(rows))

    def with_added(self, rows: np.ndarray, pods: Sequence[Sequence[PodInfo]]) -> CopyView:
        """The copies at table ``rows`` with ``pods[x]`` added to the copy of ``rows[x]``
        (the pods nominated to it)."""
        at = self.slot[rows]
        deltas = {kind: d[at] for kind, d in self.deltas.items()}
        for x, ps in enumerate(pods):
            for p in ps:
                for kind, n in self.copies.of(p).items():
                    d = deltas.get(kind)
                    if d is None:
                        d = deltas[kind] = np.zeros(len(at), dtype=np.int64)
                    d[x] += n
        return CopyView(self.copies, np.asarray(rows, dtype=np.intp), deltas)

    def delta(self, rows: np.ndarray, kind: Kind) -> np.ndarray | None:
        """The delta of ``kind`` for the copies of ``rows`` (None: all zero)."""
        d = self.deltas.get(kind)
        return None if d is None else d[self.slot[rows]]

    def keys(self, count: int) -> set[str]:
        """The topology keys with a delta in ``count``."""
        return {key for kind, key in self.deltas if kind == count}


def _counts(
    table: Any,
    rows: np.ndarray,
    key: str,
    counts: TopologyCounts,
    delta: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per node of the batch: its code for ``key`` and its pair's count (0 without the
    label), with ``delta`` added where the node has the label."""
    codes, index = topology_codes(table, key)
    c = codes[rows]
    inner = counts.get(key)
    n = per_value_array(index, inner, np.int64)[c] if inner else np.zeros(len(c), np.int64)
    if delta is not None:
        n = n + np.where(c >= 0, delta, 0)
    return c, n


def _first_pod_exception_batch(
    s: PreFilterState, table: Any, rows: np.ndarray, view: CopyView | None
) -> np.ndarray | bool:
    """:func:`_first_pod_exception` per copy: no affinity pair left once its deltas apply."""
    if view is None or not s.self_match:
        return np.bool_(_first_pod_exception(s))
    empty = np.ones(len(rows), dtype=bool)
    for key in set(s.affinity_counts) | view.keys(AFFINITY):
        inner = s.affinity_counts.get(key, {})
        c, base = _counts(table, rows, key, s.affinity_counts, None)
        after = base + np.where(c >= 0, _or_zero(view.delta(rows, (AFFINITY, key)), rows), 0)
        empty &= len(inner) - (base != 0) + (after != 0) == 0
    return empty


def _or_zero(delta: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    return np.zeros(len(rows), dtype=np.int64) if delta is None else delta


def filter_batch(s: PreFilterState, nodes: NodeBatch, view: CopyView | None = None) -> np.ndarray:
    """Filter for a batch of nodes; agrees with :func:`filter_node` on every node. With
    ``view``, on copies of the nodes whose counts differ by ``view``'s deltas."""
    n = len(nodes)
    out = np.full(n, None, dtype=object)
    if n == 0:
        return out
    table, rows = nodes.table, nodes.rows

    def delta(kind: Kind) -> np.ndarray | None:
        return None if view is None else view.delta(rows, kind)

    decided = np.zeros(n, dtype=bool)
    if s.affinity_terms:
        missing = np.zeros(n, dtype=bool)
        exist = np.ones(n, dtype=bool)
        for t in s.affinity_terms:
            key = t.topology_key
            c, count = _counts(table, rows, key, s.affinity_counts, delta((AFFINITY, key)))
            missing |= c < 0
            exist &= count > 0
        fail = missing | (~exist & ~_first_pod_exception_batch(s, table, rows, view))
        if fail.any():
            out[fail] = affinity_rejected()
            decided |= fail
    if (s.anti_affinity_counts or view is not None) and not decided.all():
        fail = np.zeros(n, dtype=bool)
        for t in s.anti_affinity_terms:
            key = t.topology_key
            fail |= _counts(table, rows, key, s.anti_affinity_counts, delta((ANTI, key)))[1] > 0
        fail &= ~decided
        if fail.any():
            out[fail] = anti_affinity_rejected()
            decided |= fail
    keys = set(s.existing_anti_affinity_counts)
    if view is not None:
        keys |= view.keys(EXISTING)
    if keys and not decided.all():
        fail = np.zeros(n, dtype=bool)
        for key in sorted(keys):
            existing = s.existing_anti_affinity_counts
            fail |= _counts(table, rows, key, existing, delta((EXISTING, key)))[1] > 0
        fail &= ~decided
        if fail.any():
            out[fail] = existing_anti_affinity_rejected()
    return out
