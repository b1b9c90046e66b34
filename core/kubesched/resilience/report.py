"""The versioned report of ``kubesched resilience`` (pydantic models → JSON Schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

SCHEMA_VERSION = "kubesched.io/resilience/v1"
"""The ``schemaVersion`` of the report. Removing or renaming a field, or changing its
meaning, needs a new version; adding an optional field does not."""


class _Model(BaseModel):
    # Output models: camelCase on the wire, and a misspelt field in a consumer's hand-made
    # report is an error rather than silently dropped.
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=AliasGenerator(serialization_alias=to_camel, validation_alias=to_camel),
    )

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (camelCase field names)."""
        return self.model_dump(mode="json", by_alias=True)


class WorkloadOutcome(_Model):
    """One workload a failure touched: its replicas available before, at the lowest and
    at the end, and what became of its pods."""

    kind: str = Field(
        description="Deployment, ReplicaSet, StatefulSet, ReplicationController, or Pod for "
        "a pod no controller manages"
    )
    name: str = Field(description="namespace/name")
    desired: int = Field(description="spec.replicas (1 for a Pod)")
    before: int = Field(description="available replicas before the failure")
    lowest: int = Field(
        description="available replicas right after the failure (those on other nodes: "
        "nothing is replaced before a toleration runs out), or at the end if fewer (pods "
        "preempted by replacements)"
    )
    after: int = Field(description="available replicas at the end of the window")
    kept: bool = Field(description="after >= before: the workload got back what it had")
    evicted: int = Field(description="its pods the taint eviction controller deleted")
    replaced: int = Field(description="new pods of it scheduled during the window")
    pending: int = Field(description="new pods of it still pending at the end")
    pending_reason: str | None = Field(
        None, description="why (the last scheduling attempt's message of one of them)"
    )


class BudgetOutcome(_Model):
    """One PodDisruptionBudget a failure touched: healthy pods against desiredHealthy."""

    name: str = Field(description="namespace/name")
    desired_healthy: int = Field(
        description="desiredHealthy, as the disruption controller computes it"
    )
    before: int = Field(description="healthy pods before the failure")
    lowest: int = Field(description="healthy pods right after the failure, or at the end if fewer")
    after: int = Field(description="healthy pods at the end of the window")
    violated: bool = Field(
        description="lowest < desiredHealthy and lowest < before: the failure took the "
        "budget below what it protects"
    )
    violated_at_end: bool = Field(description="still below desiredHealthy at the end")


class FailureOutcome(_Model):
    """What one failure did, over the window it was played for."""

    failure: str = Field(description="e.g. node node-3, zone zone-a, random #2")
    nodes: list[str] = Field(description="the nodes made unreachable together")
    workloads_lost: int = Field(description="workloads that did not get their replicas back")
    replicas_lost: int = Field(description="the sum of before - after over those workloads")
    budgets_violated: int = Field(description="PodDisruptionBudgets violated")
    pods_pending: int = Field(description="new pods still pending at the end")
    pods_evicted: int = Field(description="pods the taint eviction controller deleted")
    daemon_pods_down: int = Field(
        description="DaemonSet pods on the failed nodes (they tolerate unreachable nodes "
        "forever and are never replaced elsewhere: not a loss)"
    )
    workloads: list[WorkloadOutcome] = Field(description="the workloads it touched, losses first")
    budgets: list[BudgetOutcome] = Field(description="the budgets it touched, violated first")
    stop: str = Field(description="settled, stalled or horizon (see the simulation report)")

    def severity(self) -> tuple[int, int, int, int, int]:
        """Sort key, worst first: workloads lost, budgets violated, pods left pending,
        replicas lost, pods evicted."""
        return (
            -self.workloads_lost,
            -self.budgets_violated,
            -self.pods_pending,
            -self.replicas_lost,
            -self.pods_evicted,
        )

    def harmless(self) -> bool:
        """Nothing lost: every workload got its replicas back and no budget was violated."""
        return not (self.workloads_lost or self.budgets_violated or self.pods_pending)


class ResilienceSummary(_Model):
    """The sweep at a glance."""

    failures: int
    harmless: int = Field(
        description="failures after which every workload had its replicas back, no budget "
        "was violated and no new pod was pending"
    )
    nodes: int = Field(description="nodes in the cluster")
    pods_pending_before: int = Field(description="pods pending on the cluster before any failure")
    window_seconds: float = Field(description="how long each failure was played (--for)")


class ResilienceReport(_Model):
    """Every failure of the sweep, worst first."""

    schema_version: Literal["kubesched.io/resilience/v1"] = Field(
        SCHEMA_VERSION, alias="schemaVersion"
    )
    summary: ResilienceSummary
    failures: list[FailureOutcome]
    notices: list[str] = Field(default_factory=list)
    wall_time: float | None = Field(None, description="seconds the sweep took")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the report (docs/schema/resilience.schema.json)."""
    return ResilienceReport.model_json_schema(by_alias=True)
