"""What filtering and scoring share: the incoming pod's terms with their namespaceSelector
resolved, namespace labels read once per cycle, and per-node topology value codes."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from typing import Any

import numpy as np

from kubesched import AffinityTerm, NodeInfo, NodeTable, PodInfo
from kubesched.api.selectors import LabelSelectorMatcher
from kubesched_builtin.names import INTER_POD_AFFINITY

EMPTY_LABELS: Mapping[str, str] = {}


class NamespaceLabels:
    """The labels of namespaces, read through the Handle's lister at most once per cycle.

    ``lookup`` answers ``None`` for a namespace the lister does not know: such a
    namespace is never selected by a namespaceSelector (upstream lists the existing
    namespaces), while as the incoming pod's own namespace it counts as having no
    labels (upstream's ``GetNamespaceLabelsSnapshot``).
    """

    __slots__ = ("_cache", "_lister")

    def __init__(self, lister: Any) -> None:
        self._lister = lister
        self._cache: dict[str, Mapping[str, str] | None] = {}

    def lookup(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of ``namespace``, or ``None`` if it does not exist."""
        try:
            return self._cache[namespace]
        except KeyError:
            pass
        obj = self._lister.get_namespace(namespace) if self._lister is not None else None
        labels = None if obj is None else dict(obj.metadata.labels or {})
        self._cache[namespace] = labels
        return labels

    def snapshot_of(self, namespace: str) -> Mapping[str, str]:
        """``namespace``'s labels, empty when it does not exist (``GetNamespaceLabelsSnapshot``)."""
        labels = self.lookup(namespace)
        return EMPTY_LABELS if labels is None else labels


class IncomingTerm:
    """A term of the incoming pod, after upstream's ``mergeAffinityTermNamespacesIfNotEmpty``.

    Upstream adds the names of the namespaces a non-empty namespaceSelector selects to
    the term's namespaces and then drops the selector; an empty selector (``{}``) stays
    and selects every namespace. We resolve the selector lazily instead, one namespace
    at a time as existing pods are met (through :class:`NamespaceLabels`), which gives
    the same set without listing every namespace of the cluster.
    """

    __slots__ = (
        "_matched_ns",
        "_namespace_labels",
        "all_namespaces",
        "namespace_selector",
        "namespaces",
        "selector",
        "topology_key",
    )

    def __init__(self, term: AffinityTerm, namespace_labels: NamespaceLabels) -> None:
        self.selector: LabelSelectorMatcher = term.selector
        self.topology_key = term.topology_key
        self.namespaces = term.namespaces
        ns_sel = term.namespace_selector
        self.all_namespaces = ns_sel is not None and ns_sel.matches_everything
        # A nil selector (labels.Nothing()) adds no namespace.
        self.namespace_selector = (
            ns_sel
            if ns_sel is not None and not ns_sel.matches_everything and not ns_sel.matches_nothing
            else None
        )
        self._namespace_labels = namespace_labels
        self._matched_ns: dict[str, bool] = {}

    def namespace_matches(self, namespace: str) -> bool:
        """Whether a pod in ``namespace`` is within the term's namespaces."""
        if self.all_namespaces or namespace in self.namespaces:
            return True
        if self.namespace_selector is None:
            return False
        hit = self._matched_ns.get(namespace)
        if hit is None:
            labels = self._namespace_labels.lookup(namespace)
            hit = labels is not None and self.namespace_selector.matches(labels)
            self._matched_ns[namespace] = hit
        return hit

    def matches(self, pod: PodInfo) -> bool:
        """Whether ``pod`` is selected by the term (namespace and labels)."""
        # The common cases inline: this runs once per pod of the cluster per term.
        if self.all_namespaces or pod.namespace in self.namespaces:
            return self.selector.matches(pod.labels)
        return self.namespace_matches(pod.namespace) and self.selector.matches(pod.labels)


def matches_all(terms: tuple[IncomingTerm, ...], pod: PodInfo) -> bool:
    """Upstream's ``podMatchesAllAffinityTerms``: false without terms."""
    if not terms:
        return False
    return all(t.matches(pod) for t in terms)


def node_labels(node_info: NodeInfo) -> Mapping[str, str]:
    """The labels of ``node_info``'s node (empty without a Node or labels)."""
    node = node_info.node
    if node is None:
        return EMPTY_LABELS
    return node.metadata.labels or EMPTY_LABELS


def bump(
    counts: dict[str, dict[str, int]], key: str, labels: Mapping[str, str], value: int
) -> None:
    """Add ``value`` to the pair (``key``, the node's value of label ``key``) if the node
    has the label; a pair that reaches zero is removed, as upstream's counts are."""
    v = labels.get(key)
    if v is None:
        return
    inner = counts.get(key)
    if inner is None:
        inner = counts[key] = {}
    n = inner.get(v, 0) + value
    if n:
        inner[v] = n
    else:
        inner.pop(v, None)
        if not inner:
            del counts[key]


def topology_codes(table: NodeTable, key: str) -> tuple[np.ndarray, dict[str, int]]:
    """Each node's value of label ``key`` as a code into ``index`` (-1 where absent).

    Computed once per NodeTable and key (until a Node changes). A per-value array
    ``a`` of length ``len(index) + 1`` whose last slot is the neutral value turns into a
    per-node array with ``a[codes]``, since code -1 picks the last slot.
    """
    return table.derived((INTER_POD_AFFINITY, "topology", key), lambda t: _factorize(t, key))


def _factorize(table: NodeTable, key: str) -> tuple[np.ndarray, dict[str, int]]:
    index: dict[str, int] = {}
    col = table.label_column(key)
    codes = np.fromiter(
        (-1 if v is None else index.setdefault(v, len(index)) for v in col),
        dtype=np.intp,
        count=len(col),
    )
    return codes, index


def per_value_array(index: Mapping[str, int], values: Mapping[str, int], dtype: Any) -> np.ndarray:
    """An array over ``index``'s codes (plus the neutral last slot) holding ``values``."""
    neutral = len(index)
    arr = np.zeros(neutral + 1, dtype=dtype)
    if values:
        # Values no node has land in the neutral slot, which is then cleared.
        codes = np.fromiter(
            map(index.get, values, repeat(neutral)), dtype=np.intp, count=len(values)
        )
        arr[codes] = np.fromiter(values.values(), dtype=dtype, count=len(values))
        arr[neutral] = 0
    return arr
