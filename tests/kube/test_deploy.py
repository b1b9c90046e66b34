"""deploy/: the manifests apply to a real API server, and the ServiceAccount, bound to the
API server's own roles for kube-scheduler only, runs ``kubesched run`` (it schedules and
binds) and is denied the rest."""

from __future__ import annotations

import signal
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.backend.kube import ForbiddenError, KubeClient, load_configuration
from kubesched.testing.envtest import ControlPlane, collection_path

from .conftest import FAST, Api, kubesched_process, pod_manifest, wait_for

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAMESPACE = "kubesched"

_CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}


def kustomization_documents() -> list[dict[str, Any]]:
    """The documents of every resource kustomization.yaml lists, in its namespace."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    docs = []
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
            if doc["kind"] not in _CLUSTER_SCOPED:
                doc["metadata"]["namespace"] = kustomization["namespace"]
            docs.append(doc)
    return docs


def test_no_wildcards_and_a_hardened_deployment() -> None:
    for doc in kustomization_documents():
        for rule in doc.get("rules", ()):
            assert "*" not in rule["verbs"] and "*" not in rule.get("resources", ()), doc
    (deployment,) = [d for d in kustomization_documents() if d["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deployment["spec"]["replicas"] == 2
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    # HTTPS on kube-scheduler's port; the health paths need no token.
    assert {"name": "https", "containerPort": 10259} in container["ports"]
    assert "--secure-port=10259" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {
        "path": "/healthz",
        "port": "https",
        "scheme": "HTTPS",
    }
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "https",
        "scheme": "HTTPS",
    }
    assert container["resources"]["requests"] and container["resources"]["limits"]


UPSTREAM_ROLES = {"system:kube-scheduler", "system:volume-scheduler"}
"""The API server's own ClusterRoles for kube-scheduler: all kubesched is granted."""


def test_deploy_and_docs_bind_exactly_upstreams_roles(control_plane: ControlPlane) -> None:
    """deploy/ and docs/run-rbac.yaml define no role of their own: they bind the API
    server's built-in roles for kube-scheduler (which this API server has), nothing else."""
    api = Api(control_plane)
    for role in UPSTREAM_ROLES:
        api.client.request("GET", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}")
    docs_rbac = list(yaml.safe_load_all((DEPLOY.parent / "docs" / "run-rbac.yaml").read_text()))
    for documents in (kustomization_documents(), docs_rbac):
        assert not [d for d in documents if d["kind"] in ("ClusterRole", "Role")]
        bindings = [d for d in documents if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
        assert {(b["kind"], b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings} == {
            ("ClusterRoleBinding", "ClusterRole", role) for role in UPSTREAM_ROLES
        }


@pytest.fixture(scope="module")
def deployed(control_plane: ControlPlane) -> Api:
    """deploy/ applied: a server-side dry run of everything first (the namespace made for
    real, since a dry run creates nothing to put the rest in), then for real."""
    api = Api(control_plane)
    docs = kustomization_documents()
    namespaces = [d for d in docs if d["kind"] == "Namespace"]
    for doc in namespaces:
        api.create(doc)
    rest = [d for d in docs if d["kind"] != "Namespace"]
    for doc in rest:
        api.client.request("POST", collection_path(doc), query={"dryRun": "All"}, body=doc)
    for doc in rest:
        api.create(doc)
    return api


def _service_account_token(api: Api, name: str = "kubesched", namespace: str = NAMESPACE) -> str:
    answer = api.client.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    return answer["status"]["token"]


def _service_account_kubeconfig(control_plane: ControlPlane, api: Api, tmp_path: Path) -> Path:
    return control_plane.write_kubeconfig(tmp_path / "sa.kubeconfig", _service_account_token(api))


def _scrape(port: int, token: str | None) -> int:
    """The status of GET /metrics on kubesched's HTTPS server with ``token``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(
            request, timeout=30, context=ssl._create_unverified_context()
        ) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def _prometheus_scraper(api: Api) -> str:
    """deploy/prometheus-rbac.yaml applied as shipped, its ServiceAccount made: a token of
    that scraper."""
    for doc in (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "prometheus-k8s", "namespace": "monitoring"},
        },
        *yaml.safe_load_all((DEPLOY / "prometheus-rbac.yaml").read_text()),
    ):
        api.create(doc)
    return _service_account_token(api, "prometheus-k8s", "monitoring")


def _config_from_the_config_map(api: Api, tmp_path: Path) -> Path:
    cm = api.client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/kubesched-config")
    path = tmp_path / "config.yaml"
    path.write_text(cm["data"]["config.yaml"])
    return path


def test_the_service_account_schedules_and_binds(
    control_plane: ControlPlane, deployed: Api, api: Api, tmp_path: Path
) -> None:
    kubeconfig = _service_account_kubeconfig(control_plane, deployed, tmp_path)
    config = _config_from_the_config_map(deployed, tmp_path)
    api.nodes(3)
    api.create_many([pod_manifest(f"p{i}", scheduler_name="kubesched") for i in range(10)])
    api.create(pod_manifest("not-mine"))  # default-scheduler's: left alone
    scraper = _prometheus_scraper(deployed)
    proc, port = kubesched_process(
        kubeconfig, config, "--identity", "deploy-test", "--authentication-skip-lookup"
    )
    try:
        bound = wait_for(
            lambda: (
                (pods := {p["metadata"]["name"]: p["spec"].get("nodeName") for p in api.pods()})
                and all(pods.get(f"p{i}") for i in range(10))
                and pods
            ),
            90,
            "the ServiceAccount's kubesched to bind every pod",
        )
        assert bound["not-mine"] is None
        lease = api.client.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/kube-scheduler"
        )
        assert lease["spec"]["holderIdentity"] == "deploy-test"
        # The ServiceAccount may review tokens and access (system:kube-scheduler): the
        # scraper of prometheus-rbac.yaml reads /metrics; no one else does.
        assert _scrape(port, scraper) == 200
        assert _scrape(port, _service_account_token(api)) == 403
        assert _scrape(port, None) == 403
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/namespaces/kubesched/secrets"),
        ("POST", "/api/v1/namespaces/default/pods"),
        ("DELETE", "/api/v1/nodes/n0"),
        ("PATCH", "/api/v1/nodes/n0"),
        ("GET", "/api/v1/namespaces/kubesched/configmaps"),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/kubesched/leases/someone-else"),
        ("DELETE", "/apis/apps/v1/namespaces/kubesched/deployments/kubesched"),
        ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
    ],
    ids=[
        "read-secrets",
        "create-pods",
        "delete-nodes",
        "patch-nodes",
        "read-configmaps",
        "read-another-lease",
        "delete-itself",
        "escalate",
    ],
)
def test_the_service_account_is_denied_the_rest(
    control_plane: ControlPlane, deployed: Api, tmp_path: Path, method: str, path: str
) -> None:
    client = KubeClient(
        load_configuration(str(_service_account_kubeconfig(control_plane, deployed, tmp_path))),
        FAST,
    )
    body = {"metadata": {"name": "x"}} if method in ("POST", "PUT", "PATCH") else None
    content = "application/merge-patch+json" if method == "PATCH" else "application/json"
    with pytest.raises(ForbiddenError):
        client.request(method, path, body=body, content_type=content)
