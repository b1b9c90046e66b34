"""load-watcher's data: a node's ``Metric`` and the ``WatcherMetrics`` JSON document.

load-watcher (github.com/paypal/load-watcher) answers every node's metrics as one
``WatcherMetrics`` document: ``data.NodeMetricsMap`` maps a node name to its ``metrics``,
each a resource ``type`` (``CPU``, ``Memory``), an ``operator`` (``AVG``, ``STD``,
``Latest``) and a ``value`` in percent of the node's capacity. The same document is what
a ``metricsFile`` holds and what a ``watcherAddress`` serves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from kubesched.api import KubeModel

__all__ = [
    "AVERAGE",
    "CPU_METRIC",
    "LATEST",
    "MEGA_FACTOR",
    "MEMORY_METRIC",
    "STD",
    "Metric",
    "parse_watcher_metrics",
    "read_metrics_file",
]

CPU_METRIC = "CPU"
MEMORY_METRIC = "Memory"
AVERAGE = "AVG"
STD = "STD"
LATEST = "Latest"

MEGA_FACTOR = 1.0 / 1024.0 / 1024.0
"""Memory is compared in MiB upstream (``trimaran.MegaFactor``)."""


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
    return parse_watcher_metrics(raw, path)


def parse_watcher_metrics(raw: Any, where: str) -> dict[str, tuple[Metric, ...]]:
    """The metrics per node name of a decoded ``WatcherMetrics`` document read from
    ``where`` (a file or a URL, named in the ``ValueError`` a wrongly typed field raises
    with its path)."""
    try:
        parsed = _WatcherMetrics.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {field}: {first['msg']}") from None
    return {
        node: tuple(Metric(m.type, m.operator, m.value) for m in nm.metrics)
        for node, nm in parsed.data.node_metrics_map.items()
    }
