"""NodeBatch's column access: ``take`` is ``column[rows]``, a read-only view for a run."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched import NodeBatch, NodeInfo, NodeTable
from kubesched.testing import make_node

TABLE = NodeTable(
    [NodeInfo(make_node(f"n{i}").capacity(cpu=str(i + 1), memory="1Gi").obj()) for i in range(8)]
)
ALL = TABLE.all_rows


@pytest.mark.parametrize(
    ("rows", "span"),
    [
        ([], None),
        (ALL[3:4], (3, 4)),
        (ALL[2:4], (2, 4)),
        (ALL, (0, 8)),
        (ALL[1:5], (1, 5)),
        (ALL[:0], None),
        ([1, 2, 3, 4], None),  # the same rows, not known to be a run: indexed
        (ALL[1:7:2], None),  # a slice with a step
        (ALL[[1, 2, 3]], None),  # indexed: a copy, not a view
        (np.arange(8)[2:5], None),  # a view of another array
    ],
    ids=[
        "empty",
        "one",
        "two",
        "all",
        "run",
        "empty-slice",
        "a-list",
        "stepped",
        "fancy",
        "other-arange",
    ],
)
def test_take_equals_indexing_and_is_a_view_only_for_a_run(rows, span):
    batch = NodeBatch(TABLE, rows)
    assert batch.span() == span
    cpu = TABLE.allocatable["cpu"]
    taken = batch.take(cpu)
    expected = np.asarray(rows, dtype=np.intp)
    assert taken.tolist() == cpu[expected].tolist()
    assert [ni.name for ni in batch.infos] == [TABLE.infos[r].name for r in expected]
    if span is not None:
        assert np.shares_memory(taken, cpu)
        with pytest.raises(ValueError, match="read-only"):
            taken += 1  # a plugin must not change the table through a view
        assert cpu.flags.writeable  # the column itself stays writable for the cache


def test_all_rows_is_read_only_and_shared_by_overlays():
    assert ALL.tolist() == list(range(8))
    with pytest.raises(ValueError, match="read-only"):
        ALL[0] = 3
    overlay = TABLE.with_requested(
        np.array([1]), {"cpu": np.array([5])}, np.array([5]), np.array([0])
    )
    assert overlay.all_rows is ALL
