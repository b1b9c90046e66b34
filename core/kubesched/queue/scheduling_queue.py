"""The scheduling queue: activeQ, backoffQ, unschedulable and gated pods, shared by all profiles.

This is upstream kube-scheduler's ``PriorityQueue``
(``pkg/scheduler/backend/queue/scheduling_queue.go``):

- **activeQ** — a heap ordered by the QueueSort plugin's ``less``; ``pop`` takes its
  head for the next scheduling cycle.
- **backoffQ** — pods that failed and wait out an exponential backoff
  (``initial * 2**(attempts-1)``, capped); two heaps as upstream, one for pods some
  plugin rejected and one for pods that failed with an error.
- **unschedulable pods** — pods some plugin rejected; they leave on a cluster event
  that a rejecting plugin registered (and whose queueing hint says ``QUEUE``), or
  after ``pod_max_in_unschedulable_pods_duration``.
- **gated pods** — pods a PreEnqueue plugin holds back; they have never been
  attempted and leave when PreEnqueue passes (on an update or a registered event).

Two periodic flushes move pods on (backoff completed: every second; unschedulable
leftovers: every 30 s). ``run`` starts them as threads; the simulator calls
``flush_backoff_q_completed`` / ``flush_unschedulable_pods_leftover`` itself with a
``FakeClock`` and jumps to ``next_event_time()``.

With ``pop_from_backoff_q`` (kube-scheduler's ``SchedulerPopFromBackoffQ`` gate, on by
default; KEP-5142), ``pop`` takes the head of the backoffQ when the activeQ is empty (pods
that failed with an error excepted), backoff expiries are rounded down to whole seconds (the
ordering window; pods of one window are ordered like the activeQ, and a pod is backing off
while its window has not passed), the backoff flush runs on whole seconds, and PreEnqueue
runs when a pod enters the backoffQ rather than when it leaves it. The scheduler turns it
on for ``kubesched run`` only (see ``Scheduler``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from kubesched.api import Pod
from kubesched.clock import Clock
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo, pod_uid
from kubesched.metrics import Metrics
from kubesched.queue.heap import Heap, KeyedHeap
from kubesched.queue.nominator import Nominator, PodLister
from kubesched.queue.parked import ALWAYS, ParkedPods

__all__ = [
    "ASSIGNED_POD_ADD",
    "BACKOFF_COMPLETE",
    "DEFAULT_POD_INITIAL_BACKOFF",
    "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
    "FORCE_ACTIVATE",
    "FORCE_ACTIVATE_EVENT",
    "POD_ADD",
    "POD_UPDATE",
    "SCHEDULE_ATTEMPT_FAILURE",
    "UNSCHEDULABLE_TIMEOUT",
    "UNSCHEDULABLE_TIMEOUT_EVENT",
    "Less",
    "PreEnqueueCheck",
    "PriorityQueue",
    "ProfileQueueing",
    "calculate_backoff_duration",
    "is_pod_updated",
]

log = logging.getLogger(__name__)

DEFAULT_POD_INITIAL_BACKOFF = 1.0
"""Seconds of backoff after the first failed attempt (``podInitialBackoffSeconds``)."""
DEFAULT_POD_MAX_BACKOFF = 10.0
"""Cap of the backoff, in seconds (``podMaxBackoffSeconds``)."""
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0
"""How long a pod may stay unschedulable before the leftover flush retries it."""

BACKOFF_FLUSH_INTERVAL = 1.0
"""Period of the backoff flush loop (fixed upstream)."""
BACKOFF_ORDERING_WINDOW = 1.0
"""With ``pop_from_backoff_q``, backoff expiries are rounded down to a multiple of this
(upstream ``backoffQOrderingWindowDuration``), the backoff flush's period."""
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0
"""Period of the unschedulable-leftover flush loop (fixed upstream)."""
_STOP_POLL = 0.2

# ``event`` label values of scheduler_queue_incoming_pods_total, as upstream.
POD_ADD = "PodAdd"
POD_UPDATE = "PodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
FORCE_ACTIVATE = "ForceActivate"

UNSCHEDULABLE_TIMEOUT_EVENT = ClusterEvent(
    EventResource.WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT
)
"""The wildcard event of the leftover flush: it moves a pod whatever rejected it."""
FORCE_ACTIVATE_EVENT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, FORCE_ACTIVATE)
"""The wildcard event of ``activate``."""
ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
"""The event of ``assigned_pod_added``."""

# Upstream skips gated pods held by this plugin on every cluster event: only an update
# of the pod itself can remove a scheduling gate, and checking thousands of gated pods
# per event hurt throughput (kubernetes#124384).
_SCHEDULING_GATES = "SchedulingGates"

_ACTIVE, _BACKOFF, _UNSCHEDULABLE, _GATED = "active", "backoff", "unschedulable", "gated"

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
"""The QueueSort order: ``less(a, b)`` is True when ``a`` should be popped first."""
PreEnqueueCheck = Callable[[Pod], bool]
"""A filter for ``move_all_to_active_or_backoff_queue``: only pods it accepts move."""


@dataclass(frozen=True)
class ProfileQueueing:
    """What one profile's framework gives the queue.

    ``pre_enqueue`` runs the profile's PreEnqueue plugins and returns the first
    non-success status (with ``plugin`` naming the plugin) or ``None``/success.
    ``hints`` are the ``(plugin name, event, queueing hint or None)`` registrations
    of the profile's plugins (``events_to_register``); a plugin that registered
    nothing should be given ``WILDCARD_EVENT`` by the framework.
    """

    pre_enqueue: Callable[[PodInfo], Status | None] | None = None
    hints: Sequence[tuple[str, ClusterEvent, QueueingHintFn | None]] = ()


class _Strategy(Enum):
    """Where a requeued pod goes (upstream ``queueingStrategy``)."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def calculate_backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """``initial * 2**(attempts-1)`` capped at ``maximum``; 0 for a pod never attempted.

    Upstream ``calculateBackoffDuration``: a pod that was never tried gets no penalty.
    """
    if attempts <= 0:
        return 0.0
    duration = initial
    for _ in range(1, attempts):
        if duration >= maximum - duration:
            return maximum
        duration += duration
    return min(duration, maximum)


@dataclass(frozen=True)
class _InFlightEvent:
    """A cluster event that happened while pods were being scheduled."""

    seq: int
    event: ClusterEvent
    old_obj: Any
    new_obj: Any
    pre_check: PreEnqueueCheck | None


def _qpi_key(qpi: QueuedPodInfo) -> str:
    return qpi.pod_info.uid


def _is_wildcard(event: ClusterEvent) -> bool:
    return event.resource is EventResource.WILDCARD and event.action == ActionType.ALL


def _window_start(t: float) -> float:
    """The start of the backoff ordering window ``t`` falls in (upstream's ``Truncate``)."""
    return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW


def is_pod_updated(old_pod: Pod | None, new_pod: Pod) -> bool:
    """Whether an update may change the pod's scheduling result (upstream ``isPodUpdated``).

    The status, ``resourceVersion``, ``generation`` and finalizers are ignored (our
    models keep no ``managedFields``, which upstream ignores as well).
    """
    if old_pod is None:
        return True
    exclude: Any = {"status": True, "metadata": {"resource_version", "generation", "finalizers"}}
    return old_pod.model_dump(exclude=exclude) != new_pod.model_dump(exclude=exclude)


class PriorityQueue:
    """Upstream's ``PriorityQueue``: one queue for all profiles (keyed by schedulerName).

    ``less`` orders the activeQ (the QueueSort plugin, the same for every profile);
    ``sort_key``, when the plugin offers one (``less(a, b)`` exactly when
    ``sort_key(a) < sort_key(b)``), gives the same order with a C-level heap.
    Pods whose ``spec.schedulerName`` has no entry in ``profiles`` are ignored.
    All times are seconds of ``clock``. ``pod_lister`` (optional) is given to the
    nominator, which then refuses pods that are gone or bound. ``pop_from_backoff_q``:
    upstream's ``SchedulerPopFromBackoffQ`` (see the module's documentation; the
    scheduler passes the gate, on by default); with it, ``pod_max_backoff=0`` disables the
    backoff (a pod that may be retried goes straight back to the activeQ), as upstream's
    ``WithPodMaxBackoffDuration(0)`` — a configuration cannot ask for it: kube-scheduler's
    validation, and ours, refuse a ``podMaxBackoffSeconds`` below
    ``podInitialBackoffSeconds``, itself at least 1. Thread-safe: one lock guards everything,
    and ``pop`` waits on a condition of that lock.
    """

    def __init__(
        self,
        less: Less,
        clock: Clock,
        *,
        profiles: Mapping[str, ProfileQueueing] = MappingProxyType({}),
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable_pods_duration: float = (
            DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
        ),
        metrics: Metrics | None = None,
        pod_lister: PodLister | None = None,
        sort_key: Callable[[QueuedPodInfo], Any] | None = None,
        pop_from_backoff_q: bool = False,
    ) -> None:
        self._less = less
        self._pop_from_backoff_q = pop_from_backoff_q
        self._clock = clock
        self._profiles = dict(profiles)
        self._event_plugins: dict[tuple[EventResource, ActionType], frozenset[str]] = {}
        self._initial_backoff = pod_initial_backoff
        self._max_backoff = pod_max_backoff
        self._max_in_unschedulable = pod_max_in_unschedulable_pods_duration
        self._metrics = metrics

        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._closed = False
        self._stop = threading.Event()

        self._active: Heap[QueuedPodInfo] | KeyedHeap[QueuedPodInfo] = (
            KeyedHeap(_qpi_key, sort_key) if sort_key is not None else Heap(_qpi_key, less)
        )
        # Upstream splits the backoffQ: pods rejected by plugins are ordered by backoff
        # expiry and then like the activeQ; pods that failed with an error only by expiry.
        self._backoff: Heap[QueuedPodInfo] = Heap(_qpi_key, self._less_backoff_with_priority)
        self._error_backoff: Heap[QueuedPodInfo] = Heap(_qpi_key, self._less_backoff)
        # Indexed by rejecting plugin: an event looks only at the pods it may help.
        self._unschedulable = ParkedPods(self._park_keys)
        self._gated = ParkedPods(self._park_keys)

        self._scheduling_cycle = 0
        # uid -> latest version of the pod, for pods popped and not yet done.
        self._in_flight: dict[str, Pod] = {}
        # The cluster events that happened while pods were in flight, numbered, and for
        # each in-flight pod the number of the first event after its pop: a pod that fails
        # asks its rejecting plugins' hints about these (upstream's inFlightEvents).
        self._in_flight_events: list[_InFlightEvent] = []
        self._events_seen = 0
        self._in_flight_since: dict[str, int] = {}
        # In-flight pods that were updated in a way that may make them schedulable, or
        # deleted, while being scheduled: decides where add_unschedulable_if_not_present
        # puts them.
        self._in_flight_updated: set[str] = set()
        self._in_flight_deleted: set[str] = set()
        # uid -> (profile, plugins) counted in scheduler_unschedulable_pods, so that the
        # gauge is decremented exactly once whatever way the pod leaves.
        self._counted_reasons: dict[str, tuple[str, frozenset[str]]] = {}

        # The pending-pods gauges read the sub-queues' sizes when they are collected,
        # instead of being set after every queue operation.
        if metrics is not None:
            sizes = (
                (_ACTIVE, lambda: len(self._active)),
                (_BACKOFF, lambda: len(self._backoff) + len(self._error_backoff)),
                (_UNSCHEDULABLE, lambda: len(self._unschedulable)),
                (_GATED, lambda: len(self._gated)),
            )
            for queue, size in sizes:
                metrics.pending_pods.labels(queue=queue).set_function(size)
        # (queue, event) -> the labelled counter, looked up once.
        self._incoming_counters: dict[tuple[str, str], Any] = {}
        self.nominator = Nominator(pod_lister)
        """The pods nominated to nodes (see :class:`Nominator`)."""

    # ==================================================================================
    # Public API: events from the cluster
    # ==================================================================================
    def add(self, pod: Pod) -> None:
        """A new unscheduled pod: PreEnqueue, then the activeQ (or the gated pods).

        Pods of an unknown schedulerName and pods already bound are ignored; a pod the
        queue already holds is treated as an update.
        """
        if not self._accepts(pod):
            return
        with self._lock:
            uid = pod_uid(pod)
            if uid in self._in_flight:
                self._in_flight[uid] = pod
                return
            existing = self._get_locked(uid)
            if existing is not None:
                self._update_locked(existing.pod, pod)
            else:
                qpi = QueuedPodInfo(PodInfo(pod), self._clock.now())
                if self._move_to_active_q(qpi, POD_ADD):
                    self._cond.notify_all()

    def update(self, old_pod: Pod | None, new_pod: Pod, event: ClusterEvent | None = None) -> None:
        """A pod changed (``event``: how, as ``UnscheduledPod/<action>``, if known).

        In the activeQ or backoffQ it is updated in place. An unschedulable or gated
        pod moves on (to the backoffQ if still backing off, else through PreEnqueue
        to the activeQ) if the change may matter for scheduling (``is_pod_updated``);
        a change of its status only moves it when ``event`` is a specific one (the
        claims the resourceclaim controller made for it) and the hint of a plugin that
        rejected it says so, as upstream's queueing hints for pod updates; else it is
        updated in place. A pod being scheduled is remembered and requeued after its
        attempt. An unknown pod is added. A pod that became bound leaves.
        """
        if new_pod.spec.node_name:
            # The pod got bound (by us or another scheduler): it is no longer pending.
            self.delete(new_pod)
            return
        if not self._accepts(new_pod):
            return
        with self._lock:
            self._update_locked(old_pod, new_pod, event)

    def delete(self, pod: Pod) -> None:
        """A pod was deleted (or bound): forget it everywhere, including its nomination."""
        with self._lock:
            uid = pod_uid(pod)
            self.nominator.delete_nominated_pod_if_exists(pod)
            self._remove_locked(uid)
            if uid in self._in_flight:
                self._in_flight_deleted.add(uid)
            self._release_reasons(uid)

    def activate(self, pods: Iterable[Pod] | Mapping[str, Pod]) -> None:
        """Move these pods, if unschedulable or backing off, to the activeQ now.

        A pod being scheduled is requeued to the backoffQ after a failed attempt
        (upstream records a ``ForceActivate`` event for it in flight). Pods the queue
        does not know are ignored.
        """
        if isinstance(pods, Mapping):
            pods = pods.values()
        with self._lock:
            activated = False
            for pod in pods:
                uid = pod_uid(pod)
                parked = self._unschedulable.get(uid) or self._gated.get(uid)
                qpi = parked or self._backoff.get(uid) or self._error_backoff.get(uid)
                if qpi is not None:
                    activated |= self._move_to_active_q(
                        qpi, FORCE_ACTIVATE, from_backoff=parked is None
                    )
                elif uid in self._in_flight:
                    self._record_in_flight_event(FORCE_ACTIVATE_EVENT, None, pod, None)
            if activated:
                self._cond.notify_all()

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old_obj: Any = None,
        new_obj: Any = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """A cluster event happened: retry the unschedulable pods it may help.

        A pod moves when one of the plugins that rejected it registered an event
        matching ``event`` and that registration's queueing hint (if any) returns
        ``QUEUE`` for ``(pod, old_obj, new_obj)`` — a hint that raises counts as
        ``QUEUE``. A wildcard event moves every pod; a pod that failed with no
        rejecting plugin moves on any event. Moved pods go to the backoffQ while
        backing off, else through PreEnqueue to the activeQ; a pending plugin's
        ``QUEUE`` skips the backoff. ``pre_check`` (optional) limits the pods
        considered. The event is remembered for the pods in flight, whose requeue after
        a failed attempt asks their rejecting plugins' hints about it.
        """
        with self._lock:
            if not self._is_event_of_interest(event):
                return
            self._record_in_flight_event(event, old_obj, new_obj, pre_check)
            if _is_wildcard(event):
                parked = [*self._unschedulable.values(), *self._gated.values()]
            else:
                # Only pods a plugin registered for this event rejected can move (or
                # pods with no rejecting plugin): not a walk over every parked pod.
                plugins = self._plugins_for(event)
                parked = [
                    *self._unschedulable.candidates(plugins),
                    *self._gated.candidates(plugins),
                ]
            candidates = [qpi for qpi in parked if pre_check is None or pre_check(qpi.pod)]
            self._move_pods_locked(candidates, event, old_obj, new_obj)

    def assigned_pod_added(self, pod: Pod | PodInfo) -> None:
        """A bound pod appeared: it may satisfy pending pods' affinity or spreading.

        Upstream (with queueing hints) issues ``MoveAllToActiveOrBackoffQueue`` with
        the ``AssignedPod/Add`` event, so pods move whose rejecting plugins registered
        it. ``pod`` may be the Pod or its PodInfo.
        """
        pod = pod.pod if isinstance(pod, PodInfo) else pod
        self.move_all_to_active_or_backoff_queue(ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(
        self, old_pod: Pod | PodInfo | None, new_pod: Pod | PodInfo, event: ClusterEvent
    ) -> None:
        """A bound pod changed (``event`` says how, e.g. AssignedPod/UpdatePodLabel)."""
        old = old_pod.pod if isinstance(old_pod, PodInfo) else old_pod
        new = new_pod.pod if isinstance(new_pod, PodInfo) else new_pod
        self.move_all_to_active_or_backoff_queue(event, old, new)

    # ==================================================================================
    # Public API: the scheduling loop
    # ==================================================================================
    def pop(self, block: bool = True, timeout: float | None = None) -> QueuedPodInfo | None:
        """Take the head of the activeQ for a scheduling cycle (with
        ``pop_from_backoff_q``, when the activeQ is empty, the backoffQ's head, backing
        off or not; never a pod that failed with an error).

        Blocks until a pod is available, the queue is closed or ``timeout`` (seconds)
        passes; ``block=False`` returns ``None`` at once when there is none.
        Increments the pod's ``attempts`` and the scheduling cycle; the pod is
        in flight until ``done`` (or ``add_unschedulable_if_not_present``).
        """
        with self._lock:
            if block:
                self._cond.wait_for(self._can_pop, timeout)
            if self._closed or not self._can_pop():
                return None
            qpi = self._active.pop() if self._active else self._backoff.pop()
            assert qpi is not None
            qpi.attempts += 1
            # The backoff of the next failure is computed from the new attempt count.
            qpi.backoff_expiration = None
            self._scheduling_cycle += 1
            self._in_flight[qpi.pod_info.uid] = qpi.pod
            self._in_flight_since[qpi.pod_info.uid] = self._events_seen
            self._release_reasons(qpi.pod_info.uid)
            return qpi

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """Take the queued pod ``uid`` out of the activeQ, the backoffQ or the unschedulable
        pods for the scheduling cycle already under way (a pod group's cycle takes every
        unscheduled member at once); None if it is not there (gated, in flight, gone).
        Like :meth:`pop`, the pod counts one more attempt and is in flight until ``done``.
        """
        with self._lock:
            qpi = (
                self._active.get(uid)
                or self._backoff.get(uid)
                or self._error_backoff.get(uid)
                or self._unschedulable.get(uid)
            )
            if qpi is None:
                return None
            self._remove_locked(uid)
            qpi.attempts += 1
            qpi.backoff_expiration = None
            self._in_flight[uid] = qpi.pod
            self._in_flight_since[uid] = self._events_seen
            self._release_reasons(uid)
            return qpi

    def _can_pop(self) -> bool:
        return (
            len(self._active) > 0
            or (self._pop_from_backoff_q and len(self._backoff) > 0)
            or self._closed
        )

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo) -> None:
        """Requeue a pod after a failed attempt (and end its in-flight tracking).

        ``qpi.unschedulable_plugins`` / ``pending_plugins`` say who rejected it. It
        goes to the backoffQ if it failed with an error (no rejecting plugin), if the
        pod itself was updated meanwhile, or if a cluster event during its attempt is
        one a rejecting plugin registered and whose queueing hint says ``QUEUE`` (as
        upstream with queueing hints: not any event, which would requeue a pod for a
        change that cannot help it); else to the unschedulable pods. A pod deleted
        meanwhile, or already queued, is dropped.
        """
        with self._lock:
            uid = qpi.pod_info.uid
            try:
                if uid in self._in_flight_deleted:
                    log.debug("pod %s deleted during its attempt; not requeued", qpi.pod_info.key)
                    return
                if self._get_locked(uid) is not None:
                    log.warning("pod %s is already queued; not requeued", qpi.pod_info.key)
                    return
                latest = self._in_flight.get(uid)
                updated = uid in self._in_flight_updated
                if updated and latest is not None and latest is not qpi.pod:
                    # Requeue the version the cluster has now, not the one we tried.
                    qpi.pod_info = PodInfo(latest)
                # Refreshed on every failure: the backoff counts from here, and so does
                # the unschedulable leftover timeout.
                qpi.timestamp = self._clock.now()
                rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
                qpi.backoff_expiration = None
                self._count_reasons(qpi, rejectors)
                if not rejectors or updated or self._helped_in_flight(qpi):
                    if self._is_backing_off(qpi):
                        self._add_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE)
                    # Not backing off (no backoff at all): straight back to the activeQ,
                    # as upstream's requeuePodWithQueueingStrategy.
                    elif self._move_to_active_q(qpi, SCHEDULE_ATTEMPT_FAILURE):
                        self._cond.notify_all()
                else:
                    self._unschedulable[uid] = qpi
                    self._incoming(_UNSCHEDULABLE, SCHEDULE_ATTEMPT_FAILURE)
            finally:
                self._done_locked(uid)

    def scheduling_cycle(self) -> int:
        """The number of pods popped so far (the current scheduling cycle)."""
        with self._lock:
            return self._scheduling_cycle

    def done(self, uid: str) -> None:
        """The attempt of the popped pod ``uid`` is over (bound, or given up)."""
        with self._lock:
            self._done_locked(uid)

    # ==================================================================================
    # Public API: periodic flushes and time
    # ==================================================================================
    def flush_backoff_q_completed(self) -> None:
        """Move the pods whose backoff has expired to the activeQ (the 1 s loop)."""
        with self._lock:
            activated = False
            for heap in (self._backoff, self._error_backoff):
                while True:
                    head = heap.peek()
                    if head is None or self._is_backing_off(head):
                        break
                    heap.pop()
                    activated |= self._move_to_active_q(head, BACKOFF_COMPLETE, from_backoff=True)
            if activated:
                self._cond.notify_all()

    def flush_unschedulable_pods_leftover(self) -> None:
        """Retry pods unschedulable for ``pod_max_in_unschedulable_pods_duration`` or
        longer (the 30 s loop); gated pods re-run PreEnqueue."""
        with self._lock:
            now = self._clock.now()
            stale = [
                qpi
                for qpi in (*self._unschedulable.values(), *self._gated.values())
                if now - qpi.timestamp >= self._max_in_unschedulable
            ]
            if stale:
                self._move_pods_locked(stale, UNSCHEDULABLE_TIMEOUT_EVENT, None, None)

    def next_event_time(self, include_unschedulable_timeout: bool = True) -> float | None:
        """When a flush would next move a pod: the earliest backoff expiry or
        unschedulable deadline (unless ``include_unschedulable_timeout`` is False);
        ``None`` if no timer is pending.

        Gated pods are left out: re-running PreEnqueue on a timer does not change
        their time, so including them would make the simulator spin.
        """
        with self._lock:
            times: list[float] = []
            # With the ordering window, a pod backs off until its window has passed.
            window = BACKOFF_ORDERING_WINDOW if self._pop_from_backoff_q else 0.0
            for heap in (self._backoff, self._error_backoff):
                head = heap.peek()
                if head is not None:
                    times.append(self._backoff_time(head) + window)
            if self._unschedulable and include_unschedulable_timeout:
                oldest = min(q.timestamp for q in self._unschedulable.values())
                times.append(oldest + self._max_in_unschedulable)
            return min(times) if times else None

    def run(self, stop_event: threading.Event | None = None) -> list[threading.Thread]:
        """Start the two flush loops as daemon threads (real-cluster mode).

        They stop when ``stop_event`` is set or the queue is closed. Returns the threads.
        """
        stop = stop_event if stop_event is not None else threading.Event()
        loops = (
            (
                "backoff",
                BACKOFF_FLUSH_INTERVAL,
                self.flush_backoff_q_completed,
                self._pop_from_backoff_q,
            ),
            (
                "unschedulable",
                UNSCHEDULABLE_FLUSH_INTERVAL,
                self.flush_unschedulable_pods_leftover,
                False,
            ),
        )
        threads = []
        for name, interval, flush, aligned in loops:
            t = threading.Thread(
                target=self._loop,
                args=(stop, interval, flush, aligned),
                name=f"kubesched-queue-flush-{name}",
                daemon=True,
            )
            t.start()
            threads.append(t)
        return threads

    def close(self) -> None:
        """Close the queue: blocked and future ``pop`` calls return ``None`` (even with
        pods left, unlike upstream, so that shutdown is immediate); loops stop."""
        with self._lock:
            self._closed = True
            self._stop.set()
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    # ==================================================================================
    # Public API: inspection
    # ==================================================================================
    def pending_pods(self) -> tuple[list[Pod], str]:
        """All pending pods, and upstream's summary
        ``"activeQ:%d; backoffQ:%d; unschedulablePods:%d"`` (gated pods count as
        unschedulable pods, as upstream keeps them in the same map)."""
        with self._lock:
            active = [q.pod for q in self._active]
            backoff = [q.pod for q in (*self._backoff, *self._error_backoff)]
            unsched = [q.pod for q in (*self._unschedulable.values(), *self._gated.values())]
            summary = (
                f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(unsched)}"
            )
            return active + backoff + unsched, summary

    def get_pod(self, name: str, namespace: str = "default") -> QueuedPodInfo | None:
        """The queued pod ``namespace/name`` (any sub-queue, not in flight), or ``None``."""
        with self._lock:
            for qpi in self._all_queued():
                if qpi.pod_info.name == name and qpi.pod_info.namespace == namespace:
                    return qpi
            return None

    def queue_of(self, pod: Pod | str) -> str | None:
        """Where the pod (or uid) is: ``"active"``, ``"backoff"``, ``"unschedulable"``,
        ``"gated"``, ``"in-flight"`` or ``None``."""
        uid = pod if isinstance(pod, str) else pod_uid(pod)
        with self._lock:
            if uid in self._active:
                return _ACTIVE
            if uid in self._backoff or uid in self._error_backoff:
                return _BACKOFF
            if uid in self._unschedulable:
                return _UNSCHEDULABLE
            if uid in self._gated:
                return _GATED
            if uid in self._in_flight:
                return "in-flight"
            return None

    def pods_in_active_q(self) -> list[Pod]:
        """The pods in the activeQ (heap order)."""
        with self._lock:
            return [q.pod for q in self._active]

    def in_flight_pods(self) -> list[Pod]:
        """The pods popped and not yet done."""
        with self._lock:
            return list(self._in_flight.values())

    def len_active(self) -> int:
        """Number of pods in the activeQ."""
        with self._lock:
            return len(self._active)

    def len_backoff(self) -> int:
        """Number of pods in the backoffQ (both heaps)."""
        with self._lock:
            return len(self._backoff) + len(self._error_backoff)

    def len_unschedulable(self) -> int:
        """Number of unschedulable (not gated) pods."""
        with self._lock:
            return len(self._unschedulable)

    def len_gated(self) -> int:
        """Number of gated pods."""
        with self._lock:
            return len(self._gated)

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """The backoff ``qpi`` gets after its ``attempts`` (``calculateBackoffDuration``)."""
        return calculate_backoff_duration(qpi.attempts, self._initial_backoff, self._max_backoff)

    # ==================================================================================
    # Internals (the lock is held)
    # ==================================================================================
    def _accepts(self, pod: Pod) -> bool:
        if pod.spec.node_name:
            return False
        if pod.spec.scheduler_name not in self._profiles:
            log.debug(
                "ignoring pod %s/%s: no profile for schedulerName %r",
                pod.metadata.namespace,
                pod.metadata.name,
                pod.spec.scheduler_name,
            )
            return False
        return True

    def _all_queued(self) -> Iterable[QueuedPodInfo]:
        yield from self._active
        yield from self._backoff
        yield from self._error_backoff
        yield from self._unschedulable.values()
        yield from self._gated.values()

    def _get_locked(self, uid: str) -> QueuedPodInfo | None:
        return (
            self._active.get(uid)
            or self._backoff.get(uid)
            or self._error_backoff.get(uid)
            or self._unschedulable.get(uid)
            or self._gated.get(uid)
        )

    def _remove_locked(self, uid: str) -> None:
        self._active.delete(uid)
        self._backoff.delete(uid)
        self._error_backoff.delete(uid)
        self._unschedulable.pop(uid, None)
        self._gated.pop(uid, None)

    def _update_locked(
        self, old_pod: Pod | None, new_pod: Pod, event: ClusterEvent | None = None
    ) -> None:
        uid = pod_uid(new_pod)
        if uid in self._in_flight:
            # Being scheduled: upstream records the update and lets the attempt's
            # outcome decide; a relevant change sends it to the backoffQ afterwards.
            if is_pod_updated(self._in_flight[uid], new_pod):
                self._in_flight_updated.add(uid)
            self._in_flight[uid] = new_pod
            return
        for heap in (self._active, self._backoff, self._error_backoff):
            qpi = heap.get(uid)
            if qpi is not None:
                old = qpi.pod
                qpi.pod_info = PodInfo(new_pod)
                heap.fix(uid)
                self.nominator.update_nominated_pod(old_pod or old, qpi.pod_info)
                return
        qpi = self._unschedulable.get(uid) or self._gated.get(uid)
        if qpi is not None:
            old = qpi.pod
            qpi.pod_info = PodInfo(new_pod)
            self.nominator.update_nominated_pod(old_pod or old, qpi.pod_info)
            if not is_pod_updated(old_pod or old, new_pod):
                # Only the status changed. Upstream asks the rejecting plugins' hints;
                # here only for specific changes, not for UpdatePodOther (the
                # scheduler's own condition writes), which would requeue every failure.
                if event is not None and not event.action & ActionType.UPDATE_OTHER:
                    strategy = self._worth_requeuing(qpi, event, old_pod or old, new_pod, {})
                    if strategy is not _Strategy.SKIP and self._requeue(
                        qpi, strategy, event.display()
                    ):
                        self._cond.notify_all()
                return
            # The update may make it schedulable (or remove a gate). It may have
            # completed its backoff while unschedulable, hence the check.
            if self._is_backing_off(qpi):
                self._unschedulable.pop(uid, None)
                self._gated.pop(uid, None)
                self._add_backoff(qpi, POD_UPDATE)
            elif self._move_to_active_q(qpi, POD_UPDATE):
                self._cond.notify_all()
            return
        qpi = QueuedPodInfo(PodInfo(new_pod), self._clock.now())
        if self._move_to_active_q(qpi, POD_UPDATE):
            self._cond.notify_all()

    def _move_to_active_q(self, qpi: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """Run PreEnqueue; on success put ``qpi`` in the activeQ (out of every other
        sub-queue), else among the gated pods. True if it reached the activeQ. With
        ``pop_from_backoff_q``, a pod leaving the backoffQ (``from_backoff``) passed
        PreEnqueue when it entered it and is not checked again, as upstream."""
        uid = qpi.pod_info.uid
        skip = self._pop_from_backoff_q and from_backoff
        status = None if skip else self._run_pre_enqueue(qpi)
        if status is not None:
            self._gate(qpi, status)
            if uid in self._active or uid in self._backoff or uid in self._error_backoff:
                return False
            self._unschedulable.pop(uid, None)
            self._gated[uid] = qpi
            self._count_reasons(qpi, qpi.unschedulable_plugins | qpi.pending_plugins)
            return False
        self._ungate(qpi)
        if qpi.initial_attempt_timestamp is None:
            # Upstream stamps it when the pod first enters the activeQ (the start of
            # the pod scheduling SLI), not when it is first popped.
            qpi.initial_attempt_timestamp = self._clock.now()
        self._gated.pop(uid, None)
        self._unschedulable.pop(uid, None)
        self._backoff.delete(uid)
        self._error_backoff.delete(uid)
        self._active.add_or_update(qpi)
        self._incoming(_ACTIVE, event)
        if event in (POD_ADD, POD_UPDATE):
            self.nominator.add_nominated_pod(qpi.pod_info)
        return True

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> Status | None:
        """The gating status, or ``None`` when the pod may enter the activeQ."""
        profile = self._profiles.get(qpi.pod.spec.scheduler_name)
        if profile is None or profile.pre_enqueue is None:
            return None
        try:
            status = profile.pre_enqueue(qpi.pod_info)
        except Exception as err:  # a plugin bug must not lose the pod: keep it gated
            log.exception("PreEnqueue failed for pod %s", qpi.pod_info.key)
            return Status.from_error(err)
        # SKIP is not a legal PreEnqueue answer; reading it as "not my business" is the
        # lenient choice and cannot strand a pod.
        if status is None or status.code in (Code.SUCCESS, Code.SKIP):
            return None
        return status

    def _gate(self, qpi: QueuedPodInfo, status: Status) -> None:
        """Mark ``qpi`` gated by ``status.plugin`` (the caller parks it)."""
        # Another plugin may gate the pod now (its scheduling gates were removed, a
        # quota plugin holds it): only the current gate counts as a rejector.
        if qpi.gating_plugin and qpi.gating_plugin != status.plugin:
            qpi.unschedulable_plugins -= {qpi.gating_plugin}
        qpi.gated = True
        qpi.gating_plugin = status.plugin
        if status.plugin:
            qpi.unschedulable_plugins |= {status.plugin}

    @staticmethod
    def _ungate(qpi: QueuedPodInfo) -> None:
        if qpi.gated:
            # Forget the gate, so that a later Error is not mistaken for a rejection.
            if qpi.gating_plugin:
                qpi.unschedulable_plugins -= {qpi.gating_plugin}
            qpi.gated = False
            qpi.gating_plugin = None

    def _add_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        uid = qpi.pod_info.uid
        if self._pop_from_backoff_q:
            # Upstream's moveToBackoffQ: PreEnqueue runs on the way in, so that a pod
            # popped from the backoffQ early has passed it.
            status = self._run_pre_enqueue(qpi)
            if status is not None:
                self._gate(qpi, status)
                self._unschedulable.pop(uid, None)
                self._gated[uid] = qpi
                self._count_reasons(qpi, qpi.unschedulable_plugins | qpi.pending_plugins)
                return
            self._ungate(qpi)
        if qpi.unschedulable_plugins or qpi.pending_plugins:
            self._error_backoff.delete(uid)
            self._backoff.add_or_update(qpi)
            if self._pop_from_backoff_q:
                self._cond.notify_all()  # a blocked pop may take it
        else:
            self._backoff.delete(uid)
            self._error_backoff.add_or_update(qpi)
        self._incoming(_BACKOFF, event)

    def _backoff_time(self, qpi: QueuedPodInfo) -> float:
        """When ``qpi``'s backoff ends: last failure + backoff duration (cached); with
        ``pop_from_backoff_q`` rounded down to its ordering window."""
        if qpi.attempts == 0 or (self._pop_from_backoff_q and self._max_backoff == 0):
            # Upstream's getBackoffTime: with the gate, a max backoff of 0 disables the
            # backoff altogether (without the rounding down to the window, which would
            # still hold the pod for up to a second).
            return float("-inf")
        if qpi.backoff_expiration is None:
            expiry = qpi.timestamp + self.backoff_duration(qpi)
            if self._pop_from_backoff_q:
                expiry = _window_start(expiry)
            qpi.backoff_expiration = expiry
        return qpi.backoff_expiration

    def _is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        if self._pop_from_backoff_q:
            # Backing off until the window of its expiry has passed (upstream: not before
            # the start of the current window).
            return self._backoff_time(qpi) >= _window_start(self._clock.now())
        return self._backoff_time(qpi) > self._clock.now()

    def _less_backoff(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self._backoff_time(a) < self._backoff_time(b)

    def _less_backoff_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ta, tb = self._backoff_time(a), self._backoff_time(b)
        if ta != tb:
            return ta < tb
        return self._less(a, b)

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        return _is_wildcard(event) or bool(self._plugins_for(event))

    def _plugins_for(self, event: ClusterEvent) -> frozenset[str]:
        """The plugins (of any profile) with a registration ``event`` matches.

        The registrations never change, and every bind issues an event: remembered
        per kind of event.
        """
        key = (event.resource, event.action)
        plugins = self._event_plugins.get(key)
        if plugins is None:
            plugins = self._event_plugins[key] = frozenset(
                plugin
                for profile in self._profiles.values()
                for plugin, registered, _ in profile.hints
                if registered.matches(event)
            )
        return plugins

    def _park_keys(self, qpi: QueuedPodInfo) -> frozenset[str | None]:
        """Index keys of a parked pod: its rejecting plugins; ``ALWAYS`` when it has
        none or no profile (every event may move it, see ``_worth_requeuing``)."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors or qpi.pod.spec.scheduler_name not in self._profiles:
            return frozenset((ALWAYS,))
        return frozenset(rejectors)

    def _move_pods_locked(
        self,
        pods: Sequence[QueuedPodInfo],
        event: ClusterEvent,
        old_obj: Any,
        new_obj: Any,
    ) -> None:
        label = event.display()
        activated = False
        # Per profile, the registrations this event matches: decided once per event, not
        # once per pod and registration.
        hints: dict[str, list[tuple[str, Any]]] = {}
        for qpi in pods:
            # Upstream skips only pods whose gate is SchedulingGates: only an update of
            # the pod itself can open it, and such pods can be many.
            if qpi.gated and qpi.gating_plugin == _SCHEDULING_GATES:
                continue
            strategy = self._worth_requeuing(qpi, event, old_obj, new_obj, hints)
            if strategy is _Strategy.SKIP:
                continue
            activated |= self._requeue(qpi, strategy, label)
        if activated:
            self._cond.notify_all()

    def _worth_requeuing(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old_obj: Any,
        new_obj: Any,
        hints: dict[str, list[tuple[str, Any]]],
    ) -> _Strategy:
        """Upstream ``isPodWorthRequeuing``; ``hints`` caches, per profile, the
        ``(plugin, hint function)`` of the registrations ``event`` matches."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return _Strategy.AFTER_BACKOFF
        if _is_wildcard(event):
            # A wildcard event carrying a pod (ForceActivate) is meant for that pod only.
            if isinstance(new_obj, Pod) and pod_uid(new_obj) != qpi.pod_info.uid:
                return _Strategy.SKIP
            return _Strategy.AFTER_BACKOFF
        scheduler_name = qpi.pod.spec.scheduler_name
        matching = hints.get(scheduler_name)
        if matching is None:
            profile = self._profiles.get(scheduler_name)
            if profile is None:
                return _Strategy.AFTER_BACKOFF
            matching = hints[scheduler_name] = [
                (plugin, hint_fn)
                for plugin, registered, hint_fn in profile.hints
                if registered.matches(event)
            ]
        strategy = _Strategy.SKIP
        for plugin, hint_fn in matching:
            if plugin not in rejectors:
                continue
            hint = QueueingHint.QUEUE
            if hint_fn is not None:
                try:
                    hint = hint_fn(qpi.pod, old_obj, new_obj)
                except Exception:
                    # Upstream treats a failing hint as Queue so the pod cannot get stuck.
                    log.exception(
                        "queueing hint of plugin %s failed for pod %s on %s",
                        plugin,
                        qpi.pod_info.key,
                        event.display(),
                    )
                    hint = QueueingHint.QUEUE
            if hint is QueueingHint.SKIP:
                continue
            if plugin in qpi.pending_plugins:
                return _Strategy.IMMEDIATELY
            if not qpi.pending_plugins:
                return _Strategy.AFTER_BACKOFF
            strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _requeue(self, qpi: QueuedPodInfo, strategy: _Strategy, event: str) -> bool:
        """Move an unschedulable/gated pod on; True if it reached the activeQ."""
        uid = qpi.pod_info.uid
        if strategy is _Strategy.AFTER_BACKOFF and self._is_backing_off(qpi):
            self._unschedulable.pop(uid, None)
            self._gated.pop(uid, None)
            self._add_backoff(qpi, event)
            return False
        return self._move_to_active_q(qpi, event)

    def _done_locked(self, uid: str) -> None:
        self._in_flight.pop(uid, None)
        self._in_flight_updated.discard(uid)
        self._in_flight_deleted.discard(uid)
        self._in_flight_since.pop(uid, None)
        # Forget the events no pod in flight can still be asked about.
        oldest = min(self._in_flight_since.values(), default=self._events_seen)
        if self._in_flight_events and self._in_flight_events[0].seq < oldest:
            self._in_flight_events = [e for e in self._in_flight_events if e.seq >= oldest]

    def _record_in_flight_event(
        self, event: ClusterEvent, old_obj: Any, new_obj: Any, pre_check: PreEnqueueCheck | None
    ) -> None:
        """Remember ``event`` for the pods in flight (none: nothing to remember)."""
        if not self._in_flight:
            return
        self._in_flight_events.append(
            _InFlightEvent(self._events_seen, event, old_obj, new_obj, pre_check)
        )
        self._events_seen += 1

    def _helped_in_flight(self, qpi: QueuedPodInfo) -> bool:
        """Whether an event during ``qpi``'s attempt may make it schedulable: one its
        rejecting plugins registered, with a hint saying ``QUEUE`` (upstream
        ``determineSchedulingHintForInFlightPod``)."""
        since = self._in_flight_since.get(qpi.pod_info.uid, self._events_seen)
        for recorded in self._in_flight_events:
            if recorded.seq < since:
                continue
            if recorded.pre_check is not None and not recorded.pre_check(qpi.pod):
                continue
            strategy = self._worth_requeuing(
                qpi, recorded.event, recorded.old_obj, recorded.new_obj, {}
            )
            if strategy is not _Strategy.SKIP:
                return True
        return False

    def _loop(
        self,
        stop: threading.Event,
        interval: float,
        flush: Callable[[], None],
        aligned: bool = False,
    ) -> None:
        """Call ``flush`` every ``interval`` seconds; ``aligned``: at whole multiples of
        it on the queue's clock (the backoff flush with the ordering window flushes
        whole windows, as upstream's ``waitUntilAlignedWithOrderingWindow``)."""
        if aligned:
            now = self._clock.now()
            first = _window_start(now) + interval - now
            if stop.wait(first) or self._stop.is_set():
                return
        while not (stop.is_set() or self._stop.is_set()):
            try:
                flush()
            except Exception:  # keep the loop alive; a bug here must not stop scheduling
                log.exception("scheduling queue flush failed")
            # Two events cannot be waited on together: wait on the caller's in short
            # slices so that both it and close() end the loop promptly.
            wait = interval
            if aligned:
                now = self._clock.now()
                wait = _window_start(now) + interval - now
            deadline = time.monotonic() + wait
            while (left := deadline - time.monotonic()) > 0:
                if stop.wait(min(left, _STOP_POLL)) or self._stop.is_set():
                    return

    # -- metrics ----------------------------------------------------------------------
    def _incoming(self, queue: str, event: str) -> None:
        if self._metrics is not None:
            counter = self._incoming_counters.get((queue, event))
            if counter is None:
                counter = self._incoming_counters[queue, event] = (
                    self._metrics.queue_incoming_pods.labels(queue=queue, event=event)
                )
            counter.inc()

    def _count_reasons(self, qpi: QueuedPodInfo, plugins: set[str] | frozenset[str]) -> None:
        """Count the pod under ``plugins`` in scheduler_unschedulable_pods (replacing
        what it was counted under before)."""
        uid = qpi.pod_info.uid
        self._release_reasons(uid)
        if self._metrics is None or not plugins:
            return
        profile = qpi.pod.spec.scheduler_name
        for plugin in plugins:
            self._metrics.unschedulable_pods.labels(plugin=plugin, profile=profile).inc()
        self._counted_reasons[uid] = (profile, frozenset(plugins))

    def _release_reasons(self, uid: str) -> None:
        counted = self._counted_reasons.pop(uid, None)
        if counted is None or self._metrics is None:
            return
        profile, plugins = counted
        for plugin in plugins:
            self._metrics.unschedulable_pods.labels(plugin=plugin, profile=profile).dec()
