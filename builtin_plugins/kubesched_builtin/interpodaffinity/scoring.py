"""InterPodAffinity's PreScore, Score and NormalizeScore.

PreScore walks the pods once and sums weights per topology pair: the incoming pod's
preferred affinity (+weight) and anti-affinity (-weight) terms matched by existing
pods, and existing pods' terms that select the incoming pod (required affinity with
``hardPodAffinityWeight``, preferred affinity +weight, preferred anti-affinity
-weight). A node's score is the sum over topology keys of its pair's total;
NormalizeScore maps the lowest to 0 and the highest to 100 (upstream ``scoring.go``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched import MAX_NODE_SCORE, NodeBatch, NodeInfo, NodeScores, PodInfo, StateData, StateKey

from .terms import IncomingTerm, NamespaceLabels, node_labels, per_value_array, topology_codes

ScoreMap = dict[str, dict[str, int]]
"""Weights by topology key, then by label value (upstream ``scoreMap``). Unlike the
filter counts, a pair stays once a term matched, even if its sum is 0."""


class PreScoreState(StateData):
    """What PreScore computes for Score and NormalizeScore; never changed afterwards,
    so ``clone`` shares it (as upstream)."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: ScoreMap) -> None:
        self.topology_score = topology_score


PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey("PreScoreInterPodAffinity")


def has_preferred_terms(pod_info: PodInfo) -> bool:
    """Whether the incoming pod has preferred pod affinity or anti-affinity terms."""
    return bool(pod_info.preferred_affinity_terms or pod_info.preferred_anti_affinity_terms)


def _add(scores: ScoreMap, key: str, value: str, delta: int) -> None:
    inner = scores.get(key)
    if inner is None:
        inner = scores[key] = {}
    inner[value] = inner.get(value, 0) + delta


def compute_topology_score(
    pod_info: PodInfo,
    nodes: Sequence[NodeInfo],
    all_pods: bool,
    hard_pod_affinity_weight: int,
    lister: Any,
) -> ScoreMap:
    """Upstream's PreScore sum over ``nodes`` (``processExistingPod`` for each pod).

    ``all_pods``: the incoming pod has preferred terms, so every pod counts; otherwise
    only pods with (anti-)affinity terms can contribute.
    """
    namespaces = NamespaceLabels(lister)
    incoming: list[tuple[IncomingTerm, int]] = [
        (IncomingTerm(wt.term, namespaces), wt.weight) for wt in pod_info.preferred_affinity_terms
    ]
    incoming += [
        (IncomingTerm(wt.term, namespaces), -wt.weight)
        for wt in pod_info.preferred_anti_affinity_terms
    ]
    ns_labels = namespaces.snapshot_of(pod_info.namespace)
    hard = hard_pod_affinity_weight
    scores: ScoreMap = {}
    for ni in nodes:
        labels = node_labels(ni)
        # upstream processExistingPod ignores pods on nodes without labels.
        if not labels:
            continue
        # The incoming pod's preferred terms against every pod of the node: every
        # match adds the weight to the same pair, so count the matches first.
        if all_pods and ni.pods:
            for term, weight in incoming:
                v = labels.get(term.topology_key)
                if v is None:
                    continue
                n = sum(1 for p in ni.pods if term.matches(p))
                if n:
                    _add(scores, term.topology_key, v, weight * n)
        # Existing pods' terms against the incoming pod: only pods with terms have any.
        for existing in ni.pods_with_affinity:
            if hard > 0:
                for t in existing.required_affinity_terms:
                    v = labels.get(t.topology_key)
                    if v is not None and t.matches(pod_info, ns_labels):
                        _add(scores, t.topology_key, v, hard)
            for wt in existing.preferred_affinity_terms:
                t = wt.term
                v = labels.get(t.topology_key)
                if v is not None and t.matches(pod_info, ns_labels):
                    _add(scores, t.topology_key, v, wt.weight)
            for wt in existing.preferred_anti_affinity_terms:
                t = wt.term
                v = labels.get(t.topology_key)
                if v is not None and t.matches(pod_info, ns_labels):
                    _add(scores, t.topology_key, v, -wt.weight)
    return scores


def grouped_topology_score(
    pod_info: PodInfo,
    snapshot: Any,
    all_pods: bool,
    hard_pod_affinity_weight: int,
    lister: Any,
) -> ScoreMap:
    """:func:`compute_topology_score` over the snapshot's nodes, from its pod group
    indexes: one match per group of alike pods, weighted by the group's pods per domain."""
    namespaces = NamespaceLabels(lister)
    scores: ScoreMap = {}
    if all_pods:
        incoming = [
            (IncomingTerm(wt.term, namespaces), wt.weight)
            for wt in pod_info.preferred_affinity_terms
        ]
        incoming += [
            (IncomingTerm(wt.term, namespaces), -wt.weight)
            for wt in pod_info.preferred_anti_affinity_terms
        ]
        index = snapshot.pods_by_labels()
        for group in index.groups.values():
            for term, weight in incoming:
                if term.matches(group.sample):
                    _add_domains(
                        scores, term.topology_key, index.domains(group, term.topology_key), weight
                    )
    ns_labels = namespaces.snapshot_of(pod_info.namespace)
    hard = hard_pod_affinity_weight
    index = snapshot.pods_by_affinity_terms()
    for group in index.groups.values():
        existing = group.sample
        if hard > 0:
            for t in existing.required_affinity_terms:
                if t.matches(pod_info, ns_labels):
                    _add_domains(scores, t.topology_key, index.domains(group, t.topology_key), hard)
        for wt in existing.preferred_affinity_terms:
            t = wt.term
            if t.matches(pod_info, ns_labels):
                _add_domains(
                    scores, t.topology_key, index.domains(group, t.topology_key), wt.weight
                )
        for wt in existing.preferred_anti_affinity_terms:
            t = wt.term
            if t.matches(pod_info, ns_labels):
                _add_domains(
                    scores, t.topology_key, index.domains(group, t.topology_key), -wt.weight
                )
    return scores


def _add_domains(scores: ScoreMap, key: str, domains: Mapping[str, int], weight: int) -> None:
    """Add ``weight`` per pod of each domain: the pairs that a per-pod walk would add."""
    if not domains:
        return
    inner = scores.get(key)
    if inner is None:
        inner = scores[key] = {}
    for v, n in domains.items():
        inner[v] = inner.get(v, 0) + weight * n


def score_node(s: PreScoreState, labels: Mapping[str, str]) -> int:
    """A node's raw score: its pairs' sums over the topology keys it has."""
    total = 0
    for key, values in s.topology_score.items():
        v = labels.get(key)
        if v is not None:
            total += values.get(v, 0)
    return total


def score_batch(s: PreScoreState, nodes: NodeBatch) -> np.ndarray:
    """Raw scores of a batch of nodes; agrees with :func:`score_node`."""
    total = np.zeros(len(nodes), dtype=np.int64)
    for key, values in s.topology_score.items():
        codes, index = topology_codes(nodes.table, key)
        total += per_value_array(index, values, np.int64)[codes[nodes.rows]]
    return total


def normalize(s: PreScoreState, scores: NodeScores) -> None:
    """Rescale to 0..100 between the lowest and the highest score (upstream
    ``NormalizeScore``): ``int(100 * (score - min) / (max - min))``, all 0 when equal."""
    if not s.topology_score:
        return
    values = scores.values
    if not len(values):
        return
    lo = int(values.min())
    diff = int(values.max()) - lo
    if diff > 0:
        # Same float64 operations as upstream: (score-min)/diff first, then * 100,
        # truncated toward zero by the int conversion.
        fractions = (values - lo).astype(np.float64) / float(diff)
        values[:] = (float(MAX_NODE_SCORE) * fractions).astype(np.int64)
    else:
        values[:] = 0
