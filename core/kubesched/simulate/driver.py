"""A simulation: the embedded cluster and a scheduler on virtual time, until nothing can happen."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import KubeObject, Pod
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.protocol import EventType, WatchEvent
from kubesched.clock import FakeClock
from kubesched.config import (
    EffectiveConfiguration,
    KubeSchedulerConfiguration,
    default_configuration,
    effective_configuration,
)
from kubesched.features import FeatureGates
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.metrics import Metrics
from kubesched.notices import notice
from kubesched.scheduler import AttemptRecord, EventHandlers, Scheduler
from kubesched.simulate.invariants import InvariantChecker
from kubesched.simulate.limits import check_max_pods

DETAIL_FULL = "full"
"""Keep every attempt's per-node filter statuses and scores (explanations)."""
DETAIL_SUMMARY = "summary"
"""Keep only each attempt's outcome and message (large runs, benchmarks)."""

STOP_SETTLED = "settled"
"""The run ended because nothing more could happen."""
STOP_STALLED = "stalled"
"""The run ended because pods kept retrying with no progress (see ``STALL_AFTER``)."""
STOP_HORIZON = "horizon"
"""The run ended at its timeline's horizon (``spec.runFor``, or an hour after the last step)
with things still happening (pods evicted and replaced over and over)."""
MAX_ROUNDS_AT_ONE_TIME = 10_000
"""Rounds of work at one virtual instant after which a run stops as stalled: pods evicted
and replaced at once forever (a toleration of 0 s on a node they keep returning to)."""
STALL_AFTER = 1800.0
"""Virtual seconds without progress after which a run stops as stalled: twice the
longest single timer (a Permit wait is capped at 15 minutes)."""


@dataclass
class SimulationRun:
    """What a finished simulation produced: the attempts per pod and the final cluster."""

    cluster: MemoryCluster
    scheduler: Scheduler
    attempts: dict[str, list[AttemptRecord]]
    rejections: list[Any]
    virtual_time: float
    wall_time: float
    cycles: int
    seed: int
    metrics: Metrics = field(repr=False, default_factory=Metrics)
    stop_reason: str = STOP_SETTLED
    """``settled`` (nothing more could happen) or ``stalled`` (pods kept retrying)."""
    timeline: Any = None
    """The :class:`~kubesched.simulate.timeline.TimelineRunner` played, if any."""
    invariants: InvariantChecker | None = None
    """With ``check_invariants``: the checker, its ``violations`` and ``checks`` made."""


class Simulation:
    """Schedules ``objects`` (ordinary Kubernetes manifests, already parsed) on an embedded
    cluster with the given configuration.

    Nothing waits on the wall clock: backoffs, graceful deletions and Permit waits pass
    in virtual time. With the same objects, configuration and ``seed`` the result is the
    same. ``progress(done, total)`` is called now and then with the number of pods
    settled (bound or rejected) so far. With ``check_invariants`` an
    :class:`~kubesched.simulate.invariants.InvariantChecker` watches the run (its
    result is ``SimulationRun.invariants``). ``run`` may be called again after changing the
    cluster (``simulation.cluster.create(...)``): it goes on from where it stopped.

    ``timeline`` (a :class:`~kubesched.simulate.timeline.TimelineRunner`) plays its steps
    when virtual time reaches them. ``node_pressure_eviction`` runs the kubelets'
    eviction managers; by default it does when there is a timeline or the objects
    include a KubeletConfiguration. ``validate=False`` spares objects known valid (taken
    from another simulation's cluster) the API server's validation. ``owned=True`` hands
    ``objects`` over to the cluster, which then stores them without copying them (the
    caller must not change them). ``pods`` are created after ``objects``, each as the
    iterable yields it: pods made by a generator never all exist at once as parsed, before
    admission shares what they have in common (a bench's 100,000). ``max_pods`` refuses
    (``UserInputError``) ``objects`` whose workloads and pods would make more pods than
    that, before anything is created (see :mod:`kubesched.simulate.limits`), and is the
    cluster's ``max_pods``.

    ``strict_namespaces`` refuses, as kube-apiserver's NamespaceLifecycle does, an object
    whose namespace does not exist when it is created (by default the namespace is created,
    with a notice). ``in_file_order`` creates ``objects`` in the order given, as
    ``kubectl create -f`` does, rather than kinds in dependency order (namespaces and
    classes first, pods last): a Namespace, LimitRange or PriorityClass then applies only
    to the objects after it, as on a real cluster.

    The embedded API server runs with the configuration's feature gates (it drops the
    fields of a gate that is off, see :mod:`kubesched.backend.memory.gatedfields`);
    ``apiserver_gates`` gives it others, for a cluster whose kube-apiserver and
    kube-scheduler were started with different ones. ``sources``: the file each of
    ``objects`` came from, in order, named in what the API server notices of them.
    """

    def __init__(
        self,
        objects: Iterable[KubeObject],
        *,
        config: KubeSchedulerConfiguration | EffectiveConfiguration | None = None,
        registry: PluginRegistry | None = None,
        seed: int = 0,
        detail: str = DETAIL_FULL,
        progress: Callable[[int, int], None] | None = None,
        timeline: Any = None,
        node_pressure_eviction: bool | None = None,
        check_invariants: bool = False,
        validate: bool = True,
        owned: bool = False,
        pods: Iterable[KubeObject] = (),
        max_pods: int | None = None,
        strict_namespaces: bool = False,
        in_file_order: bool = False,
        apiserver_gates: FeatureGates | None = None,
        sources: Sequence[str] | None = None,
    ) -> None:
        self.registry = registry or default_registry()
        if isinstance(config, EffectiveConfiguration):
            self.effective = config
        else:
            self.effective = effective_configuration(
                config or default_configuration(self.registry), self.registry
            )
        self.seed = seed
        self.progress = progress
        self.clock = FakeClock(0.0)
        self.metrics = Metrics()
        objects = list(objects)
        if max_pods is not None:
            # Before anything is created: a workload of a billion replicas would
            # otherwise be expanded first.
            check_max_pods(objects, max_pods)
        if node_pressure_eviction is None:
            node_pressure_eviction = timeline is not None or any(
                o.kind == "KubeletConfiguration" for o in objects
            )
        self.cluster = MemoryCluster(
            self.clock,
            node_pressure_eviction=node_pressure_eviction,
            validate=validate,
            strict_namespaces=strict_namespaces,
            # One --feature-gates for both: a real cluster sets a gate that kube-scheduler
            # and kube-apiserver both read on both.
            feature_gates=(
                apiserver_gates if apiserver_gates is not None else self.effective.feature_gates
            ),
        )
        if max_pods is not None:
            self.cluster.max_pods = max_pods
        # kube-controller-manager runs its device taint eviction only with DRADeviceTaints.
        self.cluster.device_taint_eviction.enabled = self.effective.feature_gates.enabled(
            "DRADeviceTaints"
        )
        # ... and reads DeviceTaintRules (and keeps their status) with DRADeviceTaintRules.
        taint_rules = self.effective.feature_gates.enabled("DRADeviceTaintRules")
        self.cluster.device_taint_eviction.taint_rules = taint_rules
        if not taint_rules:
            for rule in objects:
                if rule.kind == "DeviceTaintRule":
                    notice(
                        "ignored: DeviceTaintRules are read only with "
                        "--feature-gates=DRADeviceTaintRules=true (off by default in v1.36)",
                        obj=f"DeviceTaintRule {rule.name}",
                    )
        self.timeline = None
        if timeline is not None:
            self.attach_timeline(timeline)
        if sources is not None:
            self.cluster.sources = {id(o): s for o, s in zip(objects, sources, strict=True)}
        with self.cluster.paused_controllers():
            # Created as kubectl create would: a second object of the same name is refused
            # (AlreadyExists), not a silent replacement of the first.
            self.cluster.apply(objects, owned=owned, replace=False, in_order=in_file_order)
            self.cluster.apply(pods, owned=owned, in_order=True)
        # Keyed by identity: only while ``objects`` are certainly alive.
        self.cluster.sources = {}
        # Every refusal: the loaded objects', and the controllers' (pods they could not
        # create, a workload past the pod limit), also those of the run to come.
        self.rejections = self.cluster.rejections
        self.scheduler = Scheduler(
            self.effective,
            self.registry,
            self.cluster,
            clock=self.clock,
            seed=seed,
            metrics=self.metrics,
        )
        self.set_detail(detail)
        self.attempts: dict[str, list[AttemptRecord]] = {}
        self.scheduler.observers.append(self._observe)
        self.handlers = EventHandlers(self.scheduler)
        self.cycles = 0
        self._progress_mark = 0
        self._watches: list[Any] = []
        self.invariants = (
            InvariantChecker(self.cluster, self.scheduler) if check_invariants else None
        )

    def attach_timeline(self, timeline: Any) -> None:
        """Play ``timeline`` (a :class:`~kubesched.simulate.timeline.TimelineRunner`) from
        the next ``run``; its steps' times are virtual times of this simulation."""
        self.timeline = timeline
        timeline.cluster = self.cluster
        # CronJobs run their schedules within the timeline's window only.
        self.cluster.schedule_until = timeline.horizon()

    def set_detail(self, detail: str) -> None:
        """How much of each later attempt to keep: ``DETAIL_FULL`` or ``DETAIL_SUMMARY``
        (a long run can keep the details of only the attempts it will explain)."""
        self.detail = detail
        self.scheduler.record_details = detail == DETAIL_FULL

    def _observe(self, record: AttemptRecord) -> None:
        if self.detail != DETAIL_FULL:
            record.diagnosis = None
            record.scores = None
            record.feasible = []
        self.attempts.setdefault(record.pod_uid, []).append(record)

    def run(self, periodic_retry: bool = True) -> SimulationRun:
        """Run until no pod can make progress; return what happened.

        Progress is a pod created, bound or removed, or a node changed; status writes
        (conditions, nominations) are not. The run settles when no timer can change
        anything; it stops as ``stalled`` when timers keep firing but nothing has
        progressed for ``STALL_AFTER`` seconds of virtual time (pods retrying forever).
        Without
        ``periodic_retry`` the run ends where that retry would begin (a caller that can
        tell it would fail everywhere saves it; a later ``run`` makes it).
        """
        started = time.perf_counter()
        # The cluster's objects live as long as the run: keeping them out of the cyclic
        # garbage collector's passes saves it from traversing every Node and Pod model
        # again and again (a third of the CPU time at 10,000 nodes). They are still
        # freed by reference counting; unfreeze gives them (and any cycle frozen with
        # them) back to the collector afterwards.
        gc.freeze()
        try:
            return self._run(started, periodic_retry)
        finally:
            gc.unfreeze()

    def _run(self, started: float, periodic_retry: bool) -> SimulationRun:
        self._connect()
        if self.timeline is not None:
            # Steps at the current time (``at: 0``) set the scene before any scheduling.
            self.timeline.apply_due(self.clock.now())
        if self.invariants is not None and not self.invariants.attached:
            self.invariants.attach()
        s = self.scheduler
        retried_at_mark: int | None = None
        horizon = self.timeline.horizon() if self.timeline is not None else None
        rounds_at, rounds = self.clock.now(), 0
        last_mark, last_progress_at = self._progress_mark, self.clock.now()
        stop_reason = STOP_SETTLED
        while True:
            if self.clock.now() != rounds_at:
                rounds_at, rounds = self.clock.now(), 0
            rounds += 1
            if rounds > MAX_ROUNDS_AT_ONE_TIME:
                stop_reason = STOP_STALLED
                break
            while s.schedule_one():
                self.cycles += 1
                if self.progress is not None and self.cycles % 256 == 0:
                    self._report_progress()
            s.drain_ready_bindings()
            if self._progress_mark != last_mark:
                last_mark, last_progress_at = self._progress_mark, self.clock.now()
            when = self._next_timer()
            step_at = self.timeline.next_time() if self.timeline is not None else None
            if horizon is not None and when is not None and when > horizon and step_at is None:
                stop_reason = STOP_HORIZON
                break
            if step_at is not None and (when is None or step_at <= when):
                # A step is next: time jumps to it whatever was (not) happening before.
                self._advance(step_at)
                last_progress_at = self.clock.now()
                continue
            if when is None:
                # Only the unschedulable pods' periodic retry is left: it can help only
                # if something progressed since the last such retry.
                when = s.queue.next_event_time(include_unschedulable_timeout=True)
                if when is None or retried_at_mark == self._progress_mark or not periodic_retry:
                    break
                retried_at_mark = self._progress_mark
            # Waiting for a pod's run to end or a CronJob's schedule is no stall.
            if when - last_progress_at > STALL_AFTER and when != self.cluster.next_progress_time():
                stop_reason = STOP_STALLED
                break
            self._advance(when)
        if self.progress is not None:
            self._report_progress()
        if self.timeline is not None:
            self.timeline.finish()
        if self.invariants is not None:
            self.invariants.finish()
        return SimulationRun(
            cluster=self.cluster,
            scheduler=s,
            attempts=self.attempts,
            rejections=self.rejections,
            virtual_time=self.clock.now(),
            wall_time=time.perf_counter() - started,
            cycles=self.cycles,
            seed=self.seed,
            metrics=self.metrics,
            stop_reason=stop_reason,
            timeline=self.timeline,
            invariants=self.invariants,
        )

    def _connect(self) -> None:
        """Subscribe the scheduler (and the progress count) to the cluster, once.

        The subscription stays after ``run`` returns, so that objects created on the
        cluster afterwards reach the scheduler and a later ``run`` goes on from there.
        """
        if self._watches:
            return
        self.handlers.connect(self.cluster)
        for kind in ("Pod", "Node"):
            self._watches.append(
                self.cluster.watch(kind, self.cluster.resource_version, self._count_progress)
            )

    def close(self) -> None:
        """Unsubscribe from the cluster (the simulation can no longer run)."""
        self.handlers.disconnect()
        if self.invariants is not None:
            self.invariants.detach()
        for w in self._watches:
            w.stop()
        self._watches.clear()

    def _count_progress(self, ev: WatchEvent) -> None:
        is_pod_update = ev.type is EventType.MODIFIED and isinstance(ev.object, Pod)
        if is_pod_update and (ev.old.spec.node_name or "") == (ev.object.spec.node_name or ""):
            return  # a status write, not progress
        self._progress_mark += 1

    def _next_timer(self) -> float | None:
        times = [
            t
            for t in (
                self.scheduler.queue.next_event_time(include_unschedulable_timeout=False),
                self.cluster.next_event_time(),
                self.scheduler.next_waiting_deadline(),
            )
            if t is not None
        ]
        return min(times, default=None)

    def _advance(self, when: float) -> None:
        """Move virtual time to ``when`` and run every timer that is due."""
        if when > self.clock.now():
            self.clock.set(when)
        now = self.clock.now()
        self.cluster.advance(now)
        if self.timeline is not None:
            self.timeline.apply_due(now)
        s = self.scheduler
        s.expire_waiting_pods()
        s.drain_ready_bindings()
        s.queue.flush_backoff_q_completed()
        s.queue.flush_unschedulable_pods_leftover()
        s.cache.cleanup_assumed_pods(now)

    def _report_progress(self) -> None:
        pods = self.cluster.list("Pod")[0]
        done = sum(1 for p in pods if p.spec.node_name)
        self.progress(done, len(pods) + len(self.rejections))


def simulate(
    objects: Iterable[KubeObject],
    *,
    config: KubeSchedulerConfiguration | EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    seed: int = 0,
    detail: str = DETAIL_FULL,
    check_invariants: bool = False,
) -> SimulationRun:
    """Schedule ``objects`` on an embedded cluster and return the run (Python API)."""
    sim = Simulation(
        objects,
        config=config,
        registry=registry,
        seed=seed,
        detail=detail,
        check_invariants=check_invariants,
    )
    try:
        return sim.run()
    finally:
        sim.close()
