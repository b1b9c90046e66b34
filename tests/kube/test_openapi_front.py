"""``ControlPlane(openapi_front=True)``: OpenAPI v3 in OpenAPI's own form, every other request
and watch passed through, and the front surviving an API server restart."""

from __future__ import annotations

import json
import ssl
import urllib.request

import pytest

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.testing.envtest import ADMIN_TOKEN, ASSETS_ENV, ControlPlane, assets_dir

from .conftest import FAST, pod_manifest

pytestmark = pytest.mark.envtest

UNVERIFIED = ssl._create_unverified_context()
"""The API server's certificate is self-signed, made at its start."""
DEPLOYMENT_PATH = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


def test_front() -> None:
    if assets_dir() is None:
        pytest.skip(f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver")
    with ControlPlane(openapi_front=True) as cp:
        assert cp.url != f"https://127.0.0.1:{cp.port}"

        # What kubectl looks for: the kind of each PATCH and its fieldValidation parameter.
        doc = cp.get("/openapi/v3/apis/apps/v1")
        patch = doc["paths"][DEPLOYMENT_PATH]["patch"]
        assert patch["x-kubernetes-group-version-kind"]["kind"] == "Deployment"
        assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
        assert "OperationProps" not in json.dumps(doc)

        client = KubeClient(load_configuration(str(cp.kubeconfig)), FAST)
        request = urllib.request.Request(
            f"{cp.url}/api/v1/namespaces/default/pods?watch=1",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
        try:
            with urllib.request.urlopen(request, context=UNVERIFIED, timeout=30) as watch:
                client.request("POST", "/api/v1/namespaces/default/pods", body=pod_manifest("w"))
                # The event arrives while the watch stays open: the answer streams.
                event = json.loads(watch.readline())
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "w")

            # The client's kept-alive connection to the front outlives the API server's.
            cp.restart_apiserver()
            assert client.request("GET", "/api/v1/namespaces/default/pods/w")["metadata"]
        finally:
            client.close()
