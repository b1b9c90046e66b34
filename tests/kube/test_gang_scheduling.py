"""Gang scheduling with the Workload API: kubesched against the real v1.36 kube-scheduler
and kube-apiserver, with the same gates, on the objects of ``examples/gang-scheduling``.

The real outcome is recorded in ``tests/fixtures/scheduler/gang-scheduling.json`` (written
by this test with ``KUBESCHED_RECORD=1``); ``tests/plugins/test_gangscheduling.py``
holds kubesched to that recording without the binaries, and this test holds the recording
to the real scheduler.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.testing.envtest import (
    WORKLOAD_APISERVER_ARGS,
    ControlPlane,
    assets_dir,
    create_object,
)

from .conftest import FAST, wait_for

pytestmark = pytest.mark.envtest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gang-scheduling"
RECORDING = ROOT / "tests" / "fixtures" / "scheduler" / "gang-scheduling.json"
SCHEDULER_GATES = "--feature-gates=GenericWorkload=true,GangScheduling=true"
"""The gates both schedulers run with (the API server serves every workload field)."""
LATE_POD = "eval-2"
"""The third worker of the ``eval`` gang, created once the rest settled."""


def example_manifests() -> list[dict[str, Any]]:
    """The example's documents, namespaced, with pods deleted at once when the test ends."""
    docs = []
    for name in ("cluster.yaml", "workload.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text()):
            if doc["kind"] != "Node":
                doc["metadata"].setdefault("namespace", "default")
            if doc["kind"] == "Pod":
                doc["spec"]["terminationGracePeriodSeconds"] = 0
            docs.append(doc)
    return docs


def late_pod(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """``eval-2``: a copy of ``eval-1`` under the next name."""
    template = next(m for m in manifests if m["metadata"]["name"] == "eval-1")
    return {**template, "metadata": {**template["metadata"], "name": LATE_POD}}


def outcome(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per pod: bound or not, and its PodScheduled=False message (None without one)."""
    out = {}
    for pod in pods:
        condition = next(
            (
                c
                for c in (pod.get("status") or {}).get("conditions") or ()
                if c["type"] == "PodScheduled" and c["status"] == "False"
            ),
            None,
        )
        out[pod["metadata"]["name"]] = {
            "bound": bool(pod["spec"].get("nodeName")),
            "message": condition["message"] if condition is not None else None,
        }
    return dict(sorted(out.items()))


@pytest.fixture(scope="module")
def real() -> Iterator[KubeClient]:
    """A control plane serving the Workload API, with the real kube-scheduler gated on."""
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS does not name the control-plane binaries")
    with ControlPlane(apiserver_args=WORKLOAD_APISERVER_ARGS) as cp:
        cp.start_scheduler(args=(SCHEDULER_GATES,))
        client = KubeClient(load_configuration(str(cp.kubeconfig)), FAST)
        yield client
        client.close()


def _pods(client: KubeClient) -> list[dict[str, Any]]:
    return client.request("GET", "/api/v1/namespaces/default/pods")["items"]


def _settled(client: KubeClient, bound: int, refused: int) -> list[dict[str, Any]] | None:
    pods = outcome(_pods(client))
    done = (
        sum(p["bound"] for p in pods.values()) == bound
        and sum(p["message"] is not None for p in pods.values()) == refused
    )
    return _pods(client) if done else None


def test_the_real_scheduler_and_the_recording_agree(real: KubeClient) -> None:
    manifests = example_manifests()
    for manifest in manifests:
        create_object(real, manifest)
    # train (4) and web (2) bound; the five too-big workers refused; eval held back.
    first = outcome(wait_for(lambda: _settled(real, 6, 5), 90, "the example to settle"))
    create_object(real, late_pod(manifests))
    then = outcome(wait_for(lambda: _settled(real, 9, 5), 60, "the eval gang to complete"))
    recorded = {"settled": first, "after_eval_2": then}
    if os.environ.get("KUBESCHED_RECORD"):
        RECORDING.write_text(json.dumps(recorded, indent=1) + "\n")
    assert recorded == json.loads(RECORDING.read_text())
