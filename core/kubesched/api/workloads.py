"""Workload controllers whose pods the scheduler places: ReplicaSet, Deployment, StatefulSet, ..."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from .core import PodSpec
from .meta import KubeModel, KubeObject, LabelSelector, NullableList, ObjectMeta
from .volumes import PersistentVolumeClaimTemplate

__all__ = [
    "CronJob",
    "CronJobSpec",
    "CronJobStatus",
    "DaemonSet",
    "DaemonSetSpec",
    "Deployment",
    "DeploymentSpec",
    "Job",
    "JobCondition",
    "JobSpec",
    "JobStatus",
    "JobTemplateSpec",
    "PodTemplateSpec",
    "ReplicaSet",
    "ReplicaSetSpec",
    "ReplicationController",
    "ReplicationControllerSpec",
    "StatefulSet",
    "StatefulSetPersistentVolumeClaimRetentionPolicy",
    "StatefulSetSpec",
]


class PodTemplateSpec(KubeModel):
    """``v1.PodTemplateSpec``: the metadata and spec of the pods a controller creates."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class ReplicaSetSpec(KubeModel):
    """``apps/v1.ReplicaSetSpec``; replicas default to 1."""

    replicas: int = 1
    min_ready_seconds: int = 0
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class ReplicaSet(KubeObject):
    """``apps/v1.ReplicaSet``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "apps/v1"
    kind: str | None = "ReplicaSet"
    spec: ReplicaSetSpec = Field(default_factory=ReplicaSetSpec)


class DeploymentSpec(KubeModel):
    """``apps/v1.DeploymentSpec``; replicas default to 1, the strategy is kept as given."""

    replicas: int = 1
    min_ready_seconds: int = 0
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    strategy: dict[str, Any] | None = None
    paused: bool = False


class Deployment(KubeObject):
    """``apps/v1.Deployment``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "apps/v1"
    kind: str | None = "Deployment"
    spec: DeploymentSpec = Field(default_factory=DeploymentSpec)


class StatefulSetPersistentVolumeClaimRetentionPolicy(KubeModel):
    """``apps/v1.StatefulSetPersistentVolumeClaimRetentionPolicy``: Retain (default) or
    Delete the claims when the set is deleted / scaled down."""

    when_deleted: Literal["Retain", "Delete"] = "Retain"
    when_scaled: Literal["Retain", "Delete"] = "Retain"


class StatefulSetSpec(KubeModel):
    """``apps/v1.StatefulSetSpec``; replicas default to 1, podManagementPolicy to OrderedReady."""

    replicas: int = 1
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    service_name: str | None = None
    pod_management_policy: str = "OrderedReady"
    volume_claim_templates: NullableList[PersistentVolumeClaimTemplate] = Field(
        default_factory=list
    )
    """Each template makes a claim ``<template>-<set>-<ordinal>`` per pod."""
    persistent_volume_claim_retention_policy: StatefulSetPersistentVolumeClaimRetentionPolicy = (
        Field(default_factory=lambda: StatefulSetPersistentVolumeClaimRetentionPolicy())
    )


class StatefulSet(KubeObject):
    """``apps/v1.StatefulSet``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "apps/v1"
    kind: str | None = "StatefulSet"
    spec: StatefulSetSpec = Field(default_factory=StatefulSetSpec)


class DaemonSetSpec(KubeModel):
    """``apps/v1.DaemonSetSpec``."""

    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    min_ready_seconds: int = 0


class DaemonSet(KubeObject):
    """``apps/v1.DaemonSet``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "apps/v1"
    kind: str | None = "DaemonSet"
    spec: DaemonSetSpec = Field(default_factory=DaemonSetSpec)


class JobSpec(KubeModel):
    """``batch/v1.JobSpec``; parallelism defaults to 1, completions too when both are unset."""

    parallelism: int | None = None
    completions: int | None = None
    backoff_limit: int = 6
    active_deadline_seconds: int | None = None
    """Seconds from the job's start after which it fails (``DeadlineExceeded``)."""
    completion_mode: str = "NonIndexed"
    suspend: bool = False
    manual_selector: bool | None = None
    """With true, ``selector`` is the user's (and adopts matching orphan pods); otherwise
    the controller selects its pods by ``controller-uid``."""
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)

    @model_validator(mode="after")
    def _defaults(self) -> JobSpec:
        # SetDefaults_Job: a non-parallel job may leave both unset; both become 1.
        if self.completions is None and self.parallelism is None:
            self.completions = 1
        if self.parallelism is None:
            self.parallelism = 1
        return self


class JobCondition(KubeModel):
    """``batch/v1.JobCondition``: ``Complete``, ``Failed``, ``SuccessCriteriaMet``,
    ``FailureTarget`` or ``Suspended``, with the controller's reason and message."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_probe_time: datetime | None = None
    last_transition_time: datetime | None = None


class JobStatus(KubeModel):
    """``batch/v1.JobStatus``: what the Job controller reports."""

    conditions: NullableList[JobCondition] = Field(default_factory=list)
    start_time: datetime | None = None
    completion_time: datetime | None = None
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    ready: int | None = None
    terminating: int | None = None
    completed_indexes: str | None = None

    def condition(self, ctype: str) -> JobCondition | None:
        """The condition of type ``ctype`` whose status is True, if any."""
        return next((c for c in self.conditions if c.type == ctype and c.status == "True"), None)


class Job(KubeObject):
    """``batch/v1.Job``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "batch/v1"
    kind: str | None = "Job"
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)

    @property
    def finished(self) -> str | None:
        """``Complete`` or ``Failed`` once the job has finished, else None."""
        for ctype in ("Complete", "Failed"):
            if self.status.condition(ctype) is not None:
                return ctype
        return None


class JobTemplateSpec(KubeModel):
    """``batch/v1.JobTemplateSpec``: the metadata and spec of the Jobs a CronJob creates."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec = Field(default_factory=JobSpec)


class CronJobSpec(KubeModel):
    """``batch/v1.CronJobSpec`` with the API server's defaults (concurrencyPolicy Allow,
    history limits 3 successful and 1 failed)."""

    schedule: str = ""
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str = "Allow"
    suspend: bool = False
    job_template: JobTemplateSpec = Field(default_factory=JobTemplateSpec)
    successful_jobs_history_limit: int = 3
    failed_jobs_history_limit: int = 1

    @model_validator(mode="after")
    def _default_policy(self) -> CronJobSpec:
        # SetDefaults_CronJob: an empty concurrencyPolicy is Allow, as when left out.
        if not self.concurrency_policy:
            self.concurrency_policy = "Allow"
        return self


class CronJobStatus(KubeModel):
    """``batch/v1.CronJobStatus``: the running jobs and the last schedule and success."""

    active: NullableList[dict[str, Any]] = Field(default_factory=list)
    """References (kind, namespace, name, uid, apiVersion) to the Jobs still running."""
    last_schedule_time: datetime | None = None
    last_successful_time: datetime | None = None


class CronJob(KubeObject):
    """``batch/v1.CronJob``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "batch/v1"
    kind: str | None = "CronJob"
    spec: CronJobSpec = Field(default_factory=CronJobSpec)
    status: CronJobStatus = Field(default_factory=CronJobStatus)


class ReplicationControllerSpec(KubeModel):
    """``v1.ReplicationControllerSpec``: the selector is a plain label map."""

    replicas: int = 1
    min_ready_seconds: int = 0
    selector: dict[str, str] | None = None
    template: PodTemplateSpec | None = None


class ReplicationController(KubeObject):
    """``v1.ReplicationController``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "v1"
    kind: str | None = "ReplicationController"
    spec: ReplicationControllerSpec = Field(default_factory=ReplicationControllerSpec)
