"""DynamicResources with DRADeviceTaintRules: a DeviceTaintRule's taint keeps its device
from claims that do not tolerate it, and its deletion (or a change of effect) gives the
device back to the pod that waited."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.config.defaults import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import FeatureGates
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation

DRIVER = "gpu.example.com"


def _objects() -> list[dict[str, Any]]:
    claims = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"c-{pod}", "namespace": "default"},
            "spec": {
                "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}
            },
        }
        for pod in ("a", "b")
    ]
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
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1beta2",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "r"},
            "spec": {
                "deviceSelector": {"driver": DRIVER, "device": "gpu-0"},
                "taint": {"key": "example.com/broken", "effect": "NoSchedule"},
            },
        },
        *claims,
    ]


def _pod(name: str) -> Any:
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "resources": {"claims": [{"name": "g"}]}}
                ],
                "resourceClaims": [{"name": "g", "resourceClaimName": f"c-{name}"}],
            },
        }
    )


def _device(sim: Simulation, pod: str) -> str | None:
    alloc = sim.cluster.get("ResourceClaim", "default", f"c-{pod}").status.allocation
    return alloc.devices.results[0].device if alloc is not None else None


@pytest.mark.parametrize(
    ("gates", "devices"),
    [({"DRADeviceTaintRules": True}, ("gpu-1", None)), ({}, ("gpu-0", "gpu-1"))],
    ids=["gate-on-rule-taints", "gate-off-rule-ignored"],
)
def test_a_rule_keeps_its_device_from_claims(
    gates: dict[str, bool], devices: tuple[str | None, str | None]
) -> None:
    config = effective_configuration(
        default_configuration(), default_registry(), gates=FeatureGates(gates)
    )
    sim = Simulation([parse_object(d) for d in _objects()], config=config)
    try:
        for name in ("a", "b"):
            sim.cluster.create(_pod(name))
            sim.run()
        assert (_device(sim, "a"), _device(sim, "b")) == devices
    finally:
        sim.close()


@pytest.mark.parametrize(
    "change",
    ["delete", "effect-none"],
    ids=["rule-deleted", "rule-turned-informational"],
)
def test_the_waiting_pod_gets_the_device_once_the_rule_lets_go(change: str) -> None:
    config = effective_configuration(
        default_configuration(),
        default_registry(),
        gates=FeatureGates({"DRADeviceTaintRules": True}),
    )
    sim = Simulation([parse_object(d) for d in _objects()], config=config)
    try:
        sim.cluster.create(_pod("a"))
        sim.cluster.create(_pod("b"))
        # Without the periodic retry of unschedulable pods: only the rule's event moves b.
        sim.run(periodic_retry=False)
        assert _device(sim, "b") is None
        if change == "delete":
            sim.cluster.delete("DeviceTaintRule", None, "r")
        else:
            rule = sim.cluster.get("DeviceTaintRule", None, "r").model_copy(deep=True)
            rule.spec.taint.effect = "None"
            sim.cluster.update(rule)
        sim.run(periodic_retry=False)
        assert (_device(sim, "a"), _device(sim, "b")) == ("gpu-1", "gpu-0")
    finally:
        sim.close()
