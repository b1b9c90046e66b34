"""CapacityScheduling under ``kubesched run`` on a real kube-apiserver: it watches
scheduler-plugins' ElasticQuota CRD and keeps a namespace within its quota's max."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest

from kubesched.backend.protocol import ConflictError, NotFoundError
from kubesched.bench.kube import crd, install_crds

from .conftest import Api, pod_manifest, wait_for

pytestmark = pytest.mark.envtest

NAMESPACE = "quota-a"
QUOTAS = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{NAMESPACE}/elasticquotas"
CRD = crd("scheduling.x-k8s.io", "elasticquotas", "ElasticQuota")
CONFIG = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
            },
        }
    ]
}


def install_crd(api: Api) -> None:
    install_crds(api.client, [CRD])
    # The collection is served a moment after the CRD is established.
    wait_for(lambda: _served(api), 30, "the ElasticQuota collection to be served")


def _served(api: Api) -> bool:
    try:
        api.client.request("GET", QUOTAS)
    except NotFoundError:  # not served yet: asked again
        time.sleep(0.2)
        return False
    return True


def _unschedulable(api: Api, name: str) -> dict[str, Any] | None:
    status = (api.pod(name, NAMESPACE) or {}).get("status") or {}
    found = next((c for c in status.get("conditions") or () if c["type"] == "PodScheduled"), None)
    return found if found is not None and found["status"] == "False" else None


def test_max_holds_on_a_real_cluster(api: Api, in_process) -> None:
    install_crd(api)
    with contextlib.suppress(ConflictError):
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    api.client.request(
        "POST",
        QUOTAS,
        body={
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": {"name": "quota", "namespace": NAMESPACE},
            "spec": {
                "min": {"cpu": "1", "memory": "1Gi"},
                "max": {"cpu": "1", "memory": "1Gi"},
            },
        },
    )
    try:
        api.nodes(1, cpu="4")
        in_process(CONFIG)
        first = pod_manifest("first", cpu="600m")
        first["metadata"]["namespace"] = NAMESPACE
        api.create(first)
        wait_for(
            lambda: ((api.pod("first", NAMESPACE) or {}).get("spec") or {}).get("nodeName"),
            30,
            "first to be bound",
        )
        second = pod_manifest("second", cpu="600m")
        second["metadata"]["namespace"] = NAMESPACE
        api.create(second)
        cond = wait_for(lambda: _unschedulable(api, "second"), 30, "second to be unschedulable")
        assert cond["message"] == (
            f"0/1 nodes are available: Pod {NAMESPACE}/second is rejected in PreFilter "
            f"because ElasticQuota {NAMESPACE} is more than Max. no new claims to deallocate, "
            "0/1 nodes are available: 1 No victims found on node n0 for preemptor pod second."
        )
    finally:
        api.delete_all(f"/api/v1/namespaces/{NAMESPACE}/pods")
        api.delete_all(QUOTAS)
