"""Tests of DefaultPreemption and its evaluator: victims, candidate order, eligibility, args."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from kubesched import Code, PodInfo, PostFilterResult, QueueingHint, Status
from kubesched.api import Pod, PodDisruptionBudget, parse_object
from kubesched.cache import new_snapshot
from kubesched.features import parse_feature_gates
from kubesched.framework.listers import StaticLister
from kubesched.framework.preemption import (
    CRITERIA,
    FIRST_IN_ORDER,
    ONLY_CANDIDATE,
    PREEMPTION_EXPLANATION_KEY,
    PREEMPTOR_POD,
    PREEMPTOR_POD_GROUP,
    Candidate,
    PDBView,
    Preemptor,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
    pick_one_node_for_preemption_explained,
)
from kubesched.metrics import Metrics
from kubesched.queue.nominator import Nominator
from kubesched.testing import (
    RecordingClient,
    RecordingEventRecorder,
    make_framework,
    make_node,
    make_pod,
)
from kubesched_builtin.defaultpreemption import DefaultPreemption, DefaultPreemptionArgs
from kubesched_builtin.interpodaffinity import InterPodAffinity
from kubesched_builtin.nodeports import NodePorts
from kubesched_builtin.noderesources.fit import NodeResourcesFit
from kubesched_builtin.queuesort import PrioritySort
from kubesched_builtin.tainttoleration import TaintToleration

HOST = "kubernetes.io/hostname"
T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:01:00Z"
T2 = "2026-01-01T00:02:00Z"
T3 = "2026-01-01T00:03:00Z"


# -- harness --------------------------------------------------------------------------------


def deleted(run: Run) -> list[str]:
    """The names of the pods preemption deleted, in order."""
    return [c.pod.split("/", 1)[1] for c in run.client.of("delete_pod")]


def node(name: str, cpu: str = "4", pods: str = "110"):
    return make_node(name).capacity(cpu=cpu, memory="16Gi", pods=pods).labels({HOST: name})


def pod(name: str, prio: int, cpu: str = "1", node_name: str | None = None, start: str | None = T0):
    """A pod; on ``node_name`` it started at ``start`` (``None``: not started yet)."""
    b = make_pod(name).uid(name).priority(prio).req(cpu=cpu)
    if node_name:
        b = b.node(node_name)
        if start is not None:
            b = b.start_time(start)
    return b


def pdb(name: str, labels: dict[str, str], allowed: int, ns: str = "default", disrupted=()):
    return PodDisruptionBudget.model_validate(
        {
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": labels}},
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": {p: T0 for p in disrupted},
            },
        }
    )


@dataclass
class Run:
    fw: Any
    plugin: DefaultPreemption
    client: RecordingClient
    recorder: RecordingEventRecorder
    nominator: Nominator
    metrics: Metrics
    snapshot: Any
    state: Any = None
    statuses: dict[str, Status] = field(default_factory=dict)


def harness(
    nodes,
    pods,
    *,
    plugins=(NodeResourcesFit,),
    pdbs=(),
    nominated=(),
    args=None,
    seed=0,
    gates=(),
) -> Run:
    client, recorder = RecordingClient(), RecordingEventRecorder()
    nominator, metrics = Nominator(), Metrics()
    fw = make_framework(
        PrioritySort,
        *plugins,
        DefaultPreemption,
        args={"DefaultPreemption": args or {}},
        client=client,
        event_recorder=recorder,
        nominator=nominator,
        lister=StaticLister(pdbs),
        metrics=metrics,
        rng=random.Random(seed),
        feature_gates=parse_feature_gates(gates),
    )
    for p, node_name in nominated:
        nominator.add_nominated_pod(PodInfo(p), node_name)
    snapshot = new_snapshot([b.obj() if hasattr(b, "obj") else b for b in pods], nodes)
    fw.set_snapshot(snapshot)
    return Run(fw, fw.plugin("DefaultPreemption"), client, recorder, nominator, metrics, snapshot)


def nodes_of(*builders) -> list:
    return [b.obj() for b in builders]


def filter_all(run: Run, preemptor: PodInfo) -> None:
    """PreFilter and Filter on every node, as the scheduler does before PostFilter."""
    run.state = run.fw.new_cycle_state()
    _, status, _ = run.fw.run_pre_filter_plugins(run.state, preemptor, run.snapshot.list())
    for ni in run.snapshot.list():
        s = status if not status.is_success() else None
        if s is None:
            s = run.fw.run_filter_plugins_with_nominated_pods(run.state, preemptor, ni)
        if not s.is_success():
            run.statuses[ni.name] = s


def post_filter(run: Run, preemptor_builder) -> tuple[PostFilterResult | None, Status]:
    preemptor = PodInfo(preemptor_builder.obj())
    filter_all(run, preemptor)
    return run.fw.run_post_filter_plugins(run.state, preemptor, run.statuses)


# -- selectVictimsOnNode ----------------------------------------------------------------------


VICTIM_CASES = [
    pytest.param(
        [pod("p1", 1, "2", "n"), pod("p2", 2, "1", "n"), pod("p3", 3, "1", "n")],
        pod("pre", 10, "2"),
        [],
        ["p1"],
        0,
        id="reprieve-highest-priority-first",
    ),
    pytest.param(
        [pod("p1", 1, "1", "n"), pod("p2", 1, "1", "n"), pod("p3", 1, "2", "n")],
        pod("pre", 10, "3"),
        [],
        ["p2", "p3"],
        0,
        id="reprieve-in-order-not-by-size",
    ),
    pytest.param(
        [pod("old", 1, "2", "n", T0), pod("new", 1, "2", "n", T1)],
        pod("pre", 10, "2"),
        [],
        ["new"],
        0,
        id="equal-priority-older-pod-reprieved",
    ),
    pytest.param(
        [pod("a", 1, "2", "n").labels(app="a"), pod("b", 2, "2", "n")],
        pod("pre", 10, "2"),
        [pdb("pdb-a", {"app": "a"}, 0)],
        ["b"],
        0,
        id="pdb-violating-reprieved-first",
    ),
    pytest.param(
        [pod("a", 1, "2", "n").labels(app="a"), pod("b", 2, "2", "n")],
        pod("pre", 10, "2"),
        [],
        ["a"],
        0,
        id="same-without-pdb",
    ),
    pytest.param(
        [pod("a", 1, "2", "n").labels(app="x"), pod("b", 2, "2", "n").labels(app="x")],
        pod("pre", 10, "4"),
        [pdb("pdb-x", {"app": "x"}, 1)],
        ["b", "a"],
        1,
        id="budget-spent-in-importance-order",
    ),
    pytest.param(
        [pod("a", 1, "2", "n").labels(app="x"), pod("b", 2, "2", "n").labels(app="x")],
        pod("pre", 10, "4"),
        [pdb("pdb-x", {"app": "x"}, 0, disrupted=["a"])],
        ["b", "a"],
        1,
        id="disrupted-pod-spends-no-budget",
    ),
    pytest.param(
        [pod("a", 1, "2", "n").labels(app="x"), pod("b", 2, "2", "n").labels(app="x")],
        pod("pre", 10, "4"),
        [pdb("pdb-x", {"app": "x"}, 0, ns="other")],
        ["b", "a"],
        0,
        id="pdb-in-other-namespace-ignored",
    ),
    pytest.param(
        [
            pod("v1", 1, "1", "n").labels(app="x"),
            pod("n1", 3, "1", "n"),
            pod("v2", 2, "1", "n").labels(app="x"),
            pod("n2", 4, "1", "n"),
        ],
        pod("pre", 10, "3"),
        [pdb("pdb-x", {"app": "x"}, 0)],
        ["n2", "n1", "v1"],
        1,
        id="violating-group-first-then-others-victims-resorted",
    ),
    pytest.param(
        [
            pod("v1", 1, "1", "n").labels(app="x"),
            pod("n1", 3, "1", "n"),
            pod("v2", 2, "1", "n").labels(app="x"),
            pod("n2", 4, "1", "n"),
        ],
        pod("pre", 10, "4"),
        [pdb("pdb-x", {"app": "x"}, 0)],
        ["n2", "n1", "v2", "v1"],
        2,
        id="all-go-victims-sorted-by-importance",
    ),
]


@pytest.mark.parametrize("pods, preemptor, pdbs, want, want_violations", VICTIM_CASES)
def test_select_victims_on_node(pods, preemptor, pdbs, want, want_violations):
    run = harness(nodes_of(node("n")), pods, pdbs=pdbs)
    pi = PodInfo(preemptor.obj())
    filter_all(run, pi)
    views = [PDBView.of(p) for p in pdbs]
    ni = run.snapshot.get("n").clone()
    victims, violations, status = run.plugin.select_victims_on_node(
        run.state.clone(), pi, ni, views
    )
    assert status.is_success(), status
    assert [v.name for v in victims] == want
    assert violations == want_violations


@pytest.mark.parametrize(
    "pods, preemptor, want_code, want_reasons",
    [
        (
            [pod("p1", 10, "2", "n"), pod("p2", 20, "2", "n")],
            pod("pre", 10, "2"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["No preemption victims found for incoming pod"],
        ),
        (
            [pod("p1", 1, "1", "n"), pod("big", 20, "3", "n")],
            pod("pre", 10, "2"),
            Code.UNSCHEDULABLE,
            ["Insufficient cpu"],
        ),
    ],
    ids=["equal-or-higher-priority-are-no-victims", "does-not-fit-even-without-victims"],
)
def test_select_victims_on_node_failures(pods, preemptor, want_code, want_reasons):
    run = harness(nodes_of(node("n")), pods)
    pi = PodInfo(preemptor.obj())
    filter_all(run, pi)
    victims, _, status = run.plugin.select_victims_on_node(
        run.state.clone(), pi, run.snapshot.get("n").clone(), []
    )
    assert victims == []
    assert status.code is want_code
    assert status.reasons == want_reasons


def test_select_victims_does_not_touch_snapshot_or_state():
    run = harness(nodes_of(node("n")), [pod("p1", 1, "2", "n"), pod("p2", 1, "2", "n")])
    pi = PodInfo(pod("pre", 10, "4").obj())
    filter_all(run, pi)
    before = run.snapshot.get("n").requested.milli_cpu
    post = run.fw.run_post_filter_plugins(run.state, pi, run.statuses)
    assert post[0] == PostFilterResult("n")
    assert run.snapshot.get("n").requested.milli_cpu == before == 4000
    assert len(run.snapshot.get("n").pods) == 2


def test_nominated_pods_are_counted_by_filters():
    # Without the nominated pod the preemptor fits as it is; with it (priority 20 >= 10)
    # the node is full, and both low-priority pods must go.
    nominated = pod("nominee", 20, "2").obj()
    pods = [pod("p1", 1, "1", "n"), pod("p2", 1, "1", "n")]
    run = harness(nodes_of(node("n")), pods, nominated=[(nominated, "n")])
    result, status = post_filter(run, pod("pre", 10, "2"))
    assert run.statuses["n"].reasons == ["Insufficient cpu"]
    assert result == PostFilterResult("n"), status
    assert sorted(deleted(run)) == ["p1", "p2"]


def test_lower_priority_nominated_pods_are_not_counted():
    nominated = pod("nominee", 5, "2").obj()
    pods = [pod("p1", 1, "1", "n"), pod("p2", 1, "2", "n")]
    run = harness(nodes_of(node("n")), pods, nominated=[(nominated, "n")])
    result, _ = post_filter(run, pod("pre", 10, "2"))
    assert result == PostFilterResult("n")
    assert deleted(run) == ["p2"]
    # The lower-priority nominee's nomination is cleared.
    assert any(
        c.pod == "default/nominee" and c.condition is None and c.clear_nominated_node_name
        for c in run.client.of("update_pod_status")
    )
    assert run.nominator.nominated_pods_for_node("n") == []


# -- filterPodsWithPDBViolation -----------------------------------------------------------------


@pytest.mark.parametrize(
    "pods, pdbs, want_violating",
    [
        ([pod("a", 1).labels(app="x")], [pdb("p", {"app": "x"}, 1)], []),
        ([pod("a", 1).labels(app="x")], [pdb("p", {"app": "x"}, 0)], ["a"]),
        ([pod("a", 1)], [pdb("p", {"app": "x"}, 0)], []),
        ([pod("a", 1).labels(app="x")], [pdb("p", {}, 0)], []),
        ([pod("a", 1).labels(app="x")], [pdb("p", {"app": "x"}, 0, ns="other")], []),
        ([pod("a", 1).labels(app="x")], [pdb("p", {"app": "x"}, 0, disrupted=["a"])], []),
        (
            [pod("a", 1).labels(app="x"), pod("b", 1).labels(app="x"), pod("c", 1).labels(app="x")],
            [pdb("p", {"app": "x"}, 2)],
            ["c"],
        ),
        (
            [pod("a", 1).labels(app="x", tier="t")],
            [pdb("p1", {"app": "x"}, 1), pdb("p2", {"tier": "t"}, 0)],
            ["a"],
        ),
    ],
    ids=[
        "within-budget",
        "budget-zero",
        "pod-without-labels",
        "empty-selector-matches-nothing",
        "other-namespace",
        "already-disrupted",
        "budget-spent-in-order",
        "any-violated-pdb-counts",
    ],
)
def test_filter_pods_with_pdb_violation(pods, pdbs, want_violating):
    infos = [PodInfo(b.obj()) for b in pods]
    violating, non_violating = filter_pods_with_pdb_violation(infos, [PDBView.of(p) for p in pdbs])
    assert [p.name for p in violating] == want_violating
    assert [p.name for p in non_violating] == [
        p.name for p in infos if p.name not in want_violating
    ]


# -- pickOneNodeForPreemption --------------------------------------------------------------------


def victim(prio: int, start: str = T0) -> PodInfo:
    return PodInfo(
        pod(f"v{prio}-" + start.lower().replace(":", "-"), prio, node_name="x", start=start).obj()
    )


def cand(name: str, *victims: PodInfo, pdb_violations: int = 0) -> Candidate:
    return Candidate(name, list(victims), pdb_violations)


PICK_CASES = [
    pytest.param(
        [cand("c1", victim(1), pdb_violations=1), cand("c2", victim(5))],
        "c2",
        CRITERIA[0],
        id="fewest-pdb-violations",
    ),
    pytest.param(
        [cand("c1", victim(5)), cand("c2", victim(3), victim(3))],
        "c2",
        CRITERIA[1],
        id="lowest-highest-priority-victim",
    ),
    pytest.param(
        [cand("c1", victim(3), victim(2)), cand("c2", victim(3), victim(1))],
        "c2",
        CRITERIA[2],
        id="smallest-sum-of-priorities",
    ),
    pytest.param(
        [cand("c1", victim(-5), victim(-5)), cand("c2", victim(-5))],
        "c2",
        CRITERIA[2],
        id="sum-offset-by-maxint32-negative-priorities",
    ),
    pytest.param(
        # With the MaxInt32+1 offset both sums are 2^31: only the count differs.
        [cand("c1", victim(0), victim(-(2**31))), cand("c2", victim(0))],
        "c2",
        CRITERIA[3],
        id="fewest-victims",
    ),
    pytest.param(
        [cand("c1", victim(5, T1)), cand("c2", victim(5, T2))],
        "c2",
        CRITERIA[4],
        id="latest-start-time",
    ),
    pytest.param(
        [
            cand("c1", victim(5, T3), victim(5, T0)),
            cand("c2", victim(5, T1), victim(5, T2)),
        ],
        "c2",
        CRITERIA[4],
        id="latest-of-earliest-start-times",
    ),
    pytest.param(
        [cand("c1", victim(5, T1)), cand("c2", victim(5, T1))],
        "c1",
        FIRST_IN_ORDER,
        id="all-tied-first-wins",
    ),
]


@pytest.mark.parametrize("candidates, want, criterion", PICK_CASES)
def test_pick_one_node_for_preemption(candidates, want, criterion):
    best, decided_by = pick_one_node_for_preemption_explained(candidates)
    assert best.name == want
    assert decided_by == criterion
    assert pick_one_node_for_preemption(list(reversed(candidates))).name == (
        want if criterion != FIRST_IN_ORDER else candidates[-1].name
    )


def test_pick_with_custom_score_funcs():
    cands = [cand("c1", victim(1)), cand("c2", victim(9))]
    best, decided_by = pick_one_node_for_preemption_explained(
        cands, [lambda c: c.victims[0].priority]
    )
    assert (best.name, decided_by) == ("c2", "custom score function 0")
    assert pick_one_node_for_preemption([]) is None


def test_select_candidate_single():
    run = harness(nodes_of(node("n")), [])
    c = cand("only", victim(1), pdb_violations=3)
    assert run.plugin.evaluator.select_candidate_explained([c]) == (c, ONLY_CANDIDATE)


# -- PostFilter end to end on a framework ---------------------------------------------------------


def test_post_filter_preempts_on_best_node_and_records_everything():
    nodes = nodes_of(node("n1"), node("n2"))
    pods = [
        pod("a1", 5, "2", "n1"),
        pod("a2", 5, "2", "n1"),
        pod("b1", 1, "2", "n2"),
        pod("b2", 3, "2", "n2"),
    ]
    run = harness(nodes, pods)
    result, status = post_filter(run, pod("pre", 10, "2"))
    assert status.is_success()
    assert result == PostFilterResult("n2")
    assert deleted(run) == ["b1"]
    first, *_ = run.client.of("update_pod_status")
    name, cond = first.pod, first.condition
    assert name == "default/b1"
    assert (cond.type, cond.status, cond.reason) == (
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
    )
    assert cond.message == "default-scheduler: preempting to accommodate a higher priority pod"
    assert [(e.object, e.type, e.reason, e.message) for e in run.recorder.events] == [
        ("Pod default/b1", "Normal", "Preempted", "Preempted by pod pre on node n2")
    ]
    assert run.metrics.preemption_attempts._value.get() == 1
    assert run.metrics.preemption_victims._sum.get() == 1
    ex = run.state.read(PREEMPTION_EXPLANATION_KEY)
    assert ex.chosen == "n2" and ex.victims == ("default/b1",)
    assert ex.decided_by == CRITERIA[1]
    assert {c.node: c.victims for c in ex.candidates} == {
        "n1": ("default/a2",),
        "n2": ("default/b1",),
    } or {c.node: c.victims for c in ex.candidates} == {
        "n1": ("default/a1",),
        "n2": ("default/b1",),
    }


def test_victims_already_terminating_or_gone_are_skipped():
    nodes = nodes_of(node("n"))
    gone = pod("gone", 1, "2", "n")
    terminating = pod("term", 1, "2", "n").deletion_timestamp(T1)
    run = harness(nodes, [gone, terminating])
    run.client.missing.add("default/gone")
    result, status = post_filter(run, pod("pre", 10, "4"))
    assert result == PostFilterResult("n"), status
    assert deleted(run) == []
    assert run.recorder.events == []


@pytest.mark.parametrize(
    "pods, preemptor, plugins, want",
    [
        (
            [pod("p1", 10, "4", "n1"), pod("p2", 10, "4", "n2")],
            pod("pre", 10, "1"),
            (NodeResourcesFit,),
            "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
        ),
        (
            [pod("p1", 10, "4", "n1"), pod("p2", 1, "4", "n2")],
            pod("pre", 10, "1").node_selector({HOST: "n1"}),
            (NodeResourcesFit,),
            "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
            "pod, 1 Preemption is not helpful for scheduling.",
        ),
        (
            [pod("p1", 20, "3", "n1"), pod("p2", 1, "1", "n1"), pod("p3", 10, "4", "n2")],
            pod("pre", 10, "2"),
            (NodeResourcesFit,),
            "preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 No preemption victims "
            "found for incoming pod.",
        ),
    ],
    ids=["no-victims-anywhere", "unresolvable-node-not-a-candidate", "fits-nowhere"],
)
def test_post_filter_no_candidate_messages(pods, preemptor, plugins, want):
    from kubesched_builtin.nodeaffinity import NodeAffinity

    run = harness(nodes_of(node("n1"), node("n2")), pods, plugins=(NodeAffinity, *plugins))
    result, status = post_filter(run, preemptor)
    assert result.nominated_node_name == ""  # no candidate: the nomination is cleared
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == want
    assert status.plugin == "DefaultPreemption"
    assert deleted(run) == []


def test_untolerated_taint_node_is_never_a_candidate():
    nodes = nodes_of(node("tainted").taint("dedicated", "x"), node("n2"))
    pods = [pod("cheap", 1, "4", "tainted"), pod("dear", 5, "4", "n2")]
    run = harness(nodes, pods, plugins=(TaintToleration, NodeResourcesFit))
    result, _ = post_filter(run, pod("pre", 10, "2"))
    assert run.statuses["tainted"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result == PostFilterResult("n2")
    assert deleted(run) == ["dear"]


def test_host_port_victim_through_nodeports_extension():
    nodes = nodes_of(node("n"))
    holder = pod("holder", 1, "1", "n").host_port(8080)
    other = pod("other", 1, "1", "n")
    run = harness(nodes, [holder, other], plugins=(NodePorts, NodeResourcesFit))
    result, _ = post_filter(run, pod("pre", 10, "1").host_port(8080))
    assert result == PostFilterResult("n")
    assert deleted(run) == ["holder"]


def test_affinity_to_lower_priority_pod_prevents_preemption():
    # The Kubernetes docs, "Inter-Pod affinity on lower-priority Pods": removing all lower-priority
    # pods removes the pod the preemptor needs, so the node is no candidate.
    nodes = nodes_of(node("n"))
    buddy = pod("buddy", 1, "3", "n").labels(app="db")
    preemptor = pod("pre", 10, "2").pod_affinity(HOST, {"app": "db"})
    run = harness(nodes, [buddy], plugins=(InterPodAffinity, NodeResourcesFit))
    result, status = post_filter(run, preemptor)
    assert result.nominated_node_name == ""  # no candidate: the nomination is cleared
    assert status.message() == (
        "preemption: 0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
    )


# -- eligibility ---------------------------------------------------------------------------------


def with_condition(b, type_: str, status: str, reason: str):
    m = b.manifest()
    m.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": type_, "status": status, "reason": reason}
    )
    return Pod.model_validate(m)


def test_preemption_policy_never():
    run = harness(nodes_of(node("n")), [pod("p", 1, "4", "n")])
    result, status = post_filter(run, pod("pre", 10, "2").preemption_policy("Never"))
    assert result.nominated_node_name is None  # not eligible: nomination untouched
    assert status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    assert deleted(run) == []
    assert run.metrics.preemption_attempts._value.get() == 1


@pytest.mark.parametrize(
    "victim_pod, eligible",
    [
        (
            with_condition(
                pod("t", 1, "2", "n").deletion_timestamp(T1),
                "DisruptionTarget",
                "True",
                "PreemptionByScheduler",
            ),
            False,
        ),
        (pod("t", 1, "2", "n").deletion_timestamp(T1).obj(), True),
        (
            with_condition(
                pod("t", 20, "2", "n").deletion_timestamp(T1),
                "DisruptionTarget",
                "True",
                "PreemptionByScheduler",
            ),
            True,
        ),
        (
            with_condition(
                pod("t", 1, "2", "n"), "DisruptionTarget", "True", "PreemptionByScheduler"
            ),
            True,
        ),
    ],
    ids=[
        "lower-priority-terminating-by-preemption",
        "terminating-for-another-reason",
        "higher-priority-terminating",
        "not-terminating",
    ],
)
def test_terminating_pod_on_nominated_node(victim_pod, eligible):
    run = harness(nodes_of(node("n")), [victim_pod, pod("full", 1, "2", "n")])
    result, status = post_filter(run, pod("pre", 10, "4").nominated_node("n"))
    if eligible:
        assert status.message() != (
            "preemption: not eligible due to a terminating pod on the nominated node."
        )
    else:
        assert result.nominated_node_name is None  # not eligible: nomination untouched
        assert status.message() == (
            "preemption: not eligible due to a terminating pod on the nominated node."
        )


def test_nominated_node_unresolvable_makes_pod_eligible_again():
    terminating = with_condition(
        pod("t", 1, "2", "n").deletion_timestamp(T1),
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
    )
    run = harness(nodes_of(node("n"), node("m")), [terminating, pod("x", 1, "4", "m")])
    pi = PodInfo(pod("pre", 10, "4").nominated_node("n").obj())
    filter_all(run, pi)
    run.statuses["n"] = Status.unresolvable("node(s) had untolerated taint")
    result, _ = run.fw.run_post_filter_plugins(run.state, pi, run.statuses)
    assert result == PostFilterResult("m")


# -- candidate search ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "percentage, absolute, num_nodes, want",
    [
        (10, 100, 50, 50),
        (10, 100, 1000, 100),
        (10, 100, 5000, 500),
        (0, 5, 50, 5),
        (40, 0, 10, 4),
        (100, 0, 7, 7),
        (33, 1, 10, 3),
        (5, 0, 10, 0),
    ],
    ids=[
        "absolute-capped-by-nodes",
        "absolute-wins",
        "percentage-wins",
        "percentage-zero",
        "absolute-zero",
        "all",
        "rounds-down",
        "upstream-quirk-zero",
    ],
)
def test_calculate_num_candidates(percentage, absolute, num_nodes, want):
    plugin = DefaultPreemption(
        DefaultPreemptionArgs(
            min_candidate_nodes_percentage=percentage, min_candidate_nodes_absolute=absolute
        ),
        None,
    )
    assert plugin.calculate_num_candidates(num_nodes) == want


def _uniform_cluster(n: int, pdb_every: int = 0):
    nodes = nodes_of(*(node(f"n{i:02d}", cpu="2") for i in range(n)))
    pods = []
    for i in range(n):
        b = pod(f"p{i:02d}", 1, "2", f"n{i:02d}")
        if pdb_every and i % pdb_every:
            b = b.labels(app="guarded")
        pods.append(b)
    return nodes, pods


def test_dry_run_stops_after_enough_candidates_from_random_offset():
    nodes, pods = _uniform_cluster(20)
    run = harness(
        nodes, pods, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, seed=7
    )
    result, _ = post_filter(run, pod("pre", 10, "2"))
    ex = run.state.read(PREEMPTION_EXPLANATION_KEY)
    assert (ex.potential_nodes, ex.wanted_candidates, ex.nodes_tried) == (20, 3, 3)
    # The offset comes from the framework's seeded rng: the same seed, the same search.
    again = harness(
        nodes, pods, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, seed=7
    )
    post_filter(again, pod("pre", 10, "2"))
    assert again.state.read(PREEMPTION_EXPLANATION_KEY).offset == ex.offset
    names = [c.node for c in ex.candidates]
    assert names == [f"n{(ex.offset + i) % 20:02d}" for i in range(3)]
    # All candidates tie on every criterion: the first in search order wins.
    assert result == PostFilterResult(names[0])
    assert ex.decided_by == FIRST_IN_ORDER


def test_dry_run_goes_on_until_a_pdb_respecting_candidate():
    # Every node but n00 holds a pod guarded by a PDB allowing no disruption.
    nodes, pods = _uniform_cluster(10, pdb_every=10)
    run = harness(
        nodes,
        pods,
        pdbs=[pdb("guard", {"app": "guarded"}, 0)],
        args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2},
        seed=3,
    )
    result, _ = post_filter(run, pod("pre", 10, "2"))
    ex = run.state.read(PREEMPTION_EXPLANATION_KEY)
    assert result == PostFilterResult("n00")
    assert ex.decided_by == CRITERIA[0]
    assert ex.candidates[0].node == "n00" and ex.candidates[0].num_pdb_violations == 0
    # Violating candidates are capped at the wanted number.
    assert len(ex.candidates) <= 3
    assert all(c.num_pdb_violations == 1 for c in ex.candidates[1:])


def test_pdb_violations_only_when_unavoidable():
    nodes, pods = _uniform_cluster(4, pdb_every=1)  # every pod guarded
    run = harness(nodes, pods, pdbs=[pdb("guard", {"app": "guarded"}, 0)])
    result, status = post_filter(run, pod("pre", 10, "2"))
    assert isinstance(result, PostFilterResult) and result.nominated_node_name, status
    assert len(deleted(run)) == 1


# -- args -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, want",
    [
        ({}, (10, 100)),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}, (0, 1)),
        ({"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0}, (100, 0)),
        ({"minCandidateNodesPercentage": None, "minCandidateNodesAbsolute": None}, (10, 100)),
    ],
    ids=["defaults", "percentage-zero", "absolute-zero", "null-is-default"],
)
def test_args_defaults(args, want):
    a = DefaultPreemptionArgs.model_validate(args)
    assert (a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute) == want


@pytest.mark.parametrize(
    "args, message",
    [
        (
            {"minCandidateNodesPercentage": -1},
            "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesPercentage": 900},
            "minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time "
            "as minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot "
            "be zero at the same time as minCandidateNodesPercentage]",
        ),
        (
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
            "[minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100], "
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)]",
        ),
        ({"minCandidateNodes": 1}, "Extra inputs are not permitted"),
    ],
    ids=[
        "negative-percentage",
        "percentage-too-large",
        "negative-absolute",
        "both-zero",
        "both-negative",
        "unknown-key",
    ],
)
def test_args_validation(args, message):
    with pytest.raises(ValidationError) as err:
        DefaultPreemptionArgs.model_validate(args)
    assert message in str(err.value)


def test_events_to_register_is_empty_as_upstream_without_async_preemption():
    assert DefaultPreemption(None, None).events_to_register() == []


# -- SchedulerAsyncPreemption -------------------------------------------------------------------

SYNC = ("SchedulerAsyncPreemption=false",)
WAITING = "waiting for the preemption for this pod to be finished"


def async_run(gates=(), **kwargs) -> tuple[Run, list]:
    """Two victims of priority 1 on n (4 cpu); the API calls are kept in the returned
    list instead of running (as ``kubesched run``'s worker pool would run them later)."""
    nodes = nodes_of(node("n"))
    run = harness(nodes, [pod("v1", 1, "2", "n"), pod("v2", 1, "2", "n")], gates=gates, **kwargs)
    deferred: list = []
    run.fw.run_api_calls = deferred.append
    return run, deferred


def pre_enqueue(run: Run, name: str = "pre") -> Status | None:
    return run.plugin.pre_enqueue(None, PodInfo(pod(name, 10, "4").obj()))


@pytest.mark.parametrize(
    "gates, deleted_in_post_filter, gated",
    [
        pytest.param((), [], True, id="async-calls-after-the-cycle"),
        pytest.param(SYNC, ["v1", "v2"], False, id="sync-calls-in-post-filter"),
    ],
)
def test_async_preemption_gate(gates, deleted_in_post_filter, gated):
    run, deferred = async_run(gates)
    result, status = post_filter(run, pod("pre", 10, "4"))
    assert status.is_success() and result == PostFilterResult("n")
    assert sorted(deleted(run)) == deleted_in_post_filter
    assert len(deferred) == (1 if gated else 0)
    status = pre_enqueue(run)
    if gated:
        assert (status.code, status.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING)
    else:
        assert status is None
    for calls in deferred:
        calls()
    assert sorted(deleted(run)) == ["v1", "v2"]
    assert pre_enqueue(run) is None
    assert pre_enqueue(run, "other") is None
    assert run.metrics.preemption_victims._sum.get() == 2
    executed = run.metrics.preemption_goroutines_execution.labels("success")._value.get()
    assert executed == (1 if gated else 0)


@pytest.mark.parametrize(
    "gates, want",
    [
        pytest.param((), [("Pod", "Delete")], id="async-registers-pod-deletions"),
        pytest.param(SYNC, [], id="sync-registers-nothing"),
    ],
)
def test_async_preemption_events(gates, want):
    run, _ = async_run(gates)
    registered = run.plugin.events_to_register()
    assert [(r.event.resource.value, r.event.action.name.title()) for r in registered] == want
    for r in registered:  # the hint leaves the decision to the plugins that rejected the pod
        assert r.queueing_hint(pod("pre", 10).obj(), pod("v1", 1).obj(), None) is QueueingHint.SKIP


@pytest.mark.parametrize(
    "last_victim, want_running",
    [
        pytest.param("running", True, id="last-victim-still-running"),
        pytest.param("terminating", False, id="last-victim-terminating"),
        pytest.param("gone", False, id="last-victim-gone"),
    ],
)
def test_running_preemption_ends_with_the_last_victims_deletion(last_victim, want_running):
    """While the last victim is being deleted, the preemption counts as done as soon as
    the cluster shows it terminating or gone: its deletion may be the last event the
    preemptor gets."""
    run, deferred = async_run()
    post_filter(run, pod("pre", 10, "4"))
    evaluator = run.plugin.evaluator
    lister = run.fw.lister
    seen: list[tuple[str, bool]] = []

    def preempt(c, preemptor, victim):
        seen.append((victim.name, evaluator.is_pod_running_preemption(preemptor.uid)))

    evaluator.preempt_pod = preempt
    first, last = "v1", "v2"
    if last_victim != "gone":
        b = pod(last, 1, "2", "n")
        lister.add((b.deletion_timestamp(T1) if last_victim == "terminating" else b).obj())
    deferred[0]()
    assert seen == [(first, True), (last, want_running)]
    assert not evaluator.is_pod_running_preemption("pre")


def test_async_preemption_failure_activates_the_preemptor():
    run, deferred = async_run()
    post_filter(run, pod("pre", 10, "4"))
    activated: list = []
    run.fw.pod_activator = activated.append

    def refuse(c, preemptor, victim):
        raise RuntimeError("API server unavailable")

    run.plugin.evaluator.preempt_pod = refuse
    deferred[0]()
    assert [list(pods) for pods in activated] == [["default/pre"]]
    assert pre_enqueue(run) is None
    assert run.metrics.preemption_goroutines_execution.labels("error")._value.get() == 1


# -- a pod group's asynchronous preemption (WorkloadAwarePreemption) ---------------------------

GROUP_WAITING = "waiting for the preemption for this pod group to be finished"
GENERIC_WORKLOAD = ("GenericWorkload=true",)


def workload_pod_group(name: str, uid: str) -> Any:
    return parse_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        }
    )


def group_member(name: str, group: str) -> Pod:
    manifest = pod(name, 10, "4").manifest()
    manifest["spec"]["schedulingGroup"] = {"podGroupName": group}
    return Pod.model_validate(manifest)


@pytest.mark.parametrize(
    "gates, member_of, preempting, want",
    [
        pytest.param(GENERIC_WORKLOAD, "g", "uid-g", GROUP_WAITING, id="its-group-preempts"),
        pytest.param(GENERIC_WORKLOAD, "h", "uid-g", None, id="another-group-preempts"),
        pytest.param(GENERIC_WORKLOAD, "absent", "uid-g", None, id="its-pod-group-missing"),
        # A pod of a group never preempts alone: only its group's preemption holds it.
        pytest.param(GENERIC_WORKLOAD, "g", "m", None, id="its-own-uid-preempting"),
        pytest.param((), "g", "m", WAITING, id="generic-workload-off-a-pod-like-any"),
        pytest.param(
            (*GENERIC_WORKLOAD, *SYNC), "g", "uid-g", None, id="sync-preemption-holds-nothing"
        ),
    ],
)
def test_pre_enqueue_holds_a_pod_group_while_its_preemption_runs(
    gates, member_of, preempting, want
):
    """The profile's executor carries a pod group's preemption out (the pod group cycle
    hands it the group's victims): while its calls wait for a worker, DefaultPreemption's
    PreEnqueue holds the group's pods with kube-scheduler v1.36.2's message."""
    run, deferred = async_run(gates)
    for name, uid in (("g", "uid-g"), ("h", "uid-h")):
        run.fw.lister.add(workload_pod_group(name, uid))
    executor = run.fw.preemption_executor
    assert run.plugin.evaluator.executor is executor
    preemptor = Preemptor(preempting, PREEMPTOR_POD_GROUP, "default-scheduler", 10, {})
    victim = PodInfo(pod("v1", 1, "2", "n").obj())
    executor.prepare_candidate_async("cluster", preemptor, [victim], lambda v: None)
    member = group_member("m", member_of)
    status = run.plugin.pre_enqueue(member, PodInfo(member))
    got = None if status is None else status.message()
    assert got == want
    if want is not None:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    for calls in deferred:
        calls()
    assert run.plugin.pre_enqueue(member, PodInfo(member)) is None


@pytest.mark.parametrize(
    "kind, message",
    [
        pytest.param(PREEMPTOR_POD, "Preempted by pod p-uid on node n", id="pod"),
        pytest.param(PREEMPTOR_POD_GROUP, "Preempted by podgroup p-uid on node n", id="podgroup"),
    ],
)
def test_the_executor_names_what_preempts(kind, message):
    """The victim's DisruptionTarget condition and Preempted event name a pod or a pod
    group, as upstream's ``preemptor.Type()``."""
    run, _ = async_run()
    preemptor = Preemptor("p-uid", kind, "my-scheduler", 10, {})
    victim = PodInfo(pod("v1", 1, "2", "n").obj())
    run.fw.preemption_executor.preempt_pod("n", preemptor, victim, "DefaultPreemption")
    (update,) = run.client.of("update_pod_status")
    want = f"my-scheduler: preempting to accommodate a higher priority {kind}"
    assert update.condition is not None and update.condition.message == want
    assert deleted(run) == ["v1"]
    assert [(e.object, e.reason, e.message) for e in run.recorder.events] == [
        ("Pod default/v1", "Preempted", message)
    ]
