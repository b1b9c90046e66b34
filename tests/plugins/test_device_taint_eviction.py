"""The embedded cluster's device taint eviction controller (DRADeviceTaints): pods whose
claims hold a device with a NoExecute taint they do not tolerate are deleted, at once or
after the allocation's ``tolerationSeconds``, as kube-controller-manager's
device-taint-eviction-controller does."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.backend.memory.devicetainteviction import (
    CONTROLLER_NAME,
    REASON_DELETION_BY_DEVICE_TAINT_MANAGER,
)
from kubesched.backend.memory.naming import timestamp
from kubesched.config.defaults import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import FeatureGates
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation

DRIVER = "taints.example.com"
TAINT = {"key": "example.com/unhealthy", "value": "true", "effect": "NoExecute"}


def _slice(taints: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "n1"},
        "spec": {
            "driver": DRIVER,
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "d0", "taints": taints}],
        },
    }


def _objects(tolerations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "dev"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
        _slice([]),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c0", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "req",
                            "exactly": {"deviceClassName": "dev", "tolerations": tolerations},
                        }
                    ]
                }
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p0", "namespace": "default"},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "c", "image": "pause", "resources": {"claims": [{"name": "dev"}]}}
                ],
                "resourceClaims": [{"name": "dev", "resourceClaimName": "c0"}],
            },
        },
    ]


def _events(sim: Simulation) -> list[tuple[float, str]]:
    return [
        (e.timestamp, e.message)
        for e in sim.cluster.events
        if e.reason == "DeviceTaintManagerEviction" and e.reporting_controller == CONTROLLER_NAME
    ]


def _taint(sim: Simulation, taints: list[dict[str, Any]]) -> None:
    current = sim.cluster.get("ResourceSlice", None, "n1")
    new = parse_object(_slice(taints))
    new.metadata.resource_version = current.metadata.resource_version
    sim.cluster.update(new)


TOLERATE_30 = {
    **{k: TAINT[k] for k in ("key", "effect")},
    "operator": "Exists",
    "tolerationSeconds": 30,
}


@pytest.mark.parametrize(
    ("tolerations", "taint", "evicted_at", "tolerated_for"),
    [
        ([], TAINT, 100.0, None),
        ([TOLERATE_30], TAINT, 130.0, 30),
        ([{**TOLERATE_30, "tolerationSeconds": -5}], TAINT, 100.0, 0),
        ([{"key": TAINT["key"], "operator": "Exists", "effect": "NoExecute"}], TAINT, None, None),
        ([{**TOLERATE_30, "key": "example.com/other"}], TAINT, 100.0, None),
        ([], {**TAINT, "effect": "NoSchedule"}, None, None),
        (
            [],
            {**TAINT, "timeAdded": timestamp(40.0).strftime("%Y-%m-%dT%H:%M:%SZ")},
            100.0,
            None,
        ),
        (
            [TOLERATE_30],
            {**TAINT, "timeAdded": timestamp(90.0).strftime("%Y-%m-%dT%H:%M:%SZ")},
            120.0,
            30,
        ),
    ],
    ids=[
        "untolerated-at-once",
        "tolerated-30s",
        "negative-seconds-at-once",
        "tolerated-forever",
        "other-key-at-once",
        "noschedule-ignored",
        "added-earlier-at-once",
        "seconds-count-from-time-added",
    ],
)
def test_pods_go_when_their_devices_get_a_noexecute_taint(
    tolerations: list[dict[str, Any]],
    taint: dict[str, Any],
    evicted_at: float | None,
    tolerated_for: int | None,
) -> None:
    """The pod goes when the taint says, and the eviction is recorded (for the report)
    with the condition's reason, the claim, the device and the taint."""
    sim = Simulation([parse_object(d) for d in _objects(tolerations)])
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p0").spec.node_name == "n1"
        sim.clock.set(100.0)
        sim.cluster.advance()
        _taint(sim, [taint])
        sim.run()
        pod = sim.cluster.try_get("Pod", "default", "p0")
        if evicted_at is None:
            assert pod is not None and pod.metadata.deletion_timestamp is None
            assert _events(sim) == []
            assert sim.cluster.evictions == []
            return
        assert pod is None
        assert _events(sim) == [(evicted_at, "Marking for deletion")]
        (record,) = sim.cluster.evictions
        how = "not tolerated" if tolerated_for is None else f"tolerated for {tolerated_for}s"
        assert (record.time, record.pod, record.node, record.by, record.reason, record.message) == (
            evicted_at,
            "default/p0",
            "n1",
            "device-taint-manager",
            f"DeletionByDeviceTaintManager: NoExecute taint example.com/unhealthy=true:NoExecute "
            f"of device {DRIVER}/n1/d0 (claim c0) {how}",
            "Device Taint manager: deleting due to NoExecute taint",
        )
        assert record.details == {
            "conditionReason": REASON_DELETION_BY_DEVICE_TAINT_MANAGER,
            "claim": "c0",
            "device": f"{DRIVER}/n1/d0",
            "taint": "example.com/unhealthy=true:NoExecute",
            "tolerationSeconds": tolerated_for,
        }
    finally:
        sim.close()


@pytest.mark.parametrize(
    ("gates", "evicted"),
    [({}, True), ({"DRADeviceTaints": False}, False)],
    ids=["gate-on-evicts", "gate-off-no-controller"],
)
def test_the_controller_runs_only_with_its_gate(gates: dict[str, bool], evicted: bool) -> None:
    """kube-controller-manager starts the device taint eviction controller only with
    DRADeviceTaints on; the embedded cluster follows the simulation's gates."""
    config = effective_configuration(
        default_configuration(), default_registry(), gates=FeatureGates(gates)
    )
    sim = Simulation([parse_object(d) for d in _objects([])], config=config)
    try:
        sim.run()
        _taint(sim, [TAINT])
        sim.run()
        assert (sim.cluster.try_get("Pod", "default", "p0") is None) is evicted
        assert bool(sim.cluster.evictions) is evicted
    finally:
        sim.close()


def test_a_removed_taint_cancels_the_deletion() -> None:
    sim = Simulation([parse_object(d) for d in _objects([TOLERATE_30])])
    try:
        sim.run()
        _taint(sim, [TAINT])
        _taint(sim, [])
        sim.run()
        assert sim.cluster.get("Pod", "default", "p0").metadata.deletion_timestamp is None
        assert [m for _, m in _events(sim)] == ["Cancelling deletion"]
        assert sim.cluster.evictions == []
    finally:
        sim.close()


def test_the_deleted_pod_carries_the_disruption_target_condition() -> None:
    objects = _objects([])
    objects[-1]["spec"]["terminationGracePeriodSeconds"] = 30
    sim = Simulation([parse_object(d) for d in objects])
    try:
        sim.run()
        _taint(sim, [TAINT])
        pod = sim.cluster.get("Pod", "default", "p0")
        assert pod.metadata.deletion_timestamp is not None
        (condition,) = [c for c in pod.status.conditions if c.type == "DisruptionTarget"]
        assert (condition.status, condition.reason, condition.message) == (
            "True",
            REASON_DELETION_BY_DEVICE_TAINT_MANAGER,
            "Device Taint manager: deleting due to NoExecute taint",
        )
    finally:
        sim.close()


RULES_ON = {"DRADeviceTaintRules": True}


def _rule(effect: str, **selector: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "r"},
        "spec": {
            "deviceSelector": {"driver": DRIVER, **selector},
            "taint": {"key": TAINT["key"], "value": "true", "effect": effect},
        },
    }


def _rule_sim(tolerations: list[dict[str, Any]], gates: dict[str, bool]) -> Simulation:
    config = effective_configuration(
        default_configuration(), default_registry(), gates=FeatureGates(gates)
    )
    sim = Simulation([parse_object(d) for d in _objects(tolerations)], config=config)
    sim.run()
    sim.clock.set(100.0)
    sim.cluster.advance()
    return sim


def _until(sim: Simulation, at: float) -> None:
    """Move the clock to ``at`` a second at a time, so each timer runs at its own time."""
    while sim.clock.now() < at:
        sim.clock.set(min(sim.clock.now() + 1.0, at))
        sim.cluster.advance()


def _condition(sim: Simulation) -> tuple[str, str, str, int]:
    (c,) = sim.cluster.get("DeviceTaintRule", None, "r").status.conditions
    return c["status"], c["reason"], c["message"], c["observedGeneration"]


@pytest.mark.parametrize(
    ("rule", "tolerations", "evicted_at", "conditions"),
    [
        (
            _rule("NoExecute", device="d0"),
            [],
            100.0,
            # At once, with the pod still there; 10 s after the eviction, done.
            [
                (
                    100.0,
                    ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", 1),
                ),
                (110.0, ("False", "Completed", "1 pod evicted since starting the controller.", 1)),
            ],
        ),
        (
            _rule("NoExecute", pool="n1"),
            [TOLERATE_30],
            130.0,
            [
                (
                    100.0,
                    ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", 1),
                ),
                (140.0, ("False", "Completed", "1 pod evicted since starting the controller.", 1)),
            ],
        ),
        (
            _rule("NoExecute", device="d9"),
            [],
            None,
            [(100.0, ("False", "NotStarted", "", 1))],
        ),
        (
            _rule("NoSchedule"),
            [],
            None,
            [
                (
                    100.0,
                    ("False", "OtherEffect", "Eviction only happens for the NoExecute effect.", 1),
                )
            ],
        ),
        (
            _rule("None", device="d0"),
            [TOLERATE_30],
            None,
            [
                (
                    100.0,
                    (
                        "False",
                        "NoEffect",
                        "1 published device selected. 1 allocated device selected. 1 pod would "
                        "be evicted in 1 namespace if the effect was NoExecute. This information "
                        "will not be updated again. Recreate the DeviceTaintRule to trigger an "
                        "update.",
                        1,
                    ),
                )
            ],
        ),
    ],
    ids=["noexecute", "noexecute-tolerated-30s", "other-device", "noschedule", "none"],
)
def test_device_taint_rules_evict_and_report(
    rule: dict[str, Any],
    tolerations: list[dict[str, Any]],
    evicted_at: float | None,
    conditions: list[tuple[float, tuple[str, str, str, int]]],
) -> None:
    """A NoExecute DeviceTaintRule evicts as a slice's taint does, from the rule's
    timeAdded; the rule's EvictionInProgress condition says what it did, when
    kube-controller-manager's would."""
    sim = _rule_sim(tolerations, RULES_ON)
    try:
        sim.cluster.create(parse_object(rule))
        for at, condition in conditions:
            _until(sim, at)
            assert _condition(sim) == condition
        _until(sim, 200.0)
        gone = sim.cluster.try_get("Pod", "default", "p0") is None
        assert gone is (evicted_at is not None)
        if evicted_at is not None:
            (record,) = sim.cluster.evictions
            assert record.time == evicted_at
            assert record.details["deviceTaintRule"] == "r"
            assert "(DeviceTaintRule r)" in record.reason
    finally:
        sim.close()


def test_a_rule_turned_noexecute_is_restamped_and_evicts() -> None:
    """An update that changes the effect but keeps timeAdded gets a new timeAdded (the
    eviction counts from the change), a new generation and a new condition at once."""
    sim = _rule_sim([TOLERATE_30], RULES_ON)
    try:
        created = sim.cluster.create(parse_object(_rule("None", device="d0")))
        first = created.spec.taint.time_added
        _until(sim, 150.0)
        changed = sim.cluster.get("DeviceTaintRule", None, "r").model_copy(deep=True)
        changed.spec.taint.effect = "NoExecute"
        updated = sim.cluster.update(changed)
        assert updated.spec.taint.time_added > first
        assert updated.metadata.generation == 2
        assert _condition(sim) == (
            "True",
            "PodsPendingEviction",
            "1 pod needs to be evicted in 1 namespace.",
            2,
        )
        _until(sim, 179.0)
        assert sim.cluster.try_get("Pod", "default", "p0") is not None
        _until(sim, 180.0)
        assert sim.cluster.try_get("Pod", "default", "p0") is None
    finally:
        sim.close()


def test_a_deleted_rule_cancels_the_deletion() -> None:
    sim = _rule_sim([TOLERATE_30], RULES_ON)
    try:
        sim.cluster.create(parse_object(_rule("NoExecute", device="d0")))
        sim.cluster.delete("DeviceTaintRule", None, "r")
        _until(sim, 200.0)
        assert sim.cluster.try_get("Pod", "default", "p0") is not None
        assert [m for _, m in _events(sim)] == ["Cancelling deletion"]
    finally:
        sim.close()


def test_rules_are_ignored_with_their_gate_off() -> None:
    """DRADeviceTaintRules is off by default: a NoExecute rule evicts no one and gets no
    status."""
    sim = _rule_sim([], {})
    try:
        sim.cluster.create(parse_object(_rule("NoExecute", device="d0")))
        _until(sim, 200.0)
        assert sim.cluster.try_get("Pod", "default", "p0") is not None
        assert sim.cluster.get("DeviceTaintRule", None, "r").status.conditions == []
    finally:
        sim.close()
