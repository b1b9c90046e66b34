"""``kubesched bench --kubeconfig``: bench workloads through a real API server, scheduled by
``kubesched run`` or by the real kube-scheduler, on the same objects."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.testing.envtest import ControlPlane, EnvtestError

from .conftest import Api

NODES, PODS = 20, 60


def _bench(capsys, kubeconfig: Path, *extra: str) -> dict:
    code = main(["bench", "basic", "--nodes", str(NODES), "--pods", str(PODS),
                 "--kubeconfig", str(kubeconfig), "-o", "json", *extra])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    (result,) = json.loads(out)["results"]
    return result


def _no_objects_left(api: Api) -> None:
    assert not api.client.request("GET", "/api/v1/nodes")["items"]
    assert not api.client.request("GET", "/api/v1/pods")["items"]


def test_kubesched_run_through_the_api_server(api: Api, capsys) -> None:
    api.clean()
    result = _bench(capsys, api.cp.kubeconfig)
    assert result["scheduler"] == "kubesched"
    assert result["bound"] == PODS
    assert result["pods_per_second"] > 0
    assert result["measured_from"] == "first binding"
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    _no_objects_left(api)


def test_the_real_kube_scheduler_on_the_same_objects(
    control_plane: ControlPlane, api: Api, tmp_path: Path, capsys
) -> None:
    try:
        command = shlex.join(control_plane.kube_scheduler_command(tmp_path))
    except EnvtestError as err:
        pytest.skip(str(err))
    api.clean()
    # Started by the bench once every pod is pending, as kubesched run is.
    result = _bench(
        capsys, control_plane.kubeconfig, "--scheduler", "external", "--external-command", command
    )
    assert result["scheduler"] == "external"
    assert result["bound"] == PODS
    assert result["pods_per_second"] > 0
    # kube-scheduler's own attempt latency, from its /metrics (open to anonymous reads).
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    _no_objects_left(api)


def test_a_cluster_with_nodes_is_refused(api: Api, capsys) -> None:
    api.clean()
    api.nodes(1, prefix="theirs-")
    code = main(["bench", "basic", "--nodes", "2", "--pods", "2",
                 "--kubeconfig", str(api.cp.kubeconfig)])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 1
    assert "already has nodes (such as theirs-0)" in err
    assert len(api.client.request("GET", "/api/v1/nodes")["items"]) == 1  # untouched


@pytest.mark.parametrize("flag", [["--breakdown"], ["--repeat", "2"]], ids=["breakdown", "repeat"])
def test_embedded_only_options_are_refused(api: Api, capsys, flag: list[str]) -> None:
    code = main(["bench", "basic", "--kubeconfig", str(api.cp.kubeconfig), *flag])
    assert code == 1
    assert "does not apply with --kubeconfig" in capsys.readouterr().err
