"""The real v1.36.2 kube-scheduler on the opportunistic batching workload of
``tests/opportunistic_batching.py``: its placements and batching counters, recorded in
``tests/fixtures/scheduler/opportunistic-batching.json``, and its batching latency
histograms, in ``opportunistic-batching-latency.json`` beside it (both written by this test
with ``KUBESCHED_RECORD=1``)."""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.request
from pathlib import Path

import pytest

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.testing.envtest import (
    WORKLOAD_APISERVER_ARGS,
    ControlPlane,
    assets_dir,
    create_object,
)
from tests.opportunistic_batching import (
    LATENCY_RECORDING,
    POD_GROUP_SETUPS,
    RECORDING,
    SETUPS,
    batch_series,
    latency_histograms,
    recorded_nodes,
    without_stability,
    workload,
)

from .conftest import FAST, Api, start_kube_scheduler, wait_for

pytestmark = pytest.mark.envtest

INFORMER_SECONDS = 1.0
"""The pause between the cluster's objects and the pods to schedule."""


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
    settings, gates = SETUPS[setup]
    args = (f"--feature-gates={gates}",) if gates else ()
    cluster, pods = workload(setup)
    apiserver_args = WORKLOAD_APISERVER_ARGS if setup in POD_GROUP_SETUPS else ()
    with ControlPlane(apiserver_args=apiserver_args) as cp:
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

            nodes = wait_for(placements, 60, "the pods to be bound")
            text = _metrics(proc.args)
        finally:
            proc.terminate()
            proc.wait(15)
            client.close()
    got = {"nodes": recorded_nodes(setup, nodes), **batch_series(text)}
    latency = latency_histograms(text)
    recorded = _recorded(RECORDING, setup, got)
    assert got == recorded
    assert latency == _recorded(LATENCY_RECORDING, setup, latency)


def _recorded(path: Path, setup: str, got: dict) -> dict:
    """The setup's recording in ``path``, which ``got`` replaces with ``KUBESCHED_RECORD``
    set (the other setups' are kept)."""
    recorded = json.loads(path.read_text()) if path.exists() else {}
    if os.environ.get("KUBESCHED_RECORD"):
        recorded[setup] = got
        path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    return recorded[setup]


RUN_SETUPS = [
    "default-profile",
    "no-default-spread",
    "reordered-node-affinity",
    "other-labels-ignoring-preferred-terms",
    "empty-pod-anti-affinity",
]
"""The setups ``kubesched run`` is held to: those whose objects the clean-up between tests
removes (the DRA ones leave DeviceClasses, the pod group one needs the Workload API)."""


@pytest.mark.parametrize("setup", RUN_SETUPS)
def test_kubesched_run_gives_the_recording(setup: str, api: Api, in_process) -> None:
    """kubesched's scheduler on a real API server (as ``kubesched run``, gates at their
    defaults): the same nodes, batching counters and latency observations as the real
    scheduler."""
    fields, _ = SETUPS[setup]
    cluster, pods = workload(setup)
    scheduler = in_process(fields)
    for manifest in cluster:
        api.create(manifest)
    time.sleep(INFORMER_SECONDS)
    for manifest in pods:
        api.create(manifest)

    def placements() -> dict[str, str] | None:
        got = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in api.pods()}
        return got if len(got) == 3 and all(got.values()) else None

    nodes = wait_for(placements, 60, "the pods to be bound")
    text = scheduler.runner.metrics.expose().decode()
    got = {"nodes": recorded_nodes(setup, nodes), **batch_series(text)}
    assert got == json.loads(RECORDING.read_text())[setup]
    recorded = json.loads(LATENCY_RECORDING.read_text())[setup]
    assert latency_histograms(text) == without_stability(recorded)
