"""The AppGroup and NetworkTopology controllers: their topology sorts (tables from the
sorting library's and scheduler-plugins' controller tests) and their work in the embedded
cluster, reached through the ``kubesched.controllers`` entry points."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from kubesched import ConflictError
from kubesched.backend.memory import MemoryCluster, extensions
from kubesched.clock import FakeClock
from kubesched.testing import make_node, make_pod
from kubesched_contrib.networkaware.api import (
    APP_GROUP_LABEL,
    APP_GROUP_SELECTOR_LABEL,
    AppGroup,
)
from kubesched_contrib.networkaware.controllers import (
    NetworkTopologyController,
    topology_order,
)
from kubesched_contrib.networkaware.toposort import (
    SORTING_ALGORITHMS,
    CycleError,
    alternate,
    kahn_sort,
    tarjan_sort,
)

# -- the sorts ------------------------------------------------------------------------------
COMPLEX = {
    "0": ["1", "4"],
    "1": ["3", "5"],
    "2": ["5"],
    "3": ["5", "7"],
    "4": [],
    "5": ["6"],
    "6": ["7"],
    "7": [],
}


def _is_topological(order: list[str], tree: dict[str, list[str]]) -> bool:
    """Every workload before those it depends on."""
    at = {name: i for i, name in enumerate(order)}
    return all(at[parent] < at[child] for parent, cs in tree.items() for child in cs)


# otaviokr/topological-sort's TestKahnSort table (upstream's sorts are built on it): the
# orders its test accepts for each tree.
SORT_CASES = [
    ("parent and child", {"Parent": ["Child"], "Child": []}, [["Parent", "Child"]]),
    ("empty tree", {}, [[]]),
    ("single node", {"A": []}, [["A"]]),
    ("two nodes in a single tree", {"A": [], "B": ["A"]}, [["B", "A"]]),
    (
        "complex tree with multiple nodes",
        COMPLEX,
        [["2", "0", "4", "1", "3", "5", "6", "7"], ["0", "4", "1", "3", "2", "5", "6", "7"]],
    ),
    ("a leaf named only as a dependency", {"A": ["B"]}, [["A", "B"]]),
]


@pytest.mark.parametrize(
    ("tree", "accepted"), [c[1:] for c in SORT_CASES], ids=[c[0] for c in SORT_CASES]
)
def test_kahn_sort(tree, accepted):
    assert kahn_sort(tree) in accepted


@pytest.mark.parametrize(
    ("tree", "accepted"), [c[1:] for c in SORT_CASES], ids=[c[0] for c in SORT_CASES]
)
def test_reverse_kahn(tree, accepted):
    assert SORTING_ALGORITHMS["ReverseKahn"](tree) in [a[::-1] for a in accepted]


@pytest.mark.parametrize(
    ("tree", "accepted"), [c[1:] for c in SORT_CASES], ids=[c[0] for c in SORT_CASES]
)
def test_tarjan_sort_is_topological(tree, accepted):
    order = tarjan_sort(tree)
    assert sorted(order) == sorted(accepted[0]) and _is_topological(order, tree)
    assert SORTING_ALGORITHMS["ReverseTarjan"](tree) == order[::-1]


def test_tarjan_sort_order():
    # Depth-first from "0" (names in order): 0's subtree finishes before 2 is visited.
    assert tarjan_sort(COMPLEX) == ["2", "0", "4", "1", "3", "5", "6", "7"]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ([], []),
        (["a"], ["a"]),
        (["a", "b"], ["a", "b"]),
        (["a", "b", "c"], ["a", "c", "b"]),
        (["1", "2", "3", "4", "5"], ["1", "5", "2", "4", "3"]),
    ],
    ids=["empty", "one", "two", "three", "five"],
)
def test_alternate(order, expected):
    assert alternate(order) == expected


@pytest.mark.parametrize("sort", [kahn_sort, tarjan_sort], ids=["kahn", "tarjan"])
def test_a_cycle_has_no_order(sort):
    with pytest.raises(CycleError):
        sort({"a": ["b"], "b": ["c"], "c": ["a"]})


# -- the AppGroup controller's order (scheduler-plugins TestAppGroupController_Run) ---------
def _app_group(workloads: dict[str, list[str]], algorithm: str = "KahnSort", names=None):
    names = names or {}
    return AppGroup.model_validate(
        {
            "metadata": {"name": "ag", "namespace": "default"},
            "spec": {
                "numMembers": len(workloads),
                "topologySortingAlgorithm": algorithm,
                "workloads": [
                    {
                        "workload": {"kind": "Deployment", "name": names.get(w, w), "selector": w},
                        "dependencies": [
                            {"workload": {"kind": "Deployment", "name": d, "selector": d}}
                            for d in deps
                        ],
                    }
                    for w, deps in workloads.items()
                ],
            },
        }
    )


BASIC = {"P1": ["P2"], "P2": ["P3"], "P3": []}
ONLINE_BOUTIQUE = {
    "P1": ["P2", "P3", "P4", "P6", "P8", "P9", "P10"],  # frontend
    "P2": ["P11"],  # cartService
    "P3": [],
    "P4": [],
    "P5": [],
    "P6": [],
    "P7": [],
    "P8": ["P2", "P3", "P4", "P5", "P6", "P7"],  # checkoutService
    "P9": ["P3"],  # recommendationService
    "P10": [],
    "P11": [],  # redis-cart
}
ORDER_CASES = [
    ("upstream: simple chain with 3 pods", BASIC, "KahnSort", {"P1": 1, "P2": 2, "P3": 3}),
    (
        "upstream: online boutique, KahnSort",
        ONLINE_BOUTIQUE,
        "KahnSort",
        {
            "P1": 1,
            "P10": 2,
            "P9": 3,
            "P8": 4,
            "P7": 5,
            "P6": 6,
            "P5": 7,
            "P4": 8,
            "P3": 9,
            "P2": 10,
            "P11": 11,
        },
    ),
    (
        "upstream: online boutique, AlternateKahn",
        ONLINE_BOUTIQUE,
        "AlternateKahn",
        {
            "P1": 1,
            "P10": 3,
            "P9": 5,
            "P8": 7,
            "P7": 9,
            "P6": 11,
            "P5": 10,
            "P4": 8,
            "P3": 6,
            "P2": 4,
            "P11": 2,
        },
    ),
    ("simple chain, ReverseKahn", BASIC, "ReverseKahn", {"P1": 3, "P2": 2, "P3": 1}),
    ("simple chain, TarjanSort", BASIC, "TarjanSort", {"P1": 1, "P2": 2, "P3": 3}),
    ("simple chain, ReverseTarjan", BASIC, "ReverseTarjan", {"P1": 3, "P2": 2, "P3": 1}),
    ("simple chain, AlternateTarjan", BASIC, "AlternateTarjan", {"P1": 1, "P2": 3, "P3": 2}),
    ("unknown algorithm sorts as KahnSort", BASIC, "Nope", {"P1": 1, "P2": 2, "P3": 3}),
    (
        "cycle: the spec's order",
        {"P3": ["P1"], "P1": ["P2"], "P2": ["P3"]},
        "KahnSort",
        {"P3": 1, "P1": 2, "P2": 3},
    ),
    (
        "workload in no dependency is left out",
        {"A": ["B"], "B": [], "C": []},
        "KahnSort",
        {"A": 1, "B": 2},
    ),
]


@pytest.mark.parametrize(
    ("workloads", "algorithm", "expected"),
    [c[1:] for c in ORDER_CASES],
    ids=[c[0] for c in ORDER_CASES],
)
def test_topology_order(workloads, algorithm, expected):
    order = topology_order(_app_group(workloads, algorithm))
    assert {t.workload.selector: t.index for t in order} == expected
    selectors = [t.workload.selector for t in order]
    assert selectors == sorted(selectors)  # TopologicalSort's binary search needs this


def test_names_that_are_not_selectors_get_the_specs_order():
    # The tree names workloads by name and finds them by selector, as upstream.
    ag = _app_group({"b": ["a"], "a": []}, names={"a": "a-deploy", "b": "b-deploy"})
    assert [(t.workload.selector, t.index) for t in topology_order(ag)] == [("a", 2), ("b", 1)]


# -- in the embedded cluster -----------------------------------------------------------------
def _cluster() -> MemoryCluster:
    cluster = MemoryCluster(FakeClock(0.0))
    cluster.apply(
        [make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods=110).obj() for i in (1, 2)]
    )
    return cluster


def _pod(name: str, workload: str, node: str | None):
    pod = make_pod(name).labels({APP_GROUP_LABEL: "ag", APP_GROUP_SELECTOR_LABEL: workload})
    return (pod.node(node) if node else pod).obj()


def _status(cluster: MemoryCluster):
    return cluster.get("AppGroup", "default", "ag").status


def test_the_embedded_cluster_runs_the_controllers():
    names = {type(c).__name__ for c in _cluster().extensions.controllers}
    assert {"AppGroupController", "NetworkTopologyController"} <= names


def test_app_group_status_in_the_embedded_cluster():
    cluster = _cluster()
    cluster.apply([_app_group(BASIC), _pod("p1-0", "P1", "n1"), _pod("p2-0", "P2", None)])
    status = _status(cluster)
    assert [(t.workload.selector, t.index) for t in status.topology_order] == [
        ("P1", 1),
        ("P2", 2),
        ("P3", 3),
    ]
    assert status.topology_calculation_time == cluster.now_timestamp()
    # p1-0 runs on n1 (the embedded kubelet starts a bound pod); p2-0 waits for a node.
    assert status.running_workloads == 1
    cluster.bind(cluster.get("Pod", "default", "p2-0"), "n2")
    assert _status(cluster).running_workloads == 2
    cluster.delete("Pod", "default", "p1-0")
    cluster.advance(60.0)
    assert _status(cluster).running_workloads == 1


def test_running_pods_counted_before_their_app_group_exists():
    cluster = _cluster()
    cluster.create(_pod("p1-0", "P1", "n1"))
    cluster.create(_app_group(BASIC))
    assert _status(cluster).running_workloads == 1


@pytest.mark.parametrize(
    ("hours", "recomputed"), [(23, False), (25, True)], ids=["within a day", "after a day"]
)
def test_the_order_is_computed_again_after_a_day(hours, recomputed):
    clock = FakeClock(0.0)
    cluster = MemoryCluster(clock)
    cluster.apply([_app_group(BASIC)])
    ag = cluster.get("AppGroup", "default", "ag").model_copy(deep=True)
    ag.spec.topology_sorting_algorithm = "ReverseKahn"
    clock.step(timedelta(hours=hours).total_seconds())
    cluster.update(ag)
    order = {t.workload.selector: t.index for t in _status(cluster).topology_order}
    assert order == ({"P1": 3, "P2": 2, "P3": 1} if recomputed else {"P1": 1, "P2": 2, "P3": 3})


def test_a_failing_controller_is_logged_and_the_cluster_goes_on(monkeypatch, caplog):
    class Broken:
        name = "Broken"
        kinds = ("Node",)

        def __init__(self, cluster):
            pass

        def on_change(self, kind, obj, old, deleted):
            raise RuntimeError("boom")

        def resync_all(self):
            raise RuntimeError("boom again")

    monkeypatch.setattr(extensions, "_classes", [Broken, NetworkTopologyController])
    with caplog.at_level(logging.ERROR):
        cluster = _cluster()
        cluster.create(make_node("n3").obj())
    assert cluster.get("Node", "", "n3") is not None
    assert "controller Broken failed on a Node change" in caplog.text
    assert "controller Broken failed to resync" in caplog.text


def test_update_status_writes_only_the_status():
    cluster = _cluster()
    cluster.apply([_app_group(BASIC)])
    stored = cluster.get("AppGroup", "default", "ag")
    changed = stored.model_copy(
        update={
            "status": stored.status.model_copy(update={"running_workloads": 7}),
            "spec": stored.spec.model_copy(update={"num_members": 99}),
        }
    )
    written = cluster.update_status(changed)
    assert (written.status.running_workloads, written.spec.num_members) == (7, 3)
    # The controller saw the write and put back its own count.
    assert _status(cluster).running_workloads == 0
    assert int(written.metadata.resource_version) > int(stored.metadata.resource_version)
    assert stored.status.running_workloads == 0  # the old version is left as it was
    with pytest.raises(ConflictError):
        cluster.update_status(changed)  # read at an older resourceVersion
