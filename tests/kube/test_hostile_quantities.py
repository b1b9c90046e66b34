"""``kubesched run`` against quantities the real kube-apiserver accepts but int64 cannot hold.

Anyone who may create pods can bind one to a node through ``spec.nodeName`` with
``cpu: "10000000000000000"``; a Node may say its allocatable cpu is the int64 maximum in
cores. Neither may make kubesched over-commit the node or stop scheduling.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane

from .conftest import Api, bound, kubesched_process, wait_for, write_config
from .test_run_process import _get

pytestmark = pytest.mark.envtest


def _readyz(port: int) -> tuple[int, str]:
    return _get(port, "/readyz?verbose")


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    assert proc.returncode == 0, err
    return err


def _node(name: str, cpu: str) -> dict:
    return make_node(name).capacity(cpu=cpu, memory="16Gi", pods=110).manifest()


def _one_cpu_pods(count: int) -> list[dict]:
    return [make_pod(f"p{i}").req(cpu="1").manifest() for i in range(count)]


@pytest.mark.parametrize("hostile_cpu", ["10000000000000000", "9223372036854775807", "1e100000"])
def test_a_pod_bound_with_a_huge_request_fills_its_node(
    control_plane: ControlPlane, api: Api, tmp_path: Path, hostile_cpu: str
) -> None:
    api.create_many([_node("n0", "8"), _node("n1", "8")])
    hostile = api.create(make_pod("hostile").req(cpu=hostile_cpu).node("n0").manifest())
    # The API server took it as it is.
    assert hostile["spec"]["nodeName"] == "n0"
    proc, port = kubesched_process(control_plane.kubeconfig, write_config(tmp_path))
    try:
        wait_for(lambda: _readyz(port)[0] == 200, 60, "/readyz ok")
        api.create_many(_one_cpu_pods(20))
        # n1 takes 8; the others wait: n0 is full.
        wait_for(lambda: len(bound(api.pods())) == 1 + 8, 60, "8 pods bound")
        for i in range(20):
            if api.node_of(f"p{i}") is None:
                api.unschedulable(f"p{i}", timeout=30)
        placed = Counter(bound(api.pods()).values())
        assert placed == Counter({"n1": 8, "n0": 1})  # n0: the hostile pod only
        status, body = _readyz(port)
        assert status == 200 and "[+]scheduling ok" in body
    finally:
        err = _stop(proc)
    assert "Traceback" not in err and "OverflowError" not in err


def test_a_node_with_int64_max_cpu_does_not_stop_scheduling(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    api.create_many([_node("n0", "9223372036854775807"), _node("n1", "8")])
    proc, port = kubesched_process(control_plane.kubeconfig, write_config(tmp_path))
    try:
        wait_for(lambda: _readyz(port)[0] == 200, 60, "/readyz ok")
        api.create_many(_one_cpu_pods(20))
        placed = wait_for(
            lambda: (b := bound(api.pods())) and len(b) == 20 and b, 60, "20 pods bound"
        )
        # As large a node as int64 can say: every pod fits it, and it is the least used.
        assert Counter(placed.values()) == Counter({"n0": 20})
        status, body = _readyz(port)
        assert status == 200 and "[+]scheduling ok" in body
    finally:
        err = _stop(proc)
    assert "Traceback" not in err and "OverflowError" not in err
