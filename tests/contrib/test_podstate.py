"""PodState: raw scores and normalisation on the cases of upstream's ``pod_state_test.go``."""

from __future__ import annotations

import pytest

from kubesched import NodeInfo, NodeScores, PodInfo
from kubesched.queue.nominator import Nominator
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_contrib.podstate import NAME, PodState


def node(name: str, terminating: int, nominated: int, regular: int, nominator: Nominator):
    """``makeNodeInfo``: the node's terminating, nominated and regular pods; the nominated
    ones are also nominated to it."""
    info = NodeInfo(make_node(name).obj())
    for i in range(terminating):
        pod = make_pod(f"t-{name}-{i}").node(name).deletion_timestamp("2026-01-01T00:00:00Z")
        info.add_pod(PodInfo(pod.obj()))
    for i in range(nominated):
        pi = PodInfo(make_pod(f"n-{name}-{i}").obj())
        info.add_pod(pi)
        nominator.add_nominated_pod(pi, name)
    for i in range(regular):
        info.add_pod(PodInfo(make_pod(f"r-{name}-{i}").node(name).obj()))
    return info


CASES = [
    (
        "more terminating pods score higher, regular pods only score lowest",
        [(6, 0, 10), (3, 0, 10), (0, 0, 10)],
        [100, 50, 0],
    ),
    (
        "more nominated pods score lower, regular pods only score highest",
        [(0, 2, 10), (0, 1, 10), (0, 0, 10)],
        [0, 50, 100],
    ),
    ("more (terminating - nominated) scores higher", [(5, 2, 10), (3, 1, 10)], [100, 0]),
    ("less (terminating - nominated) scores lower", [(5, 4, 10), (3, 1, 10)], [0, 100]),
    (
        "four nodes, (terminating - nominated) ranked",
        [(5, 0, 10), (3, 1, 10), (2, 1, 10), (0, 1, 10)],
        [100, 50, 33, 0],
    ),
    ("all equal", [(1, 1, 3), (2, 2, 0)], [0, 0]),
]


@pytest.mark.parametrize(("nodes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_scores(nodes, expected):
    nominator = Nominator()
    fw = make_framework(PodState, nominator=nominator)
    pl = fw.plugin(NAME)
    infos = [node(f"node{i}", *spec, nominator) for i, spec in enumerate(nodes)]
    raw = [pl.score(node_info=info) for info in infos]
    assert raw == [t - n for t, n, _ in nodes]
    scores = NodeScores([i.name for i in infos], raw)
    pl.normalize_score(scores=scores)
    assert scores.values.tolist() == expected


def test_without_nominator_counts_terminating_only():
    pl = make_framework(PodState).plugin(NAME)
    info = node("n", 2, 0, 1, Nominator())
    assert pl.score(node_info=info) == 2
    # A pod that starts terminating changes the node's generation: counted again.
    info.add_pod(PodInfo(make_pod("late").deletion_timestamp("2026-01-01T00:00:00Z").obj()))
    assert pl.score(node_info=info) == 3
