"""The batched preemption dry run and the node-only Filter skip equal the per-node dry run."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched import Code, Diagnosis, NodeInfo, PodInfo, Status, hookimpl
from kubesched.cache import new_snapshot
from kubesched.framework.listers import StaticLister
from kubesched.framework.preemption import PREEMPTION_EXPLANATION_KEY, pod_start_time
from kubesched.framework.preemption_batch import NodeCopies
from kubesched.framework.runtime.framework import filter_depends_only_on_node
from kubesched.framework.types import NodeBatch
from kubesched.metrics import Metrics
from kubesched.queue.nominator import Nominator
from kubesched.testing import RecordingClient, RecordingEventRecorder, make_framework
from kubesched_builtin.defaultpreemption import DefaultPreemption
from kubesched_builtin.interpodaffinity import InterPodAffinity
from kubesched_builtin.nodeaffinity import NodeAffinity
from kubesched_builtin.nodename import NodeName
from kubesched_builtin.nodeports import NodePorts
from kubesched_builtin.noderesources.fit import NodeResourcesFit
from kubesched_builtin.nodeunschedulable import NodeUnschedulable
from kubesched_builtin.queuesort import PrioritySort
from kubesched_builtin.tainttoleration import TaintToleration

from .test_defaultpreemption import T0, T1, T2, T3, node, pdb, pod

MAX_PODS_PER_NODE_KEY = "example.com/max-pods"


class PodCountLimit:
    """A Filter that depends on the pods on the node and declares nothing: a node labelled
    with MAX_PODS_PER_NODE_KEY takes at most that many pods."""

    name = "PodCountLimit"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    @hookimpl
    def filter(self, node_info: NodeInfo) -> Status | None:
        labels = node_info.node.metadata.labels or {}
        limit = labels.get(MAX_PODS_PER_NODE_KEY)
        if limit is not None and len(node_info.pods) + 1 > int(limit):
            return Status(Code.UNSCHEDULABLE, "too many pods for PodCountLimit")
        return None


class DeclaresButTracksPods(PodCountLimit):
    """Declares a node-only Filter but implements PreFilter extensions: never node-only."""

    name = "DeclaresButTracksPods"
    filter_depends_only_on_node = True

    @hookimpl
    def pre_filter(self, state: Any, pod_info: PodInfo) -> Status | None:
        return None

    @hookimpl
    def pre_filter_add_pod(self, state: Any, pod_info_to_add: PodInfo) -> Status | None:
        return None

    @hookimpl
    def pre_filter_remove_pod(self, state: Any, pod_info_to_remove: PodInfo) -> Status | None:
        return None


PLUGINS = (
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    PodCountLimit,
    DefaultPreemption,
)
"""Node-only filters, a per-node filter reading the NodeInfo's ports (NodePorts), the
vectorised resource fit and a pod-counting filter without declaration."""

STARTS = (T0, T1, T2, T3, None)

pod_spec = st.fixed_dictionaries(
    {
        "prio": st.sampled_from((0, 5, 10, 12)),
        "cpu": st.integers(1, 15).map(lambda n: f"{n * 100}m"),
        "start": st.sampled_from(STARTS),
        "app": st.sampled_from(("a", "b")),
        "port": st.booleans(),
    }
)
node_spec = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(("2", "3", "4")),
        "pods": st.sampled_from(("3", "5", "110")),
        "limit": st.sampled_from((None, "2", "3")),
        "taint": st.booleans(),
        "cordoned": st.booleans(),
        "zone": st.sampled_from(("z1", "z2")),
        "pods_on": st.lists(pod_spec, max_size=5),
    }
)
cluster = st.fixed_dictionaries(
    {
        "nodes": st.lists(node_spec, min_size=1, max_size=7),
        "nominated": st.lists(
            st.tuples(st.sampled_from((5, 10, 15)), st.integers(1, 20), st.integers(0, 6)),
            max_size=3,
        ),
        "pdbs": st.lists(st.tuples(st.sampled_from(("a", "b")), st.integers(0, 2)), max_size=2),
        "preemptor_cpu": st.integers(5, 30).map(lambda n: f"{n * 100}m"),
        "preemptor_port": st.booleans(),
        "tolerates": st.booleans(),
        "zone_affinity": st.booleans(),
        "seed": st.integers(0, 2**16),
        "min_candidates": st.integers(1, 4),
    }
)


def handle(nominator: Nominator | None = None, pdbs=(), seed: int = 0) -> dict[str, Any]:
    """The Handle's parts for make_framework: recording client, PDBs, seeded rng."""
    return {
        "client": RecordingClient(),
        "event_recorder": RecordingEventRecorder(),
        "nominator": Nominator() if nominator is None else nominator,
        "lister": StaticLister(list(pdbs)),
        "metrics": Metrics(),
        "rng": random.Random(seed),
    }


def build(c: dict, *, anti_affinity: bool = False):
    """A framework and snapshot for the generated cluster ``c``; the preemptor."""
    nodes, pods = [], []
    for i, n in enumerate(c["nodes"]):
        name = f"n{i}"
        b = node(name, cpu=n["cpu"], pods=n["pods"]).labels({"zone": n["zone"]})
        if n["limit"] is not None:
            b = b.labels({MAX_PODS_PER_NODE_KEY: n["limit"]})
        if n["taint"]:
            b = b.taint("dedicated", "x")
        if n["cordoned"]:
            b = b.unschedulable()
        nodes.append(b.obj())
        for j, p in enumerate(n["pods_on"]):
            pb = pod(f"{name}-p{j}", p["prio"], p["cpu"], name, p["start"]).labels(app=p["app"])
            if p["port"]:
                pb = pb.host_port(8080)
            pods.append(pb.obj())
    nominator = Nominator()
    for k, (prio, cpu, at) in enumerate(c["nominated"]):
        nominee = pod(f"nominee-{k}", prio, f"{cpu * 100}m").obj()
        nominator.add_nominated_pod(PodInfo(nominee), f"n{at % len(nodes)}")
    plugins = (*PLUGINS, InterPodAffinity) if anti_affinity else PLUGINS
    fw = make_framework(
        *plugins,
        args={
            "DefaultPreemption": {
                "minCandidateNodesPercentage": 0,
                "minCandidateNodesAbsolute": c["min_candidates"],
            }
        },
        **handle(
            nominator, [pdb(f"pdb-{app}", {"app": app}, n) for app, n in c["pdbs"]], c["seed"]
        ),
    )
    fw.set_snapshot(new_snapshot(pods, nodes))
    pre = pod("preemptor", 10, c["preemptor_cpu"]).labels(app="a")
    if c["preemptor_port"]:
        pre = pre.host_port(8080)
    if c["tolerates"]:
        pre = pre.toleration("dedicated", "x")
    if c["zone_affinity"]:
        pre = pre.node_affinity_in("zone", ["z1"])
    if anti_affinity:
        pre = pre.pod_anti_affinity("zone", {"app": "b"})
    return fw, PodInfo(pre.obj())


def prefilter(fw, pi: PodInfo):
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, pi, fw.snapshot.list())
    return state


def outcome(results) -> list[tuple]:
    return [
        ([v.key for v in victims], violations, s.code, tuple(s.reasons), s.plugin)
        for victims, violations, s in results
    ]


def batched_and_per_node_victims(fw, pi: PodInfo) -> tuple[list | None, list]:
    """``select_victims_on_nodes`` over every node (None: it declined) and
    ``select_victims_on_node`` on each node's clone, as ``outcome`` lists."""
    state = prefilter(fw, pi)
    plugin = fw.plugin("DefaultPreemption")
    nodes = fw.snapshot.list()
    pdbs = plugin.evaluator.pdbs_for(nodes)
    batched = plugin.select_victims_on_nodes(state.clone(), pi, nodes, pdbs)
    per_node = [plugin.select_victims_on_node(state.clone(), pi, ni.clone(), pdbs) for ni in nodes]
    return (None if batched is None else outcome(batched)), outcome(per_node)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_victims_equal_per_node_victims(c):
    batched, per_node = batched_and_per_node_victims(*build(c))
    assert batched is not None  # no PreFilter extension is active: the batch path runs
    assert batched == per_node


def _latest_first(pod_info: PodInfo) -> tuple[int, float]:
    # Importance by priority, ties broken the other way round (latest start first).
    start = pod_start_time(pod_info)
    return (-pod_info.priority, -start if start != float("inf") else -1e300)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster, st.sampled_from(("importance_key", "is_eligible_pod")))
def test_replaced_decisions_batched_equal_per_node(c, replaced):
    # A replaced importance key or eligibility takes the batch's per-node ordering.
    fw, pi = build(c)
    plugin = fw.plugin("DefaultPreemption")
    if replaced == "importance_key":
        plugin.importance_key = _latest_first
    else:
        plugin.is_eligible_pod = lambda node_info, victim, preemptor: (
            victim.labels.get("app") == "b"
        )
    batched, per_node = batched_and_per_node_victims(fw, pi)
    assert batched is not None
    assert batched == per_node


def _pdb_cluster(num_nodes: int, allowed: int, disrupted: tuple[str, ...]):
    """Nodes each running three app=a pods of which the preemptor leaves one, and a PDB
    selecting them all: the budget is spent per node, most important pod first."""
    nodes, pods = [], []
    for i in range(num_nodes):
        nodes.append(node(f"n{i}", cpu="2", pods="110").obj())
        for j, start in enumerate((T2, T0, T1)):
            pods.append(pod(f"n{i}-p{j}", 0, "400m", f"n{i}", start).labels(app="a").obj())
    fw = make_framework(
        *PLUGINS, **handle(pdbs=[pdb("pdb-a", {"app": "a"}, allowed, disrupted=disrupted)])
    )
    fw.set_snapshot(new_snapshot(pods, nodes))
    return fw, PodInfo(pod("preemptor", 10, "1500m").obj())


# Importance on each node: p1 (started T0), p2 (T1), p0 (T2); one of them fits back.
@pytest.mark.parametrize(
    ("num_nodes", "allowed", "disrupted", "want_victims", "want_violations"),
    [
        # p1 spends the budget, p2 and p0 violate: p2 is reprieved.
        (3, 1, (), ["p1", "p0"], 1),
        (3, 0, (), ["p2", "p0"], 2),
        # Only p0 violates: it is tried first and reprieved.
        (3, 2, (), ["p1", "p2"], 0),
        (2, 1, ("n0-p1", "n1-p1"), ["p1", "p2"], 0),
        (1, 1, ("n0-p2",), ["p1", "p2"], 0),
    ],
    ids=["one-allowed", "none-allowed", "two-allowed", "disrupted-spend-nothing", "one-node"],
)
def test_pdb_budget_is_spent_per_node(num_nodes, allowed, disrupted, want_victims, want_violations):
    fw, pi = _pdb_cluster(num_nodes, allowed, disrupted)
    batched, per_node = batched_and_per_node_victims(fw, pi)
    assert batched == per_node
    assert [(victims, violations) for victims, violations, *_ in batched] == [
        ([f"default/n{i}-{p}" for p in want_victims], want_violations) for i in range(num_nodes)
    ]


def explained(fw, pi: PodInfo, per_node: bool, column: bool = False):
    """Filter, then PostFilter, as the scheduler runs them: what preemption decided.
    With ``column`` the statuses reach PostFilter as the scheduler passes them (a
    ``NodeStatusMap`` that knows the potential nodes as a column), else as a plain dict."""
    plugin = fw.plugin("DefaultPreemption")
    if per_node:
        plugin.select_victims_on_nodes = lambda *args: None
    state = prefilter(fw, pi)
    statuses = {}
    for ni in fw.snapshot.list():
        s = fw.run_filter_plugins_with_nominated_pods(state, pi, ni)
        if not s.is_success():
            statuses[ni.name] = s
    if column:
        table = fw.snapshot.table
        rows = np.array([table.index[name] for name in statuses], dtype=np.intp)
        verdicts = np.empty(len(rows), dtype=object)
        verdicts[:] = list(statuses.values())
        diagnosis = Diagnosis()
        diagnosis.add_rejected(table.name_array[rows], rows, verdicts)
        statuses = diagnosis.post_filter_statuses(fw.snapshot.list(), table.name_array)
        assert statuses.unschedulable_nodes(fw.snapshot.list()) is not None
    result, status = fw.run_post_filter_plugins(state, pi, statuses)
    e = state.get(PREEMPTION_EXPLANATION_KEY)
    deleted = [c.pod for c in fw.client.of("delete_pod")]
    return (
        result,
        status.code,
        tuple(status.reasons),
        None
        if e is None
        else (e.offset, e.nodes_tried, e.candidates, e.rejected, e.chosen, e.victims),
        deleted,
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_dry_run_equals_per_node_dry_run(c):
    assert explained(*build(c), per_node=False) == explained(*build(c), per_node=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_potential_nodes_column_equals_the_lookup(c):
    assert explained(*build(c), per_node=False, column=True) == explained(*build(c), per_node=False)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_dry_run_with_prefilter_extensions_describes_the_copies(c):
    fw, pi = build(c, anti_affinity=True)
    state = prefilter(fw, pi)
    assert "InterPodAffinity" not in state.skip_filter_plugins
    nodes = fw.snapshot.list()
    pods = [list(ni.pods) for ni in nodes]
    # Without the pod, the extensions' states cannot be built: the per-node path.
    assert NodeCopies.of(fw, state, nodes, pods) is None
    copies = NodeCopies.of(fw, state, nodes, pods, pi)
    assert copies is not None and set(copies.extensions) == {"InterPodAffinity"}
    assert explained(*build(c, anti_affinity=True), per_node=False) == explained(
        *build(c, anti_affinity=True), per_node=True
    )


def assert_nominated_filter_equals_per_node(fw, pi: PodInfo) -> None:
    """The batched Filter counting nominated pods gives every node the per-node verdict."""
    state = prefilter(fw, pi)
    table = fw.snapshot.table
    verdicts, error = fw.run_filter_batch_with_nominated_pods(
        state, pi, NodeBatch(table, list(range(len(table))))
    )
    assert error is None
    for ni, got in zip(fw.snapshot.list(), verdicts.tolist(), strict=True):
        want = fw.run_filter_plugins_with_nominated_pods(state, pi, ni)
        if want.is_success():
            assert got is None, ni.name
        else:
            assert got is not None, ni.name
            assert (got.code, got.reasons, got.plugin) == (want.code, want.reasons, want.plugin)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster, st.booleans())
def test_batched_filter_with_nominated_pods_equals_per_node(c, anti_affinity):
    assert_nominated_filter_equals_per_node(*build(c, anti_affinity=anti_affinity))


def test_node_only_filters_are_the_declared_ones_without_extensions():
    fw = make_framework(*PLUGINS, DeclaresButTracksPods)
    assert fw.node_only_filters == {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
    }
    runner = fw.runners["DeclaresButTracksPods"]
    assert not filter_depends_only_on_node(runner)
    assert not filter_depends_only_on_node(fw.runners["PodCountLimit"])


@pytest.mark.parametrize(
    "limit, want_victims",
    [("1", ["n-low1", "n-low2"]), ("2", ["n-low2"]), (None, ["n-low2"])],
    ids=["pod-count-needs-two", "pod-count-needs-one", "no-limit"],
)
@pytest.mark.parametrize("per_node", [False, True], ids=["batched", "per-node"])
def test_filter_depending_on_pods_is_never_skipped(limit, want_victims, per_node):
    # The preemptor needs 1 cpu of 2 used by two low pods (1 cpu free after one goes);
    # PodCountLimit, which counts pods and declares nothing, may demand a second victim.
    labels = {MAX_PODS_PER_NODE_KEY: limit} if limit else {}
    nodes = [node("n", cpu="2").labels(labels).obj()]
    pods = [
        pod("n-low1", 1, "1", "n", T0).obj(),
        pod("n-low2", 1, "1", "n", T1).obj(),
    ]
    fw = make_framework(*PLUGINS, **handle())
    fw.set_snapshot(new_snapshot(pods, nodes))
    pi = PodInfo(pod("pre", 10, "1").obj())
    result, _, _, e, deleted = explained(fw, pi, per_node=per_node)
    assert result.nominated_node_name == "n"
    assert [v.split("/")[1] for v in e[5]] == want_victims
    assert sorted(d.split("/")[1] for d in deleted) == sorted(want_victims)


def test_node_only_filter_rejecting_a_potential_node_is_still_run():
    # The taint is checked after NodeResourcesFit in this profile, so Filter rejects the
    # node for cpu (Unschedulable: preemption might help); the dry run must still find
    # that the preemptor does not tolerate the taint.
    fw = make_framework(
        PrioritySort, NodeResourcesFit, TaintToleration, DefaultPreemption, **handle()
    )
    nodes = [node("n", cpu="1").taint("dedicated", "x").obj()]
    fw.set_snapshot(new_snapshot([pod("low", 1, "1", "n").obj()], nodes))
    pi = PodInfo(pod("pre", 10, "1").obj())
    for per_node in (False, True):
        _, code, _, e, deleted = explained(fw, pi, per_node=per_node)
        assert code is Code.UNSCHEDULABLE and deleted == []
        assert "untolerated taint" in e[3]["n"]


nomination_steps = st.lists(
    st.tuples(
        st.integers(0, 5),  # which pod
        st.sampled_from([None, "n0", "n1", "n2", "n3"]),  # its node (None: nomination gone)
        st.integers(0, 5),  # which pod asks for the additions next
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(nomination_steps)
def test_nominated_additions_kept_current_equal_a_fresh_build(steps):
    """What the nominated pods add, brought up to date from the nominator's changes
    cycle after cycle, equals what a framework that never saw the earlier cycles builds."""
    nodes = [node(f"n{i}", cpu="4", pods="10").obj() for i in range(4)]
    fw = make_framework(*PLUGINS, **handle())
    nominator = fw.nominator
    fw.set_snapshot(new_snapshot([], nodes))
    table = fw.snapshot.table
    pods = [PodInfo(pod(f"p{k}", k % 3, f"{100 * (k + 1)}m").obj()) for k in range(6)]
    for who, where, asker in steps:
        if where is None:
            nominator.delete_nominated_pod_if_exists(pods[who].pod)
        else:
            nominator.add_nominated_pod(pods[who], where)
        kept = fw._nominated_additions(pods[asker], table)
        fresh_fw = make_framework(*PLUGINS, **handle(nominator))
        fresh_fw.set_snapshot(fw.snapshot)
        fresh = fresh_fw._nominated_additions(pods[asker], table)
        assert kept.has.tolist() == fresh.has.tolist()
        assert {r: [p.uid for p in ps] for r, ps in kept.pods.items()} == {
            r: [p.uid for p in ps] for r, ps in fresh.pods.items()
        }
        for name in kept.requested.keys() | fresh.requested.keys():
            zeros = [0] * len(table)
            got = kept.requested[name].tolist() if name in kept.requested else zeros
            want = fresh.requested[name].tolist() if name in fresh.requested else zeros
            assert got == want, name
        assert kept.non_zero_cpu.tolist() == fresh.non_zero_cpu.tolist()
        assert kept.non_zero_memory.tolist() == fresh.non_zero_memory.tolist()
