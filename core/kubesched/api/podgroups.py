"""The Workload API (``scheduling.k8s.io/v1alpha2``, alpha in Kubernetes v1.36): Workload
and PodGroup, the kinds kube-scheduler's gang scheduling reads.

A pod joins a PodGroup of its namespace through ``spec.schedulingGroup.podGroupName``
(:class:`~kubesched.api.core.PodSchedulingGroup`); the group's ``schedulingPolicy`` is
``basic`` (each pod on its own) or ``gang`` (none of its pods is bound before
``minCount`` of them can be). A Workload holds the templates that controllers copy into
PodGroups; the scheduler reads PodGroups only.

PodGroup shares its kind name with scheduler-plugins' Coscheduling PodGroup
(``scheduling.x-k8s.io``): manifests are told apart by their API group, and both are kept
under the kind ``PodGroup`` (see :data:`kubesched.api.manifests.GROUP_KINDS`).
"""

from __future__ import annotations

from pydantic import Field

from .meta import KubeModel, KubeObject, NullableList

__all__ = [
    "WORKLOAD_API_GROUP",
    "WORKLOAD_API_VERSION",
    "BasicSchedulingPolicy",
    "GangSchedulingPolicy",
    "PodGroupSchedulingConstraints",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "TopologyConstraint",
    "Workload",
    "WorkloadPodGroup",
    "WorkloadSpec",
    "set_status_condition",
]

WORKLOAD_API_GROUP = "scheduling.k8s.io"
WORKLOAD_API_VERSION = f"{WORKLOAD_API_GROUP}/v1alpha2"
WORKLOAD_POD_GROUP = f"{WORKLOAD_API_VERSION}/PodGroup"
"""The Workload API's PodGroup named with its apiVersion, as listers take it: Coscheduling's
PodGroup (``scheduling.x-k8s.io``) has the same kind name."""


class GangSchedulingPolicy(KubeModel):
    """``GangSchedulingPolicy``: all or nothing for ``minCount`` pods."""

    min_count: int | None = None
    """How many of the group's pods must be schedulable at once (required, positive)."""


class BasicSchedulingPolicy(KubeModel):
    """``BasicSchedulingPolicy``: each pod of the group is scheduled on its own."""


class PodGroupSchedulingPolicy(KubeModel):
    """``PodGroupSchedulingPolicy``: exactly one of ``basic`` and ``gang``."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(KubeModel):
    """``TopologyConstraint``: every pod of the group in one domain of node label ``key``
    (TopologyAwareWorkloadScheduling)."""

    key: str = ""


class PodGroupSchedulingConstraints(KubeModel):
    """``PodGroupSchedulingConstraints``: at most one topology constraint."""

    topology: NullableList[TopologyConstraint] = Field(default_factory=list)


class PodGroupSpec(KubeModel):
    """``PodGroupSpec``; the scheduler reads ``schedulingPolicy`` (required)."""

    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    disruption_mode: str | None = None


class PodGroupStatus(KubeModel):
    """``PodGroupStatus``: conditions as read (``PodGroupScheduled``, ``DisruptionTarget``)."""

    conditions: NullableList[dict] = Field(default_factory=list)


class WorkloadPodGroup(KubeObject):
    """``scheduling.k8s.io/v1alpha2.PodGroup``: the pods that name it in
    ``spec.schedulingGroup.podGroupName`` (same namespace) and how they are scheduled."""

    api_version: str | None = WORKLOAD_API_VERSION
    kind: str | None = "PodGroup"
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    @property
    def min_count(self) -> int | None:
        """The gang's ``minCount``, or None for a group that is not a gang."""
        policy = self.spec.scheduling_policy
        return policy.gang.min_count if policy is not None and policy.gang is not None else None


class PodGroupTemplate(KubeModel):
    """``PodGroupTemplate``: what a controller copies into each PodGroup it creates."""

    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    priority_class_name: str | None = None
    disruption_mode: str | None = None


class WorkloadSpec(KubeModel):
    """``WorkloadSpec``: one to eight PodGroup templates with distinct names."""

    pod_group_templates: NullableList[PodGroupTemplate] = Field(default_factory=list)


class Workload(KubeObject):
    """``scheduling.k8s.io/v1alpha2.Workload``: the PodGroup templates of one workload
    (kept and validated; the scheduler itself reads PodGroups)."""

    api_version: str | None = WORKLOAD_API_VERSION
    kind: str | None = "Workload"
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)


def set_status_condition(
    conditions: list[dict], ctype: str, status: str, reason: str, message: str, now: str
) -> list[dict]:
    """``conditions`` (``metav1.Condition`` s) with the condition of type ``ctype`` set, as
    apimachinery's ``SetStatusCondition``: ``lastTransitionTime`` becomes ``now`` only when
    the status changes (or the condition is new). A new list; ``conditions`` is unchanged."""
    condition = {
        "type": ctype,
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }
    out = list(conditions)
    for i, c in enumerate(out):
        if c.get("type") == ctype:
            if c.get("status") == status and c.get("lastTransitionTime"):
                condition["lastTransitionTime"] = c["lastTransitionTime"]
            out[i] = condition
            return out
    return [*out, condition]
