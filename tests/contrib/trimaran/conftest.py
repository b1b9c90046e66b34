"""Helpers of the Trimaran tests: nodes and a load-watcher metrics file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.api import Node
from kubesched.testing import make_node


def node(
    name: str = "node-1",
    cpu: str = "1000m",
    memory: str = "1Gi",
    annotations: dict[str, str] | None = None,
) -> Node:
    """A node with upstream's test capacity (1 cpu, 1Gi; capacity = allocatable)."""
    m = make_node(name).capacity(cpu=cpu, memory=memory, pods=110).manifest()
    if annotations:
        m["metadata"]["annotations"] = dict(annotations)
    return Node.model_validate(m)


def watcher_metrics(nodes: dict[str, list[tuple[str, str, float]]]) -> dict:
    """A load-watcher WatcherMetrics document: per node, (type, operator, value)."""
    return {
        "timestamp": 1700000000,
        "window": {"duration": "15m", "start": 1699999100, "end": 1700000000},
        "source": "Test",
        "data": {
            "NodeMetricsMap": {
                name: {
                    "metrics": [
                        {"name": "m", "type": t, "operator": o, "value": v} for t, o, v in ms
                    ]
                }
                for name, ms in nodes.items()
            }
        },
    }


@pytest.fixture
def metrics_file(tmp_path: Path):
    """Write a WatcherMetrics file for ``{node: [(type, operator, value)]}``; its path."""

    def write(nodes: dict[str, list[tuple[str, str, float]]]) -> str:
        path = tmp_path / "metrics.json"
        path.write_text(json.dumps(watcher_metrics(nodes)))
        return str(path)

    return write
