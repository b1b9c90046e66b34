"""The nominator: add, update, delete, pods per node, and how the queue keeps it current."""

from __future__ import annotations

import pytest
from queue_testlib import make_pod

from kubesched.framework.types import PodInfo
from kubesched.queue import Nominator


def names(infos: list[PodInfo]) -> list[str]:
    return [i.name for i in infos]


@pytest.mark.parametrize(
    ("pod_kwargs", "node_arg", "expected_node"),
    [
        ({"nominated_node_name": "n1"}, None, "n1"),
        ({}, "n2", "n2"),
        ({"nominated_node_name": "n1"}, "n2", "n2"),
        ({"nominated_node_name": "n1"}, "", None),
        ({}, None, None),
        ({"node_name": "n9"}, "n2", None),
    ],
    ids=["from-status", "explicit", "explicit-overrides-status", "empty-clears", "none", "bound"],
)
def test_add_nominated_pod(pod_kwargs, node_arg, expected_node) -> None:
    n = Nominator()
    info = PodInfo(make_pod("p", **pod_kwargs))
    n.add_nominated_pod(info, node_arg)
    assert n.nominated_node_name(info) == expected_node
    for node in ("n1", "n2", "n9"):
        assert names(n.nominated_pods_for_node(node)) == (["p"] if node == expected_node else [])


def test_readding_moves_the_nomination() -> None:
    n = Nominator()
    info = PodInfo(make_pod("p"))
    n.add_nominated_pod(info, "n1")
    n.add_nominated_pod(info, "n2")
    assert n.nominated_pods_for_node("n1") == []
    assert names(n.nominated_pods_for_node("n2")) == ["p"]
    assert len(n) == 1


def test_pods_for_node_keep_nomination_order() -> None:
    n = Nominator()
    for name in ("c", "a", "b"):
        n.add_nominated_pod(PodInfo(make_pod(name)), "n1")
    assert names(n.nominated_pods_for_node("n1")) == ["c", "a", "b"]
    # A copy: changing it does not change the nominator.
    n.nominated_pods_for_node("n1").clear()
    assert len(n.nominated_pods_for_node("n1")) == 3


def test_delete() -> None:
    n = Nominator()
    pod = make_pod("p")
    n.add_nominated_pod(PodInfo(pod), "n1")
    n.delete_nominated_pod_if_exists(pod)
    n.delete_nominated_pod_if_exists(pod)  # absent: no error
    assert n.nominated_pods_for_node("n1") == [] and len(n) == 0


@pytest.mark.parametrize(
    ("old_nnn", "new_nnn", "expected"),
    [
        (None, None, "kept"),
        (None, "n2", "n2"),
        ("kept", "n2", "n2"),
        ("kept", None, None),
    ],
    ids=["no-status-keeps-in-memory", "status-added", "status-changed", "status-removed"],
)
def test_update_nominated_pod(old_nnn, new_nnn, expected) -> None:
    """Upstream's rule: a nomination made in memory survives an update that carries none."""
    n = Nominator()
    old = make_pod("p", nominated_node_name=old_nnn)
    n.add_nominated_pod(PodInfo(old), "kept")
    new_info = PodInfo(make_pod("p", nominated_node_name=new_nnn, labels={"v": "2"}))
    n.update_nominated_pod(old, new_info)
    assert n.nominated_node_name(new_info) == expected
    if expected:
        (stored,) = n.nominated_pods_for_node(expected)
        assert stored is new_info


def test_pod_lister_refuses_gone_or_bound_pods() -> None:
    live = {"alive": make_pod("alive"), "bound": make_pod("bound", node_name="n3")}
    n = Nominator(pod_lister=lambda ns, name: live.get(name))
    for name in ("alive", "bound", "gone"):
        n.add_nominated_pod(PodInfo(make_pod(name)), "n1")
    assert names(n.nominated_pods_for_node("n1")) == ["alive"]


def test_queue_keeps_nominator_current(make_queue) -> None:
    q = make_queue()
    pod = make_pod("p", nominated_node_name="n1")
    q.add(pod)
    assert names(q.nominator.nominated_pods_for_node("n1")) == ["p"]
    moved = make_pod("p", nominated_node_name="n2")
    q.update(pod, moved)
    assert q.nominator.nominated_pods_for_node("n1") == []
    assert names(q.nominator.nominated_pods_for_node("n2")) == ["p"]
    q.delete(moved)
    assert q.nominator.nominated_pods_for_node("n2") == []


def test_node_names_and_pods_by_node_follow_every_change() -> None:
    n = Nominator()
    versions = [n.version]
    a, b = PodInfo(make_pod("a")), PodInfo(make_pod("b"))
    assert n.nominated_node_names() == frozenset() and n.nominated_pods_by_node() == {}
    n.add_nominated_pod(a, "n1")
    n.add_nominated_pod(b, "n1")
    versions.append(n.version)
    assert n.nominated_node_names() == {"n1"}
    assert {k: names(v) for k, v in n.nominated_pods_by_node().items()} == {"n1": ["a", "b"]}
    n.add_nominated_pod(a, "n2")  # moves: both nodes keep a pod
    versions.append(n.version)
    assert n.nominated_node_names() == {"n1", "n2"}
    n.delete_nominated_pod_if_exists(b.pod)  # n1 is empty now
    versions.append(n.version)
    assert n.nominated_node_names() == {"n2"}
    assert {k: names(v) for k, v in n.nominated_pods_by_node().items()} == {"n2": ["a"]}
    n.nominated_pods_by_node()["n2"].clear()  # a copy
    assert names(n.nominated_pods_for_node("n2")) == ["a"]
    n.delete_nominated_pod_if_exists(b.pod)  # nothing to delete: no change
    assert n.version == versions[-1]
    assert versions == sorted(set(versions))  # every change moved the version


@pytest.mark.parametrize("kept", [8192, 4], ids=["whole-log", "log-trimmed"])
def test_nodes_changed_since_names_the_nodes_of_later_changes(monkeypatch, kept: int) -> None:
    from kubesched.queue import nominator as module

    monkeypatch.setattr(module, "_CHANGES_KEPT", kept)
    n = Nominator()
    pods = {name: PodInfo(make_pod(name)) for name in ("a", "b", "c")}
    steps = [("a", "n1"), ("b", "n2"), ("a", "n3"), ("c", "n2"), ("b", None), ("c", "n1")]
    touched: list[tuple[int, set[str]]] = [(n.version, set())]
    for name, node in steps:
        before = n.nominated_node_name(pods[name])
        if node is None:
            n.delete_nominated_pod_if_exists(pods[name].pod)
        else:
            n.add_nominated_pod(pods[name], node)
        touched.append((n.version, {x for x in (before, node) if x}))
    for i, (version, _) in enumerate(touched):
        expected = set().union(*(nodes for _, nodes in touched[i + 1 :]))
        answer = n.nodes_changed_since(version)
        if answer is None:  # only when the trimmed log no longer reaches back
            assert kept < len(touched) * 2 and version < n.version - kept // 2
        else:
            assert answer == expected
    assert n.nodes_changed_since(n.version) == set()
    assert n.nodes_changed_since(n.version + 1) is None
