"""The side-by-side harness's workloads with phases or gangs through a real API server: churn's
deletions and late pods, and gang with kubesched's Coscheduling (scheduler-plugins' PodGroup
CRD) and with kube-scheduler v1.36's own gang scheduling (alpha feature gates)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.backend.kube.client import MERGE_PATCH
from kubesched.bench.kube import (
    CONTROLLERS,
    GANG_APISERVER_ARGS,
    GANG_SCHEDULER_ARGS,
    as_kube_gangs,
    install_pod_group_crd,
    run_on_api_server,
    start_kubesched,
)
from kubesched.bench.runner import BenchError
from kubesched.bench.workloads import (
    CHURN_ROUNDS,
    GANG_PLUGINS,
    build_workload,
    node_manifest,
    pod_manifest,
)
from kubesched.testing.envtest import (
    ControlPlane,
    EnvtestError,
    assets_dir,
    collection_path,
    create_objects,
)

from .conftest import Api, bound, wait_for

pytestmark = pytest.mark.envtest

NODES, PODS = 6, 30


@pytest.fixture(scope="module")
def gang_plane() -> Iterator[ControlPlane]:
    """A control plane of this module's own, serving kube-scheduler's gang API, with the
    PV controller that binds the stateful workload's provisioned claims."""
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS is not set")
    with ControlPlane(apiserver_args=GANG_APISERVER_ARGS) as cp:
        try:
            cp.start_controller_manager(CONTROLLERS["stateful"])
        except EnvtestError as err:
            pytest.skip(str(err))
        yield cp


def _external(cp: ControlPlane, tmp_path: Path, args: tuple[str, ...] = ()) -> list[str]:
    try:
        return cp.kube_scheduler_command(tmp_path, None, args)
    except EnvtestError as err:
        pytest.skip(str(err))


def _empty(api: Api) -> bool:
    return (
        not api.client.request("GET", "/api/v1/pods")["items"]
        and not api.client.request("GET", "/api/v1/nodes")["items"]
    )


@pytest.mark.parametrize("scheduler", ["kubesched", "external"])
def test_churn_deletes_then_adds_pods_once_settled(
    control_plane: ControlPlane, api: Api, tmp_path: Path, scheduler: str
) -> None:
    command = _external(control_plane, tmp_path) if scheduler == "external" else None
    result = run_on_api_server(
        "churn",
        NODES,
        PODS,
        kubeconfig=str(control_plane.kubeconfig),
        scheduler=scheduler,
        external_command=command,
        timeout=120,
    )
    # Every measured pod of every round is bound; the running pods are not counted.
    assert result.bound == PODS
    assert result.pods_per_second and result.pods_per_second > 0
    # Before each later round, a quarter of the pods still running was deleted.
    steps = build_workload("churn", NODES, PODS).churn
    assert len(steps) == CHURN_ROUNDS - 1
    assert result.deleted == sum(len(s.delete) for s in steps) > 0
    assert _empty(api)


def test_gang_under_kubesched_reads_the_podgroup_crd(control_plane: ControlPlane, api: Api) -> None:
    result = run_on_api_server(
        "gang", NODES, PODS, kubeconfig=str(control_plane.kubeconfig), timeout=120
    )
    assert result.bound == PODS
    assert _empty(api)
    assert not api.client.request(
        "GET", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
    )["items"]


def test_network_aware_under_kubesched_installs_its_crds(
    control_plane: ControlPlane, api: Api
) -> None:
    """The AppGroup and NetworkTopology the set-up creates need their CRDs, which the bench
    installs as it does Coscheduling's PodGroup's."""
    result = run_on_api_server(
        "network-aware", NODES, PODS, kubeconfig=str(control_plane.kubeconfig), timeout=120
    )
    assert result.bound == PODS
    assert _empty(api)
    for path in (
        "/apis/appgroup.diktyo.x-k8s.io/v1alpha1/namespaces/default/appgroups",
        "/apis/networktopology.diktyo.x-k8s.io/v1alpha1/namespaces/default/networktopologies",
    ):
        assert not api.client.request("GET", path)["items"]


def test_gang_under_external_needs_the_workload_api(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    with pytest.raises(BenchError, match=r"cannot run under external.*GenericWorkload"):
        run_on_api_server(
            "gang",
            NODES,
            PODS,
            kubeconfig=str(control_plane.kubeconfig),
            scheduler="external",
            external_command=_external(control_plane, tmp_path),
        )
    assert _empty(api)  # refused before anything was created


def test_gang_under_external_with_the_feature_gates(gang_plane: ControlPlane, tmp_path) -> None:
    command = _external(gang_plane, tmp_path, GANG_SCHEDULER_ARGS)
    result = run_on_api_server(
        "gang",
        NODES,
        PODS,
        kubeconfig=str(gang_plane.kubeconfig),
        scheduler="external",
        external_command=command,
        timeout=120,
    )
    assert result.bound == PODS
    api = Api(gang_plane)
    assert _empty(api)
    assert not api.client.request(
        "GET", "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups"
    )["items"]


def _incomplete_gang(api: Api, group: dict, member) -> None:
    """Two of a gang of three stay pending; the third completes it and all bind."""
    create_objects(api.client, [node_manifest(0), node_manifest(1), group])
    create_objects(api.client, [member(0), member(1)])
    time.sleep(5)  # time enough to bind them, were they not a gang
    assert not bound(api.pods())
    create_objects(api.client, [member(2)])
    wait_for(lambda: len(bound(api.pods())) == 3, 60, "the complete gang to bind")


def _member(name: str, group: str, kube: bool):
    def make(i: int) -> dict:
        pod = pod_manifest(f"{name}-{i}", labels={"scheduling.x-k8s.io/pod-group": group})
        if kube:
            pod["spec"]["schedulingGroup"] = {"podGroupName": group}
        return pod

    return make


@pytest.mark.parametrize("scheduler", ["kubesched", "external"])
def test_an_incomplete_gang_is_held(request, tmp_path: Path, scheduler: str) -> None:
    """What both figures measure is a gang: ``kubesched run`` watches the PodGroup CRD
    (Coscheduling sees the quorum), the feature gates make kube-scheduler hold the group."""
    external = scheduler == "external"
    plane: ControlPlane = request.getfixturevalue("gang_plane" if external else "control_plane")
    api = Api(plane)
    api.clean()
    if external:
        group = as_kube_gangs([_pod_group("trio", 3)])[0]
        proc = subprocess.Popen(
            _external(plane, tmp_path, GANG_SCHEDULER_ARGS),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    else:
        install_pod_group_crd(api.client)
        group = _pod_group("trio", 3)
        proc, _ = start_kubesched(str(plane.kubeconfig), tmp_path, None, GANG_PLUGINS)
    try:
        _incomplete_gang(api, group, _member("trio", "trio", kube=external))
    finally:
        proc.terminate()
        proc.wait(30)
        path = f"{collection_path(group)}/trio"
        api.client.request(
            "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
        )
        api.delete(path)
        api.clean()


def _pod_group(name: str, min_member: int) -> dict:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member},
    }


@pytest.mark.parametrize("scheduler", ["kubesched", "external"])
def test_stateful_claims_are_provisioned_by_the_bench(
    gang_plane: ControlPlane, tmp_path: Path, scheduler: str
) -> None:
    command = _external(gang_plane, tmp_path) if scheduler == "external" else None
    result = run_on_api_server(
        "stateful",
        3,
        6,
        kubeconfig=str(gang_plane.kubeconfig),
        scheduler=scheduler,
        external_command=command,
        timeout=120,
    )
    assert result.bound == 6
    api = Api(gang_plane)
    assert _empty(api)
    for left in ("/api/v1/persistentvolumes", "/api/v1/persistentvolumeclaims"):
        assert not api.client.request("GET", left)["items"], left
