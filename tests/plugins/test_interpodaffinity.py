"""Tests of InterPodAffinity: cases from upstream's filtering/scoring tests and the docs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from kubesched import (
    ActionType,
    Code,
    EventResource,
    NodeBatch,
    NodeInfo,
    NodeScores,
    PodInfo,
    QueueingHint,
)
from kubesched.api import Namespace, Node, Pod
from kubesched.cache import new_snapshot
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH as AFF,
)
from kubesched_builtin.interpodaffinity import (
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
)
from kubesched_builtin.interpodaffinity import (
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING,
)
from kubesched_builtin.interpodaffinity import (
    NAME,
    InterPodAffinity,
    InterPodAffinityArgs,
)

UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCH = Code.UNSCHEDULABLE

NAMESPACES = [
    Namespace.model_validate({"metadata": {"name": n, "labels": {"team": t}}})
    for n, t in (
        ("subteam1-team1", "team1"),
        ("subteam2-team1", "team1"),
        ("subteam1-team2", "team2"),
        ("subteam2-team2", "team2"),
    )
]


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    """A label selector with one expression."""
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return {"matchExpressions": [e]}


def exprs(*es: dict[str, Any]) -> dict[str, Any]:
    """A label selector ANDing the expressions of several one-expression selectors."""
    return {"matchExpressions": [x for e in es for x in e["matchExpressions"]]}


S1 = expr("security", "In", "S1")
S2 = expr("security", "In", "S2")
SEC_S1 = {"security": "S1"}
SEC_S2 = {"security": "S2"}
TEAM1 = expr("team", "In", "team1")


def node(name: str, **labels: str) -> Node:
    return make_node(name).labels(labels).obj()


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    on: str | None = None,
    ns: str | None = None,
    terms: Sequence[dict[str, Any]] = (),
) -> Pod:
    """A pod; ``terms`` are ``pod_affinity`` keyword dicts (``key`` is the topology key)."""
    b = make_pod(name)
    if labels:
        b.labels(labels)
    if on:
        b.node(on)
    if ns:
        b.namespace(ns)
    for t in terms:
        t = dict(t)
        b.pod_affinity(t.pop("key"), t.pop("sel", None), **t)
    return b.obj()


def req(key: str, sel: Any, **kw: Any) -> dict[str, Any]:
    return {"key": key, "sel": sel, **kw}


def anti(key: str, sel: Any, **kw: Any) -> dict[str, Any]:
    return {"key": key, "sel": sel, "anti": True, **kw}


def pref(weight: int, key: str, sel: Any, **kw: Any) -> dict[str, Any]:
    return {"key": key, "sel": sel, "weight": weight, **kw}


def pref_anti(weight: int, key: str, sel: Any, **kw: Any) -> dict[str, Any]:
    return {"key": key, "sel": sel, "weight": weight, "anti": True, **kw}


def setup(
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    args: dict[str, Any] | None = None,
    namespaces: Sequence[Namespace] = NAMESPACES,
):
    snap = new_snapshot(pods, nodes)
    fw = make_framework(InterPodAffinity, args={NAME: args or {}}, lister=StaticLister(namespaces))
    fw.set_snapshot(snap)
    return fw, snap


def batch_of(snap: Any) -> NodeBatch:
    infos = snap.list()
    return NodeBatch(snap.table, range(len(infos)), infos)


def verdict(status: Any) -> tuple[Code, tuple[str, ...]] | None:
    if status is None or status.is_success():
        return None
    return status.code, tuple(status.reasons)


def filter_all(fw: Any, state: Any, pi: PodInfo, infos: Sequence[NodeInfo], table: Any = None):
    """Per-node Filter verdicts, checked equal to the vectorised ones."""
    per_node = {ni.name: verdict(fw.run_filter_plugins(state, pi, ni)) for ni in infos}
    table = table if table is not None else fw.snapshot.table
    rows = [fw.snapshot.table.index[ni.name] for ni in infos]
    got, err = fw.run_filter_batch(state, pi, NodeBatch(table, rows, list(infos)))
    assert err is None
    batch = {ni.name: verdict(s) for ni, s in zip(infos, got, strict=True)}
    assert batch == per_node
    return per_node


def run_filter(p: Pod, pods: Sequence[Pod], nodes: Sequence[Node], **kw: Any):
    fw, snap = setup(pods, nodes, **kw)
    state = fw.new_cycle_state()
    pi = PodInfo(p)
    _, status, _ = fw.run_pre_filter_plugins(state, pi, snap.list())
    assert status.is_success()
    return NAME in state.skip_filter_plugins, filter_all(fw, state, pi, snap.list())


def run_score(p: Pod, pods: Sequence[Pod], nodes: Sequence[Node], **kw: Any):
    """``(skipped, {node: normalized score})`` through the runtime, batch == per node."""
    fw, snap = setup(pods, nodes, **kw)
    state = fw.new_cycle_state()
    pi = PodInfo(p)
    status = fw.run_pre_score_plugins(state, pi, snap.list())
    assert status.is_success()
    skipped = NAME in state.skip_score_plugins
    result = fw.run_score_plugins(state, pi, batch_of(snap))
    if skipped:
        assert not result.plugins
        return True, {n: 0 for n in result.names}
    (ps,) = result.plugins
    plugin = fw.plugin(NAME)
    assert ps.raw.tolist() == [plugin.score(state, ni) for ni in snap.list()]
    return False, dict(zip(result.names, ps.normalized.tolist(), strict=True))


# -- Filter ---------------------------------------------------------------------------------

RG_CHINA = {"region": "r1"}
FILTER_CASES = [
    # (id, pod, existing pods, nodes, expected {node: verdict}, skipped)
    (
        "no-terms-no-existing-anti-skips",
        pod("p", SEC_S1),
        [pod("e", SEC_S1, on="n1")],
        [node("n1", region="r1")],
        {"n1": None},
        True,
    ),
    (
        "affinity-matches-pod-in-region",
        pod("p", terms=[req("region", S1)]),
        [pod("e", SEC_S1, on="n1")],
        [node("n1", region="r1"), node("n2", region="r1"), node("n3", region="r2")],
        {"n1": None, "n2": None, "n3": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-node-missing-topology-label",
        pod("p", terms=[req("region", S1)]),
        [pod("e", SEC_S1, on="n1")],
        [node("n1", region="r1"), node("n2", zone="z1")],
        {"n1": None, "n2": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-not-in-pod-namespace",
        pod("p", terms=[req("region", S1)]),
        [pod("e", SEC_S1, on="n1", ns="other")],
        [node("n1", region="r1")],
        {"n1": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-with-namespaces-list",
        pod("p", terms=[req("region", S1, namespaces=["other"])]),
        [pod("e", SEC_S1, on="n1", ns="other")],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": None, "n2": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-NotIn-and-Exists",
        pod(
            "p",
            terms=[
                req(
                    "region",
                    exprs(expr("security", "NotIn", "S2"), expr("wrongkey", "DoesNotExist")),
                )
            ],
        ),
        [pod("e", SEC_S1, on="n1")],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": None, "n2": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-all-terms-must-match-one-pod",
        pod("p", terms=[req("region", S1), req("region", expr("team", "Exists"))]),
        [pod("e1", SEC_S1, on="n1"), pod("e2", {"team": "a"}, on="n1")],
        [node("n1", region="r1")],
        {"n1": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-both-terms-on-one-pod",
        pod("p", terms=[req("region", S1), req("zone", expr("team", "Exists"))]),
        [pod("e1", {"security": "S1", "team": "a"}, on="n1")],
        [
            node("n1", region="r1", zone="z1"),
            node("n2", region="r1", zone="z2"),
            node("n3", region="r1"),
        ],
        {"n1": None, "n2": (UNRES, (AFF,)), "n3": (UNRES, (AFF,))},
        False,
    ),
    (
        "first-pod-of-self-affine-group-passes",
        pod("p", SEC_S1, terms=[req("region", S1)]),
        [pod("e", SEC_S2, on="n1")],
        [node("n1", region="r1"), node("n2", zone="z")],
        {"n1": None, "n2": (UNRES, (AFF,))},
        False,
    ),
    (
        "self-affine-but-other-pod-matches-elsewhere",
        pod("p", SEC_S1, terms=[req("region", S1)]),
        [pod("e", SEC_S1, on="n2")],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": (UNRES, (AFF,)), "n2": None},
        False,
    ),
    (
        "not-self-affine-no-match-rejects-all",
        pod("p", SEC_S2, terms=[req("region", S1)]),
        [],
        [node("n1", region="r1")],
        {"n1": (UNRES, (AFF,))},
        False,
    ),
    (
        "anti-affinity-rejects-domain",
        pod("p", terms=[anti("region", S1)]),
        [pod("e", SEC_S1, on="n1")],
        [
            node("n1", region="r1"),
            node("n2", region="r1"),
            node("n3", region="r2"),
            node("n4", zone="z"),
        ],
        {"n1": (UNSCH, (ANTI,)), "n2": (UNSCH, (ANTI,)), "n3": None, "n4": None},
        False,
    ),
    (
        "anti-affinity-other-namespace-ignored",
        pod("p", terms=[anti("region", S1)]),
        [pod("e", SEC_S1, on="n1", ns="other")],
        [node("n1", region="r1")],
        {"n1": None},
        False,
    ),
    (
        "existing-anti-affinity-rejects",
        pod("p", SEC_S1),
        [pod("e", SEC_S2, on="n1", terms=[anti("zone", S1)])],
        [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2"), node("n4")],
        {"n1": (UNSCH, (EXISTING,)), "n2": (UNSCH, (EXISTING,)), "n3": None, "n4": None},
        False,
    ),
    (
        "existing-anti-affinity-other-namespace-pod",
        pod("p", SEC_S1, ns="other"),
        [pod("e", SEC_S2, on="n1", terms=[anti("zone", S1)])],
        [node("n1", zone="z1")],
        {"n1": None},
        True,
    ),
    (
        "existing-anti-affinity-namespace-selector-matches-pod-namespace",
        pod("p", SEC_S1, ns="subteam2-team1"),
        [pod("e", SEC_S2, on="n1", terms=[anti("zone", S1, namespace_selector=TEAM1)])],
        [node("n1", zone="z1"), node("n2", zone="z2")],
        {"n1": (UNSCH, (EXISTING,)), "n2": None},
        False,
    ),
    (
        "existing-anti-affinity-namespace-selector-other-team",
        pod("p", SEC_S1, ns="subteam1-team2"),
        [pod("e", SEC_S2, on="n1", terms=[anti("zone", S1, namespace_selector=TEAM1)])],
        [node("n1", zone="z1")],
        {"n1": None},
        True,
    ),
    (
        "existing-anti-affinity-empty-namespace-selector-all-namespaces",
        pod("p", SEC_S1, ns="nowhere"),
        [pod("e", SEC_S2, on="n1", terms=[anti("zone", S1, namespace_selector={})])],
        [node("n1", zone="z1")],
        {"n1": (UNSCH, (EXISTING,))},
        False,
    ),
    (
        "affinity-namespace-selector",
        pod("p", ns="subteam1-team1", terms=[req("region", S1, namespace_selector=TEAM1)]),
        [
            pod("e1", SEC_S1, on="n1", ns="subteam2-team1"),
            pod("e2", SEC_S1, on="n2", ns="subteam1-team2"),
        ],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": None, "n2": (UNRES, (AFF,))},
        False,
    ),
    (
        "affinity-empty-namespace-selector-matches-all",
        pod("p", terms=[req("region", S1, namespace_selector={})]),
        [pod("e", SEC_S1, on="n2", ns="unknown-ns")],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": (UNRES, (AFF,)), "n2": None},
        False,
    ),
    (
        "affinity-null-namespace-selector-with-namespaces",
        pod("p", terms=[req("region", S1, namespaces=["subteam1-team2"])]),
        [pod("e1", SEC_S1, on="n1", ns="subteam1-team2"), pod("e2", SEC_S1, on="n2")],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": None, "n2": (UNRES, (AFF,))},
        False,
    ),
    (
        "anti-namespace-selector-selects-unknown-namespace-never",
        pod("p", terms=[anti("region", S1, namespace_selector=expr("team", "DoesNotExist"))]),
        [pod("e", SEC_S1, on="n1", ns="not-a-namespace")],
        [node("n1", region="r1")],
        {"n1": None},
        False,
    ),
    (
        "nil-label-selector-matches-no-pod",
        pod("p", terms=[anti("region", None)]),
        [pod("e", SEC_S1, on="n1")],
        [node("n1", region="r1")],
        {"n1": None},
        False,
    ),
    (
        "empty-label-selector-matches-every-pod",
        pod("p", terms=[anti("region", {})]),
        [pod("e", SEC_S1, on="n1")],
        [node("n1", region="r1"), node("n2", region="r2")],
        {"n1": (UNSCH, (ANTI,)), "n2": None},
        False,
    ),
    (
        "affinity-checked-before-anti-affinity",
        pod("p", terms=[req("region", S1), anti("region", S2)]),
        [pod("e1", SEC_S1, on="n1"), pod("e2", SEC_S2, on="n1"), pod("e3", SEC_S2, on="n3")],
        [node("n1", region="r1"), node("n2", region="r2"), node("n3", region="r1")],
        {"n1": (UNSCH, (ANTI,)), "n2": (UNRES, (AFF,)), "n3": (UNSCH, (ANTI,))},
        False,
    ),
    (
        "pod-anti-before-existing-anti",
        pod("p", SEC_S1, terms=[anti("host", S2)]),
        [
            pod("e1", SEC_S2, on="n1", terms=[anti("host", S1)]),
            pod("e2", SEC_S2, on="n2", terms=[anti("zone", S1)]),
        ],
        [
            node("n1", host="n1", zone="a"),
            node("n2", host="n2", zone="b"),
            node("n3", host="n3", zone="b"),
        ],
        {"n1": (UNSCH, (ANTI,)), "n2": (UNSCH, (ANTI,)), "n3": (UNSCH, (EXISTING,))},
        False,
    ),
]


@pytest.mark.parametrize(
    "p, pods, nodes, want, skipped", [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(p, pods, nodes, want, skipped):
    got_skipped, got = run_filter(p, pods, nodes)
    assert got_skipped == skipped
    assert got == want


# The docs' redis-cache / web-server example: caches spread one per node, each web
# server beside a cache and away from the other web servers.
CACHE_ANTI = anti("kubernetes.io/hostname", expr("app", "In", "store"))
WEB_TERMS = [
    anti("kubernetes.io/hostname", expr("app", "In", "web-store")),
    req("kubernetes.io/hostname", expr("app", "In", "store")),
]
HOSTS = [node(f"node-{i}", **{"kubernetes.io/hostname": f"node-{i}"}) for i in (1, 2, 3, 4)]


def cache_pod(i: int, on: str | None = None) -> Pod:
    return pod(f"cache-{i}", {"app": "store"}, on=on, terms=[CACHE_ANTI])


def web_pod(i: int, on: str | None = None) -> Pod:
    return pod(f"web-{i}", {"app": "web-store"}, on=on, terms=WEB_TERMS)


@pytest.mark.parametrize(
    "p, pods, feasible",
    [
        (cache_pod(1), [], {"node-1", "node-2", "node-3", "node-4"}),
        (cache_pod(2), [cache_pod(1, "node-1")], {"node-2", "node-3", "node-4"}),
        (cache_pod(4), [cache_pod(i, f"node-{i}") for i in (1, 2, 3)], {"node-4"}),
        (
            web_pod(1),
            [cache_pod(i, f"node-{i}") for i in (1, 2, 3)],
            {"node-1", "node-2", "node-3"},
        ),
        (
            web_pod(2),
            [*(cache_pod(i, f"node-{i}") for i in (1, 2, 3)), web_pod(1, "node-1")],
            {"node-2", "node-3"},
        ),
        (
            web_pod(4),
            [
                *(cache_pod(i, f"node-{i}") for i in (1, 2, 3)),
                *(web_pod(i, f"node-{i}") for i in (1, 2, 3)),
            ],
            set(),
        ),
        # No cache yet and a web server does not match its own affinity: nowhere.
        (web_pod(1), [], set()),
    ],
    ids=[
        "cache-1",
        "cache-2",
        "cache-4-last-node",
        "web-1",
        "web-2",
        "web-4-nowhere",
        "web-without-cache",
    ],
)
def test_docs_redis_web_colocation(p, pods, feasible):
    _, got = run_filter(p, pods, HOSTS)
    assert {n for n, v in got.items() if v is None} == feasible
    for v in got.values():
        if v is not None and p.metadata.labels["app"] == "web-store":
            # Missing a cache is unresolvable; another web server is only unschedulable.
            assert v in ((UNRES, (AFF,)), (UNSCH, (ANTI,)))


def test_filter_state_missing_is_error():
    fw, snap = setup([], [node("n1")])
    state = fw.new_cycle_state()
    status = fw.run_filter_plugins(state, PodInfo(pod("p")), snap.list()[0])
    assert status.code == Code.ERROR
    assert "PreFilterInterPodAffinity" in status.message()


# -- PreFilter extensions (preemption's what-if) ----------------------------------------------


def _prefiltered(p: Pod, pods: Sequence[Pod], nodes: Sequence[Node]):
    fw, snap = setup(pods, nodes)
    state = fw.new_cycle_state()
    pi = PodInfo(p)
    _, status, _ = fw.run_pre_filter_plugins(state, pi, snap.list())
    assert status.is_success()
    return fw, snap, state, pi


def test_remove_pod_lifts_anti_affinity_and_add_pod_restores_it():
    nodes = [node("n1", zone="z1"), node("n2", zone="z2")]
    victim = pod("victim", SEC_S2, on="n1", terms=[anti("zone", S1)])
    fw, snap, state, pi = _prefiltered(pod("p", SEC_S1), [victim], nodes)
    n1 = snap.get("n1")
    victim_info = n1.pods[0]
    assert filter_all(fw, state, pi, snap.list())["n1"] == (UNSCH, (EXISTING,))

    what_if = state.clone()
    info = n1.clone()
    info.remove_pod(victim_info)
    assert fw.run_pre_filter_extension_remove_pod(what_if, pi, victim_info, info).is_success()
    assert filter_all(fw, what_if, pi, [info, snap.get("n2")])["n1"] is None
    # The original state is untouched by the clone's change.
    assert filter_all(fw, state, pi, snap.list())["n1"] == (UNSCH, (EXISTING,))

    info.add_pod(victim_info)
    assert fw.run_pre_filter_extension_add_pod(what_if, pi, victim_info, info).is_success()
    assert filter_all(fw, what_if, pi, [info, snap.get("n2")])["n1"] == (UNSCH, (EXISTING,))


def test_add_pod_satisfies_affinity_and_ends_first_pod_exception():
    nodes = [node("n1", region="r1"), node("n2", region="r2")]
    # Self-affine pod, no match anywhere: both nodes pass (first pod of its group).
    fw, snap, state, pi = _prefiltered(pod("p", SEC_S1, terms=[req("region", S1)]), [], nodes)
    assert filter_all(fw, state, pi, snap.list()) == {"n1": None, "n2": None}
    nominated = PodInfo(pod("nom", SEC_S1, on="n2"))
    what_if = state.clone()
    info = snap.get("n2").clone()
    info.add_pod(nominated)
    assert fw.run_pre_filter_extension_add_pod(what_if, pi, nominated, info).is_success()
    assert filter_all(fw, what_if, pi, [snap.get("n1"), info]) == {
        "n1": (UNRES, (AFF,)),
        "n2": None,
    }
    # Removing it again empties the counts: the exception applies again.
    assert fw.run_pre_filter_extension_remove_pod(what_if, pi, nominated, info).is_success()
    assert filter_all(fw, what_if, pi, [snap.get("n1"), info]) == {"n1": None, "n2": None}


def test_add_pod_matching_incoming_anti_affinity():
    nodes = [node("n1", region="r1"), node("n2", region="r2")]
    fw, snap, state, pi = _prefiltered(pod("p", terms=[anti("region", S1)]), [], nodes)
    added = PodInfo(pod("a", SEC_S1, on="n1"))
    what_if = state.clone()
    info = snap.get("n1").clone()
    info.add_pod(added)
    fw.run_pre_filter_extension_add_pod(what_if, pi, added, info)
    assert filter_all(fw, what_if, pi, [info, snap.get("n2")]) == {
        "n1": (UNSCH, (ANTI,)),
        "n2": None,
    }
    assert filter_all(fw, state, pi, snap.list()) == {"n1": None, "n2": None}


def test_filter_with_nominated_pod_through_runtime():
    class Nominator:
        def __init__(self, pods):
            self.pods = pods

        def nominated_pods_for_node(self, name):
            return [p for p in self.pods if p.node_name == name]

    nominated = PodInfo(pod("nom", SEC_S2, on="n1", terms=[anti("zone", S1)]))
    snap = new_snapshot([], [node("n1", zone="z1"), node("n2", zone="z2")])
    fw = make_framework(
        InterPodAffinity, lister=StaticLister(NAMESPACES), nominator=Nominator([nominated])
    )
    fw.set_snapshot(snap)
    state = fw.new_cycle_state()
    pi = PodInfo(pod("p", SEC_S1))
    fw.run_pre_filter_plugins(state, pi, snap.list())
    # PreFilter skipped (nothing applies) so nominated pods are not seen by this plugin,
    # as upstream (the Skip also skips the PreFilter extensions).
    assert NAME in state.skip_filter_plugins
    assert fw.run_filter_plugins_with_nominated_pods(state, pi, snap.get("n1")).is_success()


# -- Score ----------------------------------------------------------------------------------

STAY_S1_REGION = [pref(5, "region", S1)]
STAY_S2_REGION = [pref(6, "region", S2)]
AFFINITY3 = [
    pref(8, "region", exprs(expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
    pref(2, "region", exprs(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
]
HARD_AFFINITY = [
    req("region", expr("security", "In", "S1", "value2")),
    req("region", exprs(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
]
AWAY_S1_AZ = [pref_anti(5, "az", S1)]
AWAY_S2_AZ = [pref_anti(5, "az", S2)]
STAY_S1_AWAY_S2 = [pref(8, "region", S1), pref_anti(5, "az", S2)]
AFF_NS_SEL = [pref(5, "region", S1, namespaces=["subteam2-team2"], namespace_selector=TEAM1)]
ANTI_NS_SEL = [pref_anti(5, "region", S1, namespaces=["subteam2-team2"], namespace_selector=TEAM1)]
CHINA, INDIA = {"region": "China"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}


def nodes_(*label_sets: Mapping[str, str]) -> list[Node]:
    return [node(f"node{i}", **labels) for i, labels in enumerate(label_sets, start=1)]


SCORE_CASES = [
    # (id, pod, pods, nodes, expected scores or None when skipped, args)
    ("no-affinity-skips", pod("p", SEC_S1), [], nodes_(CHINA, INDIA, AZ1), None, {}),
    (
        "affinity-topology-and-pods",
        pod("p", SEC_S1, terms=STAY_S1_REGION),
        [pod("a", SEC_S1, on="node1"), pod("b", SEC_S2, on="node2"), pod("c", SEC_S1, on="node3")],
        nodes_(CHINA, INDIA, AZ1),
        [100, 0, 0],
        {},
    ),
    (
        "same-topology-value-same-score",
        pod("p", terms=STAY_S1_REGION),
        [pod("a", SEC_S1, on="node1")],
        nodes_(CHINA, CHINA_AZ1, INDIA),
        [100, 100, 0],
        {},
    ),
    (
        "region-with-more-matches-wins",
        pod("p", SEC_S1, terms=STAY_S2_REGION),
        [
            pod(f"x{i}", SEC_S2, on=n)
            for i, n in enumerate(["node1", "node1", "node2", "node3", "node4", "node5"])
        ],
        nodes_(CHINA, INDIA, CHINA, CHINA, INDIA),
        [100, 0, 100, 100, 0],
        {},
    ),
    (
        "operators-and-partial-matches",
        pod("p", SEC_S1, terms=AFFINITY3),
        [pod("a", SEC_S1, on="node1"), pod("b", SEC_S2, on="node2"), pod("c", SEC_S1, on="node3")],
        nodes_(CHINA, INDIA, AZ1),
        [20, 100, 0],
        {},
    ),
    (
        "symmetry-preferred",
        pod("p", SEC_S2),
        [
            pod("a", SEC_S1, on="node1", terms=STAY_S1_REGION),
            pod("b", SEC_S2, on="node2", terms=STAY_S2_REGION),
        ],
        nodes_(CHINA, INDIA, AZ1),
        [0, 100, 0],
        {},
    ),
    (
        "symmetry-namespace-selector",
        pod("p", SEC_S1, ns="subteam1-team1"),
        [
            pod("a", SEC_S1, on="node1", terms=AFF_NS_SEL),
            pod("b", SEC_S2, on="node2", terms=STAY_S2_REGION),
        ],
        nodes_(CHINA, INDIA, AZ1),
        [100, 0, 0],
        {},
    ),
    (
        "anti-symmetry-namespace-selector-negative-scores",
        pod("p", SEC_S1, ns="subteam1-team1"),
        [
            pod("a", SEC_S1, on="node1", terms=ANTI_NS_SEL),
            pod("b", SEC_S2, on="node2", terms=STAY_S2_REGION),
        ],
        nodes_(CHINA, INDIA, AZ1),
        [0, 100, 100],
        {},
    ),
    (
        "symmetry-required-hard-weight",
        pod("p", SEC_S1),
        [
            pod("a", SEC_S1, on="node1", terms=HARD_AFFINITY),
            pod("b", SEC_S2, on="node2", terms=HARD_AFFINITY),
        ],
        nodes_(CHINA, INDIA, AZ1),
        [100, 100, 0],
        {},
    ),
    (
        "anti-affinity-avoid-matching-node",
        pod("p", SEC_S1, terms=AWAY_S1_AZ),
        [pod("a", SEC_S1, on="node1"), pod("b", SEC_S2, on="node2")],
        nodes_(AZ1, CHINA),
        [0, 100],
        {},
    ),
    (
        "anti-affinity-more-matches-lower",
        pod("p", SEC_S1, terms=AWAY_S1_AZ),
        [pod("a", SEC_S1, on="node1"), pod("a2", SEC_S1, on="node1"), pod("b", SEC_S2, on="node2")],
        nodes_(AZ1, INDIA),
        [0, 100],
        {},
    ),
    (
        "anti-symmetry",
        pod("p", SEC_S2),
        [
            pod("a", SEC_S1, on="node1", terms=AWAY_S2_AZ),
            pod("b", SEC_S2, on="node2", terms=AWAY_S1_AZ),
        ],
        nodes_(AZ1, AZ2),
        [0, 100],
        {},
    ),
    (
        "affinity-and-anti-affinity-same-labels",
        pod("p", SEC_S1, terms=STAY_S1_AWAY_S2),
        [
            pod(f"x{i}", SEC_S1, on=n)
            for i, n in enumerate(["node1", "node1", "node2", "node3", "node3", "node4", "node5"])
        ],
        nodes_(CHINA_AZ1, INDIA, CHINA, CHINA, INDIA),
        [100, 0, 100, 100, 0],
        {},
    ),
    (
        "affinity-anti-affinity-and-symmetry",
        pod("p", SEC_S1, terms=STAY_S1_AWAY_S2),
        [
            pod("a", SEC_S1, on="node1"),
            pod("b", SEC_S2, on="node2"),
            pod("c", on="node3", terms=STAY_S1_AWAY_S2),
            pod("d", on="node4", terms=AWAY_S1_AZ),
        ],
        nodes_(CHINA, AZ1, INDIA, AZ2),
        [100, 0, 100, 0],
        {},
    ),
    (
        "partial-topology-without-affinity-pods",
        pod("p", SEC_S1),
        [pod("a", SEC_S1, on="node1"), pod("b", on="node2", terms=STAY_S1_AWAY_S2)],
        nodes_(CHINA, CHINA),
        [0, 0],
        {},
    ),
    (
        "affinity-namespace-selector-incoming",
        pod("p", SEC_S1, ns="subteam1-team1", terms=AFF_NS_SEL),
        [
            pod("a", SEC_S1, on="node1", ns="subteam1-team1"),
            pod("b", SEC_S1, on="node1", ns="subteam1-team1"),
            pod("c", SEC_S1, on="node1", ns="subteam1-team2"),
            pod("d", SEC_S1, on="node2", ns="subteam2-team1"),
        ],
        nodes_(CHINA, INDIA),
        [100, 0],
        {},
    ),
    (
        "affinity-namespace-selector-and-namespaces",
        pod("p", SEC_S1, ns="subteam1-team1", terms=AFF_NS_SEL),
        [
            pod("a", SEC_S1, on="node1", ns="subteam1-team1"),
            pod("b", SEC_S1, on="node1", ns="subteam1-team1"),
            pod("c", SEC_S1, on="node1", ns="subteam2-team2"),
            pod("d", SEC_S1, on="node2", ns="subteam2-team1"),
        ],
        nodes_(CHINA, INDIA),
        [100, 0],
        {},
    ),
    (
        "anti-affinity-namespace-selector-incoming",
        pod("p", SEC_S1, ns="subteam1-team1", terms=ANTI_NS_SEL),
        [
            pod("a", SEC_S1, on="node1", ns="subteam1-team1"),
            pod("b", SEC_S1, on="node1", ns="subteam1-team1"),
            pod("c", SEC_S1, on="node1", ns="subteam1-team2"),
            pod("d", SEC_S1, on="node2", ns="subteam2-team1"),
        ],
        nodes_(CHINA, INDIA),
        [0, 100],
        {},
    ),
    (
        "ignore-preferred-terms-of-existing-pods",
        pod("p", SEC_S2),
        [
            pod("a", SEC_S1, on="node1", terms=STAY_S1_AWAY_S2),
            pod("b", SEC_S2, on="node2", terms=STAY_S2_REGION),
        ],
        nodes_(CHINA, INDIA),
        None,
        {"ignorePreferredTermsOfExistingPods": True},
    ),
    (
        "do-not-ignore-preferred-terms-of-existing-pods",
        pod("p", SEC_S2),
        [
            pod("a", SEC_S1, on="node1", terms=STAY_S1_AWAY_S2),
            pod("b", SEC_S2, on="node2", terms=STAY_S2_REGION),
        ],
        nodes_(CHINA, INDIA),
        [0, 100],
        {"ignorePreferredTermsOfExistingPods": False},
    ),
    (
        "ignore-existing-but-pod-has-own-terms",
        pod("p", SEC_S2, terms=STAY_S1_REGION),
        [pod("a", SEC_S1, on="node1"), pod("b", SEC_S2, on="node2", terms=STAY_S2_REGION)],
        nodes_(CHINA, INDIA),
        [0, 100],
        {"ignorePreferredTermsOfExistingPods": True},
    ),
    ("no-nodes", pod("p", SEC_S2), [], [], None, {}),
    (
        "node-without-labels-ignored",
        pod("p", SEC_S1, terms=[pref(5, "rack", S1)]),
        [pod("a", SEC_S1, on="node1"), pod("b", SEC_S1, on="node2")],
        [Node.model_validate({"metadata": {"name": "node1"}}), node("node2", rack="r")],
        [0, 100],
        {},
    ),
    (
        "all-equal-scores-normalise-to-zero",
        pod("p", SEC_S1, terms=STAY_S1_REGION),
        [pod("a", SEC_S1, on="node1"), pod("b", SEC_S1, on="node2")],
        nodes_(CHINA, INDIA),
        [0, 0],
        {},
    ),
    (
        "negative-and-positive-normalisation",
        # raw: node1 +5*2 = 10, node2 -7 (anti), node3 0 -> (x+7)*100/17
        pod("p", SEC_S1, terms=[pref(5, "region", S1), pref_anti(7, "region", S2)]),
        [pod("a", SEC_S1, on="node1"), pod("a2", SEC_S1, on="node1"), pod("b", SEC_S2, on="node2")],
        nodes_(CHINA, INDIA, {"region": "Japan"}),
        [100, 0, 41],
        {},
    ),
    (
        "all-negative-normalisation",
        # raw: node1 -3, node2 -9, node3 (no region) 0 -> (x+9)*100/9
        pod("p", SEC_S1, terms=[pref_anti(3, "region", S1)]),
        [pod("a", SEC_S1, on="node1"), *(pod(f"b{i}", SEC_S1, on="node2") for i in range(3))],
        nodes_(CHINA, INDIA, AZ1),
        [66, 0, 100],
        {},
    ),
    (
        "matched-term-with-zero-sum-is-not-skipped",
        # +5 (affinity) and -5 (anti) on the same pair: the pair exists with 0.
        pod("p", SEC_S1, terms=[pref(5, "region", S1), pref_anti(5, "region", S1)]),
        [pod("a", SEC_S1, on="node1")],
        nodes_(CHINA, INDIA),
        [0, 0],
        {},
    ),
]


@pytest.mark.parametrize(
    "p, pods, nodes, want, args", [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(p, pods, nodes, want, args):
    skipped, got = run_score(p, pods, nodes, args=args)
    if want is None:
        assert skipped
        return
    assert not skipped
    assert got == {n.metadata.name: s for n, s in zip(nodes, want, strict=True)}


HARD_POD_AFFINITY = [
    req(
        "region",
        expr("service", "In", "S1"),
        namespaces=["default", "subteam2-team2"],
        namespace_selector=TEAM1,
    )
]
SVC_S1 = {"service": "S1"}


@pytest.mark.parametrize(
    "ns, weight, want",
    [
        (None, 1, [100, 100, 0]),
        (None, 0, None),
        ("subteam1-team2", 1, None),
        ("subteam1-team1", 1, [100, 100, 0]),
        ("subteam2-team2", 1, [100, 100, 0]),
        (None, 100, [100, 100, 0]),
    ],
    ids=[
        "default-weight",
        "zero-weight-skips",
        "no-matching-namespace",
        "matching-namespace-selector",
        "matching-namespaces",
        "max-weight",
    ],
)
def test_hard_pod_affinity_weight(ns, weight, want):
    pods = [
        pod("a", on="node1", terms=HARD_POD_AFFINITY),
        pod("b", on="node2", terms=HARD_POD_AFFINITY),
    ]
    nodes = nodes_(CHINA, INDIA, AZ1)
    skipped, got = run_score(
        pod("p", SVC_S1, ns=ns), pods, nodes, args={"hardPodAffinityWeight": weight}
    )
    if want is None:
        assert skipped
    else:
        assert got == dict(zip(["node1", "node2", "node3"], want, strict=True))


def test_hard_weight_adds_to_preferred():
    # node1: existing pod's required affinity (w=10) + its preferred (5) = 15; node2: 5.
    pods = [
        pod("a", on="node1", terms=[req("region", SEC_S1), pref(5, "region", SEC_S1)]),
        pod("b", on="node2", terms=[pref(5, "region", SEC_S1)]),
    ]
    fw, snap = setup(pods, nodes_(CHINA, INDIA, AZ1), args={"hardPodAffinityWeight": 10})
    state = fw.new_cycle_state()
    pi = PodInfo(pod("p", SEC_S1))
    assert fw.run_pre_score_plugins(state, pi, snap.list()).is_success()
    result = fw.run_score_plugins(state, pi, batch_of(snap))
    (ps,) = result.plugins
    raw = dict(zip(result.names, ps.raw.tolist(), strict=True))
    assert raw == {"node1": 15, "node2": 5, "node3": 0}
    assert dict(zip(result.names, ps.normalized.tolist(), strict=True)) == {
        "node1": 100,
        "node2": 33,
        "node3": 0,
    }


@pytest.mark.parametrize(
    "raw, want",
    [
        ([10, -7, 0], [100, 0, 41]),
        ([-3, -9, 0], [66, 0, 100]),
        ([4, 4, 4], [0, 0, 0]),
        ([0, 0], [0, 0]),
        ([7], [0]),
        ([1, 2, 3], [0, 50, 100]),
        ([0, 1, 3], [0, 33, 100]),
        ([], []),
    ],
    ids=["mixed", "negative", "equal", "zeros", "single", "linear", "truncation", "empty"],
)
def test_normalize_score_formula(raw, want):
    from kubesched_builtin.interpodaffinity.scoring import PRE_SCORE_KEY, PreScoreState

    fw, _ = setup([], [])
    state = fw.new_cycle_state()
    state.write(PRE_SCORE_KEY, PreScoreState({"region": {"x": 1}}))
    scores = NodeScores([f"n{i}" for i in range(len(raw))], raw)
    fw.plugin(NAME).normalize_score(state, scores)
    assert scores.values.tolist() == want


def test_score_batch_over_subset_rows():
    pods = [pod("a", SEC_S1, on="node1"), pod("b", SEC_S1, on="node3")]
    nodes = nodes_(CHINA, INDIA, {"region": "Japan"}, CHINA)
    fw, snap = setup(pods, nodes)
    state = fw.new_cycle_state()
    pi = PodInfo(pod("p", terms=STAY_S1_REGION))
    fw.run_pre_score_plugins(state, pi, snap.list())
    plugin = fw.plugin(NAME)
    infos = [snap.get("node4"), snap.get("node2")]
    rows = [snap.table.index[ni.name] for ni in infos]
    got = plugin.score_nodes(state, NodeBatch(snap.table, rows, infos))
    assert isinstance(got, np.ndarray)
    assert got.tolist() == [plugin.score(state, ni) for ni in infos] == [5, 0]


# -- args -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, want",
    [
        ({}, (1, False)),
        ({"hardPodAffinityWeight": 0}, (0, False)),
        ({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}, (100, True)),
        ({"hardPodAffinityWeight": None}, (1, False)),
    ],
    ids=["defaults", "zero", "max-and-ignore", "null-is-default"],
)
def test_args_defaults(args, want):
    a = InterPodAffinityArgs.model_validate(args)
    assert (a.hard_pod_affinity_weight, a.ignore_preferred_terms_of_existing_pods) == want


@pytest.mark.parametrize(
    "args, message",
    [
        ({"hardPodAffinityWeight": -1}, "Invalid value: -1: not in valid range [0, 100]"),
        ({"hardPodAffinityWeight": 101}, "Invalid value: 101: not in valid range [0, 100]"),
        ({"hardPodAffinityWeigth": 1}, "Extra inputs are not permitted"),
    ],
    ids=["negative", "too-large", "unknown-key"],
)
def test_args_validation(args, message):
    with pytest.raises(ValidationError) as err:
        InterPodAffinityArgs.model_validate(args)
    assert message in str(err.value)


def test_args_validation_through_config_problems():
    from kubesched.config.validation import validation_error_problems

    with pytest.raises(ValidationError) as err:
        InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 101})
    (problem,) = validation_error_problems(
        err.value, ["profiles", 0, "pluginConfig", 0, "args"], InterPodAffinityArgs
    )
    assert str(problem).endswith(
        "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
    )


# -- events ---------------------------------------------------------------------------------


def test_events_to_register():
    events = InterPodAffinity(None, None).events_to_register()
    got = [(e.event.resource, e.event.action) for e in events]
    assert got == [
        (EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (
            EventResource.NODE,
            ActionType.ADD | ActionType.UPDATE_NODE_LABEL,
        ),
    ]
    assert all(e.queueing_hint is not None for e in events)


TARGET = pod("t", terms=[req("region", S1), anti("zone", S2)])
Q, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


@pytest.mark.parametrize(
    "old, new, want",
    [
        (None, pod("a", SEC_S1, on="n1"), Q),
        (None, pod("a", SEC_S2, on="n1"), SKIP),
        (None, pod("a", SEC_S1), SKIP),
        (pod("a", SEC_S2, on="n1"), pod("a", SEC_S1, on="n1"), Q),
        (pod("a", SEC_S1, on="n1"), pod("a", SEC_S1, on="n1"), SKIP),
        (pod("a", SEC_S2, on="n1"), pod("a", {"security": "S3"}, on="n1"), Q),
        (pod("a", SEC_S2, on="n1"), None, Q),
        (pod("a", SEC_S1, on="n1"), None, SKIP),
        (pod("a", SEC_S2), None, SKIP),
        (None, pod("a", SEC_S1, on="n1", ns="other"), SKIP),
    ],
    ids=[
        "add-matching-affinity",
        "add-not-matching",
        "add-unscheduled",
        "relabel-into-affinity",
        "relabel-no-change",
        "relabel-out-of-anti",
        "delete-anti-match",
        "delete-no-anti-match",
        "delete-unscheduled",
        "add-other-namespace",
    ],
)
def test_pod_change_hint(old, new, want):
    assert InterPodAffinity.is_schedulable_after_pod_change(TARGET, old, new) is want


@pytest.mark.parametrize(
    "labels, want",
    [({"region": "r"}, Q), ({"zone": "z"}, Q), ({"other": "x"}, SKIP), ({}, SKIP)],
    ids=["affinity-key", "anti-affinity-key", "unrelated-key", "no-labels"],
)
def test_node_change_hint(labels, want):
    assert (
        InterPodAffinity.is_schedulable_after_node_change(TARGET, None, node("n", **labels)) is want
    )
