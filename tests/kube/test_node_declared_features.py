"""NodeDeclaredFeatures and Gt/Lt tolerations: kubesched against the real v1.36
kube-scheduler and kube-apiserver on the same objects."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.backend.kube import KubeClient
from kubesched.backend.protocol import BackendError
from kubesched.simulate.driver import Simulation
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, create_object

from .conftest import Api, kube_scheduler_running, wait_for

pytestmark = pytest.mark.envtest

FEATURE = "RestartAllContainersOnContainerExits"


@pytest.fixture(scope="module")
def real(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeClient]:
    """The session's control plane, clean, with the real kube-scheduler serving it for
    this module's tests only (cleaned after them); an admin client."""
    api = Api(control_plane)
    api.clean()
    with kube_scheduler_running(control_plane, tmp_path_factory.mktemp("kube-scheduler")):
        yield api.client
    api.clean()
    api.client.close()


def needy_pod(name: str) -> dict[str, Any]:
    """A pod whose container restarts all containers on exit code 42: it needs nodes that
    declare RestartAllContainersOnContainerExits."""
    manifest = make_pod(name).manifest()
    container = manifest["spec"]["containers"][0]
    container["restartPolicy"] = "Never"
    container["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ]
    return manifest


def declare(client: KubeClient, node: str, features: list[str]) -> None:
    """Set ``status.declaredFeatures`` through the status subresource, as a kubelet does."""
    client.request(
        "PATCH",
        f"/api/v1/nodes/{node}/status",
        body={"status": {"declaredFeatures": features}},
        content_type="application/merge-patch+json",
    )


def scheduled(client: KubeClient, name: str) -> dict[str, Any] | None:
    """The pod's PodScheduled condition once it has one."""
    pod = client.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    return next(
        (c for c in pod.get("status", {}).get("conditions") or () if c["type"] == "PodScheduled"),
        None,
    )


def kubesched_outcome(objects: list[dict[str, Any]], pod: str) -> tuple[str | None, str | None]:
    """Where kubesched's embedded cluster puts ``pod`` (its node, or None and the
    PodScheduled message)."""
    sim = Simulation([parse_object(copy.deepcopy(o)) for o in objects])
    try:
        sim.run()
        found = sim.cluster.get("Pod", "default", pod)
        condition = next((c for c in found.status.conditions if c.type == "PodScheduled"), None)
        message = (
            condition.message if condition is not None and condition.status == "False" else None
        )
        return found.spec.node_name or None, message
    finally:
        sim.close()


def test_a_pod_needing_a_feature_waits_for_a_node_declaring_it(real: KubeClient) -> None:
    plain = make_node("ndf-plain").capacity(cpu="4", memory="8Gi").manifest()
    create_object(real, plain)
    pod = needy_pod("ndf-needy")
    create_object(real, pod)
    condition = wait_for(
        lambda: (c := scheduled(real, "ndf-needy")) and c["status"] == "False" and c,
        30,
        "the real scheduler to refuse the pod",
    )
    real_message = condition["message"]
    assert real_message.startswith(
        "0/1 nodes are available: 1 node(s) didn't match Pod's required features."
    )
    assert kubesched_outcome([plain, pod], "ndf-needy") == (None, real_message)

    # The node now declares the feature (the API server wants the list sorted): the
    # queueing hint lets the pod through.
    declare(real, "ndf-plain", [FEATURE, "ZFutureFeature"])
    wait_for(
        lambda: real.request("GET", "/api/v1/namespaces/default/pods/ndf-needy")["spec"].get(
            "nodeName"
        ),
        30,
        "the real scheduler to bind the pod after the node declared the feature",
    )
    declaring = real.request("GET", "/api/v1/nodes/ndf-plain")
    assert declaring["status"]["declaredFeatures"] == [FEATURE, "ZFutureFeature"]
    declaring_manifest = {**plain, "status": {**plain["status"], "declaredFeatures": [FEATURE]}}
    assert kubesched_outcome([declaring_manifest, needy_pod("ndf-needy")], "ndf-needy") == (
        "ndf-plain",
        None,
    )


def test_the_api_server_refuses_gt_tolerations_with_its_gate_off(real: KubeClient) -> None:
    """v1.36's kube-apiserver keeps TaintTolerationComparisonOperators off by default and
    then refuses a Gt toleration; the embedded cluster refuses it the same way."""
    manifest = make_pod("gt-toleration").manifest()
    manifest["spec"]["tolerations"] = [
        {"key": "tier", "operator": "Gt", "value": "5", "effect": "NoSchedule"}
    ]
    with pytest.raises(BackendError) as excinfo:
        create_object(real, manifest)
    assert 'spec.tolerations[0].operator: Unsupported value: "Gt"' in str(excinfo.value)
