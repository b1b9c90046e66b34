"""HorizontalPodAutoscalers on the embedded cluster: the bounds act, metrics do not."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_manifests
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.autoscaling import HPA_SYNC_PERIOD
from kubesched.clock import FakeClock

from .helpers import obj, template

HPA_V2 = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: hpa}}
spec:
  scaleTargetRef: {{apiVersion: {api}, kind: {kind}, name: {target}}}
  {min}maxReplicas: {max}
  metrics:
  - type: Resource
    resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 80}}}}
"""

HPA_V1 = """\
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: web}
  minReplicas: 2
  maxReplicas: 4
  targetCPUUtilizationPercentage: 50
"""


def hpa(
    kind: str = "Deployment",
    target: str = "web",
    minimum: int | None = 3,
    maximum: int = 6,
    api: str = "apps/v1",
) -> Any:
    text = HPA_V2.format(
        api=api,
        kind=kind,
        target=target,
        min="" if minimum is None else f"minReplicas: {minimum}\n  ",
        max=maximum,
    )
    (o,) = parse_manifests(text)
    return o


def workload(kind: str, replicas: int) -> Any:
    spec: dict[str, Any] = {"replicas": replicas, "template": template({"app": "web"})}
    if kind == "ReplicationController":
        spec["selector"] = {"app": "web"}
    else:
        spec["selector"] = {"matchLabels": {"app": "web"}}
    if kind == "StatefulSet":
        spec["serviceName"] = "web"
    return obj(kind, "web", spec=spec)


def settle(cluster: MemoryCluster, clock: FakeClock, until: float = 600) -> None:
    """Run every timer due up to ``until``."""
    while (when := cluster.next_event_time()) is not None and when <= until:
        clock.set(max(when, clock.now()))
        cluster.advance()


def replicas(cluster: MemoryCluster, kind: str) -> int:
    return cluster.get(kind, "default", "web").spec.replicas  # type: ignore[attr-defined]


def status(cluster: MemoryCluster) -> dict[str, Any]:
    return cluster.get("HorizontalPodAutoscaler", "default", "hpa").to_dict().get("status") or {}


def conditions(cluster: MemoryCluster) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status(cluster).get("conditions", [])}


def events(cluster: MemoryCluster) -> list[tuple[str, str]]:
    return [
        (e.reason, e.message)
        for e in cluster.events
        if e.involved_kind == "HorizontalPodAutoscaler"
    ]


@pytest.mark.parametrize(
    "kind", ["Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"]
)
def test_a_target_below_min_replicas_is_raised_to_it(
    cluster: MemoryCluster, clock: FakeClock, kind: str
) -> None:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    cluster.apply([workload(kind, 1), hpa(kind, api=api)])
    assert replicas(cluster, kind) == 1  # the controller waits for its first sync
    settle(cluster, clock)
    assert replicas(cluster, kind) == 3
    assert events(cluster) == [
        (
            "SuccessfulRescale",
            "New size: 3; reason: Current number of replicas below Spec.MinReplicas",
        )
    ]
    (rescale,) = [e for e in cluster.events if e.reason == "SuccessfulRescale"]
    assert rescale.timestamp == HPA_SYNC_PERIOD
    st = status(cluster)
    assert (st["desiredReplicas"], st["currentReplicas"]) == (3, 3)
    assert "lastScaleTime" in st
    # At 3 the count is within bounds: only metrics could move it, and none are served.
    assert conditions(cluster)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    assert conditions(cluster)["AbleToScale"] == ("True", "SucceededGetScale")


def test_a_target_above_max_replicas_is_lowered_to_it(
    cluster: MemoryCluster, clock: FakeClock
) -> None:
    cluster.apply([workload("Deployment", 9), hpa()])
    settle(cluster, clock)
    assert replicas(cluster, "Deployment") == 6
    assert events(cluster) == [
        (
            "SuccessfulRescale",
            "New size: 6; reason: Current number of replicas above Spec.MaxReplicas",
        )
    ]


def test_within_bounds_nothing_changes(cluster: MemoryCluster, clock: FakeClock) -> None:
    cluster.apply([workload("Deployment", 4), hpa()])
    settle(cluster, clock)
    assert replicas(cluster, "Deployment") == 4
    assert events(cluster) == []
    assert conditions(cluster)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    assert status(cluster)["desiredReplicas"] == 4


def test_min_replicas_defaults_to_one(cluster: MemoryCluster, clock: FakeClock) -> None:
    cluster.apply([workload("Deployment", 1), hpa(minimum=None)])
    settle(cluster, clock)
    assert replicas(cluster, "Deployment") == 1 and events(cluster) == []


def test_a_target_at_zero_replicas_has_scaling_disabled(
    cluster: MemoryCluster, clock: FakeClock
) -> None:
    cluster.apply([workload("Deployment", 0), hpa()])
    settle(cluster, clock)
    assert replicas(cluster, "Deployment") == 0
    assert conditions(cluster)["ScalingActive"] == ("False", "ScalingDisabled")


def test_a_missing_target_cannot_be_scaled(cluster: MemoryCluster, clock: FakeClock) -> None:
    cluster.apply([hpa(target="nope")])
    settle(cluster, clock)
    assert events(cluster) == [("FailedGetScale", 'deployments.apps "nope" not found')]
    assert conditions(cluster)["AbleToScale"] == ("False", "FailedGetScale")


def test_a_later_scale_down_below_min_is_undone_at_the_next_sync(
    cluster: MemoryCluster, clock: FakeClock
) -> None:
    cluster.apply([workload("Deployment", 3), hpa()])
    settle(cluster, clock, until=20)
    clock.set(20)
    scaled = cluster.get("Deployment", "default", "web").model_copy(deep=True)
    scaled.spec.replicas = 1  # type: ignore[attr-defined]
    scaled.metadata.resource_version = None
    cluster.update(scaled)
    settle(cluster, clock)
    assert replicas(cluster, "Deployment") == 3
    (rescale,) = [e for e in cluster.events if e.reason == "SuccessfulRescale"]
    assert rescale.timestamp == 2 * HPA_SYNC_PERIOD  # the HPA's next 15 s sync
    assert cluster.next_event_time() is None  # and then nothing more is planned


def test_autoscaling_v1_writes_no_conditions(cluster: MemoryCluster, clock: FakeClock) -> None:
    (v1,) = parse_manifests(HPA_V1)
    cluster.apply([workload("StatefulSet", 1), v1])
    settle(cluster, clock)
    assert replicas(cluster, "StatefulSet") == 2
    st = status(cluster)
    assert (st["currentReplicas"], st["desiredReplicas"]) == (2, 2) and "conditions" not in st
