"""``kubesched simulate`` admitting as a control plane: notices for what it defaults or
creates, ``--strict-namespaces``, and pods a quota or LimitRange refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def pod(name: str, namespace: str, cpu: str = "1") -> dict[str, Any]:
    container = {"name": "app", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [container]},
    }


def write(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def simulate(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_defaults_and_implicit_namespace_are_noticed(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "app.yaml", NODE, pod("web", "shop"))
    code, out, err = simulate(capsys, path, "-o", "json")
    assert code == 0, err
    assert err.splitlines() == [
        'notice: Namespace shop: namespace "shop" is not defined: created it (first used by '
        "Pod shop/web)",
        "notice: Node n1: lacks labels every kubelet sets; set "
        "kubernetes.io/hostname=<node name>, kubernetes.io/os=linux, kubernetes.io/arch=amd64",
    ]
    report = json.loads(out)
    assert [n["object"] for n in report["notices"]] == ["Namespace shop", "Node n1"]
    # The node's allocatable is its capacity: the pod fits.
    assert report["pods"][0]["result"] == "scheduled"


@pytest.mark.parametrize("layout", ["file", "directory"])
def test_strict_namespaces_refuses_an_undefined_namespace(
    tmp_path: Path, capsys, layout: str
) -> None:
    (tmp_path / "m").mkdir()
    write(tmp_path / "m" / "cluster.yaml", NODE)
    path = write(tmp_path / "m" / "app.yaml", pod("web", "shop"))
    code, out, err = simulate(
        capsys, str(tmp_path / "m") if layout == "directory" else path, "--strict-namespaces"
    )
    assert code == 1 and not out
    assert err.startswith(f'error: {path}: Pod shop/web: namespaces "shop" not found')
    assert "Traceback" not in err


def test_strict_namespaces_accepts_defined_and_system_namespaces(tmp_path: Path, capsys) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    path = write(
        tmp_path / "app.yaml",
        NODE,
        namespace,
        pod("web", "shop"),
        pod("dns", "kube-system"),
        pod("plain", "default"),
    )
    code, _, err = simulate(capsys, path, "--strict-namespaces", "-o", "json")
    assert code == 0, err
    assert "namespace" not in err


def test_quota_refusals_are_reported(tmp_path: Path, capsys) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "default"},
        "spec": {"hard": {"requests.cpu": "2"}},
    }
    path = write(
        tmp_path / "app.yaml", NODE, quota, pod("a", "default"), pod("b", "default", "1500m")
    )
    code, out, err = simulate(capsys, path, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["rejections"] == [
        {
            "object": "Pod default/b",
            "message": 'pods "b" is forbidden: exceeded quota: compute, requested: '
            "requests.cpu=1500m, used: requests.cpu=1, limited: requests.cpu=2",
        }
    ]
