"""The versioned report of ``kubesched deschedule`` (pydantic models → JSON Schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "kubesched.io/deschedule/v1"
"""The ``schemaVersion`` of the report. Removing or renaming a field, or changing its
meaning, needs a new version; adding an optional field does not."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (camelCase field names)."""
        return self.model_dump(mode="json", by_alias=True)


class EvictionReport(_Model):
    """One eviction a strategy asked for, and what became of the pod."""

    pod: str
    node: str
    profile: str
    strategy: str
    reason: str
    evicted: bool = Field(description="false: the Eviction API refused it (see refused)")
    refused: str | None = Field(None, description="the Eviction API's refusal (a PDB's)")
    replacement: str | None = Field(None, description="the pod its controller created instead")
    replacement_node: str | None = Field(None, alias="replacementNode")
    outcome: str = Field(description="where the pod went, or why it was not re-placed")


class UtilizationGoal(_Model):
    """A utilisation strategy's thresholds in force (percent; with deviation thresholds,
    around the mean) and the nodes under all low / over any high ones, before and after."""

    low: dict[str, float]
    high: dict[str, float]
    under_before: list[str] = Field(alias="underBefore")
    over_before: list[str] = Field(alias="overBefore")
    under_after: list[str] = Field(alias="underAfter")
    over_after: list[str] = Field(alias="overAfter")

    def describe(self) -> str:
        """One line: the thresholds and the nodes under and over them, before → after."""

        def names(nodes: list[str]) -> str:
            return ", ".join(nodes) or "none"

        low = ", ".join(f"{r} {v:g}" for r, v in self.low.items())
        high = ", ".join(f"{r} {v:g}" for r, v in self.high.items())
        return (
            f"under all of [{low}]: {names(self.under_before)} → {names(self.under_after)}; "
            f"over any of [{high}]: {names(self.over_before)} → {names(self.over_after)}"
        )


class StrategyReport(_Model):
    """One strategy of one profile: its evictions and whether its goal was met."""

    profile: str
    strategy: str
    evictions: int
    refused: int
    violations_before: int = Field(
        alias="violationsBefore", description="evictions it wanted on the initial placement"
    )
    violations_after: int = Field(
        alias="violationsAfter",
        description="evictions it would still want once the evicted pods were re-placed",
    )
    goal_met: bool = Field(alias="goalMet", description="violationsAfter is 0")
    utilization: UtilizationGoal | None = Field(
        None, description="for the utilisation strategies: thresholds and node classes"
    )


class NodeUtilization(_Model):
    """A node's requested share of allocatable, before and after (percent)."""

    node: str
    before: dict[str, float]
    after: dict[str, float]


class DeschedulePodCount(_Model):
    """How many pods were bound and pending, before and after."""

    bound_before: int = Field(alias="boundBefore")
    pending_before: int = Field(alias="pendingBefore")
    bound_after: int = Field(alias="boundAfter")
    pending_after: int = Field(alias="pendingAfter")


class DescheduleReport(_Model):
    """What the policy's strategies evicted, where the pods went, and each goal."""

    schema_version: Literal["kubesched.io/deschedule/v1"] = Field(
        SCHEMA_VERSION, alias="schemaVersion"
    )
    evictions: list[EvictionReport]
    strategies: list[StrategyReport]
    nodes: list[NodeUtilization]
    pods: DeschedulePodCount
    notices: list[str] = Field(default_factory=list)


Table = tuple[str, tuple[str, ...], list[tuple[str, ...]]]
"""A table for a person: its title, column names and rows of text."""


def summary(report: DescheduleReport) -> str:
    """One line: evictions done and refused, pods bound and pending before → after."""
    evicted = sum(1 for e in report.evictions if e.evicted)
    p = report.pods
    return (
        f"{evicted} pod(s) evicted, {len(report.evictions) - evicted} refused; pods bound "
        f"{p.bound_before} → {p.bound_after}, pending {p.pending_before} → {p.pending_after}."
    )


def tables(report: DescheduleReport) -> list[Table]:
    """The evictions (where each pod went), the strategies (their goals) and the nodes'
    utilisation, as the text and HTML reports show them."""
    return [
        (
            "Evictions",
            ("pod", "node", "strategy", "reason", "went to"),
            [
                (e.pod, e.node, e.strategy, e.reason, e.replacement_node or e.outcome)
                for e in report.evictions
            ],
        ),
        (
            "Strategies (evictions each wants on the placement before and after)",
            (
                "profile",
                "strategy",
                "evicted",
                "refused",
                "wanted before",
                "wanted after",
                "goal met",
            ),
            [
                (
                    s.profile,
                    s.strategy,
                    str(s.evictions),
                    str(s.refused),
                    str(s.violations_before),
                    str(s.violations_after),
                    "yes" if s.goal_met else "no",
                )
                for s in report.strategies
            ],
        ),
        (
            "Node utilisation (requests), before → after",
            ("node", "cpu %", "memory %", "pods %"),
            [
                (
                    n.node,
                    *(
                        f"{n.before.get(r, 0):g} → {n.after.get(r, 0):g}"
                        for r in ("cpu", "memory", "pods")
                    ),
                )
                for n in report.nodes
            ],
        ),
    ]


def utilization_lines(report: DescheduleReport) -> list[str]:
    """For each utilisation strategy: its thresholds and the nodes under and over them."""
    return [
        f"{s.strategy}: {s.utilization.describe()}"
        for s in report.strategies
        if s.utilization is not None
    ]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the report (docs/schema/deschedule.schema.json)."""
    return DescheduleReport.model_json_schema(by_alias=True)
