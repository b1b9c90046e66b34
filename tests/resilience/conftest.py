"""Builders for the resilience tests: nodes, workloads and budgets as parsed objects."""

from __future__ import annotations

from typing import Any

import distributed
import pytest

from kubesched.api import parse_object


def node(name: str, zone: str = "zone-a", cpu: str = "4") -> Any:
    """A Node of ``cpu`` cpu and 8Gi in ``zone``."""
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "topology.kubernetes.io/zone": zone,
                },
            },
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "20"}},
        }
    )


def workload(kind: str, name: str, replicas: int = 1, **podspec: Any) -> Any:
    """A Deployment, StatefulSet or DaemonSet ``name`` (label ``app: name``) whose pods
    request 100m and have ``podspec``."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}
                ],
                **podspec,
            },
        },
    }
    if kind != "DaemonSet":
        spec["replicas"] = replicas
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


def budget(name: str, **spec: Any) -> Any:
    """A PodDisruptionBudget over the pods labelled ``app: name``."""
    return parse_object(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
        }
    )


def bound_pod(name: str, node_name: str) -> Any:
    """A Pod no controller manages, written bound to ``node_name`` and with no status."""
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "i"}]},
        }
    )


@pytest.fixture(scope="session")
def dask_cluster():
    """A real local Dask cluster: a scheduler and two single-threaded worker processes."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster
