"""The scheduler's Prometheus metrics, with upstream kube-scheduler's names, labels and buckets."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

# kube-scheduler exposes no `*_created` series (component-base's counters and histograms
# have none), and prometheus-client adds one per counter and histogram child unless told
# not to. The switch is process-wide and read when samples are collected, so setting it
# where every registry of kubesched is made holds for simulate, run and bench alike.
disable_created_metrics()

FLUSH_EVERY = 1024
"""Scheduling cycles between two flushes of the buffered observations
(:meth:`Metrics.tick`; a scrape flushes too), so that a run nobody scrapes keeps its
buffers small (a dozen values a cycle)."""


class BufferedChild:
    """One labelled child of a prometheus-client ``Histogram`` whose observations are
    appended to a list and folded into the histogram in bulk.

    The scheduler observes about a dozen durations per pod; a ``Histogram.observe``
    walks the bucket bounds in Python and takes two locks, so these cost more than
    some plugins. ``observe`` here is ``list.append``: :meth:`flush` sorts the values
    into the child's buckets with one ``numpy.searchsorted`` (``le`` bounds: a value
    equal to a bound lands in that bucket, as ``observe`` decides) and adds the counts
    and the sum through the child's own value objects, so the registry exposes exactly
    what per-value ``observe`` calls would have.
    """

    __slots__ = ("bounds", "child", "observe", "values")

    def __init__(self, child: Any) -> None:
        self.child = child
        self.values: list[float] = []
        self.observe = self.values.append
        # prometheus-client's Histogram keeps its bounds, buckets and sum in these
        # attributes (stable since 0.4); tests/test_metrics.py checks the exposition.
        self.bounds = np.asarray(child._upper_bounds, dtype=float)

    def flush(self) -> None:
        """Fold the buffered observations into the histogram child."""
        n = len(self.values)
        if not n:
            return
        values = self.values[:n]
        # Only the first n go: observations appended meanwhile (another thread) stay.
        del self.values[:n]
        array = np.asarray(values, dtype=float)
        counts = np.bincount(
            np.searchsorted(self.bounds, array, side="left"), minlength=len(self.bounds)
        )
        child = self.child
        # Added one by one, as observe would: the float sum is then the same to the bit.
        total = child._sum.get()
        for v in values:
            total += v
        child._sum.set(total)
        for i in np.flatnonzero(counts).tolist():
            child._buckets[i].inc(int(counts[i]))


class BufferedObservations:
    """The :class:`BufferedChild` objects of one registry, flushed together; registered
    in the registry before the metrics so that every collection (a scrape,
    ``get_sample_value``, ``generate_latest``) flushes first."""

    def __init__(self) -> None:
        self.children: dict[tuple[int, tuple[str, ...]], BufferedChild] = {}
        self.cycles = 0
        self._lock = threading.Lock()

    def child(self, histogram: Histogram, *labels: str) -> BufferedChild:
        """The buffered child of ``histogram`` with ``labels`` (made on first use)."""
        key = (id(histogram), labels)
        child = self.children.get(key)
        if child is None:
            with self._lock:
                child = self.children.get(key)
                if child is None:
                    real = histogram.labels(*labels) if labels else histogram
                    child = self.children[key] = BufferedChild(real)
        return child

    def flush(self) -> None:
        """Fold every buffered observation into its histogram."""
        with self._lock:
            for child in list(self.children.values()):
                child.flush()

    def collect(self) -> list:
        """A collector that flushes and yields no metric of its own."""
        self.flush()
        return []


def _exponential(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class Metrics:
    """One scheduler's metrics, in their own registry (several schedulers can coexist in a
    process, as in tests). ``expose()`` renders them in the Prometheus text format."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.buffered = BufferedObservations()
        """The hot histograms' observations (see :meth:`histogram`), flushed by every
        collection of ``registry``: registered before the metrics, so it runs first."""
        r.register(self.buffered)
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulablePods that the scheduler attempted to schedule "
            "and failed; 'gated' is the number of unschedulable pods that the scheduler "
            "never attempted to schedule because they are gated.",
            ["queue"],
            registry=r,
        )
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so "
            "this metric have meaning only when broken down by plugin.",
            ["plugin", "profile"],
            registry=r,
        )
        self.framework_extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=_exponential(0.0001, 2, 12),
            registry=r,
        )
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=_exponential(0.00001, 1.5, 20),
            registry=r,
        )
        self.plugin_evaluation = Counter(
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            ["plugin", "extension_point", "profile"],
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_exponential(1, 2, 7),
            registry=r,
        )
        self.preemption_goroutines_duration = Histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            ["result"],
            buckets=_exponential(0.01, 2, 20),
            registry=r,
        )
        self.preemption_goroutines_execution = Counter(
            "scheduler_preemption_goroutines_execution",
            "Number of preemption goroutines executed.",
            ["result"],
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_exponential(1, 2, 5),
            registry=r,
        )
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=_exponential(0.01, 2, 20),
            registry=r,
        )
        self.batch_attempts = Counter(
            "scheduler_batch_attempts",
            "Counts of results when we attempt to use batching.",
            ["profile", "result"],
            registry=r,
        )
        self.batch_cache_flushed = Counter(
            "scheduler_batch_cache_flushed",
            "Counts of cache flushes by reason.",
            ["profile", "reason"],
            registry=r,
        )
        # Opportunistic batching's two latencies: 10 µs up to 20.48 ms. The second help
        # text is upstream's, cut short as kube-scheduler v1.36.2 exposes it.
        self.get_node_hint_duration = Histogram(
            "scheduler_get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            ["hinted", "profile"],
            buckets=_exponential(0.00001, 2, 12),
            registry=r,
        )
        self.store_schedule_results_duration = Histogram(
            "scheduler_store_schedule_results_duration_seconds",
            "Latency for getting a no.",
            ["profile"],
            buckets=_exponential(0.00001, 2, 12),
            registry=r,
        )
        self.cache_size = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"],
            registry=r,
        )
        # kubesched's own (upstream has no such metric): named as upstream names a
        # counter of the cache's.
        self.cache_update_errors = Counter(
            "scheduler_cache_update_errors",
            "Number of times a node's totals could not be written into the scheduling "
            "snapshot; the node is unschedulable until a later update of it succeeds.",
            registry=r,
        )

    def histogram(self, histogram: Histogram, *labels: str) -> BufferedChild:
        """A buffered child of one of these histograms for a hot path: its ``observe``
        is a list append (see :class:`BufferedChild`). Keep the object: the lookup is
        a dict access."""
        return self.buffered.child(histogram, *labels)

    def tick(self) -> None:
        """Called once per scheduling cycle: flushes every :data:`FLUSH_EVERY` cycles,
        so the buffers stay small in a run nobody scrapes."""
        buffered = self.buffered
        buffered.cycles += 1
        if buffered.cycles >= FLUSH_EVERY:
            buffered.cycles = 0
            buffered.flush()

    def expose(self) -> bytes:
        """All metrics in the Prometheus text exposition format."""
        return generate_latest(self.registry)
