"""Preemption's potential nodes: the column the scheduler's map keeps equals a lookup per node."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from kubesched import Code, Diagnosis, Status, nodes_where_preemption_might_help
from kubesched.framework.diagnosis import NodeStatusMap

U = Status(Code.UNSCHEDULABLE, "Insufficient cpu")
U2 = Status(Code.UNSCHEDULABLE, "node(s) didn't match pod anti-affinity rules")
UU = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint")
ERR = Status(Code.ERROR, "boom")


@dataclass(frozen=True)
class FakeNode:
    """What the potential-node selection reads of a NodeInfo: its name."""

    name: str


NODES = [FakeNode(f"n{i}") for i in range(8)]
NAMES = np.array([n.name for n in NODES], dtype=object)


def by_lookup(nodes, statuses) -> list[str]:
    """The definition: a node whose status has code UNSCHEDULABLE, missing = unresolvable."""
    out = []
    for ni in nodes:
        s = statuses.get(ni.name)
        if s is not None and s.code is Code.UNSCHEDULABLE:
            out.append(ni.name)
    return out


def old_post_filter_map(d: Diagnosis) -> dict[str, Status]:
    """The map PostFilter got before the column: the explicit statuses, then the
    absent-nodes status for every other node in snapshot order."""
    out = dict(d.node_to_status)
    if d.absent_nodes_status is not None:
        for ni in NODES:
            out.setdefault(ni.name, d.absent_nodes_status)
    return out


def diagnosis(batches: list[dict[int, Status]], absent: Status | None = None) -> Diagnosis:
    """A Diagnosis with Filter's rejections recorded batch by batch (rows -> status)."""
    d = Diagnosis(absent_nodes_status=absent)
    for batch in batches:
        rows = np.array(sorted(batch), dtype=np.intp)
        statuses = np.empty(len(rows), dtype=object)
        statuses[:] = [batch[r] for r in rows.tolist()]
        d.add_rejected(NAMES[rows], rows, statuses)
    return d


CASES = [
    pytest.param([{0: U, 2: UU, 3: U, 5: U2, 7: ERR}], None, id="mixed-codes-absent-unresolvable"),
    pytest.param([{1: UU, 4: UU}], None, id="all-unresolvable-no-potential-node"),
    pytest.param([], None, id="nothing-rejected-no-potential-node"),
    pytest.param([{i: U for i in range(8)}], None, id="every-node-potential"),
    pytest.param([{1: U}, {1: UU, 6: U}], None, id="nominated-node-filtered-twice-last-wins"),
    pytest.param([{3: UU}], U, id="absent-nodes-unschedulable"),
    pytest.param([{3: U}], UU, id="absent-nodes-unresolvable"),
    pytest.param([], U, id="prefilter-rejected-every-node-unschedulable"),
    pytest.param([{0: U, 1: U}, {5: UU, 6: U}], None, id="several-batches"),
]


@pytest.mark.parametrize(("batches", "absent"), CASES)
def test_post_filter_map_and_its_column_equal_the_lookup(batches, absent):
    d = diagnosis(batches, absent)
    statuses = d.post_filter_statuses(NODES, NAMES)
    # The contents and their order are what PostFilter plugins always got.
    assert list(statuses.items()) == list(old_post_filter_map(d).items())
    column = statuses.unschedulable_nodes(NODES)
    assert column is not None
    assert [n.name for n in column] == by_lookup(NODES, statuses)
    assert [n.name for n in nodes_where_preemption_might_help(NODES, statuses)] == by_lookup(
        NODES, statuses
    )


@pytest.mark.parametrize(("batches", "absent"), CASES)
@pytest.mark.parametrize(
    "as_nodes",
    [list, tuple, iter],
    ids=["list", "tuple", "iterator"],
)
def test_any_mapping_and_any_iterable_of_nodes(batches, absent, as_nodes):
    plain = old_post_filter_map(diagnosis(batches, absent))
    got = nodes_where_preemption_might_help(as_nodes(NODES), plain)
    assert [n.name for n in got] == by_lookup(NODES, plain)


def test_nodes_missing_from_the_statuses_are_not_potential():
    statuses = {"n1": U, "n9": U}  # n9 is no node of the list; n0, n2.. are missing
    assert nodes_where_preemption_might_help(NODES, statuses) == [NODES[1]]


def test_the_column_answers_only_for_its_own_list():
    statuses = diagnosis([{0: U, 5: U}]).post_filter_statuses(NODES, NAMES)
    other = list(NODES)
    assert statuses.unschedulable_nodes(other) is None
    # The lookup then decides, with the same answer.
    assert nodes_where_preemption_might_help(other, statuses) == [NODES[0], NODES[5]]


def test_a_dict_written_directly_gets_no_column():
    d = diagnosis([{0: U, 5: U}])
    d.node_to_status["n2"] = U  # not through add_rejected: the rows no longer account for it
    statuses = d.post_filter_statuses(NODES, NAMES)
    assert statuses.unschedulable_nodes(NODES) is None
    assert [n.name for n in nodes_where_preemption_might_help(NODES, statuses)] == [
        "n0",
        "n2",
        "n5",
    ]


def test_absent_nodes_filled_without_a_column():
    d = diagnosis([{0: U}], absent=U2)
    d.node_to_status["n3"] = UU
    statuses = d.post_filter_statuses(NODES, NAMES)
    assert statuses.unschedulable_nodes(NODES) is None
    assert list(statuses.items()) == list(old_post_filter_map(d).items())


MUTATIONS: list[tuple[str, Callable[[NodeStatusMap], object]]] = [
    ("setitem", lambda m: m.__setitem__("n2", UU)),
    ("delitem", lambda m: m.__delitem__("n0")),
    ("update", lambda m: m.update({"n2": UU})),
    ("ior", lambda m: m.__ior__({"n2": UU})),
    ("setdefault", lambda m: m.setdefault("n1", U)),
    ("pop", lambda m: m.pop("n0")),
    ("popitem", lambda m: m.popitem()),
    ("clear", lambda m: m.clear()),
]


@pytest.mark.parametrize("mutate", [m for _, m in MUTATIONS], ids=[n for n, _ in MUTATIONS])
def test_any_change_to_the_map_drops_the_column(mutate):
    statuses = diagnosis([{0: U, 2: U, 5: U}]).post_filter_statuses(NODES, NAMES)
    mutate(statuses)
    assert statuses.unschedulable_nodes(NODES) is None
    assert [n.name for n in nodes_where_preemption_might_help(NODES, statuses)] == by_lookup(
        NODES, statuses
    )
