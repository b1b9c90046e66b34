"""Node load metrics for the Trimaran plugins: a load watcher, Prometheus, a file or annotations.

scheduler-plugins' Trimaran plugins (TargetLoadPacking, LoadVariationRiskBalancing,
LowRiskOverCommitment, Peaks) read each node's measured utilisation from a *load
watcher*: a list of metrics per node (:class:`~.loadwatcher.Metric`). kubesched reads the
same metrics from one of these sources, chosen by the plugin's args
(:class:`TrimaranArgs`):

* ``watcherAddress``: a load-watcher service, ``GET <address>/watcher``;
* ``metricProvider``: what load-watcher reads from Prometheus, the Kubernetes metrics
  server or SignalFx, asked by kubesched itself (:mod:`.providers`);
* ``metricsFile``: a JSON file in load-watcher's ``WatcherMetrics`` format (what its
  ``/watcher`` endpoint answers), read once when the profile is built;
* otherwise node annotations (percent): ``kubesched.io/cpu-utilization`` (CPU, AVG),
  ``kubesched.io/cpu-utilization-stddev`` (CPU, STD), ``kubesched.io/memory-utilization``
  (Memory, AVG) and ``kubesched.io/memory-utilization-stddev`` (Memory, STD); the keys of
  the averages are args, each standard deviation's key is its average's plus ``-stddev``.

The two live sources are fetched when the plugin is built and, when it schedules on the
wall clock (``kubesched run``), again every 30 seconds in a background thread; a failed
fetch keeps the metrics there were. Under virtual time (``kubesched simulate``) they are
fetched once. A node missing from a watcher's, Prometheus's or the file's metrics has none.

The helpers below are upstream's ``pkg/trimaran`` ones (``GetResourceData``,
``GetResourceRequested``, ``GetResourceLimits``) on kubesched's objects.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, PrivateAttr, model_validator

from kubesched import (
    ArgsError,
    ArgsModel,
    NodeBatch,
    NodeInfo,
    NodeTable,
    PluginArgs,
    RealClock,
    invalid,
    not_supported,
    raise_args_errors,
    required,
)
from kubesched.api import CPU, MEMORY, Node, Pod

from .loadwatcher import (
    AVERAGE,
    CPU_METRIC,
    LATEST,
    MEGA_FACTOR,
    MEMORY_METRIC,
    STD,
    Metric,
    read_metrics_file,
)
from .providers import (
    LiveMetrics,
    MetricsServerClient,
    NodeMetricsMap,
    PrometheusClient,
    SignalFxClient,
    WatcherClient,
)

__all__ = [
    "AVERAGE",
    "CPU_METRIC",
    "DEFAULT_CPU_UTILIZATION_ANNOTATION",
    "DEFAULT_MEMORY_UTILIZATION_ANNOTATION",
    "KUBERNETES_METRICS_SERVER",
    "LATEST",
    "MEGA_FACTOR",
    "MEMORY_METRIC",
    "METRIC_PROVIDER_TYPES",
    "PROMETHEUS",
    "SIGNALFX",
    "STD",
    "STDDEV_SUFFIX",
    "Metric",
    "MetricColumns",
    "MetricProviderSpec",
    "MetricsSource",
    "RowCache",
    "TrimaranArgs",
    "cpu_capacity_column",
    "cpu_capacity_milli",
    "cpu_utilization",
    "pod_limits",
    "pod_requests",
    "read_metrics_file",
    "resource_data",
]

KUBERNETES_METRICS_SERVER = "KubernetesMetricsServer"
PROMETHEUS = "Prometheus"
SIGNALFX = "SignalFx"
METRIC_PROVIDER_TYPES = (KUBERNETES_METRICS_SERVER, PROMETHEUS, SIGNALFX)
"""upstream's ``MetricProviderType`` values, in its order."""

DEFAULT_CPU_UTILIZATION_ANNOTATION = "kubesched.io/cpu-utilization"
"""The node annotation holding its measured CPU utilisation, in percent (``"35.5"``)."""
DEFAULT_MEMORY_UTILIZATION_ANNOTATION = "kubesched.io/memory-utilization"
"""The node annotation holding its measured memory utilisation, in percent."""
STDDEV_SUFFIX = "-stddev"
"""Appended to a utilisation annotation's key: the key of its standard deviation."""


class MetricProviderSpec(ArgsModel):
    """upstream's ``MetricProviderSpec``: the metrics provider load-watcher would query."""

    type: str = Field(
        default=KUBERNETES_METRICS_SERVER,
        description="KubernetesMetricsServer, Prometheus or SignalFx.",
    )
    address: str = Field(
        default="",
        description="Prometheus's or SignalFx's URL; empty: http://prometheus-k8s:9090, "
        "https://api.signalfx.com.",
    )
    token: str = Field(
        default="", description="Prometheus's bearer token, or SignalFx's access token."
    )
    insecure_skip_verify: bool = Field(
        default=True, description="Do not verify Prometheus's TLS certificate."
    )


class TrimaranArgs(PluginArgs):
    """The metrics source shared by the Trimaran plugins' args: upstream's
    ``TrimaranSpec`` (``watcherAddress``, ``metricProvider``) plus kubesched's file and
    annotation sources for clusters without a load watcher."""

    watcher_address: str | None = Field(
        default=None,
        description="A load-watcher service's URL (http://load-watcher:2020); wins over "
        "metricProvider, as upstream.",
    )
    metric_provider: MetricProviderSpec | None = Field(
        default=None,
        description="The metrics provider queried as load-watcher would.",
    )
    metrics_file: str | None = Field(
        default=None,
        description=(
            "A load-watcher WatcherMetrics JSON file with every node's metrics; unset: "
            "the nodes' utilisation annotations."
        ),
    )
    cpu_utilization_annotation: str = Field(
        default=DEFAULT_CPU_UTILIZATION_ANNOTATION,
        description="Node annotation with the node's measured CPU utilisation in percent.",
    )
    memory_utilization_annotation: str = Field(
        default=DEFAULT_MEMORY_UTILIZATION_ANNOTATION,
        description="Node annotation with the node's measured memory utilisation in percent.",
    )
    _file_metrics: dict[str, tuple[Metric, ...]] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _metrics_source(self) -> TrimaranArgs:
        errors: list[ArgsError] = []
        for field, key in (
            ("cpuUtilizationAnnotation", self.cpu_utilization_annotation),
            ("memoryUtilizationAnnotation", self.memory_utilization_annotation),
        ):
            if not key:
                errors.append(invalid((field,), "", "must not be empty"))
        live = self.live_source()
        if live is not None and self.metrics_file is not None:
            errors.append(
                invalid(
                    ("metricsFile",),
                    self.metrics_file,
                    f"may not be set together with {live}: choose one metrics source",
                )
            )
        if live == "metricProvider":
            errors.extend(_provider_errors(self.metric_provider))
        if self.metrics_file is not None:
            try:
                self._file_metrics = read_metrics_file(self.metrics_file)
            except ValueError as err:
                errors.append(invalid(("metricsFile",), self.metrics_file, str(err)))
        raise_args_errors(type(self).__name__, errors)
        return self

    def live_source(self) -> str | None:
        """``"watcherAddress"`` or ``"metricProvider"``, the live source these args set
        (a non-empty ``watcherAddress`` wins, as upstream); None without one."""
        if self.watcher_address:
            return "watcherAddress"
        if self.metric_provider is not None:
            return "metricProvider"
        return None

    def file_metrics(self) -> Mapping[str, tuple[Metric, ...]] | None:
        """The metrics read from ``metricsFile`` per node name (None without a file)."""
        return self._file_metrics


def _provider_errors(spec: MetricProviderSpec | None) -> list[ArgsError]:
    if spec is None:
        return []
    if spec.type not in METRIC_PROVIDER_TYPES:
        return [not_supported(("metricProvider", "type"), spec.type, METRIC_PROVIDER_TYPES)]
    if spec.type == SIGNALFX and not spec.token:
        # load-watcher stops at start: "No auth token found to connect with SignalFx server".
        return [required(("metricProvider", "token"), "SignalFx needs an access token")]
    return []


def _live_metrics(args: TrimaranArgs) -> LiveMetrics | None:
    """The live source ``args`` set, not yet fetched (None without one)."""
    live = args.live_source()
    if live == "watcherAddress":
        client: WatcherClient | PrometheusClient = WatcherClient(args.watcher_address or "")
        return LiveMetrics(client.fetch, f"load watcher {client.url}")
    spec = args.metric_provider
    if live != "metricProvider" or spec is None:
        return None
    if spec.type == KUBERNETES_METRICS_SERVER:
        server = MetricsServerClient()
        return LiveMetrics(server.fetch, server.source)
    if spec.type == SIGNALFX:
        signalfx = SignalFxClient(spec.address, spec.token)
        return LiveMetrics(signalfx.fetch, f"SignalFx {signalfx.url}")
    client = PrometheusClient(spec.address, spec.token, spec.insecure_skip_verify)
    return LiveMetrics(client.fetch, f"Prometheus {client.url}")


def _annotation_value(annotations: Mapping[str, str], key: str) -> float | None:
    raw = annotations.get(key)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    # A measurement is a finite, non-negative percentage; anything else is no metric.
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class MetricColumns:
    """Per-node metric arrays of a NodeTable (NaN where a node has no such metric)."""

    cpu_avg: np.ndarray
    cpu_std: np.ndarray
    memory_avg: np.ndarray
    memory_std: np.ndarray
    cpu_util: np.ndarray
    """CPU AVG-or-Latest (TargetLoadPacking's and Peaks' reading)."""
    has_metrics: np.ndarray
    """True where the node has metrics at all (of any type)."""


_source_ids = itertools.count()


class MetricsSource:
    """Where a Trimaran plugin reads node metrics from, per its :class:`TrimaranArgs`.

    A live source (``watcherAddress``, ``metricProvider``) is fetched here; when
    ``handle.clock`` is the wall clock it is refreshed every 30 seconds in the
    background, else (virtual time, a unit test without a handle) never again."""

    def __init__(self, args: TrimaranArgs, handle: Any = None) -> None:
        self.file = args.file_metrics()
        self.cpu_key = args.cpu_utilization_annotation
        self.memory_key = args.memory_utilization_annotation
        self.live = _live_metrics(args)
        if self.live is None:
            self.key: Hashable = (
                "trimaran-metrics",
                args.metrics_file,
                self.cpu_key,
                self.memory_key,
            )
            return
        # Each live source has its own metrics: its columns are its own too.
        self.key = ("trimaran-metrics", "live", next(_source_ids))
        self.live.refresh()
        if isinstance(getattr(handle, "clock", None), RealClock):
            self.live.start()

    def _by_node(self) -> tuple[int, NodeMetricsMap | None]:
        """``(generation, metrics per node name)`` of a file or live source (generation 0
        for a file); metrics None when read from annotations."""
        if self.live is not None:
            generation, metrics = self.live.current
            return generation, metrics if metrics is not None else {}
        return 0, self.file

    def node_metrics(self, node: Node | None) -> Sequence[Metric] | None:
        """The node's metrics; None when it has none (upstream: the watcher knows no
        such node), which each plugin answers with the minimum score."""
        return self._node_metrics(node, self._by_node()[1])

    def _node_metrics(
        self, node: Node | None, by_node: NodeMetricsMap | None
    ) -> Sequence[Metric] | None:
        if node is None:
            return None
        if by_node is not None:
            return by_node.get(node.metadata.name or "")
        annotations = node.metadata.annotations or {}
        metrics = []
        for rtype, key in ((CPU_METRIC, self.cpu_key), (MEMORY_METRIC, self.memory_key)):
            for operator, k in ((AVERAGE, key), (STD, key + STDDEV_SUFFIX)):
                value = _annotation_value(annotations, k)
                if value is not None:
                    metrics.append(Metric(rtype, operator, value))
        return tuple(metrics) or None

    def columns(self, table: NodeTable) -> MetricColumns:
        """The metric arrays of every node of ``table``, computed once per Node change
        and, for a live source, once per refresh."""
        generation, by_node = self._by_node()
        # One slot per table, rewritten on a refresh: a cache entry per generation would
        # pile up for as long as the nodes do not change.
        slot = table.derived(self.key, lambda t: [None, None])
        if slot[0] != generation:
            slot[1] = self._columns(table, by_node)
            slot[0] = generation
        return slot[1]

    def _columns(self, table: NodeTable, by_node: NodeMetricsMap | None) -> MetricColumns:
        n = len(table)
        cols = {name: np.full(n, np.nan) for name in MetricColumns.__dataclass_fields__}
        cols["has_metrics"] = np.zeros(n, dtype=bool)
        for i, ni in enumerate(table.infos):
            metrics = self._node_metrics(ni.node, by_node)
            if metrics is None:
                continue
            cols["has_metrics"][i] = True
            for rtype, prefix in ((CPU_METRIC, "cpu"), (MEMORY_METRIC, "memory")):
                avg, std, valid = resource_data(metrics, rtype)
                if valid:
                    cols[f"{prefix}_avg"][i] = avg
                    cols[f"{prefix}_std"][i] = std
            util = cpu_utilization(metrics)
            if util is not None:
                cols["cpu_util"][i] = util
        return MetricColumns(**cols)


class RowCache:
    """Values of a NodeTable's rows that depend on each row's NodeInfo (its pods), each
    kept with the NodeInfo generation it was computed for: a batch recomputes only the
    rows whose node changed since, so a plugin's per-node Python runs once per change
    rather than once per pod and node."""

    def __init__(self, rows: int, width: int) -> None:
        self.generation = np.full(rows, -1, dtype=np.int64)
        self.values = np.zeros((rows, width), dtype=np.float64)

    @classmethod
    def of(cls, table: NodeTable, key: Hashable, width: int) -> RowCache:
        """The cache under ``key`` of ``table`` (new, and empty, when the table's nodes
        changed)."""
        return table.derived(key, lambda t: cls(len(t), width))

    def gather(
        self,
        nodes: NodeBatch,
        compute: Callable[[NodeInfo], Sequence[float]],
        where: np.ndarray | None = None,
    ) -> np.ndarray:
        """The values of the batch's rows (one row each), ``compute(node_info)`` for those
        not current; rows outside ``where`` are left as they are (not to be read)."""
        rows, infos = nodes.rows, nodes.infos
        generations = np.fromiter((ni.generation for ni in infos), dtype=np.int64, count=len(rows))
        stale = generations != self.generation[rows]
        if where is not None:
            stale &= where
        for i in np.flatnonzero(stale):
            self.values[rows[i]] = compute(infos[i])
            self.generation[rows[i]] = generations[i]
        return self.values[rows]


def resource_data(metrics: Sequence[Metric], rtype: str) -> tuple[float, float, bool]:
    """Upstream ``GetResourceData``: ``(average, standard deviation, found)`` of a
    resource type; an ``AVG`` beats a ``Latest`` or operator-less value."""
    avg = std = 0.0
    valid = avg_found = False
    for m in metrics:
        if m.type != rtype:
            continue
        if m.operator == AVERAGE:
            avg, avg_found = m.value, True
        elif m.operator == STD:
            std = m.value
        elif m.operator in ("", LATEST) and not avg_found:
            avg = m.value
        valid = True
    return avg, std, valid


def cpu_utilization(metrics: Sequence[Metric] | None) -> float | None:
    """The node's CPU utilisation as TargetLoadPacking and Peaks read it: the CPU metric
    with operator ``AVG`` or ``Latest`` (None if there is none)."""
    if metrics is None:
        return None
    found = None
    for m in metrics:
        if m.type == CPU_METRIC and m.operator in (AVERAGE, LATEST):
            found = m.value
    return found


def _amounts(container: Any, which: str) -> Mapping[str, Any]:
    if container.resources is None:
        return {}
    return getattr(container.resources, which) or {}


def cpu_capacity_milli(node: Node | None) -> int:
    """The node's ``status.capacity.cpu`` in millicores (0 when absent): what
    TargetLoadPacking and Peaks take the measured percentage of."""
    if node is None or node.status is None:
        return 0
    q = (node.status.capacity or {}).get(CPU)
    return q.milli_value() if q is not None else 0


def cpu_capacity_column(table: NodeTable) -> np.ndarray:
    """:func:`cpu_capacity_milli` of every node of ``table`` (float64), computed once per
    Node change."""
    return table.derived(
        ("trimaran-cpu-capacity",),
        lambda t: np.array([cpu_capacity_milli(ni.node) for ni in t.infos], dtype=np.float64),
    )


def _effective(pod: Pod, which: str) -> tuple[int, int]:
    # Upstream getEffectiveResource: the containers' sum, at least any one init
    # container's amount, plus the pod's overhead.
    cpu = memory = 0
    for c in pod.spec.containers:
        res = _amounts(c, which)
        if CPU in res:
            cpu += res[CPU].milli_value()
        if MEMORY in res:
            memory += res[MEMORY].value()
    for c in pod.spec.init_containers or ():
        res = _amounts(c, which)
        if CPU in res:
            cpu = max(cpu, res[CPU].milli_value())
        if MEMORY in res:
            memory = max(memory, res[MEMORY].value())
    overhead = pod.spec.overhead or {}
    if CPU in overhead:
        cpu += overhead[CPU].milli_value()
    if MEMORY in overhead:
        memory += overhead[MEMORY].value()
    return cpu, memory


def pod_requests(pod: Pod) -> tuple[int, int]:
    """Upstream ``GetResourceRequested``: the pod's ``(millicores, memory bytes)``
    requested."""
    return _effective(pod, "requests")


def pod_limits(pod: Pod) -> tuple[int, int]:
    """Upstream ``GetResourceLimits`` raised to the requests (``SetMaxLimits``): the pod's
    ``(millicores, memory bytes)`` limits, never below its requests."""
    cpu, memory = _effective(pod, "limits")
    req_cpu, req_memory = pod_requests(pod)
    return max(cpu, req_cpu), max(memory, req_memory)
