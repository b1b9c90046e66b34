"""The scheduler: the scheduling loop over the queue, one Framework per profile, and binding."""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubesched.backend.protocol import PodCondition
from kubesched.cache import Cache, CacheError, Snapshot
from kubesched.clock import Clock, RealClock
from kubesched.config import EffectiveConfiguration
from kubesched.extenders import ExtenderError, build_extenders
from kubesched.framework.cycle_state import PODS_TO_ACTIVATE_KEY, CycleState
from kubesched.framework.diagnosis import Diagnosis, ExtenderVerdict, FitError
from kubesched.framework.events import ActionType, ClusterEvent, EventResource
from kubesched.framework.registry import PluginRegistry
from kubesched.framework.runtime import Framework
from kubesched.framework.runtime.pauses import VirtualPauses, WallClockPauses
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NO_PLUGINS, PodInfo, QueuedPodInfo, pod_uid
from kubesched.metrics import Metrics
from kubesched.queue import PriorityQueue, ProfileQueueing
from kubesched.scheduler.algorithm import ScheduleResult, SchedulingAlgorithm, SchedulingError
from kubesched.scheduler.pod_group_cycle import (
    GENERIC_WORKLOAD_GATE,
    TOPOLOGY_AWARE_GATE,
    PodGroupCycle,
)
from kubesched.scheduler.pod_group_preemption import WORKLOAD_AWARE_PREEMPTION_GATE
from kubesched.scheduler.recorder import EventRecorder
from kubesched.scheduler.records import (
    CLEAR_NOMINATION,
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    AttemptRecord,
)

log = logging.getLogger(__name__)

_Item = TypeVar("_Item")

ASSIGNED_POD_DELETE = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"
)
"""The event a forgotten assumed pod counts as: its resources are free again."""

POP_FROM_BACKOFF_Q_GATE = "SchedulerPopFromBackoffQ"
NOMINATED_NODE_NAME_FOR_EXPECTATION_GATE = "NominatedNodeNameForExpectation"
"""The gate of the queue's pop from the backoffQ (see ``PriorityQueue``)."""

UNHEALTHY_AFTER_ERRORS = 10
"""How many scheduling attempts in a row ending in an error (not a mere "does not fit")
turn :meth:`Scheduler.scheduling_health` unhealthy: kubesched's own readiness check,
which upstream does not have (kube-scheduler stays ready while every cycle fails)."""


@dataclass
class _Binding:
    """A scheduling cycle that succeeded, waiting for (or in) its binding cycle."""

    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    assumed: PodInfo
    result: ScheduleResult
    record: AttemptRecord
    started: float
    pre_flight: Status | None = None
    """PreBindPreFlight's verdict once asked (NominatedNodeNameForExpectation)."""


class BindingWorkers(Generic[_Item]):
    """The threads that run binding cycles (upstream: a goroutine per binding cycle), and,
    as a second pool, plugins' asynchronous API calls (the preemption's).

    A ``SimpleQueue`` and ``size`` plain threads, started at the first binding, rather
    than a ``ThreadPoolExecutor``: the loop hands one pod over per scheduling cycle, and
    an executor's ``Future`` (a ``Condition`` each) cost the loop about 5 % of its time
    through an API server. After ``shutdown`` a binding runs in the caller's thread.
    """

    def __init__(self, size: int, run: Callable[[_Item], None]) -> None:
        self.size = max(1, size)
        self._run = run
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = threading.Condition(self._lock)

    def submit_when_free(self, binding: _Item) -> None:
        """:meth:`submit` once fewer than ``size`` items are queued or running.

        The scheduling loop hands its bindings over this way. Without the wait, a burst
        of fast cycles (preemptors retried on their nominated nodes take about a
        millisecond each) queued hundreds of bindings behind the workers, and each
        attempt's duration, which runs to the end of its binding, counted seconds of
        that queue: upstream starts a goroutine per binding and has no such queue.
        Waiting here keeps the pods in the scheduling queue instead, where they can
        still be re-ordered, and does not lower the binding throughput.
        """
        with self._idle:
            self._idle.wait_for(lambda: self._busy < self.size or self._closed)
        self.submit(binding)

    def submit(self, binding: _Item) -> None:
        """Run ``binding``'s cycle on a worker (here once shut down)."""
        with self._lock:
            self._busy += 1
            closed = self._closed
            if not closed and not self._threads:
                self._threads = [
                    threading.Thread(target=self._work, name=f"binding_{i}", daemon=True)
                    for i in range(self.size)
                ]
                for thread in self._threads:
                    thread.start()
            if not closed:
                self._queue.put(binding)
        if closed:
            # Shut down (close() is rejecting the waiting pods): roll back here.
            self._finish(binding)

    def _work(self) -> None:
        while (binding := self._queue.get()) is not None:
            self._finish(binding)

    def _finish(self, binding: _Item) -> None:
        try:
            self._run(binding)
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify()

    def shutdown(self) -> None:
        """Take no more bindings; wait for those queued and running."""
        with self._lock:
            self._closed = True
            self._idle.notify_all()
            threads = self._threads
            for _ in threads:
                self._queue.put(None)
        for thread in threads:
            thread.join()


class Scheduler:
    """kube-scheduler's ``Scheduler``: profiles, queue, cache and the scheduling loop.

    Build it from an effective configuration, a plugin registry and a cluster backend;
    ``EventHandlers`` feed it the cluster's watch events (see ``connect``). Each call
    of ``schedule_one`` runs one pod's scheduling cycle; its binding cycle runs in a
    thread pool (``concurrent_binding=True``, for real clusters) or right after the
    scheduling cycle once Permit lets it (the simulator, deterministic).
    ``observers`` are called with each finished ``AttemptRecord``.
    """

    def __init__(
        self,
        config: EffectiveConfiguration,
        registry: PluginRegistry,
        backend: Any,
        *,
        lister: Any = None,
        clock: Clock | None = None,
        seed: int | None = None,
        metrics: Metrics | None = None,
        concurrent_binding: bool = False,
    ) -> None:
        cfg = config.config
        self.config = config
        self.backend = backend
        self.clock = clock or RealClock()
        self.rng = random.Random(seed)
        self.metrics = metrics or Metrics()
        self.cache = Cache(self.clock, metrics=self.metrics)
        self.snapshot = Snapshot()
        self.extenders = build_extenders(cfg.extenders)
        self.frameworks: dict[str, Framework] = {}
        for profile in config.profiles:
            self.frameworks[profile.scheduler_name] = Framework(
                profile,
                registry,
                client=backend,
                lister=lister if lister is not None else backend,
                # Events are reported by the profile's schedulerName, as upstream.
                event_recorder=EventRecorder(backend, self.clock, profile.scheduler_name),
                metrics=self.metrics,
                clock=self.clock,
                parallelism=cfg.parallelism,
                rng=random.Random(self.rng.random()),
                feature_gates=config.feature_gates,
                extenders=self.extenders,
            )
        self.pods: dict[str, Any] = {}
        """Each pod as the watch last reported it, by ``namespace/name`` (what upstream
        reads through its informer's pod lister); kept by ``EventHandlers``."""
        first = next(iter(self.frameworks.values()))
        self.queue = PriorityQueue(
            first.queue_sort_less(),
            self.clock,
            profiles={
                name: ProfileQueueing(fwk.run_pre_enqueue_plugins, fwk.events_to_register())
                for name, fwk in self.frameworks.items()
            },
            pod_initial_backoff=cfg.pod_initial_backoff_seconds,
            pod_max_backoff=cfg.pod_max_backoff_seconds,
            metrics=self.metrics,
            pod_lister=lambda namespace, name: self.pods.get(f"{namespace}/{name}"),
            sort_key=first.queue_sort_key(),
            pop_from_backoff_q=config.feature_gates.enabled(POP_FROM_BACKOFF_Q_GATE),
        )
        self._nominate_for_expectation = config.feature_gates.enabled(
            NOMINATED_NODE_NAME_FOR_EXPECTATION_GATE
        )
        """Whether a binding cycle that will wait (Permit) or work (PreBind) first writes
        the chosen node as the pod's nominatedNodeName."""
        self._api_calls = (
            BindingWorkers(cfg.parallelism, _run_api_calls) if concurrent_binding else None
        )
        self.pauses = WallClockPauses() if concurrent_binding else VirtualPauses(self.clock.now)
        """How binding cycles pause: their threads sleep (cut short by ``close``), or,
        on the loop's thread, they park until the clock reaches the pause's end."""
        for fwk in self.frameworks.values():
            fwk.pauses = self.pauses
            fwk.nominator = self.queue.nominator
            fwk.pod_activator = self.queue.activate
            if self._api_calls is not None:
                fwk.run_api_calls = self._api_calls.submit
            fwk.set_snapshot(self.snapshot)
        self.algorithm = SchedulingAlgorithm(self.rng, cfg.percentage_of_nodes_to_score)
        self.algorithm.current_cycle = self.queue.scheduling_cycle
        self.observers: list[Callable[[AttemptRecord], None]] = []
        self.record_details = True
        """Keep each attempt's per-node statuses, feasible nodes and scores in its record
        (explanations); off for large runs that only count outcomes."""
        self._ready: deque[_Binding] = deque()
        self._workers = (
            BindingWorkers(cfg.parallelism, self._binding_cycle) if concurrent_binding else None
        )
        self._in_binding = 0
        self._lock = threading.Lock()
        self._errors_in_a_row = 0
        self._last_error = ""
        # Pods rejected at Permit by another pod's PostFilter (a gang giving up because a
        # member found no node): waiting pod's uid -> the uid of the pod that failed.
        self._given_up_for: dict[str, str] = {}
        self._pod_group_cycle = (
            PodGroupCycle(
                self,
                config.feature_gates.enabled(TOPOLOGY_AWARE_GATE),
                config.feature_gates.enabled(WORKLOAD_AWARE_PREEMPTION_GATE),
            )
            if config.feature_gates.enabled(GENERIC_WORKLOAD_GATE)
            else None
        )
        """Pods of a PodGroup are scheduled in their group's cycle under GenericWorkload."""

    # -- the loop -----------------------------------------------------------------------
    def framework_for(self, pod: Any) -> Framework | None:
        """The profile's Framework that schedules ``pod`` (by ``spec.schedulerName``)."""
        return self.frameworks.get(pod.spec.scheduler_name or "default-scheduler")

    def schedule_one(self, block: bool = False, timeout: float | None = None) -> bool:
        """Pop one pod and run its scheduling cycle (and, unless concurrent, its binding
        cycle when Permit allows). False when there was no pod to pop (``block``: none
        came within ``timeout`` seconds, or the queue closed)."""
        qpi = self.queue.pop(block=block, timeout=timeout)
        if qpi is None:
            return False
        pod_info = qpi.pod_info
        pod = pod_info.pod
        fwk = self.framework_for(pod)
        if fwk is None or self._skip_pod_schedule(fwk, pod_info):
            self.queue.done(pod_info.uid)
            return True
        if self._pod_group_cycle is not None and pod.spec.scheduling_group is not None:
            self._pod_group_cycle.run(fwk, qpi)
            self.drain_ready_bindings()
            return True
        started = time.perf_counter()
        state = fwk.new_cycle_state()
        record = self._new_record(fwk, qpi)
        try:
            binding = self._scheduling_cycle(fwk, state, qpi, record, started)
        except Exception as err:
            # A bug (ours or a plugin's, outside a hook call) must not lose the pod: undo
            # the assumption if there was one and requeue it with the error.
            log.exception("scheduling cycle of %s failed", pod_info.key)
            self._forget_if_assumed(pod_info.uid)
            self._fail(fwk, qpi, Status.from_error(err), None, record, started, CLEAR_NOMINATION)
            binding = None
        if binding is not None:
            self._start_binding(binding)
        self.drain_ready_bindings()
        return True

    def _new_record(self, fwk: Framework, qpi: QueuedPodInfo) -> AttemptRecord:
        """The record of a scheduling attempt of ``qpi`` starting now."""
        pod_info = qpi.pod_info
        return AttemptRecord(
            pod_key=pod_info.key,
            pod_uid=pod_info.uid,
            profile=fwk.profile_name,
            attempt=qpi.attempts,
            started_at=self.clock.now(),
        )

    def _forget(self, assumed: PodInfo) -> None:
        """Forget an assumed pod whose cycle is undone (a failure is logged, as upstream)."""
        try:
            self.cache.forget_pod(assumed)
        except CacheError as err:
            log.error("scheduler cache forget pod failed: %s", err)

    def _forget_if_assumed(self, uid: str) -> None:
        assumed = self.cache.assumed_pod_info(uid)
        if assumed is not None:
            try:
                self.cache.forget_pod(assumed)
            except CacheError as err:
                log.error("scheduler cache forget pod failed: %s", err)

    def _skip_pod_schedule(self, fwk: Framework, pod_info: PodInfo) -> bool:
        pod = pod_info.pod
        if pod.metadata.deletion_timestamp is not None:
            fwk.event_recorder.eventf(
                pod,
                None,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {pod_info.key}",
            )
            return True
        # Already assumed: a stale copy from an update racing with its binding.
        return self.cache.is_assumed_pod(pod_info)

    def _scheduling_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        record: AttemptRecord,
        started: float,
    ) -> _Binding | None:
        pod_info = qpi.pod_info
        try:
            # An inconsistency is repaired by the cache and then reported: like upstream,
            # this attempt fails with the error and the pod is retried after backoff.
            self.cache.update_snapshot(self.snapshot)
            record.num_all_nodes = self.snapshot.num_nodes()
            result = self.algorithm.schedule_pod(fwk, state, pod_info, self.snapshot)
        except FitError as fit:
            self._post_filter(fwk, state, pod_info, fit, record)
            # Only PostFilter's map reads Filter's rows; the attempt record keeps the dict.
            fit.diagnosis.rejected_rows.clear()
            status = Status(Code.UNSCHEDULABLE, str(fit))
            record.diagnosis = fit.diagnosis
            self._fail(fwk, qpi, status, fit, record, started, record.nominated_node)
            return None
        except (SchedulingError, CacheError) as err:
            status = err.status if isinstance(err, SchedulingError) else Status.from_error(err)
            self._fail(fwk, qpi, status, None, record, started, CLEAR_NOMINATION)
            return None
        record.evaluated_nodes = result.evaluated_nodes
        if self.record_details:
            record.diagnosis = result.diagnosis
            record.feasible = [ni.name for ni in result.feasible]
            record.scores = result.scores
        record.node_name = result.suggested_host
        return self._assume_reserve_permit(fwk, state, qpi, result, record, started)

    def _assume_reserve_permit(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        result: ScheduleResult,
        record: AttemptRecord,
        started: float,
    ) -> _Binding | None:
        """The end of a scheduling cycle that found ``result.suggested_host``: assume the
        pod there, Reserve, Permit; the binding to start, or None once the failure is
        handled (undone and the pod requeued)."""
        pod_info = qpi.pod_info
        host = result.suggested_host
        assumed = pod_info.assumed_on(host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as err:
            error = Status(Code.ERROR, str(err))
            self._fail(fwk, qpi, error, None, record, started, CLEAR_NOMINATION)
            return None
        self.queue.nominator.delete_nominated_pod_if_exists(assumed.pod)

        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if status.is_success():
            status = fwk.run_permit_plugins(state, assumed, host)
            if status.is_success() or status.is_wait():
                # At the end of a successful scheduling cycle, move up the pods plugins asked for.
                self._activate_pods(state)
                return _Binding(fwk, state, qpi, assumed, result, record, started)
        # Reserve or Permit failed: undo, and report the node's status as the reason.
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        self._forget(assumed)
        status, fit = self._on_node_rejection(pod_info, host, status, record)
        self._fail(fwk, qpi, status, fit, record, started, CLEAR_NOMINATION)
        return None

    def _post_filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod_info: PodInfo,
        fit: FitError,
        record: AttemptRecord,
        snapshot: Snapshot | None = None,
    ) -> None:
        if not fwk.has_post_filter_plugins():
            return
        diagnosis = fit.diagnosis
        if snapshot is None:
            snapshot = self.snapshot
        statuses = diagnosis.post_filter_statuses(snapshot.list(), snapshot.table.name_array)
        undecided = [w for w in fwk.waiting_pods if w.status is None]
        result, status = fwk.run_post_filter_plugins(state, pod_info, statuses)
        with self._lock:
            for waiting in undecided:
                if waiting.status is not None and not waiting.status.is_success():
                    self._given_up_for[waiting.pod_info.uid] = pod_info.uid
        diagnosis.post_filter_msg = status.message()
        record.post_filter = status
        if result is not None:
            record.nominated_node = result.nominated_node_name
            record.post_filter_details = result.details

    @staticmethod
    def _on_node_rejection(
        pod_info: PodInfo, host: str, status: Status, record: AttemptRecord
    ) -> tuple[Status, FitError | None]:
        """A Reserve/Permit failure as upstream reports it: a rejection becomes a FitError
        over one node (the chosen one) with its status; an error stays as it is."""
        if not status.is_rejected():
            return status, None
        diagnosis = Diagnosis(node_to_status={host: status})
        diagnosis.add_plugin_status(status)
        fit = FitError(pod_info.key, 1, diagnosis)
        record.diagnosis = diagnosis
        return Status(status.code, str(fit), plugin=status.plugin), fit

    # -- failure ------------------------------------------------------------------------
    def _fail(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        fit: FitError | None,
        record: AttemptRecord,
        started: float,
        nominating: str | None,
        waits_on: frozenset[str] = NO_PLUGINS,
    ) -> None:
        """Upstream's FailureHandler: requeue, nominate, event, pod condition, metrics.

        ``waits_on``: without a FitError, the plugins whose events may still help the pod
        (a pod group's placed pod waits on what rejected the rest of its group)."""
        pod_info = qpi.pod_info
        pod = pod_info.pod
        rejected = status.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        result = RESULT_UNSCHEDULABLE if rejected else RESULT_ERROR
        if fit is not None:
            qpi.unschedulable_plugins = frozenset(fit.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = frozenset(fit.diagnosis.pending_plugins)
        else:
            # As upstream: without a FitError (an error, or a PreBind/Bind rejection) no
            # plugin is recorded, so the pod backs off instead of waiting for an event.
            qpi.unschedulable_plugins = waits_on
            qpi.pending_plugins = NO_PLUGINS
        # As upstream's handleSchedulingFailure, the attempt's duration ends here: the
        # event and the status update below are not part of it.
        self._count_attempt(result, fwk.profile_name, started, status)
        self.queue.add_unschedulable_if_not_present(qpi)
        self.queue.nominator.add_nominated_pod(pod_info, nominating)
        message = status.message()
        fwk.event_recorder.eventf(pod, None, "Warning", "FailedScheduling", "Scheduling", message)
        self._update_pod_status(
            pod, PodCondition("PodScheduled", "False", reason, message), nominating
        )
        record.result = result
        record.status = status
        record.message = message
        self._finish(record)

    def scheduling_health(self) -> tuple[bool, str]:
        """A readiness check: unhealthy while the last :data:`UNHEALTHY_AFTER_ERRORS`
        attempts or more all ended in an error, healthy again after any attempt that
        did not (a pod scheduled, or found not to fit)."""
        with self._lock:
            errors, last = self._errors_in_a_row, self._last_error
        if errors >= UNHEALTHY_AFTER_ERRORS:
            return False, f"the last {errors} scheduling attempts ended in an error: {last}"
        return True, ""

    def _count_attempt(
        self, result: str, profile: str, started: float, status: Status | None = None
    ) -> None:
        """``schedule_attempts`` and ``scheduling_attempt_duration`` for one attempt, and
        the run of attempts ending in an error that :meth:`scheduling_health` reads."""
        with self._lock:
            if result == RESULT_ERROR:
                self._errors_in_a_row += 1
                self._last_error = status.message() if status is not None else ""
            else:
                self._errors_in_a_row = 0
        metrics = self.metrics
        metrics.schedule_attempts.labels(result, profile).inc()
        metrics.histogram(metrics.scheduling_attempt_duration, result, profile).observe(
            time.perf_counter() - started
        )
        metrics.tick()

    def _update_pod_status(self, pod: Any, condition: PodCondition, nominating: str | None) -> None:
        current = next((c for c in (pod.status.conditions or ()) if c.type == condition.type), None)
        same_condition = (
            current is not None
            and current.status == condition.status
            and (current.reason or "") == condition.reason
            and (current.message or "") == condition.message
        )
        # The binding cycle may have nominated the pod after the queue's copy was taken
        # (updates of an assumed pod do not reach the queue): compare with the latest.
        latest = self.pods.get(f"{pod.namespace}/{pod.name}", pod)
        nominated = latest.status.nominated_node_name or ""
        same_nomination = nominating is None or nominating == nominated
        if same_condition and same_nomination:
            return
        try:
            self.backend.update_pod_status(
                pod,
                condition=condition,
                nominated_node_name=nominating or None,
                clear_nominated_node_name=nominating == CLEAR_NOMINATION,
            )
        except Exception as err:
            log.warning("could not update status of pod %s: %s", pod.metadata.name, err)

    def _pre_flight(self, b: _Binding) -> Status:
        """Upstream's start of the binding cycle with NominatedNodeNameForExpectation:
        PreBindPreFlight, and when PreBind has work to do or the pod waits at Permit, the
        chosen node written as its nominatedNodeName. Asked once per binding cycle."""
        if not self._nominate_for_expectation:
            return Status()
        if b.pre_flight is None:
            fwk, assumed, host = b.fwk, b.assumed, b.result.suggested_host
            b.pre_flight = fwk.run_pre_bind_pre_flights(b.state, assumed, host)
            if b.pre_flight.code is not Code.ERROR and (
                b.pre_flight.is_success() or fwk.will_wait_on_permit(assumed)
            ):
                # Tells other components (an autoscaler) where the pod is going while
                # Permit or PreBind holds it; a pod bound at once needs no such hint.
                self._nominate(assumed.pod, host)
        return b.pre_flight

    def _nominate(self, pod: Any, host: str) -> None:
        """Write ``host`` as the pod's nominatedNodeName unless it is already; a failed
        write is logged and binding goes on, as upstream."""
        if (pod.status.nominated_node_name or "") == host:
            return
        try:
            self.backend.update_pod_status(pod, nominated_node_name=host)
        except Exception as err:
            log.warning(
                "could not set the nominated node name of pod %s to %s: %s",
                pod.metadata.name,
                host,
                err,
            )

    # -- binding cycle ------------------------------------------------------------------
    def _start_binding(self, binding: _Binding) -> None:
        with self._lock:
            self._in_binding += 1
        if self._workers is None:
            run = hand_over = self._ready.append
        else:
            # Only the loop waits for a free worker: a pod allowed at Permit may be let
            # through from a binding thread, which must never wait for its own pool.
            run, hand_over = self._workers.submit, self._workers.submit_when_free
        waiting = binding.fwk.get_waiting_pod(binding.assumed.uid)
        # Upstream's binding cycle starts at once: the pod is nominated while it waits, and
        # a failed pre-flight fails the binding without waiting for Permit's verdict.
        if waiting is None or self._pre_flight(binding).code is Code.ERROR:
            hand_over(binding)
        else:
            # Runs when every waiting Permit plugin allowed the pod, or one rejected it.
            # A pod waiting at Permit holds no binding thread: with more pods waiting
            # than threads (a gang larger than the pool), the pool would otherwise fill
            # with waiters and the pod that completes the gang would never bind.
            waiting.on_done(lambda _status: run(binding))

    def drain_ready_bindings(self) -> None:
        """Resume the binding cycles whose pause is over, then run those whose Permit
        is decided (non-concurrent mode)."""
        self.pauses.wake_due(self.clock.now())
        while self._ready:
            self.pauses.run(self._binding_cycle, self._ready.popleft())

    def pending_bindings(self) -> int:
        """Binding cycles started and not finished (waiting at Permit or running)."""
        with self._lock:
            return self._in_binding

    def _binding_cycle(self, b: _Binding) -> None:
        try:
            self._run_binding_cycle(b)
        except Exception as err:
            # A bug must neither kill the binding thread nor strand the assumed pod: roll
            # back as for any failed binding.
            log.exception("binding cycle of %s failed", b.assumed.key)
            try:
                self._binding_failed(b, Status.from_error(err), None)
            except Exception:
                log.exception("rolling back the binding of %s failed", b.assumed.key)
        finally:
            with self._lock:
                self._in_binding -= 1

    def _run_binding_cycle(self, b: _Binding) -> None:
        fwk, state, assumed, host = b.fwk, b.state, b.assumed, b.result.suggested_host
        pre_flight = self._pre_flight(b)
        if pre_flight.code is Code.ERROR:
            # A pod that waits at Permit leaves the waiting pods now. Upstream keeps it
            # there (only WaitOnPermit removes one): plugins would still see and allow a
            # pod whose binding failed, and its next binding cycle would wait on it.
            fwk.waiting_pods.remove(assumed.uid)
            self._binding_failed(b, pre_flight, None)
            return
        # Returns at once for a pod that did not wait at Permit or whose wait is over.
        status = fwk.wait_on_permit(assumed)
        if not status.is_success():
            status, fit = self._on_node_rejection(assumed, host, status, b.record)
            self._binding_failed(b, status, fit)
            return
        status = fwk.run_pre_bind_plugins(state, assumed, host)
        if status.is_success():
            status = self._extenders_binding(assumed, host, b.record)
            if status is None:
                status = fwk.run_bind_plugins(state, assumed, host)
            # As upstream, only a Bind that ran starts the assumed pod's expiry.
            self.cache.finish_binding(assumed)
        if not status.is_success():
            self._binding_failed(b, status, None)
            return
        pod = assumed.pod
        fwk.event_recorder.eventf(
            pod,
            None,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {assumed.key} to {host}",
        )
        metrics = self.metrics
        self._count_attempt(RESULT_SCHEDULED, fwk.profile_name, b.started)
        metrics.histogram(metrics.pod_scheduling_attempts).observe(b.qpi.attempts)
        if b.qpi.initial_attempt_timestamp is not None:
            metrics.histogram(
                metrics.pod_scheduling_sli_duration, _attempts_label(b.qpi.attempts)
            ).observe(self.clock.now() - b.qpi.initial_attempt_timestamp)
        fwk.run_post_bind_plugins(state, assumed, host)
        # At the end of a successful binding cycle, move up the pods plugins asked for.
        self._activate_pods(state)
        self.queue.done(assumed.uid)
        b.record.result = RESULT_SCHEDULED
        b.record.binding = status
        self._finish(b.record)

    def _extenders_binding(
        self, assumed: PodInfo, host: str, record: AttemptRecord
    ) -> Status | None:
        """Upstream ``extendersBinding``: the first interested binding extender binds the
        pod instead of the Bind plugins (its status; None: no extender bound it). An
        ignorable extender that fails is passed over."""
        pod = assumed.pod
        for ext in self.extenders:
            if not ext.is_binder or not ext.is_interested(pod):
                continue
            try:
                ext.bind(pod, host)
            except ExtenderError as err:
                if ext.passed_over("bind", err, record.extender_verdicts):
                    continue
                record.extender_verdicts.append(ExtenderVerdict(ext.name, "bind", f"error: {err}"))
                return Status(Code.ERROR, str(err))
            record.extender_verdicts.append(ExtenderVerdict(ext.name, "bind", f"bound to {host}"))
            if getattr(self.backend, "embedded", False):
                # The extender cannot reach the embedded cluster: write what it would.
                try:
                    self.backend.bind(pod, host)
                except Exception as err:
                    return Status.from_error(err)
            return Status()
        return None

    def _binding_failed(self, b: _Binding, status: Status, fit: FitError | None) -> None:
        """Upstream's handleBindingCycleError: unreserve, forget, move, fail."""
        fwk, assumed, host = b.fwk, b.assumed, b.result.suggested_host
        fwk.run_reserve_plugins_unreserve(b.state, assumed, host)
        try:
            self.cache.forget_pod(assumed)
            forgotten = True
        except CacheError as err:
            log.error("scheduler cache forget pod failed: %s", err)
            forgotten = False
        uid = assumed.uid
        with self._lock:
            failed = self._given_up_for.pop(uid, None)
        # The resources of a pod given up for another pod's failure (a gang) do not
        # requeue that pod: it failed with them held by its own group, which upstream
        # places in one cycle where they are never held; freeing them would only retry
        # the group that just failed, at once and forever with pop-from-backoffQ.
        spared = {uid, failed} if status.is_rejected() else set()

        def freed() -> None:
            # The forgotten pod's resources are free again: as if an assigned pod went.
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE,
                assumed.pod,
                None,
                (lambda p: pod_uid(p) not in spared) if spared else None,
            )

        # Upstream defers this move for a rejection: made first, it would count as a move
        # request during the pod's own attempt and send the pod to backoff instead of the
        # unschedulable pods.
        if forgotten and not status.is_rejected():
            freed()
        b.record.binding = status
        # The pod in the queue's hands is the unbound one, not the assumed copy.
        self._fail(
            fwk,
            b.qpi,
            status,
            fit,
            b.record,
            b.started,
            CLEAR_NOMINATION,
        )
        if forgotten and status.is_rejected():
            freed()

    def _activate_pods(self, state: CycleState) -> None:
        """Activate the pods plugins put in the cycle's ``PodsToActivate``, then clear it."""
        pods = state.get(PODS_TO_ACTIVATE_KEY)
        if pods is not None and pods.pods:
            self.queue.activate(dict(pods.pods))
            pods.pods.clear()

    def _finish(self, record: AttemptRecord) -> None:
        record.finished_at = self.clock.now()
        for observer in self.observers:
            observer(record)

    # -- periodic work ------------------------------------------------------------------
    def expire_waiting_pods(self) -> None:
        """Reject the pods whose Permit wait timed out (non-concurrent mode's timer)."""
        now = self.clock.now()
        for fwk in self.frameworks.values():
            fwk.waiting_pods.expire(now)

    def next_waiting_deadline(self) -> float | None:
        """The earliest Permit deadline of any waiting pod, or end of a binding cycle's
        pause (non-concurrent mode)."""
        deadlines = [
            d
            for fwk in self.frameworks.values()
            if (d := fwk.waiting_pods.next_deadline()) is not None
        ]
        if (wake := self.pauses.next_wake_time()) is not None:
            deadlines.append(wake)
        return min(deadlines, default=None)

    def close(self) -> None:
        """Stop: close the queue, reject the pods waiting at Permit and cut short the
        binding cycles' pauses (their binding cycles roll back: Unreserve, Forget), and
        wait for the binding cycles in flight."""
        self.queue.close()
        self.pauses.stop()
        for fwk in self.frameworks.values():
            for waiting in list(fwk.waiting_pods):
                waiting.reject("", "scheduler is shutting down")
        self.drain_ready_bindings()
        if self._workers is not None:
            self._workers.shutdown()
        if self._api_calls is not None:
            self._api_calls.shutdown()


def _run_api_calls(calls: Callable[[], None]) -> None:
    """Run a plugin's asynchronous API calls; a bug in them must not end the worker."""
    try:
        calls()
    except Exception:
        log.exception("asynchronous API calls failed")


def _attempts_label(attempts: int) -> str:
    """Upstream's ``getAttemptsLabel``: "1".."14", then "15+" (bounded cardinality)."""
    return str(attempts) if attempts < 15 else "15+"
