"""NominatedNodeNameForExpectation in the binding cycle: the chosen node is written as the
pod's nominatedNodeName before PreBind when a PreBind plugin has work to do, PreBind leaves
out the plugins with nothing to do, a pre-flight error fails the binding before any wait
at Permit, and the embedded cluster's binding clears the nomination as its
ClearingNominatedNodeNameAfterBinding gate says."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubesched import Code, Status, hookimpl
from kubesched.config import default_configuration, effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import simulate
from kubesched.testing import make_node, make_pod
from kubesched.testing.builders import objects_from

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
    # Its PreBind is skipped, as upstream's SkipPreBindPlugins.
    "nothing to do": (_with_pre_flight(Status.skip()), "not run", None),
    "no pre-flight hook": (_Probe, "n0", None),
    "pre-flight error": (
        _with_pre_flight(Status(Code.ERROR, "boom")),
        "not run",
        'running PreBindPreFlight "Probe": boom',
    ),
    # Upstream supports only Success, Skip and Error there: any other code is an error.
    "pre-flight rejects": (
        _with_pre_flight(Status(Code.UNSCHEDULABLE, "no")),
        "not run",
        'PreBindPreFlight Probe returned "Unschedulable", which is unsupported. '
        "It is supposed to return Success, Skip, or Error status",
    ),
    "pre-flight waits": (
        _with_pre_flight(Status.wait(5)),
        "not run",
        'PreBindPreFlight Probe returned "Wait", which is unsupported.',
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


CALLED: list[str] = []
"""The PreBind plugins called, in order."""


def _pre_binder(plugin_name: str, pre_flight: Status | str | None) -> type:
    """A PreBind plugin whose pre-flight answers ``pre_flight`` (``"no hook"``: it has
    none, as a plugin written before the hook), recording its PreBind calls."""

    class PreBinder:
        name = plugin_name

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        @hookimpl
        def pre_bind(self) -> Status | None:
            CALLED.append(plugin_name)
            return None

    if pre_flight != "no hook":

        class WithPreFlight(PreBinder):
            @hookimpl
            def pre_bind_pre_flight(self) -> Status | None:
                return pre_flight  # type: ignore[return-value]

        WithPreFlight.__name__ = plugin_name
        return WithPreFlight
    return PreBinder


SKIPS = {
    "one skips, one has work, one has no pre-flight": (
        [("A", Status.skip()), ("B", None), ("C", "no hook")],
        ["B", "C"],
        "n0",
    ),
    "all skip": ([("A", Status.skip()), ("B", Status.skip())], [], None),
    "explicit success": ([("A", Status()), ("B", Status.skip())], ["A"], "n0"),
    "no pre-flight at all": ([("A", "no hook"), ("B", "no hook")], ["A", "B"], "n0"),
}


@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
@pytest.mark.parametrize(("plugins", "called", "nominated"), SKIPS.values(), ids=SKIPS)
def test_pre_bind_skips_the_plugins_whose_pre_flight_skipped(
    plugins: list[tuple[str, Any]], called: list[str], nominated: str | None, gate: bool
):
    """Upstream v1.36 leaves the plugins whose PreBindPreFlight said Skip out of PreBind;
    with NominatedNodeNameForExpectation off it asks no pre-flight and calls them all."""
    CALLED.clear()
    seen: list[str | None] = []
    h = Harness(
        [_pre_binder(name, answer) for name, answer in plugins],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").obj()],
        gates="" if gate else "NominatedNodeNameForExpectation=false",
    )
    bind = h.cluster.bind

    def binding(pod: Any, node: str) -> None:
        seen.append(h.pod("p").status.nominated_node_name)
        bind(pod, node)

    h.cluster.bind = binding
    h.run()
    assert h.node_of("p") == "n0"
    assert (called if gate else [name for name, _ in plugins]) == CALLED
    assert seen == [nominated if gate else None]


class ErringPreFlight:
    """Has PreBind work it cannot even size up: its pre-flight fails."""

    name = "ErringPreFlight"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def pre_bind_pre_flight(self) -> Status | None:
        return Status(Code.ERROR, "the volume is unknown")

    @hookimpl
    def pre_bind(self) -> Status | None:
        CALLED.append(self.name)
        return None


@pytest.mark.parametrize("concurrent", [False, True], ids=["in-loop", "binding-threads"])
def test_a_pre_flight_error_fails_a_pod_waiting_at_permit_at_once(concurrent: bool):
    """Upstream's binding cycle returns the pre-flight's error before WaitOnPermit: the pod
    does not wait out Permit's 30 seconds, and leaves the waiting pods."""
    CALLED.clear()
    h = Harness(
        [WaitingPermit, ErringPreFlight],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").obj()],
        concurrent_binding=concurrent,
    )
    h.run()
    deadline = time.monotonic() + 10
    while h.scheduler.pending_bindings() and time.monotonic() < deadline:
        time.sleep(0.01)  # the binding thread's
    assert h.clock.now() == 0.0
    (record,) = h.records
    assert record.result == "error"
    assert record.message == 'running PreBindPreFlight "ErringPreFlight": the volume is unknown'
    (event,) = h.events("FailedScheduling")
    assert event.message == record.message
    fwk = h.scheduler.frameworks["default-scheduler"]
    assert fwk.get_waiting_pod(h.pod("p").metadata.uid) is None
    assert h.pod("p").status.nominated_node_name is None
    assert h.requested_cpu("n0") == 0  # forgotten
    h.step(31)  # Permit's timeout passes: nothing more happens to the pod
    assert len(h.records) == 1
    assert CALLED == []


WAIT_FOR_FIRST_CONSUMER = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-n0}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/pv-n0}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [n0]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 1Gi}}
"""
"""A claim VolumeBinding's PreBind binds: the pod is nominated before it is bound."""

CLEARING = {
    "defaults": ("", None),
    "clearing off": ("ClearingNominatedNodeNameAfterBinding=false", "n0"),
    # The scheduler nominates nothing: nothing is left to keep.
    "no nomination": ("NominatedNodeNameForExpectation=false", None),
}


@pytest.mark.parametrize(("gates", "after_bind"), CLEARING.values(), ids=CLEARING)
def test_simulate_clears_the_nomination_on_bind_as_the_gate_says(
    gates: str, after_bind: str | None
):
    """kube-apiserver's binding clears status.nominatedNodeName only with its
    ClearingNominatedNodeNameAfterBinding gate on; the embedded API server follows it."""
    registry = default_registry()
    config = effective_configuration(
        default_configuration(registry),
        registry,
        gates=parse_feature_gates([gates] if gates else []),
    )
    node = make_node("n0").capacity(cpu="2", memory="4Gi").labels({"kubernetes.io/hostname": "n0"})
    run = simulate(
        objects_from(node, WAIT_FOR_FIRST_CONSUMER, make_pod("app").pvc("data")),
        config=config,
        registry=registry,
    )
    pod = run.cluster.get("Pod", "default", "app")
    assert pod.spec.node_name == "n0"
    assert pod.status.nominated_node_name == after_bind
