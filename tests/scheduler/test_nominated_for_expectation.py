"""NominatedNodeNameForExpectation in the binding cycle: the chosen node is written as the
pod's nominatedNodeName before PreBind when a PreBind plugin has work to do, and the
embedded cluster's binding clears it."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import Code, Status, hookimpl
from kubesched.testing import make_node, make_pod

from .harness import Harness

SEEN: dict[str, Any] = {}
"""What the probe saw: the pod's nominatedNodeName when its PreBind ran."""


class _Probe:
    """A PreBind plugin recording the pod's nominatedNodeName as the cluster has it."""

    name = "Probe"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    @hookimpl
    def pre_bind(self, pod: Any) -> Status | None:
        current = self.handle.client.get("Pod", pod.namespace, pod.name)
        SEEN["at PreBind"] = current.status.nominated_node_name
        return None


def _with_pre_flight(result: Status | None) -> type:
    class Probe(_Probe):
        @hookimpl
        def pre_bind_pre_flight(self) -> Status | None:
            return result

    return Probe


CASES = {
    "has work": (_with_pre_flight(None), "n0", None),
    "nothing to do": (_with_pre_flight(Status.skip()), None, None),
    "no pre-flight hook": (_Probe, "n0", None),
    "pre-flight error": (
        _with_pre_flight(Status(Code.ERROR, "boom")),
        "not run",
        'running PreBindPreFlight "Probe": boom',
    ),
    "pre-flight rejects": (
        _with_pre_flight(Status(Code.UNSCHEDULABLE, "no")),
        "not run",
        'running PreBindPreFlight "Probe": no',
    ),
}


@pytest.mark.parametrize(("plugin", "at_pre_bind", "error"), CASES.values(), ids=CASES)
def test_nomination_before_pre_bind(plugin: type, at_pre_bind: str | None, error: str | None):
    SEEN.clear()
    SEEN["at PreBind"] = "not run"
    h = Harness(
        [plugin],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").obj()],
    )
    h.run()
    assert SEEN["at PreBind"] == at_pre_bind
    if error is None:
        assert h.node_of("p") == "n0"
        # The binding cleared it, as kube-apiserver's ClearingNominatedNodeNameAfterBinding.
        assert h.pod("p").status.nominated_node_name is None
    else:
        assert h.node_of("p") is None
        assert h.records[-1].result == "error"
        assert error in h.records[-1].message
        assert h.pod("p").status.nominated_node_name is None


def test_a_pod_nominated_to_its_node_already_is_not_written_again():
    SEEN.clear()
    h = Harness(
        [_with_pre_flight(None)],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").obj()],
    )
    # Nominated there already (as a preemption leaves it), before it is scheduled.
    h.cluster.update_pod_status(h.pod("p"), nominated_node_name="n0")
    writes: list[Any] = []
    update = h.cluster.update_pod_status
    h.cluster.update_pod_status = lambda *a, **kw: (writes.append(kw), update(*a, **kw))[1]
    h.run()
    assert h.node_of("p") == "n0"
    assert [w for w in writes if w.get("nominated_node_name")] == []


class FailingPreBind(_Probe):
    """Has work to do, and fails at it with the same message each time."""

    @hookimpl
    def pre_bind(self, pod: Any) -> Status | None:
        super().pre_bind(pod)
        return Status(Code.ERROR, "the volume is not there")


def test_a_failed_binding_clears_the_nomination_each_time():
    SEEN.clear()
    h = Harness(
        [FailingPreBind],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").obj()],
    )
    for attempt in range(2):
        if attempt:
            h.step(2)  # past the pod's backoff
        h.run()
        assert SEEN.pop("at PreBind") == "n0", attempt
        # Upstream's binding-cycle failure clears the nomination, also when the
        # PodScheduled condition it writes is the same as the last time.
        assert h.pod("p").status.nominated_node_name is None, attempt
    assert len(h.records) == 2


class WaitingPermit:
    """Makes every pod wait at Permit for 30 seconds (then it is rejected)."""

    name = "WaitingPermit"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def permit(self) -> Status | None:
        return Status.wait(30)


def test_a_pod_waiting_at_permit_is_nominated_while_it_waits():
    h = Harness(
        [WaitingPermit],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").obj()],
    )
    h.run()
    assert h.node_of("p") is None
    assert h.pod("p").status.nominated_node_name == "n0"
    h.step(31)  # the wait times out: the binding fails, the nomination is cleared
    assert h.pod("p").status.nominated_node_name is None
