"""The round-robin search for feasible nodes: the nodes and rows it returns, whether the
feasible list is sliced from the table (every node looked at passed) or gathered."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched import NodeInfo, PodInfo, Status, hookimpl
from kubesched.cache import new_snapshot
from kubesched.framework.diagnosis import Diagnosis
from kubesched.scheduler import num_feasible_nodes_to_find
from kubesched.scheduler.algorithm import SchedulingAlgorithm
from kubesched.testing import make_framework, make_node, make_pod

N = 150
"""Nodes: above the 100 that percentageOfNodesToScore never goes below."""

REJECTED: set[str] = set()


class RejectSome:
    name = "RejectSome"

    def __init__(self, args, handle) -> None:
        pass

    @hookimpl
    def filter(self, node_info: NodeInfo) -> Status | None:
        return Status.unschedulable("no") if node_info.name in REJECTED else None


@pytest.mark.parametrize("start", [0, 3, 77, 149], ids=lambda s: f"start{s}")
@pytest.mark.parametrize("pct", [100, 50, 10], ids=lambda p: f"pct{p}")
@pytest.mark.parametrize(
    "rejected",
    [set(), {"n0"}, {"n4", "n5", "n6"}, {f"n{i}" for i in range(0, N, 2)}],
    ids=["none", "first", "a-run", "every-other"],
)
@pytest.mark.parametrize("narrowed", [False, True], ids=["all-rows", "narrowed"])
def test_feasible_nodes_in_round_robin_order(start, pct, rejected, narrowed):
    REJECTED.clear()
    REJECTED.update(rejected)
    snapshot = new_snapshot([], [make_node(f"n{i}").obj() for i in range(N)])
    table = snapshot.table
    rows = np.array([i for i in range(N) if i != 7], dtype=np.intp) if narrowed else table.all_rows
    fw = make_framework(RejectSome, percentage_of_nodes_to_score=pct)
    algorithm = SchedulingAlgorithm(random.Random(0), pct)
    algorithm.next_start_node_index = start
    feasible, chosen = algorithm.find_nodes_that_pass_filters(
        fw, fw.new_cycle_state(), PodInfo(make_pod("p").obj()), Diagnosis(), rows, table
    )
    order = [int(r) for r in np.roll(rows, -(start % len(rows)))]
    want = num_feasible_nodes_to_find(pct, len(rows))
    expected = [r for r in order if f"n{r}" not in rejected][:want]
    assert chosen.tolist() == expected
    assert [ni.name for ni in feasible] == [f"n{r}" for r in expected]
    assert all(ni is table.infos[r] for ni, r in zip(feasible, expected, strict=True))
