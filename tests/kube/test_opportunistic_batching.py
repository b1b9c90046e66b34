"""Opportunistic batching (the ``OpportunisticBatching`` gate, on by default in v1.36): what
the real v1.36.2 kube-scheduler does with two identical pods, recorded in
``tests/fixtures/scheduler/opportunistic-batching.json`` (written by this test with
``KUBESCHED_RECORD=1``).

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
``scheduler_batch_cache_flushed_total`` series.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.testing.envtest import ControlPlane, assets_dir, create_object

from .conftest import FAST, start_kube_scheduler, wait_for

pytestmark = pytest.mark.envtest

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "tests" / "fixtures" / "scheduler" / "opportunistic-batching.json"

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

SETUPS: dict[str, tuple[dict[str, Any] | None, tuple[str, ...]]] = {
    "default-profile": (None, ()),
    "no-default-spread": (NO_DEFAULT_SPREAD, ()),
    "no-default-spread-gate-off": (
        NO_DEFAULT_SPREAD,
        ("--feature-gates=OpportunisticBatching=false",),
    ),
}
"""Each setup's KubeSchedulerConfiguration fields and kube-scheduler flags."""

INFORMER_SECONDS = 1.0
"""The pause between the cluster's objects and the pods to schedule."""
BATCH_SERIES = ("scheduler_batch_attempts_total", "scheduler_batch_cache_flushed_total")


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


def _metrics(command: list[str]) -> str:
    port = next(a for a in command if a.startswith("--secure-port=")).split("=", 1)[1]
    insecure = ssl._create_unverified_context()  # its certificate is self-signed at start
    with urllib.request.urlopen(
        f"https://127.0.0.1:{port}/metrics", timeout=10, context=insecure
    ) as resp:
        return resp.read().decode()


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_the_real_scheduler_and_the_batching_recording_agree(setup: str, tmp_path: Path) -> None:
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS does not name the control-plane binaries")
    settings, args = SETUPS[setup]
    cluster, pods = workload()
    with ControlPlane() as cp:
        client = KubeClient(load_configuration(str(cp.kubeconfig)), FAST)
        proc = start_kube_scheduler(cp, tmp_path, settings, args)
        try:
            for manifest in cluster:
                create_object(client, manifest)
            # The scheduler's informers see the nodes and the running pod (within
            # milliseconds) before the pods to schedule arrive.
            time.sleep(INFORMER_SECONDS)
            for manifest in pods:
                create_object(client, manifest)

            def placements() -> dict[str, str] | None:
                items = client.request("GET", "/api/v1/namespaces/default/pods")["items"]
                got = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in items}
                return got if all(got.values()) else None

            got = {
                "nodes": wait_for(placements, 60, "the pods to be bound"),
                **batch_series(_metrics(proc.args)),
            }
        finally:
            proc.terminate()
            proc.wait(15)
            client.close()
    recorded = json.loads(RECORDING.read_text()) if RECORDING.exists() else {}
    if os.environ.get("KUBESCHED_RECORD"):
        recorded[setup] = got
        RECORDING.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    assert got == recorded[setup]
