"""TopologicalSort: an AppGroup's pods in topology order, others by priority."""

from __future__ import annotations

import pytest

from kubesched import PodInfo, QueuedPodInfo
from kubesched.framework.listers import StaticLister
from kubesched.testing import framework_for
from kubesched_contrib.networkaware import AppGroup, TopologicalSort, TopologicalSortArgs
from kubesched_contrib.networkaware.topologicalsort import find_pod_order

from .conftest import app_pod, basic_objects


def queued(pod, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(pod), timestamp=timestamp)


# Upstream TestTopologicalSortLess (the basic AppGroup's order p1 < p2 < p3), and more.
CASES = [
    ("upstream: basic, same AppGroup, p1 order lower than p2", app_pod("p1"), app_pod("p2"), True),
    ("same AppGroup: p3 after p2", app_pod("p3"), app_pod("p2"), False),
    ("same AppGroup: p1 before p3", app_pod("p1"), app_pod("p3"), True),
    ("same workload compares as less (<=)", app_pod("p2"), app_pod("p2"), True),
    ("different AppGroups: priority", app_pod("p3", priority=10), app_pod("p1", "other"), True),
    (
        "different AppGroups: lower priority after",
        app_pod("p1", priority=0),
        app_pod("p3", "other", priority=5),
        False,
    ),
    ("no AppGroup: earlier first", app_pod("a", ""), app_pod("b", ""), True),
    (
        "unknown AppGroup: priority",
        app_pod("p3", "missing"),
        app_pod("p1", "missing", priority=1),
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod1", "pod2", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_less(pod1, pod2, expected):
    fw = framework_for(TopologicalSort, lister=StaticLister(basic_objects()))
    pl = fw.plugin("TopologicalSort")
    assert pl.less(queued(pod1, 1.0), queued(pod2, 2.0)) is expected


# onlineboutique's topology order (index per selector), sorted by selector as upstream's
# test and the AppGroup controller keep it.
BOUTIQUE = {"p1": 1, "p10": 2, "p9": 3, "p8": 4, "p7": 5, "p6": 6, "p5": 7, "p4": 8, "p3": 9}


def test_upstream_onlineboutique_p5_order_higher_than_p1():
    app_group = AppGroup.model_validate(
        {
            "metadata": {"name": "onlineboutique", "namespace": "default"},
            "status": {
                "topologyOrder": [
                    {"workload": {"selector": sel}, "index": BOUTIQUE[sel]}
                    for sel in sorted(BOUTIQUE)
                ]
            },
        }
    )
    fw = framework_for(TopologicalSort, lister=StaticLister([app_group]))
    pl = fw.plugin("TopologicalSort")
    p5, p1 = app_pod("p5", "onlineboutique"), app_pod("p1", "onlineboutique")
    assert pl.less(queued(p5, 0.0), queued(p1, 0.0)) is False
    assert pl.less(queued(p1, 0.0), queued(p5, 0.0)) is True


def test_upstream_pods_from_different_app_groups():
    # Equal priorities and queue times: PrioritySort's "less" is false.
    fw = framework_for(TopologicalSort, lister=StaticLister(basic_objects()))
    pl = fw.plugin("TopologicalSort")
    assert pl.less(queued(app_pod("p1"), 0.0), queued(app_pod("p5", "other"), 0.0)) is False


def test_find_pod_order_is_a_binary_search_over_selectors():
    app_group, _ = basic_objects()
    order = app_group.status.topology_order
    assert [find_pod_order(order, s) for s in ("p1", "p2", "p3", "p4")] == [1, 2, 3, -1]


def test_args_defaults():
    assert TopologicalSortArgs().namespaces == ["default"]
    assert TopologicalSortArgs.model_validate({"namespaces": []}).namespaces == ["default"]
    assert TopologicalSortArgs.model_validate({"namespaces": ["a", "b"]}).namespaces == ["a", "b"]
