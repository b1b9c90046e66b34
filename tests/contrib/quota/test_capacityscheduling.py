"""CapacityScheduling: upstream's unit-test cases (pkg/capacityscheduling), then kubesched's own."""

from __future__ import annotations

import pytest

from kubesched import INT64_MAX, ActionType, Code, EventResource, Resource, Status
from kubesched.testing import Nominator, as_pod_info, make_pod, snapshot_of
from kubesched_contrib.quota.capacityscheduling import (
    ELASTIC_QUOTA_SNAPSHOT_KEY,
    PRE_FILTER_STATE_KEY,
    CapacityScheduling,
    ElasticQuotaSnapshotState,
    PreFilterState,
)
from kubesched_contrib.quota.elasticquota import ElasticQuotaInfo, ElasticQuotaInfos

from .helpers import (
    HIGH,
    MID,
    POST_FILTER_ONLY_CONFIG,
    capacity_framework,
    info,
    mem_node,
    mem_pod,
    quota,
)

# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------

BIG = "100Gi"


def plugin(fw) -> CapacityScheduling:
    return fw.plugin("CapacityScheduling")


def pre_filter(fw, pod, pods=(), nodes=None):
    """PreFilter of CapacityScheduling alone: ``(status, state)``."""
    snap = snapshot_of(nodes or [mem_node(memory=BIG)], pods)
    fw.set_snapshot(snap)
    state = fw.new_cycle_state()
    pi = as_pod_info(pod)
    status = plugin(fw).pre_filter(state=state, pod_info=pi)
    return (status or Status()), state


def with_quotas(fw, pod, pods, nodes, infos: dict[str, ElasticQuotaInfo]):
    """PreFilter, then the quotas and requests replaced by the table's, as upstream's
    PostFilter / DryRunPreemption / PodEligibleToPreemptOthers tests do (``fw`` from
    ``POST_FILTER_ONLY_CONFIG``, as theirs)."""
    snap = snapshot_of(nodes, pods)
    fw.set_snapshot(snap)
    pi = as_pod_info(pod)
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, pi, snap.list())
    req = Resource.from_mapping(pi.requests)
    state.write(PRE_FILTER_STATE_KEY, PreFilterState(req, req.clone(), req.clone()))
    state.write(ELASTIC_QUOTA_SNAPSHOT_KEY, ElasticQuotaSnapshotState(ElasticQuotaInfos(infos)))
    return state, pi


# ---------------------------------------------------------------------------------------
# upstream TestPreFilter
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quotas", "used", "pods", "expected"),
    [
        pytest.param(
            [quota("ns1", min={"memory": "1000"}, max={"memory": "2000"})],
            [mem_pod("used-1", "ns1", 300, node="node-a")],
            [mem_pod("ns1-p1", "ns1", 500), mem_pod("ns1-p2", "ns1", 1800)],
            [Code.SUCCESS, Code.UNSCHEDULABLE],
            id="pod subjects to ElasticQuota",
        ),
        pytest.param(
            [
                quota("ns1", min={"memory": "1000"}, max={"memory": "2000"}),
                quota("ns2", min={"memory": "1000"}, max={"memory": "2000"}),
            ],
            [
                mem_pod("used-1", "ns1", 1800, node="node-a"),
                mem_pod("used-2", "ns2", 200, node="node-a"),
            ],
            [mem_pod("ns2-p1", "ns2", 500)],
            [Code.UNSCHEDULABLE],
            id="the sum of used is bigger than the sum of min",
        ),
        pytest.param(
            [],
            [],
            [mem_pod("ns2-p1", "ns2", 500)],
            [Code.SUCCESS],
            id="without elasticQuotaInfo",
        ),
    ],
)
def test_pre_filter(quotas, used, pods, expected):
    fw = capacity_framework(quotas)
    got = [pre_filter(fw, p, used)[0].code for p in pods]
    assert got == expected


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        pytest.param(
            mem_pod("big", "ns1", 1800),
            "Pod ns1/big is rejected in PreFilter because ElasticQuota ns1 is more than Max",
            id="over max",
        ),
        pytest.param(
            mem_pod("mid", "ns1", 900),
            "Pod ns1/mid is rejected in PreFilter because total ElasticQuota used is more than min",
            id="over the sum of mins",
        ),
    ],
)
def test_pre_filter_messages(pod, message):
    fw = capacity_framework([quota("ns1", min={"memory": "1000"}, max={"memory": "2000"})])
    status, _ = pre_filter(fw, pod, [mem_pod("used", "ns1", 300, node="node-a")])
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, message)


# ---------------------------------------------------------------------------------------
# upstream TestPostFilter and TestDryRunPreemption
# ---------------------------------------------------------------------------------------

IN_NAMESPACE = {
    "ns1": info("ns1", max=200, min=50, used=50),
    "ns2": info("ns2", max=200, min=200, used=100),
}
CROSS_NAMESPACE = {
    "ns1": info("ns1", max=200, min=150, used=50),
    "ns2": info("ns2", max=200, min=50, used=100),
}


@pytest.mark.parametrize(
    ("quotas", "existing"),
    [
        pytest.param(
            IN_NAMESPACE,
            [("t1-p2", "ns1", MID), ("t1-p3", "ns2", MID), ("t1-p4", "ns2", MID)],
            id="in-namespace preemption",
        ),
        pytest.param(
            CROSS_NAMESPACE,
            [("t1-p2", "ns1", MID), ("t1-p3", "ns2", MID), ("t1-p4", "ns2", MID)],
            id="cross-namespace preemption",
        ),
        pytest.param(
            {},
            [("t1-p2", "ns1", MID), ("t1-p3", "ns2", MID), ("t1-p4", "ns2", MID)],
            id="without elasticQuotas",
        ),
    ],
)
def test_post_filter(quotas, existing):
    fw = capacity_framework(config=POST_FILTER_ONLY_CONFIG)
    pl = plugin(fw)
    pl.evaluator.preempt_pod = lambda candidate, preemptor, victim: None
    pods = [mem_pod(n, ns, 50, prio, node="node-a") for n, ns, prio in existing]
    state, pi = with_quotas(
        fw,
        mem_pod("t1-p1", "ns1", 50, HIGH),
        pods,
        [mem_node()],
        {k: v.clone() for k, v in quotas.items()},
    )
    result = pl.post_filter(
        state=state, pod_info=pi, filtered_node_status_map={"node-a": Status.unschedulable()}
    )
    assert result.status is None
    assert result.nominated_node_name == "node-a"


@pytest.mark.parametrize(
    ("quotas", "existing", "victims"),
    [
        pytest.param(
            IN_NAMESPACE,
            [("t1-p1", "ns1", MID), ("t1-p2", "ns2", MID), ("t1-p3", "ns2", MID)],
            ["t1-p1"],
            id="in-namespace preemption",
        ),
        pytest.param(
            CROSS_NAMESPACE,
            [("t1-p1", "ns1", MID), ("t1-p2", "ns2", HIGH), ("t1-p3", "ns2", MID)],
            ["t1-p3"],
            id="cross-namespace preemption",
        ),
    ],
)
def test_dry_run_preemption(quotas, existing, victims):
    fw = capacity_framework(config=POST_FILTER_ONLY_CONFIG)
    pl = plugin(fw)
    pods = [mem_pod(n, ns, 50, prio, node="node-a") for n, ns, prio in existing]
    state, pi = with_quotas(
        fw,
        mem_pod("t1-p", "ns1", 50, HIGH),
        pods,
        [mem_node()],
        {k: v.clone() for k, v in quotas.items()},
    )
    nodes = fw.snapshot.list()
    candidates, statuses, errors = pl.evaluator.dry_run_preemption(
        state, pi, nodes, [], 0, len(nodes)
    )
    assert (statuses, errors) == ({}, [])
    assert [(c.name, sorted(v.name for v in c.victims)) for c in candidates] == [
        ("node-a", victims)
    ]


# ---------------------------------------------------------------------------------------
# upstream TestPodEligibleToPreemptOthers
# ---------------------------------------------------------------------------------------

NS1 = info("ns1", max=150, min=50, used=0)
NS2 = info("ns2", max=150, min=50, used=100)


def _terminating(name: str, ns: str):
    return (
        make_pod(name)
        .uid(name)
        .namespace(ns)
        .priority(MID)
        .node("node-a")
        .deletion_timestamp("2026-01-01T00:00:00Z")
        .obj()
    )


@pytest.mark.parametrize(
    ("pod", "existing", "nominated_status", "quotas", "expected"),
    [
        pytest.param(
            make_pod("t1-p1").uid("t1-p1").priority(HIGH).preemption_policy("Never").obj(),
            [mem_pod("t1-p0", "ns1", 50, MID, node="node-a")],
            Status.unresolvable("node(s) had untolerated taint"),
            {"ns1": NS1},
            False,
            id="Pod with PreemptNever preemption policy",
        ),
        pytest.param(
            make_pod("t1-p1").uid("t1-p1").priority(HIGH).nominated_node("node-a").obj(),
            [mem_pod("t1-p0", "ns1", 50, MID, node="node-a")],
            Status.unresolvable("node(s) had untolerated taint"),
            {"ns1": NS1},
            True,
            id="Pod with unschedulableAndUnresolvable nominated node",
        ),
        pytest.param(
            make_pod("t1-p1")
            .uid("t1-p1")
            .namespace("ns1")
            .priority(HIGH)
            .nominated_node("node-a")
            .obj(),
            [_terminating("t1-p0", "ns1")],
            None,
            {"ns1": NS1},
            False,
            id="Pod with terminating pod in the same namespace",
        ),
        pytest.param(
            make_pod("t1-p1")
            .uid("t1-p1")
            .namespace("ns1")
            .priority(HIGH)
            .nominated_node("node-a")
            .obj(),
            [_terminating("t1-p0", "ns2")],
            None,
            {"ns1": NS1, "ns2": NS2},
            False,
            id="Pod with terminating pod in another namespace",
        ),
        pytest.param(
            make_pod("t1-p1")
            .uid("t1-p1")
            .namespace("ns1")
            .priority(HIGH)
            .nominated_node("node-a")
            .obj(),
            [_terminating("t1-p0", "ns2")],
            None,
            {},
            False,
            id="Pod without elasticQuotas and terminating pod exists in the same namespace",
        ),
        pytest.param(
            make_pod("t1-p1")
            .uid("t1-p1")
            .namespace("ns1")
            .priority(HIGH)
            .nominated_node("node-a")
            .obj(),
            [_terminating("t1-p0", "ns2")],
            None,
            {"ns2": NS2},
            True,
            id="Pod without ElasticQuotas and terminating pod exists in another namespace",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(pod, existing, nominated_status, quotas, expected):
    fw = capacity_framework(config=POST_FILTER_ONLY_CONFIG)
    pl = plugin(fw)
    state, pi = with_quotas(
        fw, pod, existing, [mem_node()], {k: v.clone() for k, v in quotas.items()}
    )
    pl._state = state
    eligible, _ = pl.pod_eligible_to_preempt_others(pi, nominated_status)
    assert eligible is expected


# ---------------------------------------------------------------------------------------
# upstream TestReserve / TestUnreserve
# ---------------------------------------------------------------------------------------


def test_reserve():
    """Reserve pods: ns1's used goes from 300 to 350; a pod of ns2 leaves ns1 alone."""
    fw = capacity_framework([quota("ns1", min={"memory": "1000"}, max={"memory": "2000"})])
    pl = plugin(fw)
    pre_filter(fw, mem_pod("x", "ns3", 0), [mem_pod("used", "ns1", 300, node="node-a")])
    used = []
    for p in (mem_pod("t1-p1", "ns1", 50, MID), mem_pod("t1-p2", "ns2", 50, MID)):
        pl.reserve(pod_info=as_pod_info(p), node_name="node-a")
        used.append(pl.elastic_quota_infos(fw.snapshot)["ns1"].used.memory)
    assert used == [350, 350]
    assert pl.elastic_quota_infos(fw.snapshot)["ns1"].pods == {"t1-p1"}


def test_unreserve():
    """Unreserve pods: a pod not counted, or of another namespace, changes nothing; t1-p3
    (counted) is uncounted."""
    fw = capacity_framework([quota("ns1", min={"memory": "1000"}, max={"memory": "2000"})])
    pl = plugin(fw)
    fw.set_snapshot(snapshot_of([mem_node(memory=BIG)]))
    pl.reserve(pod_info=as_pod_info(mem_pod("t1-p3", "ns1", 50, MID)), node_name="node-a")
    pl.reserve(pod_info=as_pod_info(mem_pod("t1-p4", "ns1", 250, MID)), node_name="node-a")
    used = []
    for p in (
        mem_pod("t1-p1", "ns1", 50, MID),
        mem_pod("t1-p2", "ns2", 50, MID),
        mem_pod("t1-p3", "ns1", 50, MID),
    ):
        pl.unreserve(pod_info=as_pod_info(p))
        eq = pl.elastic_quota_infos(fw.snapshot)["ns1"]
        used.append((eq.used.memory, sorted(eq.pods)))
    assert used == [(300, ["t1-p3", "t1-p4"]), (300, ["t1-p3", "t1-p4"]), (250, ["t1-p4"])]


# ---------------------------------------------------------------------------------------
# upstream TestAddElasticQuota: unset bounds
# ---------------------------------------------------------------------------------------

UNSET_MAX = Resource(milli_cpu=INT64_MAX, memory=INT64_MAX, ephemeral_storage=INT64_MAX)


@pytest.mark.parametrize(
    ("max", "min", "want_max", "want_min"),
    [
        pytest.param(
            {"cpu": "100m", "memory": "1000"},
            {"cpu": "10m", "memory": "100"},
            Resource(milli_cpu=100, memory=1000),
            Resource(milli_cpu=10, memory=100),
            id="Add ElasticQuota",
        ),
        pytest.param(
            None,
            {"cpu": "10m", "memory": "100"},
            UNSET_MAX,
            Resource(milli_cpu=10, memory=100),
            id="Add ElasticQuota without Max",
        ),
        pytest.param(
            {"cpu": "100m", "memory": "1000"},
            None,
            Resource(milli_cpu=100, memory=1000),
            Resource(),
            id="Add ElasticQuota without Min",
        ),
        pytest.param(None, None, UNSET_MAX, Resource(), id="Add ElasticQuota without Max and Min"),
    ],
)
def test_elastic_quota_info_of(max, min, want_max, want_min):
    got = ElasticQuotaInfo.of(quota("ns1", min=min, max=max))
    assert (got.namespace, got.max, got.min, got.used, got.pods) == (
        "ns1",
        want_max,
        want_min,
        Resource(),
        set(),
    )


# ---------------------------------------------------------------------------------------
# kubesched's own
# ---------------------------------------------------------------------------------------


def test_events_to_register():
    events = [
        (e.event.resource, e.event.action)
        for e in plugin(capacity_framework()).events_to_register()
    ]
    assert events == [
        (EventResource.POD, ActionType.DELETE),
        (EventResource.ELASTIC_QUOTA, ActionType.ALL),
    ]


def test_usage_follows_the_snapshot():
    """A reserved pod counts while the snapshot has its node as it was at Reserve; a
    snapshot taken since shows the pod (counted once) or shows it gone; a pod gone from
    the snapshot, with its node or not, stops counting."""
    fw = capacity_framework([quota("ns1", min={"memory": "1000"})])
    pl = plugin(fw)
    a, b = mem_pod("a", "ns1", 100, node="node-a"), mem_pod("b", "ns1", 200, node="node-b")
    nodes = [mem_node("node-a", BIG), mem_node("node-b", BIG)]
    before = snapshot_of(nodes, [b])
    fw.set_snapshot(before)
    pl.reserve(pod_info=as_pod_info(a), node_name="node-a")
    steps = [pl.elastic_quota_infos(before)["ns1"].used.memory]
    for snap in (
        snapshot_of(nodes, [a, b]),
        snapshot_of(nodes, [b]),
        snapshot_of(nodes[:1], [a]),
    ):
        steps.append(pl.elastic_quota_infos(snap)["ns1"].used.memory)
    assert steps == [300, 300, 200, 100]
    assert pl.usage.reserved == {}


def test_reserved_pod_deleted_before_the_next_cycle_stops_counting():
    """Reserved, then gone (bound and deleted, or forgotten) before the next cycle: the
    next snapshot has its node without it, and it counts no more."""
    fw = capacity_framework([quota("ns1", min={"memory": "1000"})])
    pl = plugin(fw)
    fw.set_snapshot(snapshot_of([mem_node(memory=BIG)]))
    pl.reserve(pod_info=as_pod_info(mem_pod("gone", "ns1", 100)), node_name="node-a")
    later = snapshot_of([mem_node(memory=BIG)])
    assert pl.elastic_quota_infos(later)["ns1"].used.memory == 0
    assert pl.usage.reserved == {}


@pytest.mark.parametrize(
    ("pod", "node", "counted_before", "counted_after"),
    [
        pytest.param(mem_pod("bound", "ns1", 50, node="node-a"), "node-a", True, False, id="bound"),
        pytest.param(mem_pod("nominated", "ns1", 50), "", False, True, id="not in the snapshot"),
    ],
)
def test_dry_run_add_and_remove_count_once(pod, node, counted_before, counted_after):
    """AddPod/RemovePod of the dry run: a bound pod is counted and removing it uncounts
    it (twice: once); a pod not in the snapshot is added once."""
    eq = ElasticQuotaInfo("ns1", Resource(), None, Resource(memory=50 if node else 0))
    pi = as_pod_info(pod)
    assert eq.has_pod(pi) is counted_before
    for _ in range(2):
        (eq.delete_pod_if_present if counted_before else eq.add_pod_if_not_present)(pi)
    assert (eq.has_pod(pi), eq.used.memory) == (counted_after, 0 if counted_before else 50)
    clone = eq.clone()
    (clone.add_pod_if_not_present if counted_before else clone.delete_pod_if_present)(pi)
    assert (clone.has_pod(pi), eq.has_pod(pi)) == (counted_before, counted_after)


def test_max_without_memory_limits_memory_to_zero():
    """As upstream: a set max that leaves memory out allows no memory at all (the
    documented trap), while an extended resource left out is not limited."""
    fw = capacity_framework(
        [quota("ns1", min={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}, max={"cpu": "4"})]
    )
    cpu_only = make_pod("cpu").namespace("ns1").uid("cpu").req(cpu="1").obj()
    gpu = (
        make_pod("gpu")
        .namespace("ns1")
        .uid("gpu")
        .container({"cpu": "1", "nvidia.com/gpu": 1})
        .obj()
    )
    with_memory = make_pod("mem").namespace("ns1").uid("mem").req(cpu="1", memory="1Gi").obj()
    codes = [pre_filter(fw, p)[0].code for p in (cpu_only, gpu, with_memory)]
    assert codes == [Code.SUCCESS, Code.SUCCESS, Code.UNSCHEDULABLE]


def test_nominated_pods_count_against_quota():
    """A pod of the namespace nominated before (at least the same priority) counts; a
    lower-priority one does not."""
    nominator = Nominator()
    fw = capacity_framework(
        [quota("ns1", min={"memory": "1000"}, max={"memory": "1000"})], nominator=nominator
    )
    nominator.add_nominated_pod(as_pod_info(mem_pod("n-high", "ns1", 600, HIGH)), "node-a")
    nominator.add_nominated_pod(as_pod_info(mem_pod("n-low", "ns1", 600, 0)), "node-a")
    status, state = pre_filter(fw, mem_pod("p", "ns1", 500, MID))
    assert status.code is Code.UNSCHEDULABLE
    assert state.get(PRE_FILTER_STATE_KEY).nominated_in_eq_with_pod_req.memory == 1100
    nominator.delete_nominated_pod_if_exists(mem_pod("n-high", "ns1", 600, HIGH))
    assert pre_filter(fw, mem_pod("p", "ns1", 500, MID))[0].code is Code.SUCCESS


def test_within_min_reclaims_borrowed_quota():
    """A pod within its min, rejected at PreFilter because the others borrowed all the
    rest, preempts the least important pod of the borrowing namespace, whatever its
    priority, and only as much as the quota needs (the node has room)."""
    quotas = [
        quota("ns1", min={"memory": "100"}, max={"memory": "300"}),
        quota("ns2", min={"memory": "100"}, max={"memory": "300"}),
    ]
    fw = capacity_framework(quotas)
    pl = plugin(fw)
    pods = [mem_pod(f"b{i}", "ns2", 50, HIGH + i, node="node-a") for i in range(4)]
    snap = snapshot_of([mem_node(memory=BIG)], pods)
    fw.set_snapshot(snap)
    pi = as_pod_info(mem_pod("a", "ns1", 50, 0))
    state = fw.new_cycle_state()
    _, status, _ = fw.run_pre_filter_plugins(state, pi, snap.list())
    assert status.message() == (
        "Pod ns1/a is rejected in PreFilter because total ElasticQuota used is more than min"
    )
    candidates, _, _ = pl.evaluator.dry_run_preemption(state, pi, snap.list(), [], 0, 1)
    assert [[v.name for v in c.victims] for c in candidates] == [["b0"]]
