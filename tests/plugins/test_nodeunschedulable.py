"""NodeUnschedulable: cordoned nodes reject pods that do not tolerate the unschedulable taint."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched import ActionType, Code, EventResource, NodeBatch, NodeInfo, PodInfo, QueueingHint
from kubesched.cache import new_snapshot
from kubesched.testing import (
    assert_batch_matches_per_node,
    assert_statuses,
    batch_verdicts,
    make_framework,
    make_node,
    make_pod,
    node_batch,
    run_filter,
)
from kubesched_builtin.nodeunschedulable import (
    ERR_REASON_UNKNOWN_CONDITION,
    ERR_REASON_UNSCHEDULABLE,
    NAME,
    NodeUnschedulable,
)

UNSCHED = "node.kubernetes.io/unschedulable"


def _verdicts(plugin, pod, infos, batch):
    one = [plugin.filter(pod, ni) for ni in infos]
    many = batch_verdicts(plugin.filter_nodes(pod, batch), len(batch))
    assert one == many
    return [None if s is None else (s.code, s.reasons) for s in one]


@pytest.mark.parametrize(
    ("tolerations", "fits_cordoned"),
    [
        ([], False),
        ([dict(key=UNSCHED, effect="NoSchedule", operator="Exists")], True),
        ([dict(key=UNSCHED, operator="Exists")], True),
        ([dict(operator="Exists")], True),
        ([dict(key=UNSCHED, effect="NoExecute", operator="Exists")], False),
        ([dict(key=UNSCHED, value="x", effect="NoSchedule")], False),
        ([dict(key=UNSCHED, effect="NoSchedule")], True),
        ([dict(key="other", operator="Exists")], False),
    ],
    ids=[
        "no-toleration",
        "exact-toleration",
        "any-effect",
        "tolerate-everything",
        "wrong-effect",
        "wrong-value",
        "equal-empty-value",
        "other-key",
    ],
)
def test_filter(tolerations, fits_cordoned) -> None:
    nodes = [
        make_node("a").obj(),
        make_node("b").unschedulable().obj(),
        make_node("c").unschedulable(False).obj(),
        make_node("d").unschedulable().obj(),
    ]
    builder = make_pod("p")
    for t in tolerations:
        builder.toleration(**t)
    pod = builder.obj()
    snap = new_snapshot([], nodes)
    infos = snap.list()
    fw = make_framework(NodeUnschedulable)
    plugin = fw.plugin(NAME)
    got = _verdicts(plugin, pod, infos, NodeBatch(snap.table, range(len(infos)), infos))
    rejected = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSCHEDULABLE])
    expected = {
        "a": None,
        "b": None if fits_cordoned else rejected,
        "c": None,
        "d": None if fits_cordoned else rejected,
    }
    assert dict(zip([ni.name for ni in infos], got, strict=True)) == expected
    # A batch of a subset of the table's rows, out of order.
    rows = [3, 1, 0]
    sub = [infos[r] for r in rows]
    _verdicts(plugin, pod, sub, NodeBatch(snap.table, rows, sub))
    # Through the runtime: both the per-node and the batch path.
    pi = PodInfo(pod)
    state = fw.new_cycle_state()
    verdicts, err = fw.run_filter_batch(state, pi, node_batch(infos))
    assert err is None
    assert [v.reasons if v else None for v in verdicts] == [
        fw.run_filter_plugins(state, pi, ni).reasons or None for ni in infos
    ]
    assert_batch_matches_per_node(fw, NAME, pod, snap)
    assert_statuses(run_filter(fw, pod, snap), expected)


def test_node_info_without_node() -> None:
    fw = make_framework(NodeUnschedulable)
    plugin = fw.plugin(NAME)
    infos = [NodeInfo(), NodeInfo(make_node("n").unschedulable().obj())]
    for pod in (make_pod("p").obj(), make_pod("t").toleration(UNSCHED, operator="Exists").obj()):
        got = _verdicts(plugin, pod, infos, node_batch(infos))
        assert got[0] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNKNOWN_CONDITION])


def test_batch_shares_one_status() -> None:
    nodes = [make_node(f"n{i}").unschedulable().obj() for i in range(5)]
    infos = [NodeInfo(n) for n in nodes]
    out = (
        make_framework(NodeUnschedulable)
        .plugin(NAME)
        .filter_nodes(make_pod("p").obj(), node_batch(infos))
    )
    assert isinstance(out, np.ndarray)
    assert len({id(s) for s in out}) == 1


def test_events_and_hints() -> None:
    fw = make_framework(NodeUnschedulable)
    regs = {(e.resource, e.action): h for p, e, h in fw.events_to_register() if p == NAME}
    node_hint = regs[(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)]
    pod_hint = regs[(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS)]
    pod = make_pod("p").uid("u").obj()
    cordoned, free = make_node("n").unschedulable().obj(), make_node("n").obj()
    assert node_hint(pod, None, free) is QueueingHint.QUEUE
    assert node_hint(pod, None, cordoned) is QueueingHint.SKIP
    assert node_hint(pod, cordoned, free) is QueueingHint.QUEUE
    assert node_hint(pod, free, free) is QueueingHint.SKIP
    assert node_hint(pod, free, cordoned) is QueueingHint.SKIP
    tolerating = make_pod("p").uid("u").toleration(UNSCHED, operator="Exists").obj()
    unrelated = make_pod("p").uid("u").toleration("x", operator="Exists").obj()
    other = make_pod("q").uid("v").toleration(UNSCHED, operator="Exists").obj()
    assert pod_hint(pod, pod, tolerating) is QueueingHint.QUEUE
    assert pod_hint(pod, pod, unrelated) is QueueingHint.SKIP
    assert pod_hint(pod, other, other) is QueueingHint.SKIP
