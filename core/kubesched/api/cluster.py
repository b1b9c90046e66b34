"""Cluster-policy objects the scheduler consults: PriorityClass, PDB, RuntimeClass, Lease."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from pydantic import Field

from .core import Toleration
from .meta import IntOrString, KubeModel, KubeObject, LabelSelector, NullableDict
from .quantity import Quantity

__all__ = [
    "Lease",
    "LeaseSpec",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PriorityClass",
    "RuntimeClass",
    "RuntimeClassOverhead",
    "RuntimeClassScheduling",
]


class PriorityClass(KubeObject):
    """``scheduling.k8s.io/v1.PriorityClass``: ``value`` is top-level, not under a spec."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "scheduling.k8s.io/v1"
    kind: str | None = "PriorityClass"
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    description: str | None = None


class PodDisruptionBudgetSpec(KubeModel):
    """``policy/v1.PodDisruptionBudgetSpec``: minAvailable / maxUnavailable are ints or "N%"."""

    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(KubeModel):
    """``policy/v1.PodDisruptionBudgetStatus``: what preemption reads to respect the budget."""

    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    disrupted_pods: NullableDict[str, datetime] = Field(default_factory=dict)
    observed_generation: int | None = None


class PodDisruptionBudget(KubeObject):
    """``policy/v1.PodDisruptionBudget``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "policy/v1"
    kind: str | None = "PodDisruptionBudget"
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)


class RuntimeClassOverhead(KubeModel):
    """``node.k8s.io/v1.Overhead``: added to the pod's requests at admission."""

    pod_fixed: dict[str, Quantity] | None = None


class RuntimeClassScheduling(KubeModel):
    """``node.k8s.io/v1.Scheduling``: merged into the pod's nodeSelector / tolerations."""

    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None


class RuntimeClass(KubeObject):
    """``node.k8s.io/v1.RuntimeClass`` (cluster-scoped)."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "node.k8s.io/v1"
    kind: str | None = "RuntimeClass"
    handler: str = ""
    overhead: RuntimeClassOverhead | None = None
    scheduling: RuntimeClassScheduling | None = None


class LeaseSpec(KubeModel):
    """``coordination.k8s.io/v1.LeaseSpec``."""

    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int | None = None


class Lease(KubeObject):
    """``coordination.k8s.io/v1.Lease`` (leader election)."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "coordination.k8s.io/v1"
    kind: str | None = "Lease"
    spec: LeaseSpec = Field(default_factory=LeaseSpec)
