"""Volumes on a real cluster: ``kubesched run`` watches PVs, PVCs and StorageClasses and binds
claims through the API (VolumeBinding PreBind) beside the real PV controller."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, EnvtestError
from kubesched_builtin.dynamicresources.plugin import DynamicResources
from kubesched_builtin.nodevolumelimits import NodeVolumeLimits
from kubesched_builtin.volumebinding import VolumeBinding
from kubesched_builtin.volumerestrictions import VolumeRestrictions
from kubesched_builtin.volumezone import VolumeZone
from tests.storage_gates import local_pv

from .conftest import NOMINATING_SCHEDULERS, Api, InProcess, status_of, wait_for

pytestmark = pytest.mark.envtest

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture(scope="module")
def pv_controller(control_plane: ControlPlane) -> ControlPlane:
    """The real PV controller (kube-controller-manager's persistentvolume-binder only)."""
    try:
        control_plane.start_controller_manager(("persistentvolume-binder-controller",))
    except EnvtestError as err:
        pytest.skip(str(err))
    return control_plane


@pytest.fixture
def storage_api(api: Api, pv_controller: ControlPlane) -> Iterator[Api]:
    """The admin client; the claims, volumes and classes a test made are deleted after it
    (the pods first, so that the claims are not held)."""
    yield api
    api.delete("/api/v1/namespaces/default/pods", gracePeriodSeconds=0)
    api.delete_all("/api/v1/namespaces/default/persistentvolumeclaims")
    api.delete_all("/api/v1/persistentvolumes")
    api.delete("/apis/storage.k8s.io/v1/storageclasses")


def storage_class(name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner") -> dict:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }


def claim(name: str, class_name: str, mode: str = "ReadWriteOnce", size: str = "1Gi") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": [mode],
            "storageClassName": class_name,
            "resources": {"requests": {"storage": size}},
        },
    }


def pod_with_claim(name: str, claim_name: str) -> dict[str, Any]:
    manifest = make_pod(name).req(cpu="100m", memory="64Mi").pvc(claim_name).manifest()
    manifest["spec"]["terminationGracePeriodSeconds"] = 0
    return manifest


def nodes(api: Api, count: int) -> None:
    """Nodes n0.. labelled with their hostname, as kubelets label them."""
    api.create_many(
        [
            make_node(f"n{i}")
            .capacity(cpu="4", memory="16Gi", pods=110)
            .labels({"kubernetes.io/hostname": f"n{i}"})
            .manifest()
            for i in range(count)
        ]
    )


def get(api: Api, path: str) -> dict[str, Any]:
    return api.client.request("GET", path)


def pvc_path(name: str) -> str:
    return f"/api/v1/namespaces/default/persistentvolumeclaims/{name}"


def wait_for_selected_node(api: Api, claim_name: str) -> str:
    """The node VolumeBinding's PreBind wrote on the claim (its selected-node annotation),
    once it is there."""
    return wait_for(
        lambda: (
            get(api, pvc_path(claim_name))["metadata"].get("annotations", {}).get(ANN_SELECTED_NODE)
        ),
        30,
        "PreBind to write the selected-node annotation",
    )


def test_the_storage_kinds_are_watched_only_for_profiles_that_need_them(
    storage_api: Api, in_process: Callable[..., InProcess]
) -> None:
    plugins = (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits, DynamicResources)
    kinds = {kind for plugin in plugins for kind in plugin.reads}
    assert len(kinds) == 9  # the six storage kinds and three of resource.k8s.io
    default = in_process()
    assert kinds <= default.cluster.watchable_kinds
    assert default.cluster.writes == {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "ResourceClaim",
        "ResourceClaim/status",
        "ResourceClaim/create",
        "Pod/status",
    }
    disabled = [{"name": plugin.name} for plugin in plugins]
    without = in_process(
        {
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"multiPoint": {"disabled": disabled}},
                }
            ]
        }
    )
    assert not kinds & without.cluster.watchable_kinds
    assert not without.cluster.writes


def test_immediate_claim_lands_on_the_node_of_its_volume(
    storage_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = storage_api
    nodes(api, 3)
    api.create(storage_class("immediate", "Immediate"))
    api.create(local_pv("pv-n2", "n2", "immediate"))
    in_process()
    # The pod comes first: unbound immediate claim, then the PV controller binds it and
    # the claim's update requeues the pod.
    api.create(pod_with_claim("app", "data"))
    api.create(claim("data", "immediate"))
    assert wait_for(lambda: api.node_of("app"), 30, "the pod to be bound") == "n2"
    assert get(api, pvc_path("data"))["spec"]["volumeName"] == "pv-n2"


def test_wait_for_first_consumer_binds_the_matching_volume_through_the_api(
    storage_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = storage_api
    nodes(api, 3)
    api.create(storage_class("local", "WaitForFirstConsumer"))
    api.create(local_pv("pv-n1", "n1", "local"))
    api.create(local_pv("pv-n0-small", "n0", "local", size="100Mi"))
    api.create(claim("data", "local"))
    in_process()
    api.create(pod_with_claim("app", "data"))
    assert wait_for(lambda: api.node_of("app"), 30, "the pod to be bound") == "n1"
    pv = get(api, "/api/v1/persistentvolumes/pv-n1")
    pvc = get(api, pvc_path("data"))
    # PreBind set the PV's claimRef; the PV controller completed the binding.
    assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert pvc["spec"]["volumeName"] == "pv-n1"
    assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    # The volume's other fields (its local path, not modelled by kubesched) are kept.
    assert pv["spec"]["local"] == {"path": "/mnt/pv-n1"}


def test_wait_for_first_consumer_provisioning_times_out_without_a_provisioner(
    storage_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = storage_api
    nodes(api, 2)
    api.create(storage_class("csi", "WaitForFirstConsumer", provisioner="csi.example.com"))
    api.create(claim("data", "csi"))
    in_process(
        {
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 2}}],
                }
            ]
        }
    )
    api.create(pod_with_claim("app", "data"))
    selected = wait_for_selected_node(api, "data")
    assert selected in ("n0", "n1")
    condition = api.unschedulable("app")
    assert "binding volumes: context deadline exceeded" in condition["message"]
    assert api.node_of("app") is None


def test_shutdown_cuts_short_a_prebind_waiting_for_a_provisioner(
    storage_api: Api, in_process: Callable[..., InProcess]
) -> None:
    """A claim no provisioner serves keeps VolumeBinding's PreBind waiting (10 minutes by
    default): stopping the scheduler ends the wait at once, not at ``bindTimeoutSeconds``."""
    api = storage_api
    nodes(api, 2)
    api.create(storage_class("csi", "WaitForFirstConsumer", provisioner="csi.example.com"))
    api.create(claim("data", "csi"))
    scheduler = in_process()
    api.create(pod_with_claim("app", "data"))
    wait_for_selected_node(api, "data")
    started = time.monotonic()
    assert scheduler.stop() == 0
    assert time.monotonic() - started < 20
    assert api.node_of("app") is None


def test_read_write_once_pod_claim_is_not_shared(
    storage_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = storage_api
    nodes(api, 2)
    api.create(storage_class("immediate", "Immediate"))
    pv = local_pv("pv-n0", "n0", "immediate")
    pv["spec"]["accessModes"] = ["ReadWriteOncePod"]
    api.create(pv)
    api.create(claim("solo", "immediate", mode="ReadWriteOncePod"))
    wait_for(lambda: get(api, pvc_path("solo"))["spec"].get("volumeName"), 30, "the claim bound")
    in_process()
    api.create(pod_with_claim("first", "solo"))
    assert wait_for(lambda: api.node_of("first"), 30, "the first pod to be bound") == "n0"
    api.create(pod_with_claim("second", "solo"))
    condition = api.unschedulable("second")
    assert (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod" in condition["message"]
    )
    assert api.node_of("second") is None


# NominatedNodeNameForExpectation and ClearingNominatedNodeNameAfterBinding, side by side
# with the real kube-scheduler: status.nominatedNodeName names the chosen node while
# VolumeBinding's PreBind waits, and is gone once the pod is bound.


@pytest.mark.usefixtures("storage_api")
@pytest.mark.parametrize("nominating_scheduler", NOMINATING_SCHEDULERS, indirect=True)
@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
def test_a_pod_waiting_in_prebind_is_nominated_to_its_chosen_node(
    api: Api, nominating_scheduler: Callable[[bool], AbstractContextManager[None]], gate: bool
) -> None:
    """A claim no provisioner serves keeps VolumeBinding's PreBind waiting."""
    nodes(api, 2)
    api.create(storage_class("csi", "WaitForFirstConsumer", provisioner="csi.example.com"))
    api.create(claim("data", "csi"))
    with nominating_scheduler(gate):
        api.create(pod_with_claim("app", "data"))
        selected = wait_for_selected_node(api, "data")
        if gate:
            nominated = wait_for(
                lambda: status_of(api, "app").get("nominatedNodeName"), 10, "the nomination"
            )
            assert nominated == selected
        else:
            assert "nominatedNodeName" not in status_of(api, "app")
        assert api.node_of("app") is None


@pytest.mark.usefixtures("storage_api")
@pytest.mark.parametrize("nominating_scheduler", NOMINATING_SCHEDULERS, indirect=True)
def test_the_nomination_is_cleared_when_the_pod_binds(
    api: Api, nominating_scheduler: Callable[[bool], AbstractContextManager[None]]
) -> None:
    nodes(api, 2)
    api.create(storage_class("local", "WaitForFirstConsumer"))
    api.create(local_pv("pv-n1", "n1", "local"))
    api.create(claim("data", "local"))
    with nominating_scheduler(True):
        api.create(pod_with_claim("app", "data"))
        assert wait_for(lambda: api.node_of("app"), 30, "the pod to be bound") == "n1"
        assert "nominatedNodeName" not in status_of(api, "app")
