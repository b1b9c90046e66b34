"""Coscheduling unit tests: args, QueueSort, PreFilter, Permit, PostFilter, Unreserve, events."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kubesched import (
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    Code,
    EventResource,
    PodInfo,
    QueuedPodInfo,
)
from kubesched.cache import new_snapshot
from kubesched.clock import FakeClock
from kubesched.framework.listers import StaticLister
from kubesched.framework.runtime.waiting_pods import WaitingPod
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_contrib.coscheduling import Coscheduling, CoschedulingArgs

from .helpers import group_labels, pod_group

# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def gpod(name: str, group: str | None = None, *, ns: str = "default", cpu: str = "1", **kw: Any):
    """A pod (in ``group`` if given) requesting ``cpu``."""
    b = make_pod(name).namespace(ns).uid(f"{ns}-{name}").req(cpu=cpu)
    if group:
        b = b.labels(group_labels(group))
    if "node" in kw:
        b = b.node(kw["node"])
    if "priority" in kw:
        b = b.priority(kw["priority"])
    return b.obj()


def nodes(n: int = 2, cpu: str = "4"):
    return [make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=110).obj() for i in range(n)]


def framework(objects=(), *, args=None, assigned=(), node_objs=None, clock=None):
    """A framework with Coscheduling over a lister of ``objects`` and a snapshot of
    ``assigned`` pods on ``node_objs``."""
    clock = clock or FakeClock(0.0)
    fw = make_framework(
        Coscheduling,
        args={"Coscheduling": args or {}},
        lister=StaticLister([*objects, *assigned]),
        clock=clock,
    )
    fw.set_snapshot(new_snapshot(list(assigned), node_objs or nodes()))
    return fw


def plugin(fw) -> Coscheduling:
    return fw.plugin("Coscheduling")


# ---------------------------------------------------------------------------------------
# args
# ---------------------------------------------------------------------------------------


def test_args_defaults():
    a = CoschedulingArgs()
    assert (a.permit_waiting_time_seconds, a.pod_group_backoff_seconds) == (60, 0)
    assert a.pod_group_reject_percentage == 10


@pytest.mark.parametrize(
    ("args", "messages"),
    [
        (
            {"permitWaitingTimeSeconds": -1},
            ["permitWaitingTimeSeconds", "Invalid value: -1: must be greater than 0"],
        ),
        (
            {"podGroupBackoffSeconds": -5},
            ["podGroupBackoffSeconds", "Invalid value: -5: must be greater than 0"],
        ),
        (
            {"podGroupRejectPercentage": 101},
            ["podGroupRejectPercentage", "Invalid value: 101: must be between 0 and 100"],
        ),
        ({"podGroupRejectPercentage": -1}, ["must be between 0 and 100"]),
        ({"unknownKey": 1}, ["unknownKey"]),
    ],
    ids=[
        "negative-wait",
        "negative-backoff",
        "percentage-above-100",
        "percentage-negative",
        "unknown-key",
    ],
)
def test_args_validation(args, messages):
    with pytest.raises(ValidationError) as err:
        CoschedulingArgs.model_validate(args)
    for m in messages:
        assert m in str(err.value)


def test_args_accept_zero_and_bounds():
    a = CoschedulingArgs.model_validate(
        {
            "permitWaitingTimeSeconds": 0,
            "podGroupBackoffSeconds": 0,
            "podGroupRejectPercentage": 100,
        }
    )
    assert a.pod_group_reject_percentage == 100


# ---------------------------------------------------------------------------------------
# QueueSort
# ---------------------------------------------------------------------------------------

T0 = "2026-01-01T00:00:00Z"  # virtual time 0 of a FakeClock


def qpi(pod, initial: float, timestamp: float | None = None) -> QueuedPodInfo:
    q = QueuedPodInfo(PodInfo(pod), timestamp if timestamp is not None else initial)
    q.initial_attempt_timestamp = initial
    return q


LESS_CASES = [
    # (id, pod1, t1, pod2, t2, groups, expected less(pod1, pod2))
    ("higher-priority-first", gpod("a", priority=10), 5.0, gpod("b", priority=1), 1.0, [], True),
    ("lower-priority-later", gpod("a", priority=1), 1.0, gpod("b", priority=10), 5.0, [], False),
    ("no-group-earlier-attempt", gpod("b"), 1.0, gpod("a"), 2.0, [], True),
    ("no-group-tie-by-key", gpod("a"), 1.0, gpod("b"), 1.0, [], True),
    ("no-group-tie-by-key-reverse", gpod("b"), 1.0, gpod("a"), 1.0, [], False),
    # Group g1 created at 10 s, g2 at 20 s: group creation time wins over attempt time.
    (
        "older-group-first",
        gpod("z", "g1"),
        100.0,
        gpod("a", "g2"),
        1.0,
        [("g1", "2026-01-01T00:00:10Z"), ("g2", "2026-01-01T00:00:20Z")],
        True,
    ),
    (
        "newer-group-later",
        gpod("a", "g2"),
        1.0,
        gpod("z", "g1"),
        100.0,
        [("g1", "2026-01-01T00:00:10Z"), ("g2", "2026-01-01T00:00:20Z")],
        False,
    ),
    # Same group: the same time, so the pod's namespace/name decides.
    ("same-group-by-pod-key", gpod("p1", "g1"), 50.0, gpod("p2", "g1"), 1.0, [("g1", T0)], True),
    # A group pod (group created at 10 s) against a plain pod first tried at 5 s.
    (
        "plain-pod-tried-before-group",
        gpod("p", "g1"),
        0.0,
        gpod("q"),
        5.0,
        [("g1", "2026-01-01T00:00:10Z")],
        False,
    ),
    # A missing PodGroup falls back to the pod's initial attempt time.
    ("missing-group-uses-attempt-time", gpod("p", "nope"), 3.0, gpod("q"), 4.0, [], True),
]


@pytest.mark.parametrize(
    ("pod1", "t1", "pod2", "t2", "groups", "expected"),
    [c[1:] for c in LESS_CASES],
    ids=[c[0] for c in LESS_CASES],
)
def test_less(pod1, t1, pod2, t2, groups, expected):
    fw = framework([pod_group(g, 1, created=ts) for g, ts in groups])
    assert plugin(fw).less(qpi(pod1, t1), qpi(pod2, t2)) is expected


def test_less_without_initial_attempt_uses_timestamp():
    fw = framework()
    a, b = QueuedPodInfo(PodInfo(gpod("b")), 1.0), QueuedPodInfo(PodInfo(gpod("a")), 2.0)
    assert plugin(fw).less(a, b) is True


# ---------------------------------------------------------------------------------------
# PreFilter
# ---------------------------------------------------------------------------------------

PRE_FILTER_CASES = [
    # (id, pod, objects, args, expected code, expected message)
    ("no-group", gpod("p"), [], {}, Code.SUCCESS, ""),
    ("group-not-found-passes", gpod("p", "g"), [gpod("q", "g")], {}, Code.SUCCESS, ""),
    (
        "not-enough-siblings",
        gpod("p1", "g"),
        [pod_group("g", 3), gpod("p1", "g"), gpod("p2", "g")],
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pre-filter pod p1 cannot find enough sibling pods, current pods number: 2, "
        "minMember of group: 3",
    ),
    (
        "enough-siblings",
        gpod("p1", "g"),
        [pod_group("g", 3), gpod("p1", "g"), gpod("p2", "g"), gpod("p3", "g")],
        {},
        Code.SUCCESS,
        "",
    ),
    (
        "siblings-in-other-namespace-do-not-count",
        gpod("p1", "g"),
        [pod_group("g", 2), gpod("p1", "g"), gpod("p2", "g", ns="other")],
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pre-filter pod p1 cannot find enough sibling pods, current pods number: 1, "
        "minMember of group: 2",
    ),
    (
        "min-resources-fit",
        gpod("p1", "g"),
        [pod_group("g", 2, min_resources={"cpu": "6500m"}), gpod("p1", "g"), gpod("p2", "g")],
        {},
        Code.SUCCESS,
        "",
    ),
    (
        "min-resources-gap",
        gpod("p1", "g"),
        [pod_group("g", 2, min_resources={"cpu": "9500m"}), gpod("p1", "g"), gpod("p2", "g")],
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource gap: map[cpu:3000m]",
    ),
    (
        "min-resources-pods-gap",
        gpod("p1", "g"),
        [
            pod_group("g", 300, min_resources={"cpu": "1"}),
            *[gpod(f"p{i}", "g") for i in range(300)],
        ],
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource gap: map[pods:81]",
    ),
]


@pytest.mark.parametrize(
    ("pod", "objects", "args", "code", "message"),
    [c[1:] for c in PRE_FILTER_CASES],
    ids=[c[0] for c in PRE_FILTER_CASES],
)
def test_pre_filter(pod, objects, args, code, message):
    # For the minResources cases: n0 (4 cpu, 110 pods) runs a 1.5-cpu pod of no group,
    # n1 (4 cpu, 110 pods) is empty: 6.5 cpu and 219 pods are left.
    other = gpod("other", cpu="1500m", node="n0")
    fw = framework(objects, args=args, assigned=[other])
    status = fw.run_pre_filter_plugins(fw.new_cycle_state(), PodInfo(pod), fw.snapshot.list())
    status = status[1] if isinstance(status, tuple) else status
    assert status.code is code
    assert status.message() == message


def test_pre_filter_own_group_pods_do_not_use_resources():
    # The group's pods already on nodes do not count against its minResources.
    objs = [
        pod_group("g", 2, min_resources={"cpu": "8"}),
        gpod("p1", "g"),
        gpod("p2", "g", cpu="4", node="n0"),
    ]
    fw = framework(objs, assigned=[objs[2]])
    assert plugin(fw).pre_filter(objs[1]) is None


def test_pre_filter_backoff_and_expiry():
    clock = FakeClock(0.0)
    objs = [pod_group("g", 2), gpod("p1", "g"), gpod("p2", "g")]
    fw = framework(objs, clock=clock, args={"podGroupBackoffSeconds": 30})
    pl = plugin(fw)
    pl.manager.backoff_pod_group("default/g", 30)
    status = pl.pre_filter(objs[1])
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "podGroup default/g failed recently"
    clock.set(30.0)
    assert pl.pre_filter(objs[1]) is None


# ---------------------------------------------------------------------------------------
# Permit
# ---------------------------------------------------------------------------------------


def permit(fw, pod, node="n0"):
    state = fw.new_cycle_state()
    status = fw.run_permit_plugins(state, PodInfo(pod).assumed_on(node), node)
    return state, status


PERMIT_CASES = [
    # (id, group objects, args, assigned count in snapshot, expected code, timeout)
    ("quorum-not-reached-default-timeout", [pod_group("g", 3)], {}, 0, Code.WAIT, 60.0),
    ("group-timeout", [pod_group("g", 3, timeout=10)], {}, 1, Code.WAIT, 10.0),
    ("args-timeout", [pod_group("g", 3)], {"permitWaitingTimeSeconds": 20}, 1, Code.WAIT, 20.0),
    (
        "zero-args-timeout-means-60",
        [pod_group("g", 3)],
        {"permitWaitingTimeSeconds": 0},
        0,
        Code.WAIT,
        60.0,
    ),
    ("quorum-with-this-pod", [pod_group("g", 3)], {}, 2, Code.SUCCESS, None),
    ("min-member-one", [pod_group("g", 1)], {}, 0, Code.SUCCESS, None),
    ("min-member-zero", [pod_group("g", 0)], {}, 0, Code.SUCCESS, None),
]


@pytest.mark.parametrize(
    ("groups", "args", "assigned", "code", "timeout"),
    [c[1:] for c in PERMIT_CASES],
    ids=[c[0] for c in PERMIT_CASES],
)
def test_permit(groups, args, assigned, code, timeout):
    placed = [gpod(f"a{i}", "g", node="n1") for i in range(assigned)]
    me = gpod("me", "g")
    clock = FakeClock(100.0)
    fw = framework([*groups, me], args=args, assigned=placed, clock=clock)
    _, status = permit(fw, me)
    assert status.code is code
    if code is Code.WAIT:
        waiting = fw.get_waiting_pod(me.metadata.uid)
        assert waiting is not None
        assert waiting.next_deadline() == pytest.approx(100.0 + timeout)
        assert waiting.pending_plugins() == ["Coscheduling"]
    else:
        assert fw.get_waiting_pod(me.metadata.uid) is None


def test_permit_no_group_and_missing_group():
    fw = framework()
    assert permit(fw, gpod("plain"))[1].code is Code.SUCCESS
    _, status = permit(fw, gpod("orphan", "nope"))
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == "PodGroup not found"
    assert status.plugin == "Coscheduling"


def test_permit_assigned_pods_of_other_groups_and_namespaces_do_not_count():
    placed = [
        gpod("x", "other", node="n1"),
        gpod("y", "g", ns="elsewhere", node="n1"),
        gpod("z", "g", node="n1"),
    ]
    me = gpod("me", "g")
    fw = framework([pod_group("g", 3), me], assigned=placed)
    assert permit(fw, me)[1].code is Code.WAIT  # only z counts: 1 + 1 < 3


def test_permit_wait_activates_siblings():
    objs = [pod_group("g", 3), gpod("p1", "g"), gpod("p2", "g"), gpod("p3", "g"), gpod("q")]
    fw = framework(objs)
    state, status = permit(fw, objs[1])
    assert status.code is Code.WAIT
    assert sorted(state.read(PODS_TO_ACTIVATE_KEY).pods) == ["default/p2", "default/p3"]


def test_permit_quorum_allows_waiting_pods_of_the_group_only():
    objs = [pod_group("g", 3), pod_group("h", 3)] + [
        gpod(n, g) for n, g in (("p1", "g"), ("p2", "g"), ("p3", "g"), ("q1", "h"))
    ]
    fw = framework(objs)
    p1, p2, p3, q1 = objs[2:]
    for pod in (p1, q1):
        assert permit(fw, pod)[1].code is Code.WAIT
    # p1 (assumed on n0) is now in the snapshot, as the cache would have it.
    fw.set_snapshot(new_snapshot([PodInfo(p1).assumed_on("n0").pod], nodes()))
    assert permit(fw, p2)[1].code is Code.WAIT
    fw.set_snapshot(new_snapshot([PodInfo(p).assumed_on("n0").pod for p in (p1, p2)], nodes()))
    assert permit(fw, p3)[1].code is Code.SUCCESS
    assert fw.get_waiting_pod(p1.metadata.uid).status.is_success()
    assert fw.get_waiting_pod(p2.metadata.uid).status.is_success()
    assert fw.get_waiting_pod(q1.metadata.uid).status is None  # group h still waits


# ---------------------------------------------------------------------------------------
# Unreserve
# ---------------------------------------------------------------------------------------


def test_unreserve_rejects_waiting_siblings_only():
    objs = [
        pod_group("g", 5),
        pod_group("h", 5),
        pod_group("g", 5, namespace="other"),
        gpod("p1", "g"),
        gpod("p2", "g"),
        gpod("q1", "h"),
        gpod("r1", "g", ns="other"),
    ]
    fw = framework(objs)
    for pod in objs[3:]:
        assert permit(fw, pod)[1].code is Code.WAIT
    fw.run_reserve_plugins_unreserve(fw.new_cycle_state(), PodInfo(objs[4]), "n0")
    p1 = fw.get_waiting_pod("default-p1").status
    assert p1.code is Code.UNSCHEDULABLE
    assert p1.message() == "rejection in Unreserve"
    assert p1.plugin == "Coscheduling"
    assert fw.get_waiting_pod("default-q1").status is None
    assert fw.get_waiting_pod("other-r1").status is None


def test_unreserve_without_group_is_a_no_op():
    objs = [pod_group("g", 5), gpod("p1", "g")]
    fw = framework(objs)
    permit(fw, objs[1])
    fw.run_reserve_plugins_unreserve(fw.new_cycle_state(), PodInfo(gpod("x", "nope")), "n0")
    assert fw.get_waiting_pod("default-p1").status is None


def test_permit_timeout_rejects_like_upstream():
    clock = FakeClock(0.0)
    objs = [pod_group("g", 3, timeout=5), gpod("p1", "g")]
    fw = framework(objs, clock=clock)
    permit(fw, objs[1])
    assert fw.waiting_pods.expire(4.9) == 0
    assert fw.waiting_pods.expire(5.0) == 1
    status = fw.get_waiting_pod("default-p1").status
    assert status.message() == "rejected due to timeout after waiting at plugin Coscheduling"


# ---------------------------------------------------------------------------------------
# PostFilter
# ---------------------------------------------------------------------------------------

POST_FILTER_CASES = [
    # (id, minMember, assigned, args, code, message, waiting rejected?)
    ("enough-assigned", 3, 3, {}, Code.UNSCHEDULABLE, "", False),
    ("small-gap-10-percent", 10, 9, {}, Code.UNSCHEDULABLE, "", False),
    (
        "gap-above-percentage",
        10,
        8,
        {},
        Code.UNSCHEDULABLE,
        "PodGroup default/g gets rejected due to Pod me is unschedulable even after PostFilter",
        True,
    ),
    (
        "percentage-zero-always-rejects",
        10,
        9,
        {"podGroupRejectPercentage": 0},
        Code.UNSCHEDULABLE,
        "PodGroup default/g gets rejected due to Pod me is unschedulable even after PostFilter",
        True,
    ),
    (
        "percentage-100-never-rejects",
        10,
        0,
        {"podGroupRejectPercentage": 100},
        Code.UNSCHEDULABLE,
        "",
        False,
    ),
    (
        "nothing-assigned",
        3,
        0,
        {},
        Code.UNSCHEDULABLE,
        "PodGroup default/g gets rejected due to Pod me is unschedulable even after PostFilter",
        True,
    ),
]


@pytest.mark.parametrize(
    ("min_member", "assigned", "args", "code", "message", "rejected"),
    [c[1:] for c in POST_FILTER_CASES],
    ids=[c[0] for c in POST_FILTER_CASES],
)
def test_post_filter(min_member, assigned, args, code, message, rejected):
    placed = [gpod(f"a{i}", "g", node="n1") for i in range(assigned)]
    waiter, me = gpod("waiter", "g"), gpod("me", "g")
    fw = framework([pod_group("g", min_member), waiter, me], args=args, assigned=placed)
    fw.waiting_pods.add(WaitingPod(PodInfo(waiter), {"Coscheduling": 60.0}))
    _, status = fw.run_post_filter_plugins(fw.new_cycle_state(), PodInfo(me), {})
    assert status.code is code
    assert status.message() == message
    verdict = fw.get_waiting_pod(waiter.metadata.uid).status
    if rejected:
        assert verdict.code is Code.UNSCHEDULABLE
        assert verdict.message() == "optimistic rejection in PostFilter"
    else:
        assert verdict is None


def test_post_filter_without_group():
    fw = framework()
    _, status = fw.run_post_filter_plugins(fw.new_cycle_state(), PodInfo(gpod("me", "g")), {})
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == "can not find pod group"


@pytest.mark.parametrize(
    ("siblings", "backed_off"), [(3, True), (2, False)], ids=["enough-pods", "too-few-pods"]
)
def test_post_filter_backoff(siblings, backed_off):
    pods = [gpod(f"p{i}", "g") for i in range(siblings)]
    fw = framework([pod_group("g", 3), *pods], args={"podGroupBackoffSeconds": 10})
    fw.run_post_filter_plugins(fw.new_cycle_state(), PodInfo(pods[0]), {})
    status = plugin(fw).pre_filter(pods[0])
    if backed_off:
        assert status.message() == "podGroup default/g failed recently"
    else:
        assert status.message().startswith("pre-filter pod p0 cannot find enough sibling pods")


# ---------------------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------------------


def test_events_to_register():
    events = [e.event for e in plugin(framework()).events_to_register()]
    assert [(e.resource, e.action) for e in events] == [
        (EventResource.POD, ActionType.ADD),
        (EventResource.POD_GROUP, ActionType.ADD | ActionType.UPDATE),
    ]
    assert all(e.queueing_hint is None for e in plugin(framework()).events_to_register())
