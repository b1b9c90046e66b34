"""What the scheduler reports about each scheduling attempt, for explanations and summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.framework.diagnosis import Diagnosis, ExtenderVerdict
from kubesched.framework.runtime import ScoreResult
from kubesched.framework.status import Status

RESULT_SCHEDULED = "scheduled"
RESULT_UNSCHEDULABLE = "unschedulable"
RESULT_ERROR = "error"
"""The ``result`` label values of upstream's ``scheduler_schedule_attempts_total``."""

CLEAR_NOMINATION = ""
"""Nominating info that clears a pod's nominated node (upstream ``ModeOverride`` with "")."""


@dataclass
class AttemptRecord:
    """One scheduling attempt of one pod, from pop to the end of its binding cycle.

    Filled in as the attempt goes; observers receive it once the attempt is over.
    ``diagnosis`` holds each rejected node's Filter status (only the nodes evaluated:
    with ``percentageOfNodesToScore`` the search stops early, as upstream's), ``feasible``
    the nodes that passed, ``scores`` each Score plugin's raw and normalised scores of
    them. ``nominated_node`` is what PostFilter (preemption) nominated (``""``: the
    nomination was cleared); ``post_filter`` its status and ``post_filter_details`` the
    plugin's explanation (DefaultPreemption: candidates, victims, the deciding rule).
    ``binding`` is the binding cycle's status when there was one.
    """

    pod_key: str
    pod_uid: str
    profile: str
    attempt: int
    started_at: float
    result: str = ""
    node_name: str | None = None
    message: str = ""
    status: Status | None = None
    diagnosis: Diagnosis | None = None
    feasible: list[str] = field(default_factory=list)
    evaluated_nodes: int = 0
    num_all_nodes: int = 0
    scores: ScoreResult | None = None
    post_filter: Status | None = None
    post_filter_details: Any = None
    nominated_node: str | None = None
    binding: Status | None = None
    finished_at: float | None = None
    extender_verdicts: list[ExtenderVerdict] = field(default_factory=list)
    """The binding extender's answer; :meth:`extender_calls` adds the others."""

    def extender_calls(self) -> list[ExtenderVerdict]:
        """Every extender call of the attempt, in order: Filter and Prioritize (kept in
        ``diagnosis``), preemption (in ``post_filter_details``), then Bind."""
        calls = list(self.diagnosis.extender_verdicts) if self.diagnosis is not None else []
        calls += getattr(self.post_filter_details, "extender_verdicts", ())
        return calls + self.extender_verdicts
