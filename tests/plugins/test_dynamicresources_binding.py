"""DynamicResources' binding conditions (DRADeviceBindingConditions) and the clean-up of
the claim for extended resources (DRAExtendedResource): the readiness check, the wait in
PreBind, the deallocation of a claim whose binding failed or timed out, and the embedded
cluster's stand-in for the drivers that report the conditions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kubesched.api import ResourceClaim, parse_object
from kubesched.backend.memory.devicebinding import (
    BINDING_CONDITIONS_ANNOTATION,
    DriverAnswer,
    parse_answer,
)
from kubesched.backend.memory.naming import EPOCH
from kubesched.config import config_from_dict
from kubesched.config.defaults import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import FeatureGates
from kubesched.framework.registry import default_registry
from kubesched.notices import collecting_notices
from kubesched.simulate.driver import Simulation
from kubesched_builtin.dynamicresources.plugin import (
    BindingError,
    DynamicResources,
    binding_ready,
)
from tests.plugins.test_dynamicresources_features import _Handle

DRIVER = "fabric.example.com"
GPU = "example.com/gpu"


def _allocated(results: list[dict[str, Any]], devices: list[dict[str, Any]]) -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": "c", "namespace": "default", "uid": "c"},
            "status": {
                "allocation": {"devices": {"results": results}},
                "devices": devices,
            },
        }
    )


def _result(device: str, conditions: list[str] = (), failures: list[str] = ()) -> dict:  # type: ignore[assignment]
    return {
        "request": "r",
        "driver": DRIVER,
        "pool": "p",
        "device": device,
        "bindingConditions": list(conditions),
        "bindingFailureConditions": list(failures),
    }


def _status(device: str, **conditions: str) -> dict[str, Any]:
    return {
        "driver": DRIVER,
        "pool": "p",
        "device": device,
        "conditions": [
            {"type": k, "status": v, "reason": "R", "message": 'say "hi"'}
            for k, v in conditions.items()
        ],
    }


@pytest.mark.parametrize(
    ("results", "devices", "ready"),
    [
        ([_result("d0")], [], True),
        ([_result("d0", ["attached"])], [], False),
        ([_result("d0", ["attached"])], [_status("d0")], False),
        ([_result("d0", ["attached"])], [_status("d0", attached="False")], False),
        ([_result("d0", ["attached"])], [_status("d0", attached="True")], True),
        ([_result("d0", ["attached"])], [_status("d1", attached="True")], False),
        ([_result("d0", ["a", "b"])], [_status("d0", a="True")], False),
        ([_result("d0", ["a", "b"])], [_status("d0", a="True", b="True")], True),
        (
            [_result("d0", ["attached"]), _result("d1", ["attached"])],
            [_status("d0", attached="True")],
            False,
        ),
        ([_result("d0", ["attached"], ["failed"])], [_status("d0", failed="False")], False),
    ],
    ids=[
        "no-conditions",
        "no-device-status",
        "status-without-conditions",
        "condition-false",
        "condition-true",
        "status-of-another-device",
        "one-of-two",
        "both",
        "second-device-pending",
        "failure-condition-false",
    ],
)
def test_binding_ready(
    results: list[dict[str, Any]], devices: list[dict[str, Any]], ready: bool
) -> None:
    assert binding_ready(_allocated(results, devices)) is ready


def test_a_true_failure_condition_fails_the_binding_with_upstreams_words() -> None:
    claim = _allocated(
        [_result("d0", ["attached"], ["failed"])],
        [_status("d0", attached="True", failed="True")],
    )
    with pytest.raises(BindingError) as err:
        binding_ready(claim)
    assert str(err.value) == 'claim c binding failed: reason=R, message="say \\"hi\\""'


def test_an_unallocated_claim_is_not_ready() -> None:
    assert binding_ready(ResourceClaim.model_validate({"metadata": {"name": "c"}})) is False


@pytest.mark.parametrize(
    ("gates", "enabled"),
    [
        ({}, True),
        ({"DRADeviceBindingConditions": False}, False),
        ({"DRADeviceBindingConditions": False, "DRAResourceClaimDeviceStatus": False}, False),
    ],
    ids=["defaults", "gate-off", "both-off"],
)
def test_binding_conditions_follow_their_gates(gates: dict[str, bool], enabled: bool) -> None:
    plugin = DynamicResources(None, _Handle(gates))
    assert (plugin.binding_conditions, plugin.features.binding_conditions) == (enabled, enabled)


# -- in the embedded cluster ---------------------------------------------------------------


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _fabric_slice(node: str, answer: str | None) -> dict[str, Any]:
    annotations = {BINDING_CONDITIONS_ANNOTATION: answer} if answer is not None else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node, "annotations": annotations},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "d0",
                    "bindingConditions": ["attached"],
                    "bindingFailureConditions": ["failed"],
                }
            ],
        },
    }


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {
        "extendedResourceName": GPU,
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
    },
}
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
}


def _pod(claim: bool = True) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "pause"}
    spec: dict[str, Any] = {"containers": [container]}
    if claim:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    else:
        container["resources"] = {"requests": {GPU: "1"}, "limits": {GPU: "1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


def _simulation(
    answers: dict[str, str | None],
    *,
    claim: bool = True,
    gates: dict[str, bool] | None = None,
    binding_timeout: str | None = None,
    extra: list[dict[str, Any]] = (),  # type: ignore[assignment]
    apiserver_gates: dict[str, bool] | None = None,
) -> Simulation:
    docs = [GPU_CLASS, _pod(claim), *extra]
    if claim:
        docs.append(CLAIM)
    for node, answer in answers.items():
        docs += [_node(node), _fabric_slice(node, answer)]
    registry = default_registry()
    base = default_configuration(registry)
    if binding_timeout is not None:
        base = config_from_dict(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": "default-scheduler",
                        "pluginConfig": [
                            {
                                "name": "DynamicResources",
                                "args": {"bindingTimeout": binding_timeout},
                            }
                        ],
                    }
                ],
            }
        )
    config = effective_configuration(base, registry, gates=FeatureGates(gates or {}))
    return Simulation(
        [parse_object(d) for d in docs],
        config=config,
        registry=registry,
        apiserver_gates=None if apiserver_gates is None else FeatureGates(apiserver_gates),
    )


def _messages(sim: Simulation, reason: str) -> list[str]:
    return [e.message for e in sim.cluster.events if e.reason == reason]


def test_ready_devices_bind_after_the_wait() -> None:
    sim = _simulation({"n1": "True"})
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name == "n1"
        claim = sim.cluster.get("ResourceClaim", "default", "c")
        alloc = claim.status.allocation
        assert alloc.allocation_timestamp is not None
        assert EPOCH <= alloc.allocation_timestamp <= EPOCH + timedelta(seconds=1)
        (status,) = claim.status.devices
        assert [(c["type"], c["status"]) for c in status.conditions] == [("attached", "True")]
        assert [r.name for r in claim.status.reserved_for] == ["p"]
        assert _messages(sim, "BindingConditionsPending") == [
            "waiting for binding conditions for device on node n1"
        ]
    finally:
        sim.close()


FAILED = (
    'running PreBind plugin "DynamicResources": claim c binding failed: reason=BindingFailed, '
    f'message="set by the embedded cluster ({BINDING_CONDITIONS_ANNOTATION})"'
)
DEALLOCATED = (
    "0/1 nodes are available: 1 resourceclaim not available on the node. deallocation of "
    "ResourceClaim completed, preemption: 0/1 nodes are available: 1 Preemption is not "
    "helpful for scheduling."
)


def test_a_failed_binding_deallocates_and_the_pod_goes_elsewhere() -> None:
    sim = _simulation({"n1": "Failed"})
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name is None
        failures = _messages(sim, "FailedScheduling")
        # PreBind fails; the next attempt finds the claim unavailable everywhere and
        # PostFilter deallocates it, which lets the one after allocate again.
        assert failures[:3] == [FAILED, DEALLOCATED, FAILED]
        for doc in (_node("n2"), _fabric_slice("n2", "True")):
            sim.cluster.create(parse_object(doc))
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name == "n2"
        claim = sim.cluster.get("ResourceClaim", "default", "c")
        # Deallocation cleared the failed device's status.
        assert [(d.pool, d.device) for d in claim.status.devices] == [("n2", "d0")]
    finally:
        sim.close()


def test_no_driver_answer_times_out_and_the_claim_is_freed_after_binding_timeout() -> None:
    sim = _simulation({"n1": None})
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name is None
        failures = _messages(sim, "FailedScheduling")
        timeout = 'running PreBind plugin "DynamicResources": device binding timeout'
        assert failures[0] == timeout
        # Each retry fails again; only once bindingTimeout (10 minutes of virtual time)
        # passed since the allocation does PostFilter deallocate the claim.
        first = failures.index(DEALLOCATED)
        assert set(failures[:first]) == {timeout}
        (freed_at, *_) = (
            e.timestamp
            for e in sim.cluster.events
            if e.reason == "FailedScheduling" and e.message == DEALLOCATED
        )
        assert 600 < freed_at < 615
    finally:
        sim.close()


TIMEOUT = 'running PreBind plugin "DynamicResources": device binding timeout'


def _first(sim: Simulation, reason: str) -> tuple[float, str] | None:
    """(virtual time, message) of the first event of ``reason`` about pod p."""
    return next(
        ((e.timestamp, e.message) for e in sim.cluster.events if e.reason == reason),
        None,
    )


@pytest.mark.parametrize(
    ("answer", "binding_timeout", "bound_at", "failed"),
    [
        ("True", None, 0.0, None),
        ("True@30s", None, 30.0, None),
        ("True@7s", None, 10.0, None),
        ("True@1m30s", None, 90.0, None),
        ("True@0s", None, 0.0, None),
        ("Failed", None, None, (0.0, FAILED)),
        ("Failed@12s", None, None, (15.0, FAILED)),
        (None, None, None, (600.0, TIMEOUT)),
        ("bogus", None, None, (600.0, TIMEOUT)),
        ("True@10m", None, None, (600.0, TIMEOUT)),
        ("True@9m55s", None, 595.0, None),
        ("True@9m59s", None, None, (600.0, TIMEOUT)),
        (None, "12s", None, (12.0, TIMEOUT)),
        ("True@30s", "20s", None, (20.0, TIMEOUT)),
        ("True@30s", "1h", 30.0, None),
    ],
    ids=[
        "immediate-true",
        "true-after-30s",
        "true-between-checks-found-at-the-next",
        "true-after-90s",
        "true-after-zero",
        "immediate-failed",
        "failed-after-12s-found-at-15s",
        "no-answer-times-out-at-10m",
        "unparsable-answer-times-out",
        "answer-at-the-deadline-comes-too-late",
        "answer-at-the-last-check",
        "answer-after-the-last-check",
        "custom-timeout-12s",
        "custom-timeout-shorter-than-the-answer",
        "custom-timeout-longer",
    ],
)
def test_prebind_spends_virtual_time_waiting(
    answer: str | None,
    binding_timeout: str | None,
    bound_at: float | None,
    failed: tuple[float, str] | None,
) -> None:
    """The pod binds at the first check (every 5 s from the allocation) that finds the
    driver's answer, or the first attempt fails: at that check for a failure condition,
    at ``bindingTimeout`` without an answer."""
    sim = _simulation({"n1": answer}, binding_timeout=binding_timeout)
    try:
        sim.run()
        assert _first(sim, "BindingConditionsPending") == (
            0.0,
            "waiting for binding conditions for device on node n1",
        )
        scheduled = _first(sim, "Scheduled")
        assert _first(sim, "FailedScheduling") == failed
        if failed is not None:
            # A later attempt may bind the pod (a device that answered late is ready).
            assert scheduled is None or scheduled[0] > failed[0]
        else:
            assert scheduled is not None and scheduled[0] == bound_at
            (record,) = sim.attempts[sim.cluster.get("Pod", "default", "p").metadata.uid]
            assert (record.result, record.finished_at) == ("scheduled", bound_at)
    finally:
        sim.close()


def test_other_pods_are_scheduled_while_one_waits_in_prebind() -> None:
    other = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }
    sim = _simulation({"n1": "True@30s"}, extra=[other])
    try:
        sim.run()
        bound = {
            e.involved_name: e.timestamp for e in sim.cluster.events if e.reason == "Scheduled"
        }
        assert bound == {"p": 30.0, "q": 0.0}
    finally:
        sim.close()


def test_an_unparsable_answer_is_a_notice() -> None:
    with collecting_notices() as notices:
        sim = _simulation({"n1": "True@soon"})
        try:
            sim.run()
        finally:
            sim.close()
    assert [str(n) for n in notices if BINDING_CONDITIONS_ANNOTATION in n.message] == [
        f"ResourceSlice n1: annotation {BINDING_CONDITIONS_ANNOTATION}: invalid duration "
        '"soon": use a number with a unit (ns, us, ms, s, m, h), such as "15s", "1m30s" or '
        '"500ms": its driver never answers (use "True" or "Failed", optionally with a '
        'delay: "True@30s")'
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("True", DriverAnswer("True")),
        ("Failed", DriverAnswer("Failed")),
        ("True@30s", DriverAnswer("True", 30.0)),
        ("Failed@1m30s", DriverAnswer("Failed", 90.0)),
        ("True@0", DriverAnswer("True", 0.0)),
        ("true", '"true" is neither "True" nor "Failed"'),
        ("", '"" is neither "True" nor "Failed"'),
        ("True@", 'invalid duration ""'),
        ("True@30", 'invalid duration "30"'),
        ("True@-5s", 'the delay "-5s" is negative'),
    ],
    ids=[
        "true",
        "failed",
        "true-delayed",
        "failed-delayed",
        "zero-delay",
        "lower-case",
        "empty",
        "no-delay-after-at",
        "delay-without-unit",
        "negative-delay",
    ],
)
def test_parse_answer(text: str, expected: DriverAnswer | str) -> None:
    if isinstance(expected, DriverAnswer):
        assert parse_answer(text) == expected
    else:
        with pytest.raises(ValueError) as err:
            parse_answer(text)
        assert str(err.value).startswith(expected)


def test_with_the_gate_off_the_api_server_drops_the_binding_conditions() -> None:
    # The embedded API server has the scheduler's gates: the slice is stored without its
    # conditions, as kube-apiserver stores it with the gate off, so nothing waits.
    sim = _simulation({"n1": "True"}, gates={"DRADeviceBindingConditions": False})
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name == "n1"
        assert _messages(sim, "BindingConditionsPending") == []
    finally:
        sim.close()


def test_with_the_gate_off_devices_with_binding_conditions_are_passed_over() -> None:
    # Only the scheduler's gate is off: the API server keeps the slice's conditions.
    sim = _simulation(
        {"n1": "True"}, gates={"DRADeviceBindingConditions": False}, apiserver_gates={}
    )
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name is None
        assert sim.cluster.get("ResourceClaim", "default", "c").status.allocation is None
        assert _messages(sim, "BindingConditionsPending") == []
    finally:
        sim.close()


def _extended_claims(sim: Simulation) -> list[ResourceClaim]:
    return [
        c
        for c in sim.cluster.objects("ResourceClaim")
        if c.metadata.annotations.get("resource.kubernetes.io/extended-resource-claim")
    ]


def test_unreserve_deletes_the_claim_made_for_extended_resources() -> None:
    sim = _simulation({"n1": "Failed"}, claim=False)
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name is None
        # Each failed binding deleted the claim its PreBind had created.
        assert _extended_claims(sim) == []
        assert any("binding failed" in m for m in _messages(sim, "FailedScheduling"))
    finally:
        sim.close()


def test_extended_resources_bind_once_the_devices_are_ready() -> None:
    sim = _simulation({"n1": "True"}, claim=False)
    try:
        sim.run()
        pod = sim.cluster.get("Pod", "default", "p")
        assert pod.spec.node_name == "n1"
        (claim,) = _extended_claims(sim)
        assert pod.status.extended_resource_claim_status.resource_claim_name == claim.name
        assert claim.status.devices[0].conditions[0]["status"] == "True"
    finally:
        sim.close()
