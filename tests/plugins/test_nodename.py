"""NodeName: a pod naming a node fits only that node."""

from __future__ import annotations

import pytest

from kubesched import ActionType, Code, EventResource, NodeBatch, PodInfo
from kubesched.cache import new_snapshot
from kubesched.testing import batch_verdicts, make_framework, make_node, make_pod, node_batch
from kubesched_builtin.nodename import ERR_REASON, NAME, NodeName

REJECT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON])


@pytest.mark.parametrize(
    ("node_name", "expected"),
    [
        ("", [None, None, None]),
        ("b", [REJECT, None, REJECT]),
        ("zzz", [REJECT, REJECT, REJECT]),
    ],
    ids=["no-node-name", "named-node", "unknown-node"],
)
def test_filter(node_name, expected) -> None:
    snap = new_snapshot([], [make_node(n).obj() for n in "abc"])
    infos = sorted(snap.list(), key=lambda ni: ni.name)
    rows = [snap.table.index[ni.name] for ni in infos]
    builder = make_pod("p")
    if node_name:
        builder.node(node_name)
    pod = builder.obj()
    fw = make_framework(NodeName)
    plugin = fw.plugin(NAME)
    one = [plugin.filter(pod, ni) for ni in infos]
    many = batch_verdicts(plugin.filter_nodes(pod, NodeBatch(snap.table, rows, infos)), len(infos))
    assert one == many
    assert [None if s is None else (s.code, s.reasons) for s in one] == expected
    state, pi = fw.new_cycle_state(), PodInfo(pod)
    verdicts, err = fw.run_filter_batch(state, pi, node_batch(infos))
    assert err is None
    assert [v.plugin if v else None for v in verdicts] == [NAME if e else None for e in expected]


def test_events() -> None:
    fw = make_framework(NodeName)
    regs = [(e.resource, e.action, h) for p, e, h in fw.events_to_register() if p == NAME]
    assert regs == [(EventResource.NODE, ActionType.ADD, None)]
