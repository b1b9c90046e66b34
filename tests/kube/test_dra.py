"""Devices on a real cluster: ``kubesched run`` watches resource.k8s.io/v1 classes, slices and
claims, and DynamicResources writes the allocation and reservation through the API."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing import make_pod
from kubesched.testing.envtest import ControlPlane

from .conftest import NOMINATING_SCHEDULERS, Api, InProcess, status_of, wait_for, write_config
from .test_storage import nodes

pytestmark = pytest.mark.envtest

DRIVER = "gpu.example.com"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


@pytest.fixture
def dra_api(api: Api) -> Iterator[Api]:
    """The admin client; the DRA objects a test made are deleted after it (the claims'
    finalizers dropped: no resourceclaim controller runs to lift them)."""
    yield api
    api.delete("/api/v1/namespaces/default/pods", gracePeriodSeconds=0)
    api.delete_all(CLAIMS)
    api.delete("/apis/resource.k8s.io/v1/resourceslices")
    api.delete("/apis/resource.k8s.io/v1/deviceclasses")


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def node_slice(node: str, devices: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


def resource_claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }


def pod_with_claim(name: str, claim: str) -> dict[str, Any]:
    manifest = make_pod(name).req(cpu="100m", memory="64Mi").manifest()
    spec = manifest["spec"]
    spec["terminationGracePeriodSeconds"] = 0
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    spec["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]
    return manifest


def test_claims_are_allocated_from_the_slice_and_written_through_the_api(
    dra_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = dra_api
    nodes(api, 3)
    api.create(device_class())
    api.create(node_slice("n1", 1))  # one device, on n1 only
    api.create(resource_claim("claim-a"))
    api.create(resource_claim("claim-b"))
    in_process()
    api.create(pod_with_claim("a", "claim-a"))
    placed = wait_for(lambda: api.node_of("a"), 30, "a bound")
    assert placed == "n1"
    claim = api.client.request("GET", f"{CLAIMS}/claim-a")
    pod = api.pod("a")
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "a", "uid": pod["metadata"]["uid"]}
    ]
    allocation = claim["status"]["allocation"]
    assert allocation["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}
    ]
    (term,) = allocation["nodeSelector"]["nodeSelectorTerms"]
    assert term["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
    assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    # The only device is taken: the second claim cannot be allocated anywhere.
    api.create(pod_with_claim("b", "claim-b"))
    condition = api.unschedulable("b")
    assert "cannot allocate all claims" in condition["message"]
    assert "allocation" not in api.client.request("GET", f"{CLAIMS}/claim-b").get("status", {})


def test_extended_resources_are_served_by_a_claim_the_scheduler_creates(
    dra_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = dra_api
    nodes(api, 2)
    gpu_class = device_class()
    gpu_class["spec"]["extendedResourceName"] = "example.com/gpu"
    api.create(gpu_class)
    api.create(node_slice("n1", 1))
    in_process()
    manifest = make_pod("a").req(cpu="100m", memory="64Mi").manifest()
    manifest["spec"]["terminationGracePeriodSeconds"] = 0
    resources = manifest["spec"]["containers"][0]["resources"]
    resources["requests"]["example.com/gpu"] = "1"
    resources["limits"] = {"example.com/gpu": "1"}
    api.create(manifest)
    assert wait_for(lambda: api.node_of("a"), 30, "a bound") == "n1"
    pod = api.pod("a")
    status = wait_for(
        lambda: (api.pod("a") or {}).get("status", {}).get("extendedResourceClaimStatus"),
        30,
        "the pod's extendedResourceClaimStatus",
    )
    name = status["resourceClaimName"]
    assert name.startswith("a-extended-resources-")
    assert status["requestMappings"] == [
        {
            "containerName": manifest["spec"]["containers"][0]["name"],
            "resourceName": "example.com/gpu",
            "requestName": "container-0-request-1",
        }
    ]
    claim = api.client.request("GET", f"{CLAIMS}/{name}")
    assert claim["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"
    }
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "container-0-request-1", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}
    ]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["a"]


def fabric_slice(node: str) -> dict[str, Any]:
    """One device on ``node`` that is usable once its driver reports it attached."""
    sl = node_slice(node, 1)
    sl["spec"]["devices"][0].update(
        bindingConditions=["example.com/attached"],
        bindingFailureConditions=["example.com/failed"],
    )
    return sl


def set_device_condition(api: Api, claim: str, condition: str) -> None:
    """Play the driver: set ``condition`` True in the claim's device status."""
    current = api.client.request("GET", f"{CLAIMS}/{claim}")
    result = current["status"]["allocation"]["devices"]["results"][0]
    current["status"]["devices"] = [
        {
            **{k: result[k] for k in ("driver", "pool", "device")},
            "conditions": [
                {
                    "type": condition,
                    "status": "True",
                    "reason": "Driver",
                    "message": "said so",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    ]
    api.client.request("PUT", f"{CLAIMS}/{claim}/status", body=current)


def binding_pending(api: Api) -> list[str]:
    return [e["note"] for e in api.events() if e["reason"] == "BindingConditionsPending"]


def pod_waiting_in_prebind(
    api: Api, in_process: Callable[..., InProcess], config: dict[str, Any] | None = None
) -> tuple[InProcess, list[str]]:
    """Pod ``a`` with ``claim-a`` for a device with binding conditions on ``n1``, waiting
    in PreBind: the scheduler, and the ``BindingConditionsPending`` events."""
    nodes(api, 2)
    api.create(device_class())
    api.create(fabric_slice("n1"))
    api.create(resource_claim("claim-a"))
    scheduler = in_process(config)
    api.create(pod_with_claim("a", "claim-a"))
    return scheduler, wait_for(lambda: binding_pending(api), 30, "BindingConditionsPending")


def test_prebind_waits_for_the_drivers_binding_conditions(
    dra_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = dra_api
    _, pending = pod_waiting_in_prebind(api, in_process)
    assert pending == ["waiting for binding conditions for device on node n1"]
    claim = api.client.request("GET", f"{CLAIMS}/claim-a")
    assert claim["status"]["allocation"]["allocationTimestamp"]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["a"]
    assert api.node_of("a") is None  # still waiting in PreBind
    set_device_condition(api, "claim-a", "example.com/attached")
    # PreBind looks again within 5 seconds.
    assert wait_for(lambda: api.node_of("a"), 30, "a bound") == "n1"


def test_shutdown_cuts_short_a_prebind_waiting_for_binding_conditions(
    dra_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = dra_api
    # bindingTimeout: the default, 10 minutes; no driver ever answers.
    scheduler, _ = pod_waiting_in_prebind(api, in_process)
    started = time.monotonic()
    assert scheduler.stop() == 0
    # The wait ends with the scheduler, not at bindingTimeout.
    assert time.monotonic() - started < 20
    # The binding cycle rolled back: the claim is no longer reserved for the pod.
    claim = api.client.request("GET", f"{CLAIMS}/claim-a")
    assert claim["status"].get("reservedFor", []) == []
    assert api.node_of("a") is None


def test_a_failed_binding_deallocates_the_claim(
    dra_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = dra_api
    pod_waiting_in_prebind(api, in_process)
    first = api.client.request("GET", f"{CLAIMS}/claim-a")["status"]["allocation"]
    set_device_condition(api, "claim-a", "example.com/failed")
    failed = wait_for(
        lambda: [e["note"] for e in api.events() if e["reason"] == "FailedScheduling"],
        30,
        "FailedScheduling",
    )
    assert failed[0] == (
        'running PreBind plugin "DynamicResources": claim claim-a binding failed: '
        'reason=Driver, message="said so"'
    )
    wait_for(lambda: reallocated(api, first), 40, "the claim deallocated")
    assert api.node_of("a") is None


def reallocated(api: Api, first: dict[str, Any]) -> bool:
    """Whether a later attempt deallocated claim-a (its device status went with the
    allocation ``first``), and perhaps allocated it afresh since."""
    status = api.client.request("GET", f"{CLAIMS}/claim-a")["status"]
    allocation = status.get("allocation")
    return allocation is None or (
        allocation["allocationTimestamp"] != first["allocationTimestamp"]
        and not status.get("devices")
    )


def test_a_binding_that_times_out_gets_the_claim_deallocated(
    dra_api: Api, in_process: Callable[..., InProcess]
) -> None:
    api = dra_api
    config = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "DynamicResources", "args": {"bindingTimeout": "3s"}}],
            }
        ]
    }
    pod_waiting_in_prebind(api, in_process, config)  # no driver ever answers
    first = api.client.request("GET", f"{CLAIMS}/claim-a")["status"]["allocation"]
    failed = wait_for(
        lambda: [e["note"] for e in api.events() if e["reason"] == "FailedScheduling"],
        30,
        "FailedScheduling",
    )
    assert failed[0] == 'running PreBind plugin "DynamicResources": device binding timeout'
    wait_for(lambda: reallocated(api, first), 40, "the claim deallocated")


# NominatedNodeNameForExpectation on the DRA path, side by side with the real
# kube-scheduler: DynamicResources' PreBindPreFlight has claims to bind, so the chosen node
# is the pod's nominatedNodeName while PreBind waits for the binding conditions, and the
# binding clears it (kube-apiserver's ClearingNominatedNodeNameAfterBinding).


def reserved_for(api: Api, claim: str) -> list[str]:
    """The names of the pods ``claim`` is reserved for."""
    status = api.client.request("GET", f"{CLAIMS}/{claim}").get("status", {})
    return [r["name"] for r in status.get("reservedFor", ())]


@pytest.mark.usefixtures("dra_api")
@pytest.mark.parametrize("nominating_scheduler", NOMINATING_SCHEDULERS, indirect=True)
@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
def test_a_pod_waiting_for_binding_conditions_is_nominated_until_bound(
    api: Api, nominating_scheduler: Callable[[bool], AbstractContextManager[None]], gate: bool
) -> None:
    nodes(api, 2)
    api.create(device_class())
    api.create(fabric_slice("n1"))
    api.create(resource_claim("claim-a"))
    with nominating_scheduler(gate):
        api.create(pod_with_claim("a", "claim-a"))
        # PreBind reserved the claim and waits for the driver; the nomination came first.
        wait_for(lambda: reserved_for(api, "claim-a") == ["a"], 30, "the claim reserved")
        assert status_of(api, "a").get("nominatedNodeName") == ("n1" if gate else None)
        assert api.node_of("a") is None
        set_device_condition(api, "claim-a", "example.com/attached")
        assert wait_for(lambda: api.node_of("a"), 30, "a bound") == "n1"
        assert "nominatedNodeName" not in status_of(api, "a")


TAINT_RULES = "/apis/resource.k8s.io/v1beta2/devicetaintrules"


def test_device_taint_rules_keep_devices_from_claims_that_do_not_tolerate_them(
    workload_api: Api, workload_control_plane: ControlPlane, tmp_path: Path
) -> None:
    """With DRADeviceTaintRules ``kubesched run`` watches resource.k8s.io/v1beta2
    DeviceTaintRules: a rule's NoSchedule taint keeps its device from a claim, and the
    rule's deletion gives the device back to the pod that waited for it."""
    api = workload_api
    nodes(api, 1)
    api.create(device_class())
    api.create(node_slice("n0", 2))
    api.create(
        {
            "apiVersion": "resource.k8s.io/v1beta2",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "gpu-0-broken"},
            "spec": {
                "deviceSelector": {"driver": DRIVER, "device": "gpu-0"},
                "taint": {"key": "example.com/broken", "effect": "NoSchedule"},
            },
        }
    )
    api.create(resource_claim("claim-a"))
    api.create(resource_claim("claim-b"))
    scheduler = InProcess(
        workload_control_plane, write_config(tmp_path), gates=("DRADeviceTaintRules=true",)
    )
    try:
        scheduler.start()
        api.create(pod_with_claim("a", "claim-a"))
        wait_for(lambda: api.node_of("a"), 30, "a bound")
        results = api.client.request("GET", f"{CLAIMS}/claim-a")["status"]["allocation"]
        assert [r["device"] for r in results["devices"]["results"]] == ["gpu-1"]
        api.create(pod_with_claim("b", "claim-b"))
        assert "cannot allocate all claims" in api.unschedulable("b")["message"]
        api.delete(f"{TAINT_RULES}/gpu-0-broken")
        wait_for(lambda: api.node_of("b"), 30, "b bound once the rule is gone")
        results = api.client.request("GET", f"{CLAIMS}/claim-b")["status"]["allocation"]
        assert [r["device"] for r in results["devices"]["results"]] == ["gpu-0"]
    finally:
        scheduler.stop()
        api.delete(TAINT_RULES)
        api.delete_all(CLAIMS)
        api.delete("/apis/resource.k8s.io/v1/resourceslices")
        api.delete("/apis/resource.k8s.io/v1/deviceclasses")
