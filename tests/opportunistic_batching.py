"""Opportunistic batching (the ``OpportunisticBatching`` gate, on by default in v1.36): the
workload and setups that the real v1.36.2 kube-scheduler was recorded on, in
``tests/fixtures/scheduler/opportunistic-batching.json`` (written by
``tests/kube/test_opportunistic_batching.py`` with ``KUBESCHED_RECORD=1``), and that
``tests/scheduler/test_opportunistic_batching.py`` holds kubesched to.

The workload is built so that reusing the first pod's node ranking changes the second
pod's node: ``n0`` (4 CPUs, labelled ``tier=gold``), ``n1`` (4 CPUs, ``tier=silver``,
already running a 1-CPU pod) and ``n2`` (16 CPUs, unlabelled); two pods of 3 CPUs each
preferring ``tier=gold`` (weight 100) and ``tier=silver`` (weight 10). The first pod goes
to ``n0`` and ranks the roomy ``n2`` above ``n1`` (NodeAffinity, normalised by ``n0``'s
100, gives ``n1`` only 10). ``n0`` cannot take the second pod; scored afresh, without
``n0``, NodeAffinity gives ``n1`` 100 and it wins; with a batch the second pod is handed
``n2``, the next node of the first pod's ranking. Each setup runs on a fresh control plane:

- ``default-profile``: the default profile. Its PodTopologySpread has system default
  constraints, so no pod is signable and nothing is batched (``pod_not_batchable``).
- ``no-default-spread``: PodTopologySpread with ``defaultingType: List`` and no
  constraints; the second pod takes the batch's hint.
- ``no-default-spread-gate-off``: the same profile with the gate off.

Each records the pods' nodes and the scheduler's ``scheduler_batch_attempts_total`` and
``scheduler_batch_cache_flushed_total`` series; ``opportunistic-batching-latency.json``
records, beside it, the two latency histograms as the scheduler exposes them (help,
stability level, labels, buckets and the number of observations per label set).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "tests" / "fixtures" / "scheduler" / "opportunistic-batching.json"
LATENCY_RECORDING = RECORDING.with_name("opportunistic-batching-latency.json")

NO_DEFAULT_SPREAD = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "PodTopologySpread",
                    "args": {"defaultingType": "List", "defaultConstraints": []},
                }
            ],
        }
    ]
}
"""A profile whose pods can be signed: no topology spread constraints by default."""

SETUPS: dict[str, tuple[dict[str, Any] | None, str]] = {
    "default-profile": (None, ""),
    "no-default-spread": (NO_DEFAULT_SPREAD, ""),
    "no-default-spread-gate-off": (NO_DEFAULT_SPREAD, "OpportunisticBatching=false"),
}
"""Each setup's KubeSchedulerConfiguration fields and ``--feature-gates``."""

BATCH_SERIES = ("scheduler_batch_attempts_total", "scheduler_batch_cache_flushed_total")
LATENCY_HISTOGRAMS = (
    "scheduler_get_node_hint_duration_seconds",
    "scheduler_store_schedule_results_duration_seconds",
)
_STABILITY = re.compile(r"^\[([A-Z]+)\] ")
"""The stability level component-base writes in front of a metric's help text."""


def _node(
    name: str, labels: dict[str, str], cpu: str = "4", memory: str = "16Gi"
) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"capacity": resources, "allocatable": resources},
    }


def _pod(name: str, cpu: str, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    else:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": weight,
                        "preference": {
                            "matchExpressions": [
                                {"key": "tier", "operator": "In", "values": [tier]}
                            ]
                        },
                    }
                    for tier, weight in (("gold", 100), ("silver", 10))
                ]
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def workload() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cluster (nodes and the running pod) and the two pods to schedule, in order."""
    cluster = [
        _node("n0", {"tier": "gold"}),
        _node("n1", {"tier": "silver"}),
        _node("n2", {}, cpu="16", memory="64Gi"),
        _pod("busy", "1", node_name="n1"),
    ]
    return cluster, [_pod("p1", "3"), _pod("p2", "3")]


def batch_series(metrics_text: str) -> dict[str, dict[str, float]]:
    """The batching counters of a Prometheus text, by series and by their
    ``result``/``reason`` label (the ``profile`` label is always the default profile)."""
    series: dict[str, dict[str, float]] = {name: {} for name in BATCH_SERIES}
    for line in metrics_text.splitlines():
        name, _, rest = line.partition("{")
        if name not in series:
            continue
        labels = dict(part.split("=", 1) for part in rest.split("}", 1)[0].split(","))
        key = labels.get("result", labels.get("reason", "")).strip('"')
        series[name][key] = float(line.rsplit(" ", 1)[1])
    return series


def latency_histograms(metrics_text: str) -> dict[str, dict[str, Any]]:
    """The batching latency histograms of a Prometheus text that has observations: each
    one's help text, stability level (kube-scheduler's ``[ALPHA]`` prefix of the help;
    kubesched writes none), label names, bucket bounds as exposed, and the number of
    observations per label set (not the durations, which differ from run to run)."""
    found: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name not in LATENCY_HISTOGRAMS or not family.samples:
            continue
        level = _STABILITY.match(family.documentation)
        counts: dict[str, float] = {}
        buckets: list[str] = []
        labels: list[str] = []
        for sample in family.samples:
            rest = {k: v for k, v in sample.labels.items() if k != "le"}
            labels = sorted(rest)
            if sample.name.endswith("_count"):
                counts[",".join(f"{k}={v}" for k, v in sorted(rest.items()))] = sample.value
            elif sample.name.endswith("_bucket") and sample.labels["le"] not in buckets:
                buckets.append(sample.labels["le"])
        found[family.name] = {
            "help": family.documentation[level.end() if level else 0 :],
            "stability": level.group(1) if level else "",
            "labels": labels,
            "buckets": buckets,
            "counts": counts,
        }
    return found


def without_stability(recorded: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``recorded`` (the real scheduler's :func:`latency_histograms`) as kubesched exposes
    it: the same help text, without the stability level in front."""
    return {name: {**h, "stability": ""} for name, h in recorded.items()}
