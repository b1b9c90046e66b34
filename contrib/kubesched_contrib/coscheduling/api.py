"""PodGroup (``scheduling.x-k8s.io/v1alpha1``): the CRD that declares a gang of pods.

Registered as an object kind through the ``kubesched.kinds`` entry point, so manifests
with ``kind: PodGroup`` load into the embedded cluster like any built-in kind, and
plugins read them with ``handle.lister.get_object("PodGroup", namespace, name)``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from kubesched.api import KubeModel, KubeObject, NullableDict, Quantity

__all__ = [
    "POD_GROUP_KIND",
    "POD_GROUP_LABEL",
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
    "pod_group_full_name",
    "pod_group_label",
]

POD_GROUP_KIND = "PodGroup"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""The pod label naming the PodGroup (in the pod's namespace) a pod belongs to."""


class PodGroupSpec(KubeModel):
    """``PodGroupSpec``: how many pods must be placed together, and for how long to wait."""

    min_member: int = Field(
        default=0,
        ge=0,
        description="The minimal number of pods that must be placed at once (the quorum).",
    )
    min_resources: NullableDict[str, Quantity] | None = Field(
        default=None,
        description=(
            "Resources the whole group needs; PreFilter checks the cluster has them "
            "(besides minMember pods) before the group is tried."
        ),
    )
    schedule_timeout_seconds: int | None = Field(
        default=None,
        description="How long the group's pods wait at Permit; unset: the plugin's default.",
    )


class PodGroupStatus(KubeModel):
    """``PodGroupStatus`` (kept by upstream's PodGroup controller; informational here)."""

    phase: str | None = None
    occupied_by: str | None = None
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: datetime | None = None


class PodGroup(KubeObject):
    """``scheduling.x-k8s.io/v1alpha1.PodGroup``: pods labelled
    ``scheduling.x-k8s.io/pod-group: <name>`` in the same namespace form the group."""

    api_version: str | None = "scheduling.x-k8s.io/v1alpha1"
    kind: str | None = POD_GROUP_KIND
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)


def pod_group_label(pod) -> str:
    """The PodGroup name a pod belongs to ("" if none): upstream ``GetPodGroupLabel``."""
    return (pod.metadata.labels or {}).get(POD_GROUP_LABEL, "")


def pod_group_full_name(pod) -> str:
    """``namespace/group`` of a pod's PodGroup ("" if none): upstream ``GetPodGroupFullName``."""
    name = pod_group_label(pod)
    if not name:
        return ""
    return f"{pod.metadata.namespace or 'default'}/{name}"
