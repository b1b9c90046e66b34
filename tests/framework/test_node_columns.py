"""The batched dry run's per-node pod columns, kept between dry runs, equal columns read
afresh from the pods, whatever changed on the nodes in between."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched import NodeInfo, PodInfo
from kubesched.framework import preemption_batch
from kubesched.framework.preemption_batch import _cached_columns, _pod_columns
from kubesched.testing import make_node, make_pod

GPU = "example.com/gpu"

# A pod's requests: CPU only, CPU and memory, an explicit zero, an extended resource.
REQUESTS = st.sampled_from(
    [
        {"cpu": "100m"},
        {"cpu": "1", "memory": "1Gi"},
        {"cpu": "0", "memory": "64Mi"},
        {"cpu": "250m", "memory": "2Gi", GPU: "1"},
        {},
    ]
)


def _pod(name: str, requests: dict[str, str]) -> PodInfo:
    return PodInfo(make_pod(name).uid(name).req(**requests).node("n").obj())


def _node(name: str, pods: list[PodInfo]) -> NodeInfo:
    return NodeInfo(make_node(name).capacity(cpu="64", memory="256Gi", pods="110").obj(), pods)


def _expected(pods: list[list[PodInfo]]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    _, columns, nz_cpu, nz_memory = _pod_columns([p for ps in pods for p in ps])
    return columns, nz_cpu, nz_memory


def _assert_equal(nodes: list[NodeInfo], potential: list[list[PodInfo]]) -> None:
    counts = np.array([len(ps) for ps in potential], dtype=np.intp)
    got = _cached_columns(nodes, potential, counts)
    columns, nz_cpu, nz_memory = _expected(potential)
    if got is None:
        # Only when the nodes' pods ask for different resources, or there is nothing to read.
        names = {e.names for e in preemption_batch._node_columns(nodes)}
        assert len(names) > 1 or not counts.any()
        return
    _, cached, cached_cpu, cached_memory = got
    np.testing.assert_array_equal(cached_cpu, nz_cpu)
    np.testing.assert_array_equal(cached_memory, nz_memory)
    for name, col in cached.items():
        np.testing.assert_array_equal(col, columns.get(name, np.zeros_like(col)))
    assert set(columns) <= set(cached)


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preemption_batch, "_NODE_COLUMNS", {})
    monkeypatch.setattr(preemption_batch, "_GENERATION_OF", {})


def _entry(node: NodeInfo) -> object:
    """The node's cached columns; one entry per node name, the current one."""
    assert list(preemption_batch._GENERATION_OF) == [node.name]
    assert len(preemption_batch._NODE_COLUMNS) == 1
    return preemption_batch._NODE_COLUMNS[node.name, node.generation]


@settings(max_examples=60, deadline=None)
@given(
    layout=st.lists(st.lists(REQUESTS, max_size=5), min_size=1, max_size=4),
    changes=st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "replace", "none"]),
            st.integers(0, 3),
            REQUESTS,
        ),
        max_size=6,
    ),
    picks=st.lists(st.booleans(), min_size=20, max_size=20),
)
def test_cached_columns_equal_fresh_ones_across_changes(layout, changes, picks) -> None:
    counter = iter(range(10_000))
    nodes = [
        _node(f"n{j}", [_pod(f"p{next(counter)}", r) for r in reqs])
        for j, reqs in enumerate(layout)
    ]

    def potential() -> list[list[PodInfo]]:
        # Some of each node's pods, in the node's order and reversed (a reprieve order).
        flags = iter(picks * 10)
        chosen = [[p for p in n.pods if next(flags)] for n in nodes]
        return [ps[::-1] if j % 2 else ps for j, ps in enumerate(chosen)]

    _assert_equal(nodes, potential())
    for kind, j, requests in changes:
        j %= len(nodes)
        if kind == "add":
            nodes[j].add_pod(_pod(f"p{next(counter)}", requests))
        elif kind == "remove" and nodes[j].pods:
            nodes[j].remove_pod(nodes[j].pods[0])
        elif kind == "replace":
            # A new NodeInfo under the same name (the node deleted and created again).
            nodes[j] = _node(nodes[j].name, [_pod(f"p{next(counter)}", requests)])
        _assert_equal(nodes, potential())


@pytest.mark.parametrize(
    "stale",
    [
        pytest.param(lambda n: n.add_pod(_pod("new", {"cpu": "3"})), id="pod-added"),
        pytest.param(lambda n: n.remove_pod(n.pods[0]), id="pod-removed"),
        pytest.param(
            lambda n: n.set_node(make_node("a").capacity(cpu="8", pods="110").obj()),
            id="node-updated",
        ),
    ],
)
def test_a_changed_node_is_read_again(stale) -> None:
    node = _node("a", [_pod("p1", {"cpu": "1"}), _pod("p2", {"cpu": "2"})])
    _assert_equal([node], [list(node.pods)])
    before = _entry(node)
    stale(node)
    _assert_equal([node], [list(node.pods)])
    assert _entry(node) is not before


def test_an_unchanged_node_is_not_read_again() -> None:
    node = _node("a", [_pod("p1", {"cpu": "1"})])
    _assert_equal([node], [list(node.pods)])
    before = _entry(node)
    _assert_equal([node], [list(node.pods)])
    assert _entry(node) is before


def test_a_pod_not_on_its_node_is_read_from_the_pods() -> None:
    node = _node("a", [_pod("p1", {"cpu": "1"})])
    stranger = _pod("p1", {"cpu": "1"})
    assert _cached_columns([node], [[stranger]], np.array([1], dtype=np.intp)) is None


def test_nodes_gone_are_forgotten_once_they_outnumber_a_dry_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nodes come and go (an autoscaled cluster, or the clusters of many simulations in one
    # process): the entries of nodes no dry run asks for any more do not pile up.
    monkeypatch.setattr(preemption_batch, "_KEPT_BEYOND", 0)
    for batch in range(5):
        nodes = [_node(f"n{batch}-{i}", [_pod(f"p{batch}-{i}", {"cpu": "1"})]) for i in range(3)]
        _assert_equal(nodes, [list(n.pods) for n in nodes])
        assert len(preemption_batch._NODE_COLUMNS) <= 2 * len(nodes)
        assert {(n.name, n.generation) for n in nodes} <= set(preemption_batch._NODE_COLUMNS)
        assert set(preemption_batch._GENERATION_OF) == {
            name for name, _ in preemption_batch._NODE_COLUMNS
        }
