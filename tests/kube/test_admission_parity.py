"""The real kube-apiserver admits as tests/fixtures/apiserver/admission-refusals.yaml says
(LimitRanger, ResourceQuota), and defaults Nodes and Namespaces as the embedded cluster
does where the API server itself is the one defaulting."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.backend.protocol import BackendError
from tests.admission_cases import CASE_IDS, CASES, manifests

from .conftest import Api

pytestmark = pytest.mark.envtest


def _fill_quota_status(api: Api, quota: dict[str, Any]) -> None:
    # What kube-controller-manager's quota controller does first: without a status, a
    # quota limits nothing (the admission plugin trusts status.hard and status.used).
    meta = quota["metadata"]
    path = f"/api/v1/namespaces/{meta['namespace']}/resourcequotas/{meta['name']}"
    current = api.client.request("GET", path)
    hard = current["spec"]["hard"]
    current["status"] = {"hard": hard, "used": dict.fromkeys(hard, "0")}
    api.client.request("PUT", path + "/status", body=current)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_api_server_admits_as_recorded(api: Api, case: dict[str, Any]) -> None:
    namespace = case["id"]
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        *before, last = manifests(case)
        for doc in before:
            api.create(doc)
            if doc["kind"] == "ResourceQuota":
                _fill_quota_status(api, doc)
        try:
            api.create(last)
            message = None
        except BackendError as err:
            message = str(err)
        assert message == case["message"]
    finally:
        # No namespace controller runs here to empty a deleted namespace: its pods would
        # outlive it and meet the next tests.
        api.delete(f"/api/v1/namespaces/{namespace}/pods", gracePeriodSeconds=0)
        api.delete(f"/api/v1/namespaces/{namespace}")


def test_the_api_server_defaults_allocatable_and_the_namespace_label(api: Api) -> None:
    node = api.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "capacity-only"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    partial = api.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "partial"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi"}, "allocatable": {"cpu": "3"}},
        }
    )
    # Kept as given: the rest is the kubelet's to report (the embedded cluster plays it).
    assert partial["status"]["allocatable"] == {"cpu": "3"}
    ns = api.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "labelled", "labels": {"kubernetes.io/metadata.name": "x"}},
        }
    )
    try:
        assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "labelled"}
    finally:
        api.delete("/api/v1/namespaces/labelled")
