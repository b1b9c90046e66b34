"""NodeResourceTopologyMatch on the embedded cluster: NRT changes, pods of other schedulers."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.simulate.driver import Simulation

from .helpers import CONFIG_HEAD, config_from_dict, nrt_manifest, placements

GU = {"cpu": "6", "memory": "1Gi"}


def numa_config(args: dict[str, Any] | None = None):
    """The default profile plus NodeResourceTopologyMatch."""
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
    }
    if args:
        profile["pluginConfig"] = [{"name": "NodeResourceTopologyMatch", "args": args}]
    return config_from_dict({**CONFIG_HEAD, "profiles": [profile]})


def node(name: str) -> Any:
    room = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                },
            },
            "status": {"capacity": room, "allocatable": room},
        }
    )


def nrt(name: str, free_cpu: str, version: int = 0) -> Any:
    """Two zones with ``free_cpu`` available each; ``version`` tells rewrites of the
    object apart (the agent's own counter)."""
    return parse_object(nrt_manifest(name, (free_cpu, free_cpu), {"version": str(version)}))


def guaranteed(name: str, scheduler: str = "default-scheduler", node_name: str = "") -> Any:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "app", "resources": {"requests": GU, "limits": GU}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_object(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    )


@pytest.mark.parametrize(
    ("change", "placed"),
    [
        ("update-with-room", "n1"),
        ("update-without-room", None),
        ("recreate", "n2"),
        ("nothing", None),
    ],
    ids=["nrt-update-frees-a-zone", "nrt-update-still-split", "nrt-recreated", "no-nrt-event"],
)
def test_pod_rejected_for_numa_is_retried_on_nrt_events(change, placed):
    # Upstream registers NodeResourceTopology Add|Update: the pod rejected for NUMA
    # alignment is retried at once, not only at the periodic flush of unschedulable pods
    # (which a run without periodic_retry never reaches).
    objects = [node("n1"), node("n2"), nrt("n1", "4"), nrt("n2", "4"), guaranteed("p")]
    sim = Simulation(objects, config=numa_config())
    sim.run(periodic_retry=False)
    assert placements(sim) == {"p": None}
    if change == "update-with-room":
        sim.cluster.update(nrt("n1", "8", version=1))
    elif change == "update-without-room":
        sim.cluster.update(nrt("n1", "5", version=1))
    elif change == "recreate":
        # A deletion alone is no event of the plugin's (as upstream); the new object is.
        sim.cluster.delete("NodeResourceTopology", None, "n2")
        sim.run(periodic_retry=False)
        assert placements(sim) == {"p": None}
        sim.cluster.create(nrt("n2", "8"))
    sim.run(periodic_retry=False)
    assert placements(sim) == {"p": placed}


@pytest.mark.parametrize(
    ("detect", "placed"),
    [("All", "n2"), ("None", "n1")],
    ids=["foreign-pod-marks-its-node", "detection-off"],
)
def test_foreign_pod_keeps_the_overreserve_cache_off_its_node(detect, placed):
    # A pod another scheduler placed on n1: the overreserve cache no longer trusts n1's
    # data (its object has no fingerprint, so no resync restores it). Without detection
    # n1 wins: its zones have more room.
    foreign = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "foreign"},
            "spec": {
                "schedulerName": "other-scheduler",
                "nodeName": "n1",
                "containers": [{"name": "c", "image": "app"}],
            },
        }
    )
    objects = [node("n1"), node("n2"), nrt("n1", "8"), nrt("n2", "7"), foreign, guaranteed("p")]
    args = {"cacheResyncPeriodSeconds": 5, "cache": {"foreignPodsDetect": detect}}
    sim = Simulation(objects, config=numa_config(args))
    sim.run()
    assert placements(sim) == {"foreign": "n1", "p": placed}
