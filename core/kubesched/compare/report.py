"""The ``kubesched compare`` report: one verdict per pod (pydantic models, JSON on output)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["agree", "tie", "differ", "undecided"]
VERDICTS: tuple[str, ...] = ("agree", "tie", "differ", "undecided")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NodeScore(_Model):
    """kubesched's score of one node for one pod: each plugin's weighted score, the total."""

    node: str
    total: int
    plugins: dict[str, int] = Field(description="plugin → normalised score × weight")


class PodComparison(_Model):
    """One pod: where (or why not) each scheduler placed it, and the verdict."""

    pod: str = Field(description="namespace/name as in the manifests (scratch prefix removed)")
    verdict: Verdict = "agree"
    real_node: str | None = Field(None, alias="realNode")
    kubesched_node: str | None = Field(None, alias="kubeschedNode")
    tied_nodes: list[str] = Field(
        default_factory=list,
        alias="tiedNodes",
        description="the nodes kubesched scored highest (equal totals) when the nodes differ",
    )
    scores: list[NodeScore] = Field(
        default_factory=list, description="kubesched's scores of its node and the real one"
    )
    real_message: str = Field("", alias="realMessage")
    kubesched_message: str = Field("", alias="kubeschedMessage")
    real_victims: list[str] = Field(default_factory=list, alias="realVictims")
    kubesched_victims: list[str] = Field(default_factory=list, alias="kubeschedVictims")
    note: str = ""
    real_seconds: float = Field(0.0, alias="realSeconds", description="until the pod settled")


class ComparisonReport(_Model):
    """Every compared pod in creation order, and the count of each verdict."""

    server: str
    config: str
    pods: list[PodComparison]
    counts: dict[str, int]

    @classmethod
    def of(cls, server: str, config: str, pods: list[PodComparison]) -> ComparisonReport:
        """A report of ``pods`` with the counts filled in."""
        counts = {v: sum(1 for p in pods if p.verdict == v) for v in VERDICTS}
        return cls(server=server, config=config, pods=pods, counts=counts)
