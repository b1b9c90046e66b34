"""PodTopologySpread's shared pieces: parsed constraints, default selectors, per-node columns."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import (
    LabelSelectorMatcher,
    Node,
    Pod,
    RequiredNodeAffinity,
    TopologySpreadConstraint,
    compile_label_selector,
    find_untolerated_taint,
    selector_from_set,
)
from kubesched.api.selectors import MATCH_EVERYTHING
from kubesched.framework.node_table import NodeTable
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched_builtin.names import POD_TOPOLOGY_SPREAD

LABEL_HOSTNAME = "kubernetes.io/hostname"
"""``v1.LabelHostname``: per-node domains, counted at Score time (upstream's special case)."""
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
"""``v1.LabelTopologyZone``."""

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

# helper.DoNotScheduleTaintsFilterFunc: the taint effects that keep a pod off a node.
_DO_NOT_SCHEDULE_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Constraint:
    """A topology spread constraint with its selector compiled (upstream
    ``topologySpreadConstraint``); policies defaulted (Honor affinity, Ignore taints)."""

    max_skew: int
    topology_key: str
    selector: LabelSelectorMatcher
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str


def merge_label_set_with_selector(
    match_labels: Mapping[str, str], selector: LabelSelectorMatcher
) -> LabelSelectorMatcher:
    """``mergeLabelSetWithSelector``: AND ``key=value`` pairs into ``selector``.

    A nil selector (matches nothing) has no requirements to merge and stays as it is,
    as in upstream's newest version.
    """
    if selector.matches_nothing:
        return selector
    pairs = tuple(match_labels.items())
    exprs = tuple((key, op, frozenset(values)) for key, op, values in selector.requirements)
    return LabelSelectorMatcher(pairs, exprs)


def filter_topology_spread_constraints(
    constraints: Sequence[TopologySpreadConstraint],
    pod_labels: Mapping[str, str],
    action: str,
    *,
    merge_match_label_keys: bool = True,
) -> list[Constraint]:
    """The constraints whose ``whenUnsatisfiable`` is ``action``, parsed.

    With ``merge_match_label_keys``, ``matchLabelKeys`` take their values from the pod's
    labels (keys the pod does not have are ignored) and are ANDed into the selector;
    without it the selector is used as written (the API server merged them when it
    created the pod). An invalid selector raises ``ValueError``.
    """
    result = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = compile_label_selector(c.label_selector)
        if merge_match_label_keys and c.match_label_keys:
            match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if match_labels:
                selector = merge_label_set_with_selector(match_labels, selector)
        result.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=c.node_affinity_policy or HONOR,
                node_taints_policy=c.node_taints_policy or IGNORE,
            )
        )
    return result


def default_selector(pod: Pod, lister: Any) -> LabelSelectorMatcher:
    """``helper.DefaultSelector``: the selector of the Services, ReplicationController,
    ReplicaSet or StatefulSet selecting ``pod`` (everything-matching when none does).

    Services of the pod's namespace whose selector matches the pod contribute their
    selectors; the pod's controller (owner reference with ``controller: true``) of kind
    ``v1/ReplicationController``, ``apps/v1/ReplicaSet`` or ``apps/v1/StatefulSet``, if
    found in the lister, adds its selector.
    """
    if lister is None:
        return MATCH_EVERYTHING
    namespace = pod.metadata.namespace or "default"
    pod_labels = pod.metadata.labels or {}
    label_set: dict[str, str] = {}
    # Services, RCs, RSs and SSs that all select the pod cannot conflict: merging is safe.
    for service in lister.list_services(namespace):
        sel = service.spec.selector
        if not sel:
            # A nil selector matches nothing; an empty one adds nothing.
            continue
        if selector_from_set(sel).matches(pod_labels):
            label_set.update(sel)
    selector = selector_from_set(label_set)
    owner = pod.metadata.controller_ref
    if owner is None:
        return selector
    kind = (owner.api_version, owner.kind)
    if kind == ("v1", "ReplicationController"):
        for rc in lister.list_replication_controllers(namespace):
            if rc.metadata.name == owner.name:
                label_set.update(rc.spec.selector or {})
                selector = selector_from_set(label_set)
                break
    elif kind in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
        objs = (
            lister.list_replica_sets(namespace)
            if owner.kind == "ReplicaSet"
            else lister.list_stateful_sets(namespace)
        )
        for obj in objs:
            if obj.metadata.name != owner.name:
                continue
            try:
                other = compile_label_selector(obj.spec.selector)
            except ValueError:
                break
            if not other.matches_nothing:
                selector = LabelSelectorMatcher(
                    (),
                    tuple((k, op, frozenset(v)) for k, op, v in selector.requirements)
                    + tuple((k, op, frozenset(v)) for k, op, v in other.requirements),
                )
            break
    return selector


def node_labels_match_spread_constraints(
    labels: Mapping[str, str], constraints: Sequence[Constraint]
) -> bool:
    """Whether the node has every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def count_pods_match_selector(
    pods: Sequence[PodInfo], selector: LabelSelectorMatcher, namespace: str
) -> int:
    """Pods of ``namespace``, not terminating, whose labels ``selector`` matches."""
    if selector.matches_nothing:
        return 0
    count = 0
    for p in pods:
        # Terminating pods are bypassed (kubernetes#87621).
        if p.namespace != namespace or p.pod.metadata.deletion_timestamp is not None:
            continue
        if selector.matches(p.labels):
            count += 1
    return count


def grouped_counts(snapshot: Any, selector: LabelSelectorMatcher, namespace: str) -> np.ndarray:
    """Per row of ``snapshot.table``, its pods of ``namespace``, not terminating, that
    ``selector`` matches (``count_pods_match_selector`` from the pod groups)."""
    table = snapshot.table
    out = np.zeros(len(table.infos), dtype=np.int64)
    index = snapshot.pods_by_labels()
    row_of = table.index
    for group in index.groups.values():
        p = group.sample
        if p.namespace != namespace or p.pod.metadata.deletion_timestamp is not None:
            continue
        if not selector.matches(p.labels):
            continue
        nodes = group.nodes
        rows = np.fromiter(map(row_of.__getitem__, nodes), dtype=np.intp, count=len(nodes))
        np.add.at(out, rows, np.fromiter(nodes.values(), dtype=np.int64, count=len(nodes)))
    return out


def grouped_snapshot(handle: Any, table: NodeTable) -> Any:
    """The Handle's snapshot when ``table`` is its table and it has pod groups, else None."""
    snapshot = getattr(handle, "snapshot", None)
    if getattr(snapshot, "table", None) is table and hasattr(snapshot, "pods_by_labels"):
        return snapshot
    return None


class PodCounter:
    """Counts matching pods per node, remembering counts across cycles by NodeInfo
    generation.

    A NodeInfo's ``generation`` changes whenever its pods or Node change, and an
    unchanged node keeps its generation across snapshots, so a count cached under
    ``(selector, namespace, generation)`` stays exact. Consecutive pods of one
    workload then only recount the nodes that changed since the previous cycle.
    """

    __slots__ = ("_maps", "max_selectors")

    def __init__(self, max_selectors: int = 32) -> None:
        self._maps: OrderedDict[tuple[LabelSelectorMatcher, str], dict[int, int]] = OrderedDict()
        self.max_selectors = max_selectors

    def _map(self, selector: LabelSelectorMatcher, namespace: str) -> dict[int, int]:
        key = (selector, namespace)
        m = self._maps.get(key)
        if m is None:
            m = self._maps[key] = {}
            if len(self._maps) > self.max_selectors:
                self._maps.popitem(last=False)
        else:
            self._maps.move_to_end(key)
        return m

    def count(self, node_info: NodeInfo, selector: LabelSelectorMatcher, namespace: str) -> int:
        """Matching pods on one node."""
        if not node_info.pods or selector.matches_nothing:
            return 0
        m = self._map(selector, namespace)
        gen = node_info.generation
        c = m.get(gen)
        if c is None:
            c = m[gen] = count_pods_match_selector(node_info.pods, selector, namespace)
        return c

    def counts(
        self,
        infos: Sequence[NodeInfo],
        rows: np.ndarray,
        selector: LabelSelectorMatcher,
        namespace: str,
        snapshot: Any = None,
    ) -> np.ndarray:
        """Matching pods on the nodes ``infos[rows]``, aligned with ``rows``.

        With ``snapshot`` (whose table's infos are ``infos``), from its pod groups:
        one selector match per group of alike pods and no loop over the nodes.
        """
        out = np.zeros(len(rows), dtype=np.int64)
        if selector.matches_nothing:
            return out
        if snapshot is not None:
            return grouped_counts(snapshot, selector, namespace)[rows]
        m = self._map(selector, namespace)
        get = m.get
        for j, r in enumerate(rows.tolist()):
            ni = infos[r]
            if not ni.pods:
                continue
            gen = ni.generation
            c = get(gen)
            if c is None:
                c = m[gen] = count_pods_match_selector(ni.pods, selector, namespace)
            out[j] = c
        # Drop counts of generations no longer in use, now and then.
        if len(m) > 2 * len(infos) + 1024:
            live = {ni.generation for ni in infos}
            for g in [g for g in m if g not in live]:
                del m[g]
        return out


# --- per-node columns, cached on the snapshot's NodeTable ------------------------------


@dataclass(frozen=True, slots=True)
class Domains:
    """The values of one topology key over a table's nodes, as integer codes.

    ``codes[i]`` is the code of node ``i``'s value; a node without the label gets the
    code of ``""`` (Go's map lookup of a missing label), and ``has[i]`` says whether
    the node has the label at all. ``values[code]`` is the value, ``index`` the reverse.
    """

    values: list[str]
    index: dict[str, int]
    codes: np.ndarray
    has: np.ndarray


def domains(table: NodeTable, key: str) -> Domains:
    """The (cached) domains of ``key`` over ``table``'s nodes."""
    return table.derived((POD_TOPOLOGY_SPREAD, "domains", key), lambda t: _domains(t, key))


def _domains(table: NodeTable, key: str) -> Domains:
    col = table.label_column(key)
    index: dict[str, int] = {}
    values: list[str] = []
    codes = np.empty(len(col), dtype=np.intp)
    has = np.empty(len(col), dtype=bool)
    for i, v in enumerate(col.tolist()):
        has[i] = v is not None
        if v is None:
            v = ""
        c = index.get(v)
        if c is None:
            c = index[v] = len(values)
            values.append(v)
        codes[i] = c
    return Domains(values, index, codes, has)


def has_all_keys(table: NodeTable, constraints: Sequence[Constraint]) -> np.ndarray:
    """Which nodes have every constraint's topology key."""
    mask = np.ones(len(table), dtype=bool)
    for c in constraints:
        mask &= domains(table, c.topology_key).has
    return mask


def _affinity_key(pod: Pod) -> tuple[Any, ...] | None:
    spec = pod.spec
    required = None
    if spec.affinity is not None and spec.affinity.node_affinity is not None:
        required = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if not spec.node_selector and required is None:
        return None
    return (
        tuple(sorted(spec.node_selector.items())),
        required.model_dump_json() if required is not None else None,
    )


def node_affinity_mask(table: NodeTable, pod: Pod) -> np.ndarray | None:
    """Which nodes match the pod's nodeSelector and required node affinity (``None``:
    all of them). Cached per distinct nodeSelector/affinity, as pods of one workload
    share them."""
    key = _affinity_key(pod)
    if key is None:
        return None

    def compute(t: NodeTable) -> np.ndarray:
        required = RequiredNodeAffinity(pod)
        return np.fromiter(
            (ni.node is not None and required.matches(ni.node) for ni in t.infos),
            dtype=bool,
            count=len(t.infos),
        )

    return table.derived((POD_TOPOLOGY_SPREAD, "affinity", key), compute)


def _tainted_rows(table: NodeTable) -> np.ndarray:
    def compute(t: NodeTable) -> np.ndarray:
        return np.fromiter(
            (
                i
                for i, ni in enumerate(t.infos)
                if ni.node is not None
                and any(x.effect in _DO_NOT_SCHEDULE_EFFECTS for x in ni.node.spec.taints)
            ),
            dtype=np.intp,
        )

    return table.derived((POD_TOPOLOGY_SPREAD, "tainted"), compute)


def node_taints_mask(table: NodeTable, pod_info: PodInfo) -> np.ndarray:
    """Which nodes' NoSchedule/NoExecute taints the pod tolerates."""
    tolerations = pod_info.tolerations
    key = (POD_TOPOLOGY_SPREAD, "taints", tuple(t.model_dump_json() for t in tolerations))

    def compute(t: NodeTable) -> np.ndarray:
        mask = np.ones(len(t), dtype=bool)
        for r in _tainted_rows(t).tolist():
            node = t.infos[r].node
            if find_untolerated_taint(node.spec.taints, tolerations, _DO_NOT_SCHEDULE_EFFECTS):
                mask[r] = False
        return mask

    return table.derived(key, compute)


def match_node_inclusion_policies(
    c: Constraint, pod_info: PodInfo, node: Node, required: RequiredNodeAffinity
) -> bool:
    """``matchNodeInclusionPolicies``: with Honor, the node must match the pod's required
    node affinity / tolerate its NoSchedule and NoExecute taints to count."""
    if c.node_affinity_policy == HONOR and not required.matches(node):
        return False
    return not (
        c.node_taints_policy == HONOR
        and find_untolerated_taint(node.spec.taints, pod_info.tolerations, _DO_NOT_SCHEDULE_EFFECTS)
        is not None
    )


def inclusion_mask(
    c: Constraint,
    table: NodeTable,
    pod_info: PodInfo,
    base: np.ndarray,
) -> np.ndarray:
    """``base`` narrowed by the constraint's node inclusion policies."""
    mask = base
    if c.node_affinity_policy == HONOR:
        aff = node_affinity_mask(table, pod_info.pod)
        if aff is not None:
            mask = mask & aff
    if c.node_taints_policy == HONOR:
        mask = mask & node_taints_mask(table, pod_info)
    return mask


def table_for(handle: Any, nodes: Sequence[NodeInfo]) -> NodeTable:
    """The snapshot's NodeTable when its rows are exactly ``nodes``, else a new one."""
    snapshot = getattr(handle, "snapshot", None)
    table = getattr(snapshot, "table", None)
    if table is not None:
        # The scheduler passes the snapshot's own list: O(1) instead of a walk.
        if nodes is snapshot.list():
            return table
        if len(table.infos) == len(nodes) and all(
            a is b for a, b in zip(table.infos, nodes, strict=True)
        ):
            return table
    return NodeTable(list(nodes))
