"""Node load metrics for the Trimaran plugins: node annotations or a load-watcher file.

scheduler-plugins' Trimaran plugins (TargetLoadPacking, LoadVariationRiskBalancing,
LowRiskOverCommitment, Peaks) read each node's measured utilisation from a *load
watcher*: a list of metrics per node, each a resource ``type`` (``CPU``, ``Memory``), an
``operator`` (``AVG``, ``STD``, ``Latest``) and a ``value`` in percent of the node's
capacity. kubesched reads the same metrics from one of two sources, chosen by the
plugin's args (:class:`TrimaranArgs`):

* ``metricsFile``: a JSON file in load-watcher's ``WatcherMetrics`` format (what its
  ``/watcher`` endpoint answers), read once when the profile is built; a node missing
  from it has no metrics;
* otherwise node annotations (percent): ``kubesched.io/cpu-utilization`` (CPU, AVG),
  ``kubesched.io/cpu-utilization-stddev`` (CPU, STD), ``kubesched.io/memory-utilization``
  (Memory, AVG) and ``kubesched.io/memory-utilization-stddev`` (Memory, STD); the keys of
  the averages are args, each standard deviation's key is its average's plus ``-stddev``.

The helpers below are upstream's ``pkg/trimaran`` ones (``GetResourceData``,
``GetResourceRequested``, ``GetResourceLimits``) on kubesched's objects.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, PrivateAttr, ValidationError, model_validator

from kubesched import (
    ArgsError,
    NodeBatch,
    NodeInfo,
    NodeTable,
    PluginArgs,
    invalid,
    raise_args_errors,
)
from kubesched.api import CPU, MEMORY, KubeModel, Node, Pod

__all__ = [
    "AVERAGE",
    "CPU_METRIC",
    "DEFAULT_CPU_UTILIZATION_ANNOTATION",
    "DEFAULT_MEMORY_UTILIZATION_ANNOTATION",
    "LATEST",
    "MEGA_FACTOR",
    "MEMORY_METRIC",
    "STD",
    "STDDEV_SUFFIX",
    "Metric",
    "MetricColumns",
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

CPU_METRIC = "CPU"
MEMORY_METRIC = "Memory"
AVERAGE = "AVG"
STD = "STD"
LATEST = "Latest"

MEGA_FACTOR = 1.0 / 1024.0 / 1024.0
"""Memory is compared in MiB upstream (``trimaran.MegaFactor``)."""

DEFAULT_CPU_UTILIZATION_ANNOTATION = "kubesched.io/cpu-utilization"
"""The node annotation holding its measured CPU utilisation, in percent (``"35.5"``)."""
DEFAULT_MEMORY_UTILIZATION_ANNOTATION = "kubesched.io/memory-utilization"
"""The node annotation holding its measured memory utilisation, in percent."""
STDDEV_SUFFIX = "-stddev"
"""Appended to a utilisation annotation's key: the key of its standard deviation."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One load-watcher metric of a node: ``type`` CPU/Memory, ``operator``
    AVG/STD/Latest (or empty), ``value`` in percent of the node's capacity."""

    type: str
    operator: str
    value: float


class _FileMetric(KubeModel):
    name: str = ""
    type: str = ""
    operator: str = ""
    rollup: str = ""
    value: float = 0.0


class _FileNodeMetrics(KubeModel):
    metrics: list[_FileMetric] = Field(default_factory=list)


class _FileData(KubeModel):
    node_metrics_map: dict[str, _FileNodeMetrics] = Field(
        default_factory=dict, alias="NodeMetricsMap"
    )


class _WatcherMetrics(KubeModel):
    """load-watcher's ``WatcherMetrics`` (only ``data`` is read)."""

    data: _FileData = Field(default_factory=_FileData)


def read_metrics_file(path: str) -> dict[str, tuple[Metric, ...]]:
    """The metrics per node name of a load-watcher ``WatcherMetrics`` JSON file.

    Raises ``ValueError`` with a message naming what is wrong (unreadable file, not
    JSON, a field of the wrong type and its path)."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON: {err}") from None
    try:
        parsed = _WatcherMetrics.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{path}: {where}: {first['msg']}") from None
    return {
        node: tuple(Metric(m.type, m.operator, m.value) for m in nm.metrics)
        for node, nm in parsed.data.node_metrics_map.items()
    }


class TrimaranArgs(PluginArgs):
    """The metrics source shared by the Trimaran plugins' args (replaces upstream's
    ``TrimaranSpec``: ``watcherAddress`` / ``metricProvider``, which are not accepted)."""

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
        if self.metrics_file is not None:
            try:
                self._file_metrics = read_metrics_file(self.metrics_file)
            except ValueError as err:
                errors.append(invalid(("metricsFile",), self.metrics_file, str(err)))
        raise_args_errors(type(self).__name__, errors)
        return self

    def file_metrics(self) -> Mapping[str, tuple[Metric, ...]] | None:
        """The metrics read from ``metricsFile`` per node name (None without a file)."""
        return self._file_metrics


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


class MetricsSource:
    """Where a Trimaran plugin reads node metrics from, per its :class:`TrimaranArgs`."""

    def __init__(self, args: TrimaranArgs) -> None:
        self.file = args.file_metrics()
        self.cpu_key = args.cpu_utilization_annotation
        self.memory_key = args.memory_utilization_annotation
        self.key = ("trimaran-metrics", args.metrics_file, self.cpu_key, self.memory_key)

    def node_metrics(self, node: Node | None) -> Sequence[Metric] | None:
        """The node's metrics; None when it has none (upstream: the watcher knows no
        such node), which each plugin answers with the minimum score."""
        if node is None:
            return None
        if self.file is not None:
            return self.file.get(node.metadata.name or "")
        annotations = node.metadata.annotations or {}
        metrics = []
        for rtype, key in ((CPU_METRIC, self.cpu_key), (MEMORY_METRIC, self.memory_key)):
            for operator, k in ((AVERAGE, key), (STD, key + STDDEV_SUFFIX)):
                value = _annotation_value(annotations, k)
                if value is not None:
                    metrics.append(Metric(rtype, operator, value))
        return tuple(metrics) or None

    def columns(self, table: NodeTable) -> MetricColumns:
        """The metric arrays of every node of ``table``, computed once per Node change."""
        return table.derived(self.key, self._columns)

    def _columns(self, table: NodeTable) -> MetricColumns:
        n = len(table)
        cols = {name: np.full(n, np.nan) for name in MetricColumns.__dataclass_fields__}
        cols["has_metrics"] = np.zeros(n, dtype=bool)
        for i, ni in enumerate(table.infos):
            metrics = self.node_metrics(ni.node)
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
