"""The resource scorers' fast paths (every node has every resource) equal the general path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched_builtin.noderesources.balanced_allocation import BalancedScorer
from kubesched_builtin.noderesources.least_allocated import LeastAllocatedScorer
from kubesched_builtin.noderesources.most_allocated import MostAllocatedScorer

# Allocatable > 0; requested up to twice it (over-committed nodes included).
nodes = st.lists(
    st.tuples(st.integers(1, 64_000), st.integers(1, 2**36), st.floats(0, 2), st.floats(0, 2)),
    min_size=1,
    max_size=30,
)


def columns(rows) -> tuple[np.ndarray, np.ndarray]:
    alloc = np.array([[c for c, _, _, _ in rows], [m for _, m, _, _ in rows]], dtype=np.int64)
    req = np.array(
        [[int(c * fc) for c, _, fc, _ in rows], [int(m * fm) for _, m, _, fm in rows]],
        dtype=np.int64,
    )
    return req, alloc


def with_absent_resource(req: np.ndarray, alloc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A third resource no node has: the scorers skip it, through their general path."""
    zeros = np.zeros((1, req.shape[1]), dtype=np.int64)
    return np.vstack((req, zeros)), np.vstack((alloc, zeros))


@pytest.mark.parametrize(
    ("fast", "general"),
    [
        (LeastAllocatedScorer([1, 1]), LeastAllocatedScorer([1, 1, 1])),
        (LeastAllocatedScorer([3, 1]), LeastAllocatedScorer([3, 1, 5])),
        (MostAllocatedScorer([1, 2]), MostAllocatedScorer([1, 2, 1])),
        (BalancedScorer(), BalancedScorer()),
    ],
    ids=["least", "least-weighted", "most", "balanced"],
)
@settings(max_examples=80, deadline=None)
@given(rows=nodes)
def test_fast_path_equals_general_path(fast, general, rows) -> None:
    req, alloc = columns(rows)
    got = fast.score_columns(req, alloc)
    assert got.tolist() == general.score_columns(*with_absent_resource(req, alloc)).tolist()
    # And each node alone through the per-node formula.
    assert got.tolist() == [
        fast.score(req[:, i].tolist(), alloc[:, i].tolist()) for i in range(req.shape[1])
    ]


def test_zero_allocatable_check_follows_node_changes() -> None:
    """The cached "some node has 0 allocatable" follows a Node update of the table."""
    from kubesched import NodeInfo, NodeTable
    from kubesched.testing import make_node
    from kubesched_builtin.noderesources.resource_allocation import _has_zero

    infos = [NodeInfo(make_node(f"n{i}").capacity(cpu="2", memory="1Gi").obj()) for i in range(3)]
    table = NodeTable(infos)
    assert not _has_zero(table, "cpu")
    table.update_row(1, NodeInfo(make_node("n1").capacity(cpu="0", memory="1Gi").obj()))
    assert _has_zero(table, "cpu")
    assert not _has_zero(table, "memory")
