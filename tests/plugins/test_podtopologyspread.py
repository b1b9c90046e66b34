"""Tests of the PodTopologySpread plugin: filtering, scoring, defaults, args, preemption hooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from kubesched.api import LabelSelectorRequirement, Node, Pod, ReplicaSet, Service, StatefulSet
from kubesched.cache import new_snapshot
from kubesched.features import FeatureGates
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint
from kubesched.framework.listers import StaticLister
from kubesched.framework.status import Code
from kubesched.framework.types import NodeBatch, PodInfo
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PodTopologySpread,
    PodTopologySpreadArgs,
)
from kubesched_builtin.podtopologyspread.filtering import PRE_FILTER_STATE_KEY, CriticalPaths

HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
DNS, SA = "DoNotSchedule", "ScheduleAnyway"


def node(name: str, **labels: str) -> Node:
    """A node with exactly ``labels`` (no implicit hostname label)."""
    m = make_node(name).manifest()
    m["metadata"]["labels"] = dict(labels)
    return Node.model_validate(m)


def hnode(name: str, **labels: str) -> Node:
    """A node with the hostname label and ``labels``."""
    m = make_node(name).manifest()
    m["metadata"]["labels"].update(labels)
    return Node.model_validate(m)


def pods_on(node_name: str, n: int, prefix: str | None = None, **labels: str) -> list[Pod]:
    prefix = prefix or f"p-{node_name}"
    return [make_pod(f"{prefix}{i}").labels(labels).node(node_name).obj() for i in range(n)]


def _framework(args: dict | None = None, lister: Any = None, gates: FeatureGates | None = None):
    return make_framework(
        PodTopologySpread, args={NAME: args} if args else None, lister=lister, feature_gates=gates
    )


def run_filter(
    pod: Pod,
    existing: Sequence[Pod],
    nodes: Sequence[Node],
    args: dict | None = None,
    lister: Any = None,
    gates: FeatureGates | None = None,
) -> dict[str, Any]:
    """Node name -> Filter status (None: passes); checks batch == per node."""
    snap = new_snapshot(existing, nodes)
    fw = _framework(args, lister, gates)
    fw.set_snapshot(snap)
    pl = fw.plugin(NAME)
    state = CycleState()
    pi = PodInfo(pod)
    st = pl.pre_filter(state, pi, snap.list())
    if st is not None and st.is_skip():
        return {n.metadata.name: "skip" for n in nodes}
    assert st is None, st
    infos = snap.list()
    per_node = [pl.filter(state, ni) for ni in infos]
    batch = pl.filter_nodes(state, NodeBatch(snap.table, range(len(infos)), infos))
    assert [_key(s) for s in per_node] == [_key(s) for s in batch]
    # A batch on a table of its own (other codes) agrees as well.
    from kubesched.testing import node_batch

    other = pl.filter_nodes(state, node_batch(list(reversed(infos))))
    assert [_key(s) for s in reversed(per_node)] == [_key(s) for s in other]
    return {ni.name: per_node[i] for i, ni in enumerate(infos)}


def _key(s: Any) -> Any:
    return None if s is None else (s.code, tuple(s.reasons))


def passing(result: dict[str, Any]) -> set[str]:
    return {n for n, s in result.items() if s is None}


# --- Filter --------------------------------------------------------------------------


def _tainted(name: str) -> Node:
    m = make_node(name).taint("dedicated", "x", "NoSchedule").manifest()
    return Node.model_validate(m)


ZONE_NODES = [
    hnode("node-a", zone="zone1"),
    hnode("node-b", zone="zone1"),
    hnode("node-x", zone="zone2"),
    hnode("node-y", zone="zone2"),
]

FILTER_CASES = [
    (
        "no existing pods",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj(),
        [],
        ZONE_NODES,
        {"node-a", "node-b", "node-x", "node-y"},
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, BAR).obj(),
        [],
        ZONE_NODES,
        {"node-a", "node-b", "node-x", "node-y"},
    ),
    (
        "existing pods in a different namespace do not count",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj(),
        [
            make_pod("p-a1").namespace("ns1").labels(foo="").node("node-a").obj(),
            make_pod("p-b1").namespace("ns2").labels(foo="").node("node-b").obj(),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 2, foo=""),
        ],
        ZONE_NODES,
        {"node-a", "node-b"},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj(),
        [
            *pods_on("node-a", 1, foo=""),
            *pods_on("node-b", 2, foo=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 2, foo=""),
        ],
        ZONE_NODES,
        {"node-a", "node-b", "node-x", "node-y"},
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj(),
        [
            *pods_on("node-a", 1, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 1, foo=""),
        ],
        [
            hnode("node-a", zone="zone1"),
            hnode("node-b", zon="zone1"),
            hnode("node-x", zone="zone2"),
            hnode("node-y", zone="zone2"),
        ],
        {"node-a"},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        make_pod("p").labels(foo="").spread_constraint(1, "rack", DNS, FOO).obj(),
        [],
        [hnode("node-a", zone="zone1"), hnode("node-x", zone="zone2")],
        set(),
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, DNS, FOO).obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        ZONE_NODES,
        {"node-x"},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        make_pod("p").labels(foo="").spread_constraint(2, HOST, DNS, FOO).obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        ZONE_NODES,
        {"node-b", "node-x"},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        make_pod("p").labels(bar="").spread_constraint(1, HOST, DNS, FOO).obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        ZONE_NODES,
        {"node-b", "node-x"},
    ),
    (
        "terminating pods are not counted",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, DNS, FOO).obj(),
        [
            make_pod("t1")
            .labels(foo="")
            .node("node-a")
            .deletion_timestamp("2024-01-01T00:00:00Z")
            .obj(),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 1, foo=""),
        ],
        ZONE_NODES,
        {"node-a"},
    ),
    (
        # node-b and node-x pass this Filter too; NodeAffinity's Filter rejects them.
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, HOST, DNS, FOO)
        .node_affinity_in("node", ["node-a", "node-y"])
        .obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        [
            hnode(n, zone=z, node=n)
            for n, z in (
                ("node-a", "zone1"),
                ("node-b", "zone1"),
                ("node-x", "zone2"),
                ("node-y", "zone2"),
            )
        ],
        {"node-a", "node-b", "node-x"},
    ),
    (
        "two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, "zone", DNS, FOO)
        .spread_constraint(1, HOST, DNS, FOO)
        .obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        ZONE_NODES,
        {"node-x"},
    ),
    (
        "two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, "zone", DNS, FOO)
        .spread_constraint(1, HOST, DNS, FOO)
        .obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 4, foo=""),
        ],
        ZONE_NODES,
        set(),
    ),
    (
        "minDomains 3 with 2 zones: global minimum is 0",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO, min_domains=3).obj(),
        [*pods_on("node-a", 1, foo=""), *pods_on("node-x", 1, foo="")],
        ZONE_NODES,
        set(),
    ),
    (
        "minDomains 2 with 2 zones: no effect",
        make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO, min_domains=2).obj(),
        [*pods_on("node-a", 1, foo=""), *pods_on("node-x", 1, foo="")],
        ZONE_NODES,
        {"node-a", "node-b", "node-x", "node-y"},
    ),
    (
        "minDomains 3, maxSkew 2 with 2 zones: one more pod per zone fits",
        make_pod("p").labels(foo="").spread_constraint(2, "zone", DNS, FOO, min_domains=3).obj(),
        [*pods_on("node-a", 1, foo=""), *pods_on("node-x", 2, foo="")],
        ZONE_NODES,
        {"node-a", "node-b"},
    ),
    (
        "nodeTaintsPolicy Honor: the untolerated tainted node's domain is not counted",
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, HOST, DNS, FOO, node_taints_policy="Honor")
        .obj(),
        [*pods_on("node-a", 1, foo=""), *pods_on("node-b", 1, foo="")],
        [hnode("node-a"), hnode("node-b"), _tainted("node-c")],
        {"node-a", "node-b", "node-c"},
    ),
    (
        "nodeTaintsPolicy Ignore (default): the tainted empty node is the minimum",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, DNS, FOO).obj(),
        [*pods_on("node-a", 1, foo=""), *pods_on("node-b", 1, foo="")],
        [hnode("node-a"), hnode("node-b"), _tainted("node-c")],
        {"node-c"},
    ),
    (
        "nodeAffinityPolicy Ignore: nodes outside the affinity count",
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, HOST, DNS, FOO, node_affinity_policy="Ignore")
        .node_affinity_in("node", ["node-a", "node-y"])
        .obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        [hnode(n, node=n) for n in ("node-a", "node-b", "node-x", "node-y")],
        {"node-x"},
    ),
    (
        "nil labelSelector matches no pod, not even itself",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, DNS, None).obj(),
        [*pods_on("node-a", 3, foo="")],
        [hnode("node-a"), hnode("node-b")],
        {"node-a", "node-b"},
    ),
    (
        "empty labelSelector matches every pod of the namespace",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, DNS, {}).obj(),
        [*pods_on("node-a", 1, bar="")],
        [hnode("node-a"), hnode("node-b")],
        {"node-b"},
    ),
]


@pytest.mark.parametrize(
    "pod,existing,nodes,want", [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(pod: Pod, existing: list[Pod], nodes: list[Node], want: set[str]) -> None:
    assert passing(run_filter(pod, existing, nodes)) == want


MERGE_OFF = FeatureGates({"MatchLabelKeysInPodTopologySpreadSelectorMerge": False})
KEYS_OFF = FeatureGates(
    {
        "MatchLabelKeysInPodTopologySpread": False,
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": False,
    }
)
REVISIONS = [*pods_on("node-a", 2, foo="", rev="1"), *pods_on("node-b", 1, foo="", rev="2")]

MATCH_LABEL_KEYS_CASES = [
    # (id, pod labels, merged by the API server, feature gates, nodes passing)
    ("selector-merged-by-the-api-server", {"foo": "", "rev": "2"}, True, None, {"node-a"}),
    ("gate-on-selector-read-as-written", {"foo": "", "rev": "2"}, False, None, {"node-b"}),
    ("selector-merge-off-plugin-merges", {"foo": "", "rev": "2"}, False, MERGE_OFF, {"node-a"}),
    ("merge-off-key-the-pod-lacks-ignored", {"foo": ""}, False, MERGE_OFF, {"node-b"}),
    ("match-label-keys-off-ignored", {"foo": "", "rev": "2"}, False, KEYS_OFF, {"node-b"}),
]


@pytest.mark.parametrize(
    "labels,merged,gates,want",
    [c[1:] for c in MATCH_LABEL_KEYS_CASES],
    ids=[c[0] for c in MATCH_LABEL_KEYS_CASES],
)
def test_match_label_keys_follow_the_gates(
    labels: dict[str, str], merged: bool, gates: FeatureGates | None, want: set[str]
) -> None:
    """``matchLabelKeys: [rev]``: kube-apiserver v1.36 merges the key into the selector at
    creation (MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default), so the plugin
    reads the selector as it is; with that gate off the plugin merges the pod's labels
    itself, and with MatchLabelKeysInPodTopologySpread off too it ignores them."""
    pod = (
        make_pod("p")
        .labels(labels)
        .spread_constraint(1, HOST, DNS, FOO, match_label_keys=["rev"])
        .obj()
    )
    if merged:
        # What kube-apiserver stores: the key's "In" requirement appended to the selector.
        selector = pod.spec.topology_spread_constraints[0].label_selector
        selector.match_expressions = [
            *selector.match_expressions,
            LabelSelectorRequirement(key="rev", operator="In", values=[labels["rev"]]),
        ]
    nodes = [hnode("node-a"), hnode("node-b")]
    assert passing(run_filter(pod, REVISIONS, nodes, gates=gates)) == want


def test_filter_reasons() -> None:
    pod = make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj()
    result = run_filter(
        pod,
        [*pods_on("node-a", 2, foo="")],
        [hnode("node-a", zone="z1"), hnode("node-b"), hnode("node-x", zone="z2")],
    )
    assert result["node-x"] is None
    assert _key(result["node-a"]) == (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,))
    assert _key(result["node-b"]) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (ERR_REASON_NODE_LABEL_NOT_MATCH,),
    )
    assert ERR_REASON_NODE_LABEL_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_filter_first_failing_constraint_decides_reason() -> None:
    # Constraint 1 (zone) is violated on node-a before constraint 2's missing "rack".
    pod = (
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, "zone", DNS, FOO)
        .spread_constraint(1, "rack", DNS, FOO)
        .obj()
    )
    nodes = [
        hnode("node-a", zone="z1"),
        hnode("node-a2", zone="z1", rack="r2"),
        hnode("node-x", zone="z2", rack="r1"),
    ]
    result = run_filter(pod, pods_on("node-a2", 2, foo=""), nodes)
    assert result["node-a"].code == Code.UNSCHEDULABLE
    assert result["node-x"] is None
    # Alone in its zone, node-a passes the zone constraint and then lacks "rack".
    result = run_filter(pod, [], nodes)
    assert result["node-a"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pre_filter_skips_without_hard_constraints() -> None:
    pod = make_pod("p").labels(foo="").spread_constraint(1, "zone", SA, FOO).obj()
    assert run_filter(pod, [], ZONE_NODES) == {n.metadata.name: "skip" for n in ZONE_NODES}


def test_pre_filter_state_counts_and_critical_paths() -> None:
    pod = (
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, "zone", DNS, FOO)
        .spread_constraint(1, HOST, DNS, FOO)
        .obj()
    )
    existing = [
        *pods_on("node-a", 2, foo=""),
        *pods_on("node-b", 1, foo=""),
        *pods_on("node-y", 3, foo=""),
    ]
    snap = new_snapshot(existing, ZONE_NODES)
    fw = _framework()
    fw.set_snapshot(snap)
    state = CycleState()
    assert fw.plugin(NAME).pre_filter(state, PodInfo(pod), snap.list()) is None
    s = state.read(PRE_FILTER_STATE_KEY)
    assert s.tp_value_to_match_num() == [
        {"zone1": 3, "zone2": 3},
        {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 3},
    ]
    assert s.counts[0].paths.min_match_num == 3
    assert s.counts[1].paths.paths == [["node-x", 0], ["node-b", 1]]
    assert [c.domains_num for c in s.counts] == [2, 4]


# --- the Kubernetes docs' worked examples -----------------------------------------------

SEED_NODES = [
    node("node1", node="node1", zone="zoneA"),
    node("node2", node="node2", zone="zoneA"),
    node("node3", node="node3", zone="zoneB"),
    node("node4", node="node4", zone="zoneB"),
]
SEED_PODS = [
    *pods_on("node1", 1, foo="bar"),
    *pods_on("node2", 1, foo="bar"),
    *pods_on("node3", 1, foo="bar"),
]
FOOBAR = {"foo": "bar"}


def test_seed_one_constraint_zone_b() -> None:
    pod = make_pod("mypod").labels(foo="bar").spread_constraint(1, "zone", DNS, FOOBAR).obj()
    assert passing(run_filter(pod, SEED_PODS, SEED_NODES)) == {"node3", "node4"}


def test_seed_one_constraint_max_skew_2_allows_zone_a() -> None:
    pod = make_pod("mypod").labels(foo="bar").spread_constraint(2, "zone", DNS, FOOBAR).obj()
    assert passing(run_filter(pod, SEED_PODS, SEED_NODES)) == {"node1", "node2", "node3", "node4"}


def test_seed_topology_key_node_only_node4() -> None:
    pod = make_pod("mypod").labels(foo="bar").spread_constraint(1, "node", DNS, FOOBAR).obj()
    assert passing(run_filter(pod, SEED_PODS, SEED_NODES)) == {"node4"}


def test_seed_two_constraints_node4() -> None:
    pod = (
        make_pod("mypod")
        .labels(foo="bar")
        .spread_constraint(1, "zone", DNS, FOOBAR)
        .spread_constraint(1, "node", DNS, FOOBAR)
        .obj()
    )
    assert passing(run_filter(pod, SEED_PODS, SEED_NODES)) == {"node4"}


def test_seed_conflicting_constraints_unschedulable() -> None:
    nodes = SEED_NODES[:3]
    existing = [
        *pods_on("node1", 2, foo="bar"),
        *pods_on("node2", 1, foo="bar"),
        *pods_on("node3", 2, foo="bar"),
    ]
    pod = (
        make_pod("mypod")
        .labels(foo="bar")
        .spread_constraint(1, "zone", DNS, FOOBAR)
        .spread_constraint(1, "node", DNS, FOOBAR)
        .obj()
    )
    assert passing(run_filter(pod, existing, nodes)) == set()


def test_seed_node_affinity_excludes_zone_c() -> None:
    nodes = [*SEED_NODES, node("node5", node="node5", zone="zoneC")]
    pod = (
        make_pod("mypod")
        .labels(foo="bar")
        .spread_constraint(1, "zone", DNS, FOOBAR)
        .node_affinity_in("zone", ["zoneC"], operator="NotIn")
        .obj()
    )
    # Without the affinity zoneC (0 pods) would be the minimum and only it would fit;
    # with it, zone B is the minimum. node5 passes this plugin (its zone is not counted)
    # and is rejected by NodeAffinity's own Filter, so the pod lands in zone B.
    assert passing(run_filter(pod, SEED_PODS, nodes)) == {"node3", "node4", "node5"}
    plain = make_pod("mypod").labels(foo="bar").spread_constraint(1, "zone", DNS, FOOBAR).obj()
    assert passing(run_filter(plain, SEED_PODS, nodes)) == {"node5"}


def test_seed_schedule_anyway_prefers_zone_b() -> None:
    pod = make_pod("mypod").labels(foo="bar").spread_constraint(1, "zone", SA, FOOBAR).obj()
    scores = run_score(pod, SEED_PODS, SEED_NODES)
    assert scores["node3"] == scores["node4"] > scores["node1"] == scores["node2"]


def test_seed_node_without_zone_label_is_bypassed() -> None:
    # node1 has no zone: its 1 pod is disregarded, so zone A counts 1 and zone B 1.
    nodes = [node("node1", node="node1"), *SEED_NODES[1:]]
    pod = make_pod("mypod").labels(foo="bar").spread_constraint(1, "zone", DNS, FOOBAR).obj()
    assert passing(run_filter(pod, SEED_PODS, nodes)) == {"node2", "node3", "node4"}


# --- Score ---------------------------------------------------------------------------


def run_score(
    pod: Pod,
    existing: Sequence[Pod],
    nodes: Sequence[Node],
    failed: Sequence[Node] = (),
    args: dict | None = None,
    lister: Any = None,
) -> dict[str, int]:
    """Normalised scores of ``nodes`` (``failed`` nodes exist but are not feasible),
    through the real runtime; checks score_nodes == score per node."""
    snap = new_snapshot(existing, [*nodes, *failed])
    fw = _framework(args, lister)
    fw.set_snapshot(snap)
    pl = fw.plugin(NAME)
    pi = PodInfo(pod)
    state = fw.new_cycle_state()
    feasible = [snap.get(n.metadata.name) for n in nodes]
    status = fw.run_pre_score_plugins(state, pi, feasible)
    assert status.is_success(), status
    rows = [snap.table.index[ni.name] for ni in feasible]
    batch = NodeBatch(snap.table, rows, feasible)
    result = fw.run_score_plugins(state, pi, batch)
    if NAME in state.skip_score_plugins:
        return {}
    (ps,) = [p for p in result.plugins if p.plugin == NAME]
    per_node = [pl.score(state, ni) for ni in feasible]
    assert list(ps.raw) == per_node
    return dict(zip(result.names, ps.normalized.tolist(), strict=True))


Z = "zone"
SCORE_CASES = [
    (
        "one constraint on node, no existing pods",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, SA, FOO).obj(),
        [],
        [node("node-a", **{HOST: "node-a"}), node("node-b", **{HOST: "node-b"})],
        [],
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        make_pod("p").labels(foo="").spread_constraint(2, HOST, SA, FOO).obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-d", 3, foo=""),
        ],
        [hnode(n) for n in ("node-a", "node-b", "node-c", "node-d")],
        [],
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        make_pod("p").labels(foo="").spread_constraint(3, HOST, SA, FOO).obj(),
        [
            *pods_on("node-a", 4, foo=""),
            *pods_on("node-b", 3, foo=""),
            *pods_on("node-c", 2, foo=""),
            *pods_on("node-d", 1, foo=""),
        ],
        [hnode(n) for n in ("node-a", "node-b", "node-c", "node-d")],
        [],
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, SA, FOO).obj(),
        [
            *pods_on("node-a", 4, foo=""),
            *pods_on("node-b", 2, foo=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        [hnode("node-a"), hnode("node-b"), hnode("node-x")],
        [hnode("node-y")],
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node lacks the key",
        make_pod("p").labels(foo="").spread_constraint(1, HOST, SA, FOO).obj(),
        [
            *pods_on("node-a", 4, foo=""),
            *pods_on("node-b", 2, foo=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        [hnode("node-a"), node("node-b", n="node-b"), hnode("node-x")],
        [hnode("node-y")],
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        make_pod("p").labels(foo="").spread_constraint(1, Z, SA, FOO).obj(),
        [
            *pods_on("node-a", 4, foo=""),
            *pods_on("node-b", 2, foo=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 3, foo=""),
        ],
        [
            hnode("node-a", zone="zone1"),
            hnode("node-b", zone="zone1"),
            hnode("node-x", zone="zone2"),
        ],
        [hnode("node-y", zone="zone2")],
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    (
        "two constraints on zone and node, 2 out of 4 nodes are candidates",
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, Z, SA, FOO)
        .spread_constraint(1, HOST, SA, FOO)
        .obj(),
        [
            *pods_on("node-a", 2, foo=""),
            *pods_on("node-b", 1, foo=""),
            *pods_on("node-x", 2, foo=""),
            *pods_on("node-y", 4, foo=""),
        ],
        [hnode("node-a", zone="zone1"), hnode("node-x", zone="zone2")],
        [hnode("node-b", zone="zone1"), hnode("node-y", zone="zone2")],
        {"node-a": 100, "node-x": 63},
    ),
    (
        "two constraints on zone and node, with different labelSelectors",
        make_pod("p")
        .labels(foo="", bar="")
        .spread_constraint(1, Z, SA, FOO)
        .spread_constraint(1, HOST, SA, BAR)
        .obj(),
        [
            *pods_on("node-a", 1, foo=""),
            *pods_on("node-b", 1, foo="", bar=""),
            *pods_on("node-y", 1, "py1", foo=""),
            *pods_on("node-y", 1, "py2", bar=""),
        ],
        [
            hnode("node-a", zone="zone1"),
            hnode("node-b", zone="zone1"),
            hnode("node-x", zone="zone2"),
            hnode("node-y", zone="zone2"),
        ],
        [],
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    (
        "two constraints on zone and node, different labelSelectors, some nodes have 0 pods",
        make_pod("p")
        .labels(foo="", bar="")
        .spread_constraint(1, Z, SA, FOO)
        .spread_constraint(1, HOST, SA, BAR)
        .obj(),
        [
            *pods_on("node-b", 1, bar=""),
            *pods_on("node-x", 1, foo=""),
            *pods_on("node-y", 1, foo="", bar=""),
        ],
        [
            hnode("node-a", zone="zone1"),
            hnode("node-b", zone="zone1"),
            hnode("node-x", zone="zone2"),
            hnode("node-y", zone="zone2"),
        ],
        [],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
]


@pytest.mark.parametrize(
    "pod,existing,nodes,failed,want", [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(pod, existing, nodes, failed, want) -> None:
    assert run_score(pod, existing, nodes, failed) == want


def _service_lister(selector: dict[str, str]) -> StaticLister:
    return StaticLister(
        [
            Service.model_validate(
                {
                    "metadata": {"name": "svc", "namespace": "default"},
                    "spec": {"selector": selector},
                }
            )
        ]
    )


def test_system_defaulting_service_selects_pod_like_one_constraint() -> None:
    # Nodes have no zone: with system defaults they still get hostname spreading.
    existing = [
        *pods_on("node-a", 4, foo=""),
        *pods_on("node-b", 3, foo=""),
        *pods_on("node-c", 2, foo=""),
        *pods_on("node-d", 1, foo=""),
    ]
    nodes = [hnode(n) for n in ("node-a", "node-b", "node-c", "node-d")]
    pod = make_pod("p").labels(foo="").obj()
    assert run_score(pod, existing, nodes, lister=_service_lister({"foo": ""})) == {
        "node-a": 44,
        "node-b": 66,
        "node-c": 77,
        "node-d": 100,
    }


def test_system_defaulting_without_owner_skips() -> None:
    existing = [*pods_on("node-a", 4, foo="")]
    nodes = [hnode("node-a"), hnode("node-b")]
    pod = make_pod("p").labels(foo="").obj()
    assert run_score(pod, existing, nodes, lister=StaticLister()) == {}
    assert run_score(pod, existing, nodes, lister=_service_lister({"other": "x"})) == {}


def test_default_constraints_from_replica_set_owner() -> None:
    rs = ReplicaSet.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        }
    )
    existing = [
        *pods_on("node-a", 2, app="web"),
        *pods_on("node-b", 1, app="web"),
        *pods_on("node-c", 5, app="other"),
    ]
    nodes = [hnode("node-a"), hnode("node-b"), hnode("node-c")]
    pod = make_pod("p").labels(app="web").owner("ReplicaSet", "web").obj()
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    result = run_filter(pod, existing, nodes, args=args, lister=StaticLister([rs]))
    assert passing(result) == {"node-c"}
    # Not owned: no default constraint, PreFilter skips.
    orphan = make_pod("p").labels(app="web").obj()
    result = run_filter(orphan, existing, nodes, args=args, lister=StaticLister([rs]))
    assert set(result.values()) == {"skip"}
    # A controller of another kind (or apiVersion) is not looked up.
    wrong = make_pod("p").labels(app="web").owner("StatefulSet", "web").obj()
    result = run_filter(wrong, existing, nodes, args=args, lister=StaticLister([rs]))
    assert set(result.values()) == {"skip"}


def test_default_constraints_from_stateful_set_and_service_are_anded() -> None:
    ss = StatefulSet.model_validate(
        {
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}},
        }
    )
    svc = Service.model_validate(
        {"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"tier": "data"}}}
    )
    existing = [*pods_on("node-a", 2, app="db"), *pods_on("node-b", 1, app="db", tier="data")]
    nodes = [hnode("node-a"), hnode("node-b"), hnode("node-c")]
    pod = make_pod("p").labels(app="db", tier="data").owner("StatefulSet", "db").obj()
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    result = run_filter(pod, existing, nodes, args=args, lister=StaticLister([ss, svc]))
    # Selector app=db AND tier=data: node-a's pods do not count.
    assert passing(result) == {"node-a", "node-c"}


def test_own_constraints_replace_defaults() -> None:
    pod = make_pod("p").labels(foo="").spread_constraint(1, HOST, SA, FOO).obj()
    existing = pods_on("node-a", 1, foo="")
    nodes = [hnode("node-a", zone="z"), hnode("node-b", zone="z")]
    got = run_score(pod, existing, nodes, lister=_service_lister({"foo": ""}))
    assert got == {"node-a": 0, "node-b": 100}


def test_system_defaulting_nodes_missing_zone_are_not_ignored_but_list_ignores_them() -> None:
    existing = [*pods_on("node-a", 2, foo="")]
    nodes = [hnode("node-a", **{"topology.kubernetes.io/zone": "z1"}), hnode("node-b")]
    pod = make_pod("p").labels(foo="").obj()
    lister = _service_lister({"foo": ""})
    system = run_score(pod, existing, nodes, lister=lister)
    assert system["node-b"] == 100 and system["node-a"] < 100
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 3, "topologyKey": HOST, "whenUnsatisfiable": SA},
            {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": SA},
        ],
    }
    listed = run_score(pod, existing, nodes, args=args, lister=lister)
    assert listed == {"node-a": 100, "node-b": 0}  # node-b ignored


def test_score_taints_policy_honor() -> None:
    pod = (
        make_pod("p")
        .labels(foo="")
        .spread_constraint(1, Z, SA, FOO, node_taints_policy="Honor")
        .obj()
    )
    existing = [*pods_on("node-a", 1, foo=""), *pods_on("node-t", 5, foo="")]
    nodes = [hnode("node-a", zone="z1"), hnode("node-b", zone="z2")]
    tainted = Node.model_validate(
        make_node("node-t").labels(zone="z2").taint("k", "v", "NoSchedule").manifest()
    )
    # node-t is in z2 but untolerated: its 5 pods do not count.
    assert run_score(pod, existing, nodes, [tainted]) == {"node-a": 0, "node-b": 100}
    tolerant = (
        make_pod("p")
        .labels(foo="")
        .toleration("k", "v", "NoSchedule")
        .spread_constraint(1, Z, SA, FOO, node_taints_policy="Honor")
        .obj()
    )
    # Tolerated: z1 1 pod, z2 5 pods; raw round(1·ln 4) = 1 and round(5·ln 4) = 7.
    assert run_score(tolerant, existing, nodes, [tainted]) == {"node-a": 100, "node-b": 14}


# --- preemption hooks ------------------------------------------------------------------


def test_critical_paths_update() -> None:
    p = CriticalPaths()
    for v, n in (("a", 3), ("b", 1), ("c", 2)):
        p.update(v, n)
    assert p.paths == [["b", 1], ["c", 2]]
    p.update("b", 4)
    assert p.paths == [["c", 2], ["b", 4]]  # second is not the true 2nd minimum (a: 3)
    p.update("c", 1)
    assert p.paths == [["c", 1], ["b", 4]]


def test_add_and_remove_pod_on_clone() -> None:
    pod = make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj()
    existing = [*pods_on("node-a", 1, foo=""), *pods_on("node-x", 2, foo="")]
    snap = new_snapshot(existing, ZONE_NODES)
    fw = _framework()
    fw.set_snapshot(snap)
    pl = fw.plugin(NAME)
    state = CycleState()
    pi = PodInfo(pod)
    assert pl.pre_filter(state, pi, snap.list()) is None
    assert pl.filter(state, snap.get("node-a")) is None
    assert pl.filter(state, snap.get("node-x")) is not None
    clone = state.clone()
    victim = PodInfo(existing[1])  # on node-x
    assert pl.pre_filter_remove_pod(clone, pi, victim, snap.get("node-x")) is None
    assert clone.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num() == [{"zone1": 1, "zone2": 1}]
    assert pl.filter(clone, snap.get("node-x")) is None
    # The original state is untouched.
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num() == [{"zone1": 1, "zone2": 2}]
    extra = PodInfo(make_pod("e").labels(foo="").node("node-b").obj())
    pl.pre_filter_add_pod(clone, pi, extra, snap.get("node-b"))
    pl.pre_filter_add_pod(clone, pi, extra, snap.get("node-b"))
    s = clone.read(PRE_FILTER_STATE_KEY)
    assert s.tp_value_to_match_num() == [{"zone1": 3, "zone2": 1}]
    assert s.counts[0].paths.min_match_num == 1
    # Pods of other namespaces, or not matching, change nothing.
    other_ns = PodInfo(make_pod("o").namespace("x").labels(foo="").obj())
    nomatch = PodInfo(make_pod("n").labels(bar="").obj())
    pl.pre_filter_add_pod(clone, pi, other_ns, snap.get("node-b"))
    pl.pre_filter_add_pod(clone, pi, nomatch, snap.get("node-b"))
    assert clone.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num() == [{"zone1": 3, "zone2": 1}]


def test_runtime_batch_filter_matches_per_node() -> None:
    pod = make_pod("p").labels(foo="").spread_constraint(1, HOST, DNS, FOO).obj()
    existing = [*pods_on("node-a", 2, foo=""), *pods_on("node-b", 1, foo="")]
    snap = new_snapshot(existing, [hnode("node-a"), hnode("node-b"), hnode("node-c")])
    fw = _framework()
    fw.set_snapshot(snap)
    state = fw.new_cycle_state()
    pi = PodInfo(pod)
    _, status, _ = fw.run_pre_filter_plugins(state, pi, snap.list())
    assert status.is_success()
    infos = snap.list()
    verdicts, err = fw.run_filter_batch(state, pi, NodeBatch(snap.table, range(3), infos))
    assert err is None
    per_node = [fw.run_filter_plugins(state, pi, ni) for ni in infos]
    assert [v is None for v in verdicts] == [s.is_success() for s in per_node]
    assert {ni.name for ni, v in zip(infos, verdicts, strict=True) if v is None} == {"node-c"}


# --- args ----------------------------------------------------------------------------

ARGS_ERRORS = [
    (
        "system with constraints",
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ]
        },
        'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
    ),
    (
        "unknown defaulting type",
        {"defaultingType": "Magic"},
        'defaultingType: Unsupported value: "Magic": supported values: "System", "List"',
    ),
    (
        "maxSkew zero",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        },
        "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
    ),
    (
        "empty topologyKey",
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}],
        },
        "defaultConstraints[0].topologyKey: Required value: can not be empty",
    ),
    (
        "bad topologyKey",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "a/b/c", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        },
        'defaultConstraints[0].topologyKey: Invalid value: "a/b/c": a valid label key must',
    ),
    (
        "empty whenUnsatisfiable",
        {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]},
        "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
    ),
    (
        "bad whenUnsatisfiable",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}
            ],
        },
        'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    (
        "labelSelector",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {},
                }
            ],
        },
        "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
        "as they deduced for each pod",
    ),
    (
        "duplicate",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
            ],
        },
        'defaultConstraints[1]: Duplicate value: "{zone, ScheduleAnyway}"',
    ),
    (
        "several errors aggregated",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": -1, "topologyKey": "zone", "whenUnsatisfiable": "X"}
            ],
        },
        "[defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf), "
        'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "X"',
    ),
    ("unknown field", {"defaultingTyp": "List"}, "defaultingTyp"),
]


@pytest.mark.parametrize(
    "args,message", [c[1:] for c in ARGS_ERRORS], ids=[c[0] for c in ARGS_ERRORS]
)
def test_args_validation(args: dict, message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        PodTopologySpreadArgs.model_validate(args)
    assert message in str(exc.value)


def test_args_defaults() -> None:
    args = PodTopologySpreadArgs.model_validate({})
    assert args.defaulting_type == "System" and args.default_constraints == []
    pl = _framework().plugin(NAME)
    got = [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in pl.default_constraints]
    assert got == [(HOST, 3, SA), ("topology.kubernetes.io/zone", 5, SA)]
    assert _framework({"defaultingType": "List"}).plugin(NAME).default_constraints == ()


# --- events --------------------------------------------------------------------------


def test_events_and_hints() -> None:
    pl = _framework().plugin(NAME)
    events = pl.events_to_register()
    assert [e.event.resource.value for e in events] == ["Pod", "Node"]
    pod = make_pod("p").labels(foo="").spread_constraint(1, "zone", DNS, FOO).obj()
    bound = make_pod("b").labels(foo="").node("n1").obj()
    unbound = make_pod("u").labels(foo="").obj()
    other = make_pod("o").labels(bar="").node("n1").obj()
    pod_hint = pl.is_schedulable_after_pod_change
    assert pod_hint(pod, None, bound) is QueueingHint.QUEUE
    assert pod_hint(pod, None, unbound) is QueueingHint.SKIP
    assert pod_hint(pod, None, other) is QueueingHint.SKIP
    assert pod_hint(pod, bound, None) is QueueingHint.QUEUE
    relabelled = make_pod("b").uid(bound.metadata.uid).labels(bar="").node("n1").obj()
    assert pod_hint(pod, bound, relabelled) is QueueingHint.QUEUE
    node_hint = pl.is_schedulable_after_node_change
    with_zone, without = hnode("n", zone="z"), hnode("n")
    assert node_hint(pod, None, with_zone) is QueueingHint.QUEUE
    assert node_hint(pod, None, without) is QueueingHint.SKIP
    assert node_hint(pod, without, with_zone) is QueueingHint.QUEUE
    assert node_hint(pod, with_zone, hnode("n", zone="z2")) is QueueingHint.QUEUE
    assert node_hint(pod, with_zone, hnode("n", zone="z", x="y")) is QueueingHint.SKIP


def test_score_batch_rounding_and_counter_cache_agree() -> None:
    # Many nodes, uneven counts: batch == per node is checked in run_score; running
    # twice exercises the generation cache.
    rng = np.random.default_rng(0)
    nodes = [hnode(f"n{i}", zone=f"z{i % 3}") for i in range(30)]
    existing = [p for i in range(30) for p in pods_on(f"n{i}", int(rng.integers(0, 4)), foo="")]
    pod = (
        make_pod("p")
        .labels(foo="")
        .spread_constraint(2, Z, SA, FOO)
        .spread_constraint(3, HOST, SA, FOO)
        .obj()
    )
    first = run_score(pod, existing, nodes[:20], nodes[20:])
    assert first == run_score(pod, existing, nodes[:20], nodes[20:])


@pytest.mark.parametrize(
    "raw",
    [{"defaultingType": ""}, {"defaultingType": None}, {"defaultConstraints": None}, {}],
    ids=["empty-type", "null-type", "null-constraints", "absent"],
)
def test_unset_args_take_upstreams_defaults(raw):
    # SetDefaults_PodTopologySpreadArgs: "" and null mean System with no constraints.
    args = PodTopologySpreadArgs.model_validate(raw)
    assert (args.defaulting_type, args.default_constraints) == ("System", [])
