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
from collections.abc import Callable
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

IGNORING_PREFERRED_TERMS = {
    "profiles": [
        {
            **NO_DEFAULT_SPREAD["profiles"][0],
            "pluginConfig": [
                *NO_DEFAULT_SPREAD["profiles"][0]["pluginConfig"],
                {"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": True}},
            ],
        }
    ]
}
"""The same profile, whose InterPodAffinity ignores the running pods' preferred terms."""

SETUPS: dict[str, tuple[dict[str, Any] | None, str]] = {
    "default-profile": (None, ""),
    "no-default-spread": (NO_DEFAULT_SPREAD, ""),
    "no-default-spread-gate-off": (NO_DEFAULT_SPREAD, "OpportunisticBatching=false"),
    "reordered-node-affinity": (NO_DEFAULT_SPREAD, ""),
    "other-labels": (NO_DEFAULT_SPREAD, ""),
    "other-labels-ignoring-preferred-terms": (IGNORING_PREFERRED_TERMS, ""),
    "empty-pod-anti-affinity": (NO_DEFAULT_SPREAD, ""),
    "preferred-pod-affinity": (NO_DEFAULT_SPREAD, ""),
    "dra-device-class-plain-pods": (NO_DEFAULT_SPREAD, ""),
    "dra-unbacked-extended-resource": (NO_DEFAULT_SPREAD, ""),
    "dra-backed-extended-resource": (NO_DEFAULT_SPREAD, ""),
    "pod-group": (NO_DEFAULT_SPREAD, "GenericWorkload=true,GangScheduling=true"),
}
"""Each setup's KubeSchedulerConfiguration fields and ``--feature-gates``; the setups after
the first three change the workload as :data:`VARIANTS` says."""

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


Objects = list[dict[str, Any]]


def _reorder_node_affinity(cluster: Objects, pods: Objects) -> None:
    """Both pods prefer ``gold`` or ``platinum`` (100) and ``silver`` (10); the second
    lists the terms and the values the other way round."""
    for pod in pods:
        terms = pod["spec"]["affinity"]["nodeAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        terms[0]["preference"]["matchExpressions"][0]["values"] = ["gold", "platinum"]
    second = pods[1]["spec"]["affinity"]["nodeAffinity"]
    terms = second["preferredDuringSchedulingIgnoredDuringExecution"]
    terms.reverse()
    terms[1]["preference"]["matchExpressions"][0]["values"].reverse()


def _label(cluster: Objects, pods: Objects) -> None:
    """The two pods have different labels."""
    for pod, app in zip(pods, ("a", "b"), strict=True):
        pod["metadata"]["labels"] = {"app": app}


def _pod_affinity(affinity: dict[str, Any]) -> Callable[[Objects, Objects], None]:
    def edit(cluster: Objects, pods: Objects) -> None:
        for pod in pods:
            pod["spec"]["affinity"].update(affinity)

    edit.__doc__ = f"Both pods also have {affinity}."
    return edit


_PREFERRED_POD_AFFINITY = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "none"}},
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
}

GPU = "example.com/gpu"
"""The extended resource a DeviceClass backs (DRAExtendedResource)."""
FPGA = "example.com/fpga"
"""An extended resource the nodes advertise themselves (a device plugin's)."""
GPU_DRIVER = "gpu.example.com"


def _device_class(cluster: Objects, pods: Objects) -> None:
    """A DeviceClass backs ``example.com/gpu``; no pod asks for it."""
    cluster.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}],
                "extendedResourceName": GPU,
            },
        }
    )


def _request(resource: str) -> Callable[[Objects, Objects], None]:
    def edit(cluster: Objects, pods: Objects) -> None:
        for pod in pods:
            resources = pod["spec"]["containers"][0]["resources"]
            resources["requests"][resource] = "1"
            # An extended resource is not overcommitted: its limit is its request.
            resources["limits"] = {resource: "1"}

    return edit


def _unbacked_extended_resource(cluster: Objects, pods: Objects) -> None:
    """The DeviceClass backs ``example.com/gpu``; every node advertises two
    ``example.com/fpga`` and both pods ask for one."""
    _device_class(cluster, pods)
    for node in cluster:
        if node["kind"] == "Node":
            for field in ("capacity", "allocatable"):
                node["status"][field] = {**node["status"][field], FPGA: "2"}
    _request(FPGA)(cluster, pods)


def _backed_extended_resource(cluster: Objects, pods: Objects) -> None:
    """The DeviceClass backs ``example.com/gpu``, every node has one such device (a
    ResourceSlice of its own) and both pods ask for one ``example.com/gpu``."""
    _device_class(cluster, pods)
    for node in [o["metadata"]["name"] for o in cluster if o["kind"] == "Node"]:
        cluster.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-gpu"},
                "spec": {
                    "driver": GPU_DRIVER,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}],
                },
            }
        )
    _request(GPU)(cluster, pods)


def _pod_group(cluster: Objects, pods: Objects) -> None:
    """Both pods belong to a PodGroup that wants both placed (a gang of two)."""
    cluster.append(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        }
    )
    for pod in pods:
        pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}


POD_GROUP_SETUPS = frozenset({"pod-group"})
"""The setups whose API server must serve the Workload API (PodGroups)."""


def recorded_nodes(setup: str, nodes: dict[str, str]) -> dict[str, Any]:
    """The pods' nodes as recorded: by pod, but for a pod group's the nodes the group took
    (sorted), since which of two alike pods its cycle tries first depends on when each
    left the gated pods, not on batching."""
    if setup not in POD_GROUP_SETUPS:
        return nodes
    return {"busy": nodes["busy"], "group": sorted([nodes["p1"], nodes["p2"]])}


VARIANTS: dict[str, Callable[[Objects, Objects], None]] = {
    "reordered-node-affinity": _reorder_node_affinity,
    "other-labels": _label,
    "other-labels-ignoring-preferred-terms": _label,
    "empty-pod-anti-affinity": _pod_affinity({"podAntiAffinity": {}}),
    "preferred-pod-affinity": _pod_affinity(_PREFERRED_POD_AFFINITY),
    "dra-device-class-plain-pods": _device_class,
    "dra-unbacked-extended-resource": _unbacked_extended_resource,
    "dra-backed-extended-resource": _backed_extended_resource,
    "pod-group": _pod_group,
}
"""How a setup's workload differs from the base one (the nodes, the running pod and the
two pods are created in that order, the cluster's other objects before the pods)."""


def workload(setup: str = "") -> tuple[Objects, Objects]:
    """The cluster (nodes, the running pod and ``setup``'s other objects) and the two pods
    to schedule, in order."""
    cluster = [
        _node("n0", {"tier": "gold"}),
        _node("n1", {"tier": "silver"}),
        _node("n2", {}, cpu="16", memory="64Gi"),
        _pod("busy", "1", node_name="n1"),
    ]
    pods = [_pod("p1", "3"), _pod("p2", "3")]
    edit = VARIANTS.get(setup)
    if edit is not None:
        edit(cluster, pods)
    return cluster, pods


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
