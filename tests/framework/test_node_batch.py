"""NodeBatch's column access: ``take`` is ``column[rows]``, a read-only view for a run."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched import NodeBatch, NodeInfo, NodeTable
from kubesched.testing import make_node

TABLE = NodeTable(
    [NodeInfo(make_node(f"n{i}").capacity(cpu=str(i + 1), memory="1Gi").obj()) for i in range(8)]
)


@pytest.mark.parametrize(
    ("rows", "span"),
    [
        ([], None),
        ([3], (3, 4)),
        ([2, 3], (2, 4)),
        (range(8), (0, 8)),
        ([1, 2, 3, 4], (1, 5)),
        ([0, 2, 1, 3], None),  # first and last 3 apart, but not in order
        ([1, 1, 2, 3], None),  # repeated row
        ([6, 7, 0, 1], None),  # wraps around
        ([0, 2, 4], None),
        ([3, 2], None),
    ],
    ids=["empty", "one", "two", "all", "run", "shuffled", "repeat", "wrap", "gaps", "reversed"],
)
def test_take_equals_indexing_and_is_a_view_only_for_a_run(rows, span):
    batch = NodeBatch(TABLE, rows)
    assert batch.span() == span
    cpu = TABLE.allocatable["cpu"]
    taken = batch.take(cpu)
    assert taken.tolist() == cpu[np.asarray(rows, dtype=np.intp)].tolist()
    assert [ni.name for ni in batch.infos] == [TABLE.infos[r].name for r in rows]
    if span is not None:
        assert np.shares_memory(taken, cpu)
        with pytest.raises(ValueError, match="read-only"):
            taken += 1  # a plugin must not change the table through a view
        assert cpu.flags.writeable  # the column itself stays writable for the cache
