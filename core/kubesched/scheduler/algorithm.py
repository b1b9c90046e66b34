"""One pod's placement: PreFilter, Filter over enough nodes, Score, and the choice of a host."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kubesched.extenders import EXTENDER_NAME, MAX_EXTENDER_PRIORITY, ExtenderError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import (
    NO_NODES_AVAILABLE_ERROR,
    Diagnosis,
    ExtenderVerdict,
    FitError,
)
from kubesched.framework.node_table import NodeTable
from kubesched.framework.results import MAX_NODE_SCORE
from kubesched.framework.runtime import Framework, PluginScore, ScoreResult
from kubesched.framework.status import Code, Status, not_none_mask
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
"""Upstream: look for at least this many feasible nodes, whatever the percentage."""
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
"""Upstream: the adaptive percentage never drops below 5%."""
ERR_REASON_NODE_NOT_ACCOUNTED = "node(s) had totals the scheduler could not account for"
"""Why a node whose row of the snapshot's table is fenced (its totals could not be
written) is passed over; no plugin runs on it, and preemption cannot help."""


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream's formula).

    With fewer than 100 nodes, all. Otherwise ``percentage`` of them (the adaptive
    default when it is unset or 0: 50% minus 1% per 125 nodes, at least 5%), and
    never fewer than 100.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingError(Exception):
    """The attempt failed for a reason other than "no node fits": ``status`` says why."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass
class ScheduleResult:
    """The outcome of ``schedule_pod``: the chosen node and what was evaluated."""

    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    feasible: list[NodeInfo] = field(default_factory=list)
    scores: ScoreResult | None = None


@dataclass
class _BatchHint:
    """What opportunistic batching said of this cycle's pod: its signature and the node
    it was hinted ("" for none)."""

    signature: str | None = None
    node: str = ""


class SchedulingAlgorithm:
    """Upstream's ``schedulePod`` and helpers for one scheduler (all profiles share it).

    Keeps the round-robin start index so that, when only a percentage of nodes is
    evaluated, every node gets its turn; ties between the best nodes are broken with
    ``rng`` (seedable, so simulations repeat).
    """

    def __init__(self, rng: random.Random, percentage_of_nodes_to_score: int | None = None) -> None:
        self.rng = rng
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.current_cycle: Callable[[], int] = lambda: 0
        """The scheduling queue's current cycle (upstream ``CurrentCycle``), which
        opportunistic batching compares with the cycle that kept its ranking."""

    def schedule_pod(
        self, fwk: Framework, state: CycleState, pod_info: PodInfo, snapshot
    ) -> ScheduleResult:
        """Choose a node for ``pod_info`` in ``snapshot``.

        Raises ``FitError`` when no node fits (with the diagnosis) and
        ``SchedulingError`` when a plugin failed with an error.
        """
        if snapshot.num_nodes() == 0:
            raise SchedulingError(
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE_ERROR)
            )
        hint = _BatchHint()
        feasible, rows, diagnosis = self.find_nodes_that_fit_pod(
            fwk, state, pod_info, snapshot, hint
        )
        if not feasible:
            raise FitError(pod_info.key, snapshot.num_nodes(), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            host = feasible[0].name
            if fwk.batch is not None:
                fwk.batch.store_results(hint.signature, hint.node, host, None, self.current_cycle())
            return ScheduleResult(host, evaluated, 1, diagnosis, feasible)
        scores = self.prioritize_nodes(
            fwk, state, pod_info, NodeBatch(snapshot.table, rows, feasible), diagnosis
        )
        host = self.select_host(scores)
        if fwk.batch is not None:
            cycle = self.current_cycle()
            fwk.batch.store_results(
                hint.signature,
                hint.node,
                host,
                lambda: self.ranked_rest(scores, host, cycle),
                cycle,
            )
        return ScheduleResult(host, evaluated, len(feasible), diagnosis, feasible, scores)

    # -- filtering ----------------------------------------------------------------------
    def find_nodes_that_fit_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod_info: PodInfo,
        snapshot,
        hint: _BatchHint | None = None,
    ) -> tuple[list[NodeInfo], np.ndarray, Diagnosis]:
        """PreFilter, the nominated node (or else the batch's hinted node) first, then
        Filter: ``(feasible, rows, diagnosis)``. ``hint`` receives the pod's signature and
        hinted node when the profile batches."""
        diagnosis = Diagnosis()
        all_nodes: list[NodeInfo] = snapshot.list()
        pre_result, status, rejectors = fwk.run_pre_filter_plugins(state, pod_info, all_nodes)
        diagnosis.unschedulable_plugins |= rejectors
        if not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            # Every node gets the same status, so that preemption can handle them.
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message()
            if status.plugin:
                diagnosis.unschedulable_plugins.add(status.plugin)
            return [], np.empty(0, dtype=np.intp), diagnosis

        table = snapshot.table
        if fwk.batch is not None and hint is not None:
            # As upstream, the hint is asked for even when the pod has a nominated node.
            hint.node, hint.signature = fwk.batch.node_hint(
                lambda: fwk.sign_pod(pod_info),
                self.current_cycle(),
                state,
                pod_info,
                lambda name: table.infos[table.index[name]] if name in table.index else None,
                fwk.run_filter_plugins,
            )
        # The nominated node is likely the only one that fits after preemption, the hinted
        # node the best of the previous pod's ranking: try it before the others.
        nominated = pod_info.pod.status.nominated_node_name or (hint.node if hint else "")
        if nominated and nominated in table.index:
            row = np.array([table.index[nominated]], dtype=np.intp)
            feasible, rows = self.find_nodes_that_pass_filters(
                fwk, state, pod_info, diagnosis, row, table
            )
            feasible, rows = self.find_nodes_that_pass_extenders(
                fwk, pod_info, feasible, rows, diagnosis, table
            )
            if feasible:
                # As upstream: the round-robin start does not move for the nominated node.
                return feasible, rows, diagnosis

        if pre_result is None or pre_result.all_nodes():
            rows = table.all_rows
        else:
            # Sorted by snapshot order so that the result does not depend on set order.
            rows = np.array(
                sorted(table.index[n] for n in pre_result.node_names if n in table.index),
                dtype=np.intp,
            )
            narrowed_by = " ".join(sorted(rejectors)) if rejectors else ""
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{narrowed_by}]",
            )
        feasible, feasible_rows = self.find_nodes_that_pass_filters(
            fwk, state, pod_info, diagnosis, rows, table
        )
        # Every node gets its turn: the next search starts after the nodes evaluated now
        # (upstream counts the feasible ones and every node with a status).
        if all_nodes:
            processed = len(feasible) + len(diagnosis.node_to_status)
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        feasible, feasible_rows = self.find_nodes_that_pass_extenders(
            fwk, pod_info, feasible, feasible_rows, diagnosis, table
        )
        return feasible, feasible_rows, diagnosis

    def find_nodes_that_pass_extenders(
        self,
        fwk: Framework,
        pod_info: PodInfo,
        feasible: list[NodeInfo],
        rows: np.ndarray,
        diagnosis: Diagnosis,
        table: NodeTable,
    ) -> tuple[list[NodeInfo], np.ndarray]:
        """Upstream ``findNodesThatPassExtenders``: each interested filtering extender in
        turn narrows the plugins' feasible nodes; the nodes it fails get its message as
        their status. An error fails the attempt unless the extender is ignorable."""
        if not fwk.extenders or not feasible:
            return feasible, rows
        before = len(feasible)
        pod = pod_info.pod
        for ext in fwk.extenders:
            if not feasible:
                break
            if not ext.is_filter or not ext.is_interested(pod):
                continue
            try:
                passing, failed, unresolvable = ext.filter(pod, feasible)
            except ExtenderError as err:
                if ext.passed_over("filter", err, diagnosis.extender_verdicts):
                    continue
                raise SchedulingError(Status(Code.ERROR, str(err))) from None
            # A node in both maps is unresolvable (upstream: that map takes precedence).
            for name, message in failed.items():
                if name not in unresolvable:
                    diagnosis.node_to_status[name] = Status(Code.UNSCHEDULABLE, message)
            for name, message in unresolvable.items():
                diagnosis.node_to_status[name] = Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message
                )
            diagnosis.extender_verdicts.append(
                ExtenderVerdict(
                    ext.name,
                    "filter",
                    f"{len(passing)} of {len(feasible)} node(s) passed",
                    {**failed, **unresolvable},
                )
            )
            feasible = passing
        if len(feasible) == before:
            return feasible, rows
        # Extenders register no cluster events: any event may make the pod schedulable.
        diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        index = table.index
        return feasible, np.fromiter((index[ni.name] for ni in feasible), np.intp, len(feasible))

    def find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod_info: PodInfo,
        diagnosis: Diagnosis,
        rows: np.ndarray,
        table: NodeTable,
    ) -> tuple[list[NodeInfo], np.ndarray]:
        """Filter the nodes at ``rows`` (snapshot rows) from the round-robin start index
        until enough feasible nodes are found, as upstream's parallel search but in order.

        Plugins evaluate batches of nodes (vectorised where they can); nodes with
        nominated pods are evaluated a second time, as a batch of copies with those pods
        added (``run_filter_batch_with_nominated_pods``). Nodes after the last needed
        feasible node are not counted as evaluated.
        """
        fenced = table.fenced[rows] if table.fenced.any() else None
        if fenced is not None and fenced.any():
            # Its row may not show what runs there: passing it over is the only choice
            # that cannot over-commit it.
            at = rows[fenced]
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_NOT_ACCOUNTED)
            diagnosis.add_rejected(table.name_array[at], at, np.full(len(at), status, dtype=object))
            rows = rows[~fenced]
        n = len(rows)
        if n == 0:
            return [], rows
        to_find = num_feasible_nodes_to_find(self._percentage(fwk), n)
        infos = table.infos
        start = self.next_start_node_index % n

        def in_order(pos: int, count: int) -> np.ndarray:
            """``count`` rows from position ``pos`` of the round-robin order (``rows``
            from ``start``, wrapping): a slice, joined only where it wraps."""
            first = start + pos - n if start + pos >= n else start + pos
            end = first + count
            return rows[first:end] if end <= n else np.concatenate((rows[first:], rows[: end - n]))

        if not fwk.has_filter_plugins():
            chosen = in_order(0, min(to_find, n))
            return [infos[r] for r in chosen.tolist()], chosen

        name_array = table.name_array
        found_parts: list[np.ndarray] = []
        found = pos = 0
        chunk = to_find
        while pos < n and found < to_find:
            part = in_order(pos, min(chunk, n - pos))
            pos += len(part)
            ok, verdicts = self._filter_chunk(fwk, state, pod_info, table, part)
            ok_positions = np.flatnonzero(ok)
            need = to_find - found
            # Stop right after the last feasible node needed: the nodes after it count
            # as not evaluated, as in upstream's search.
            cut = int(ok_positions[need - 1]) + 1 if len(ok_positions) >= need else len(part)
            found_parts.append(part[:cut][ok[:cut]])
            found += min(len(ok_positions), need)
            if verdicts is not None:
                rejected = np.flatnonzero(~ok[:cut])
                at = part[rejected]
                diagnosis.add_rejected(name_array[at], at, verdicts[rejected])
            # Most nodes failing means many more to look at: widen the next chunk.
            chunk = max(chunk * 2, to_find - found)
        chosen = np.concatenate(found_parts) if found_parts else np.empty(0, dtype=np.intp)
        if found and rows is table.all_rows and len(chosen) == pos:
            # Every node looked at passed and the rows are the table's in order: the
            # feasible NodeInfos are a run of the table's list, copied by slicing, and
            # the rows a slice of ``all_rows`` (unless they wrap), which the Score
            # batch then reads as views. (``pos`` counts the nodes looked at; the last
            # chunk stops at ``cut``.)
            end = start + found
            table_infos = table.infos
            if end <= n:
                return table_infos[start:end], rows[start:end]
            return table_infos[start:] + table_infos[: end - n], chosen
        return table.info_array[chosen].tolist(), chosen

    def _filter_chunk(
        self,
        fwk: Framework,
        state: CycleState,
        pod_info: PodInfo,
        table: NodeTable,
        part: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Filter the nodes at rows ``part``: ``(ok, verdicts)``, ``ok`` a bool mask of
        the nodes that fit, ``verdicts`` the statuses of the others (an object array,
        ``None`` = fits), or ``None`` when every node fits. The pods nominated to the
        nodes count as upstream counts them."""
        batch = NodeBatch(table, part)
        nominator = fwk.nominator
        if nominator is not None and len(nominator):
            verdicts, error = fwk.run_filter_batch_with_nominated_pods(state, pod_info, batch)
            if error is not None:
                raise SchedulingError(error)
            return ~not_none_mask(verdicts), verdicts
        passing, maybe_verdicts, error = fwk.filter_batch(state, pod_info, batch)
        if error is not None:
            raise SchedulingError(error)
        ok = np.zeros(len(part), dtype=bool)
        ok[passing] = True
        return ok, maybe_verdicts

    def _percentage(self, fwk: Framework) -> int | None:
        profile_value = fwk.profile.percentage_of_nodes_to_score
        return profile_value if profile_value is not None else self.percentage_of_nodes_to_score

    # -- scoring ------------------------------------------------------------------------
    def prioritize_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod_info: PodInfo,
        batch: NodeBatch,
        diagnosis: Diagnosis | None = None,
    ) -> ScoreResult:
        """PreScore and Score over the feasible nodes, then the extenders' scores added;
        every node scores 1 when the profile has neither Score plugins nor extenders
        (upstream)."""
        if not fwk.has_score_plugins() and not fwk.extenders:
            return ScoreResult(
                [ni.name for ni in batch.infos], [], np.ones(len(batch), dtype=np.int64)
            )
        status = fwk.run_pre_score_plugins(state, pod_info, batch.infos)
        if not status.is_success():
            raise SchedulingError(status)
        result = fwk.run_score_plugins(state, pod_info, batch)
        if isinstance(result, Status):
            raise SchedulingError(result)
        if fwk.extenders:
            self._add_extender_scores(fwk, pod_info, batch.infos, result, diagnosis)
        return result

    def _add_extender_scores(
        self,
        fwk: Framework,
        pod_info: PodInfo,
        infos: list[NodeInfo],
        result: ScoreResult,
        diagnosis: Diagnosis | None,
    ) -> None:
        """Each interested prioritizing extender's 0-10 scores, times its weight, scaled
        to the plugins' 0-100 range, added to the totals. An extender that fails gives
        no score (upstream ignores prioritization errors)."""
        pod = pod_info.pod
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        for ext in fwk.extenders:
            if not ext.is_prioritizer or not ext.is_interested(pod):
                continue
            try:
                by_name = ext.prioritize(pod, infos)
            except ExtenderError as err:
                log.info(
                    "Extender %s failed to prioritize; no score given by it: %s", ext.name, err
                )
                if diagnosis is not None:
                    diagnosis.extender_verdicts.append(
                        ExtenderVerdict(ext.name, "prioritize", f"error, no score given: {err}")
                    )
                continue
            raw = np.fromiter((by_name.get(ni.name, 0) for ni in infos), np.int64, len(infos))
            score = PluginScore(ext.name, ext.weight, raw, raw * scale)
            result.plugins.append(score)
            result.totals = result.totals + score.weighted
            if diagnosis is not None:
                diagnosis.extender_verdicts.append(
                    ExtenderVerdict(ext.name, "prioritize", f"scored {len(by_name)} node(s)")
                )

    def ranked_rest(self, scores: ScoreResult, host: str, cycle: int) -> list[str]:
        """The scored nodes other than ``host``, best total first, equal totals in a random
        order (upstream's heap with a random tie-breaker). The order is drawn from a
        generator seeded with ``cycle``, not from ``rng``, so that batching leaves every
        other random choice of a seeded run as it was."""
        totals = scores.totals
        tie_breaker = np.random.default_rng(cycle).random(len(totals))
        order = np.lexsort((-tie_breaker, -totals))
        names = scores.names
        ranked = [names[i] for i in order.tolist()]
        ranked.remove(host)
        return ranked

    def select_host(self, scores: ScoreResult) -> str:
        """The node with the highest total; among equals, one chosen uniformly at random
        (upstream's reservoir sampling has the same distribution)."""
        totals = scores.totals
        best = np.flatnonzero(totals == totals.max())
        pick = best[0] if len(best) == 1 else best[self.rng.randrange(len(best))]
        return scores.name_at(int(pick))
