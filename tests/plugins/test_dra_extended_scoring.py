"""NodeResourcesFit and NodeResourcesBalancedAllocation score an extended resource backed by
DRA (DRAExtendedResource) on a node that does not offer it by the node's devices of the
backing DeviceClass: their number is the allocatable, those held by claims the requested."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import DeviceClass, Node, parse_object
from kubesched.config import config_from_dict
from kubesched.config.effective import effective_configuration
from kubesched.framework.listers import StaticLister
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation
from kubesched_builtin.dynamicresources.capacity import ExtendedResourceCapacity

DRIVER = "gpu.example.com"
GPU = "example.com/gpu"


def _class(selector: str = f'device.driver == "{DRIVER}"') -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"extendedResourceName": GPU, "selectors": [{"cel": {"expression": selector}}]},
    }


def _slice(node: str, devices: int, driver: str = DRIVER, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"d{i}"} for i in range(devices)],
            **spec,
        },
    }


def _held(node: str, device: str) -> dict[str, Any]:
    """A claim that holds ``device`` of ``node``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"held-{node}-{device}", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "r", "driver": DRIVER, "pool": node, "device": device}]
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        ([_class(), _slice("n1", 3)], (3, 0)),
        ([_class(), _slice("n1", 3), _held("n1", "d1")], (3, 1)),
        ([_class(), _slice("n2", 3)], (0, 0)),
        ([_class(), _slice("n1", 3, driver="other.example.com")], (0, 0)),
        ([_slice("n1", 3)], (0, 0)),
        ([_class("device.driver =="), _slice("n1", 3)], (0, 0)),
        (
            [
                _class(),
                {
                    **_slice("n1", 2),
                    "spec": {**_slice("n1", 2)["spec"], "nodeName": None, "allNodes": True},
                },
            ],
            (2, 0),
        ),
    ],
    ids=[
        "devices-of-the-node",
        "one-held",
        "other-node",
        "other-driver",
        "no-class",
        "selector-does-not-compile",
        "all-nodes-slice",
    ],
)
def test_extended_resource_capacity(
    objects: list[dict[str, Any]], expected: tuple[int, int]
) -> None:
    # (A class whose selector does not compile is refused by parse_object's validation.)
    parsed = [
        DeviceClass.model_validate(o) if o["kind"] == "DeviceClass" else parse_object(o)
        for o in objects
    ]
    capacity = ExtendedResourceCapacity(StaticLister(parsed))
    node = Node.model_validate({"metadata": {"name": "n1"}})
    assert capacity(node, GPU) == expected


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "pause",
                "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}},
            }
        ]
    },
}


@pytest.mark.parametrize(
    ("strategy", "node"),
    [("MostAllocated", "n1"), ("LeastAllocated", "n2")],
    ids=["most-allocated-packs", "least-allocated-spreads"],
)
def test_fit_scores_devices_backing_an_extended_resource(strategy: str, node: str) -> None:
    # n1 has one of its two devices held already; n2 has both free.
    objects = [
        _node("n1"),
        _node("n2"),
        _class(),
        _slice("n1", 2),
        _slice("n2", 2),
        _held("n1", "d0"),
        POD,
    ]
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {
                                "scoringStrategy": {
                                    "type": strategy,
                                    "resources": [{"name": GPU, "weight": 1}],
                                }
                            },
                        }
                    ],
                }
            ],
        }
    )
    effective = effective_configuration(config, registry)
    sim = Simulation([parse_object(o) for o in objects], config=effective, registry=registry)
    try:
        sim.run()
        assert sim.cluster.get("Pod", "default", "p").spec.node_name == node
    finally:
        sim.close()
