"""Opportunistic batching: a profile's memory of the last pod's node ranking, handed on as a
hint to the next pod with the same signature (upstream's ``OpportunisticBatch``, KEP-5598)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.status import Status
    from kubesched.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

MAX_BATCH_AGE_SECONDS = 0.5
"""Upstream's ``maxBatchAge``: a ranking older than this is not reused (the cluster may have
changed in ways the next pod's filters on one node would not show)."""

# The ``result`` label of scheduler_batch_attempts_total (upstream's words).
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"
NO_HINT = "no_hint"

# The ``hinted`` label of scheduler_get_node_hint_duration_seconds (upstream's words).
HINTED = "hint"
NOT_HINTED = "no_hint"

# What ``observe`` is called with first: which of upstream's two latency histograms.
GET_NODE_HINT = "get_node_hint"
STORE_SCHEDULE_RESULTS = "store_schedule_results"

# The ``reason`` label of scheduler_batch_cache_flushed_total (upstream's words).
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_EXPIRED = "expired"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"
FLUSH_EMPTY_LIST = "empty_list"


@dataclass
class _BatchState:
    """The ranking kept from the cycle that scored every node: the pod's signature, the
    nodes after the chosen one (best first) and when it was kept."""

    signature: str
    ranked: list[str]
    created: float


class OpportunisticBatch:
    """One profile's batch (upstream keeps one per framework).

    ``node_hint`` runs after PreFilter: it gives the next node of the kept ranking when the
    pod has the kept signature, comes in the very next scheduling cycle, the ranking is
    younger than :data:`MAX_BATCH_AGE_SECONDS` and the node chosen last time now rejects
    this pod (so the ranking of the other nodes, which did not change, still holds).
    ``store_results`` runs once a node is chosen: it keeps the rest of the ranking when the
    pod was scored over all its feasible nodes, and leaves it alone when the hint was used.
    ``count`` is called with ``("attempt", result)`` and ``("flush", reason)`` for the
    metrics, ``observe`` with ``(GET_NODE_HINT, hinted, seconds)`` and
    ``(STORE_SCHEDULE_RESULTS, "", seconds)``: the wall time of each call, as upstream times
    ``GetNodeHint`` (signing included) and ``StoreScheduleResults``.
    """

    def __init__(
        self,
        now: Callable[[], float],
        count: Callable[[str, str], None],
        observe: Callable[[str, str, float], None],
    ) -> None:
        self._now = now
        self._count = count
        self._observe = observe
        self._state: _BatchState | None = None
        self._last_cycle = 0
        self._last_chosen = ""

    def node_hint(
        self,
        sign: Callable[[], str | None],
        cycle: int,
        state: CycleState,
        pod_info: PodInfo,
        node_info: Callable[[str], NodeInfo | None],
        run_filters: Callable[[CycleState, PodInfo, NodeInfo], Status],
    ) -> tuple[str, str | None]:
        """The hinted node for this pod in scheduling cycle ``cycle`` ("" for none) and the
        pod's signature, which ``sign`` gives (None: the pod cannot be signed)."""
        start = time.perf_counter()
        signature = sign()
        kept = self._usable(signature, cycle, state, pod_info, node_info, run_filters)
        if kept is None:
            self._count("attempt", NO_HINT)
            hint = ""
        else:
            hint = kept.ranked.pop(0)
        self._observe(GET_NODE_HINT, HINTED if hint else NOT_HINTED, time.perf_counter() - start)
        return hint, signature

    def store_results(
        self,
        signature: str | None,
        hinted: str,
        chosen: str,
        ranked_rest: Callable[[], list[str]] | None,
        cycle: int,
    ) -> None:
        """Remember this cycle's choice and, unless the hint was used, the ranking of the
        other feasible nodes: ``ranked_rest`` gives them best first (called only for a
        signed pod); None when no other node was scored (one node was feasible, or the
        nominated or hinted node was taken)."""
        start = time.perf_counter()
        try:
            self._last_cycle = cycle
            self._last_chosen = chosen
            if hinted and hinted == chosen:
                self._count("attempt", HINT_USED)
                return
            if hinted:
                self._count("attempt", HINT_NOT_USED)
            if signature is not None and ranked_rest is not None:
                self._state = _BatchState(signature, ranked_rest(), self._now())
                return
            self._count(
                "flush", FLUSH_EMPTY_LIST if ranked_rest is None else FLUSH_POD_NOT_BATCHABLE
            )
            self._state = None
        finally:
            self._observe(STORE_SCHEDULE_RESULTS, "", time.perf_counter() - start)

    def _usable(
        self,
        signature: str | None,
        cycle: int,
        state: CycleState,
        pod_info: PodInfo,
        node_info: Callable[[str], NodeInfo | None],
        run_filters: Callable[[CycleState, PodInfo, NodeInfo], Status],
    ) -> _BatchState | None:
        """The kept ranking if this pod may take its next node, else None."""
        kept = self._state
        if kept is None or not kept.ranked:
            return None
        # A flush below keeps the ranking (as upstream): only the next stored result
        # replaces it, and a pod of the next cycle with its signature may still use it.
        reason = None
        if cycle != self._last_cycle + 1:
            # Another pod (of any profile) was tried in between, or this one's last
            # attempt failed: the ranking may not account for what happened since.
            reason = FLUSH_POD_SKIPPED
        elif signature is None or signature != kept.signature:
            reason = FLUSH_POD_INCOMPATIBLE
        elif self._now() > kept.created + MAX_BATCH_AGE_SECONDS:
            reason = FLUSH_EXPIRED
        else:
            last = node_info(self._last_chosen)
            if last is None:
                reason = FLUSH_NODE_MISSING
            elif not run_filters(state, pod_info, last).is_rejected():
                # The pod would fit where the last one went: that node's score changed
                # and it might still be the best, so the ranking cannot be reused.
                reason = FLUSH_NODE_NOT_FULL
        if reason is None:
            return kept
        log.debug("opportunistic batch not usable in cycle %d: %s", cycle, reason)
        self._count("flush", reason)
        return None
