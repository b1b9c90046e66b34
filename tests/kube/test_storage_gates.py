"""The real v1.36.2 kube-scheduler on the storage gate cases of ``tests/storage_gates.py``
(StorageCapacityScoring, VolumeLimitScaling): the node chosen for each pod and its
FailedScheduling messages, recorded in ``tests/fixtures/scheduler/storage-gates.json``
(written by this test with ``KUBESCHED_RECORD=1``); and kubesched on a real API server
held to that recording."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.testing.envtest import ControlPlane, EnvtestError, assets_dir, create_object
from tests.fixtures.scheduler.record import INFORMER_SECONDS, clean_up, namespaced, observe
from tests.storage_gates import (
    APISERVER_GATES,
    CASES,
    NODES,
    RECORDING,
    SETUPS,
    chosen_node,
    node,
    profiles_for,
)

from .conftest import FAST, kubesched_running, start_kube_scheduler

pytestmark = pytest.mark.envtest


def _run_case(client: KubeClient, case: dict[str, Any]) -> dict[str, Any]:
    """Create the case's objects, then its pod; what became of the pod."""
    ns = case["id"]
    create_object(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pods = [o for o in case["objects"] if o["kind"] == "Pod"]
    for obj in case["objects"]:
        if obj["kind"] != "Pod":
            create_object(client, namespaced(obj, ns))
    # The scheduler's informers see the volumes before the pod, as the embedded cluster
    # has them first.
    time.sleep(INFORMER_SECONDS)
    for obj in pods:
        create_object(client, namespaced(obj, ns))
    seen = observe(client, ns, "app")
    found = client.request("GET", f"/api/v1/namespaces/{ns}/pods/app")
    claims = client.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    clean_up(client, case)
    return {"node": chosen_node(found, claims), "failedScheduling": seen["failedScheduling"]}


def _outcomes(
    setup: str, scheduler: Callable[[ControlPlane, str], AbstractContextManager[Any]]
) -> dict[str, Any]:
    """Each case of ``setup`` on a fresh control plane (the API server with
    ``APISERVER_GATES``, the PV controller), scheduled by ``scheduler(cp, gates)``."""
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS does not name the control-plane binaries")
    got: dict[str, Any] = {}
    with ControlPlane(apiserver_args=(f"--feature-gates={APISERVER_GATES}",)) as cp:
        try:
            cp.start_controller_manager(("persistentvolume-binder-controller",))
        except EnvtestError as err:
            pytest.skip(str(err))
        client = KubeClient(load_configuration(str(cp.kubeconfig)), FAST)
        try:
            for name in NODES:
                create_object(client, node(name))
            with scheduler(cp, SETUPS[setup]):
                for case in (c for c in CASES if c["setup"] == setup):
                    got[case["id"]] = _run_case(client, case)
        finally:
            client.close()
    return got


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_the_real_scheduler_and_the_storage_recording_agree(setup: str, tmp_path: Path) -> None:
    @contextmanager
    def kube_scheduler(cp: ControlPlane, gates: str) -> Iterator[None]:
        args = (f"--feature-gates={gates}",) if gates else ()
        proc = start_kube_scheduler(cp, tmp_path, {"profiles": profiles_for(gates)}, args)
        try:
            yield
        finally:
            proc.terminate()
            proc.wait(15)

    got = _outcomes(setup, kube_scheduler)
    recorded = json.loads(RECORDING.read_text()) if RECORDING.exists() else {}
    if os.environ.get("KUBESCHED_RECORD"):
        recorded.update(got)
        RECORDING.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    assert got == {k: recorded[k] for k in got}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_kubesched_run_gives_the_storage_recording(setup: str, tmp_path: Path) -> None:
    """kubesched's scheduler on a real API server (as ``kubesched run``) with the same gates:
    the same nodes and messages as the real scheduler."""

    def kubesched(cp: ControlPlane, gates: str) -> AbstractContextManager[Any]:
        return kubesched_running(cp, gates, tmp_path, {"profiles": profiles_for(gates)})

    got = _outcomes(setup, kubesched)
    recorded = json.loads(RECORDING.read_text())
    assert got == {k: recorded[k] for k in got}
