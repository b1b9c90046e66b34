"""SchedulingGates: gated pods stay out of the active queue until their gates are gone."""

from __future__ import annotations

import pytest

from kubesched import ActionType, Code, EventResource, PodInfo, QueueingHint
from kubesched.testing import make_framework, make_pod
from kubesched_builtin.schedulinggates import NAME, SchedulingGates


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        ((), None),
        (("example.com/foo",), "waiting for scheduling gates: [example.com/foo]"),
        (
            ("example.com/foo", "example.com/bar"),
            "waiting for scheduling gates: [example.com/foo example.com/bar]",
        ),
    ],
    ids=["no-gates", "one-gate", "two-gates-in-order"],
)
def test_pre_enqueue(gates, expected) -> None:
    fw = make_framework(SchedulingGates)
    builder = make_pod("p")
    if gates:
        builder.scheduling_gates(*gates)
    status = fw.run_pre_enqueue_plugins(PodInfo(builder.obj()))
    if expected is None:
        assert status is None
    else:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == [expected]
        assert status.plugin == NAME


def test_events_and_hint() -> None:
    fw = make_framework(SchedulingGates)
    ((_plugin, event, hint),) = [r for r in fw.events_to_register() if r[0] == NAME]
    assert event.resource is EventResource.UNSCHEDULED_POD
    assert event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    gated = make_pod("p").uid("u1").scheduling_gates("g").obj()
    ungated = make_pod("p").uid("u1").obj()
    other = make_pod("q").uid("u2").obj()
    assert hint(gated, gated, ungated) is QueueingHint.QUEUE
    assert hint(gated, other, other) is QueueingHint.SKIP
