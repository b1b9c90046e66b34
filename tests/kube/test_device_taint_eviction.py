"""The embedded cluster's device taint eviction controller answers as kube-controller-manager
v1.36's device-taint-eviction-controller does: the same bound pod and allocated claim, the
same NoExecute taint put on the device, on a real control plane and on the embedded
cluster, give the same verdict (deleted or kept) and events. (A toleration without an
effect does not count: upstream's controller looks only at NoExecute tolerations.)"""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.testing.envtest import ControlPlane, EnvtestError, assets_dir

from .test_controllers import call

pytestmark = pytest.mark.envtest

EXISTS = {"key": "example.com/broken", "operator": "Exists"}
CASES = {
    "untolerated": [],
    "tolerated-noexecute": [{**EXISTS, "effect": "NoExecute"}],
    "tolerated-any-effect": [EXISTS],
    "tolerated-for-2s": [{**EXISTS, "effect": "NoExecute", "tolerationSeconds": 2}],
    "other-key": [{"key": "example.com/other", "operator": "Exists", "effect": "NoExecute"}],
}
SETTLE_SECONDS = 6.0
"""How long the real controller is given after the taint (the 2 s toleration included)."""


@pytest.fixture(scope="module")
def kcm() -> Iterator[ControlPlane]:
    """A control plane of its own with the device taint eviction controller."""
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS does not name the control plane's binaries")
    with ControlPlane() as cp:
        try:
            cp.start_controller_manager(("device-taint-eviction-controller",))
        except EnvtestError as err:
            pytest.skip(str(err))
        call(
            cp,
            "POST",
            "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        )
        yield cp


def _objects(case: str) -> list[dict[str, Any]]:
    """The class, slice, claim and pod (bound to n1) of ``case``, in its own namespace."""
    driver = f"{case}.example.com"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": case}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": case},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
        _slice(case, []),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c0", "namespace": case},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "req",
                            "exactly": {"deviceClassName": case, "tolerations": CASES[case]},
                        }
                    ]
                }
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p0", "namespace": case},
            "spec": {
                "nodeName": "n1",
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "c", "image": "pause", "resources": {"claims": [{"name": "dev"}]}}
                ],
                "resourceClaims": [{"name": "dev", "resourceClaimName": "c0"}],
            },
        },
    ]


def _slice(case: str, taints: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": case},
        "spec": {
            "driver": f"{case}.example.com",
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "d0", "taints": taints}],
        },
    }


def _allocation(case: str, pod_uid: str) -> dict[str, Any]:
    """What the scheduler would have written: the device, its tolerations, the pod."""
    return {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "req",
                        "driver": f"{case}.example.com",
                        "pool": "n1",
                        "device": "d0",
                        "tolerations": CASES[case],
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "p0", "uid": pod_uid}],
    }


TAINT = {"key": "example.com/broken", "effect": "NoExecute"}


def _path(obj: dict[str, Any]) -> str:
    plural = {
        "Namespace": "/api/v1/namespaces",
        "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
        "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
        "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
        "Pod": "/api/v1/namespaces/{ns}/pods",
    }[obj["kind"]]
    return plural.format(ns=obj["metadata"].get("namespace", ""))


def _real(cp: ControlPlane, case: str) -> dict[str, Any]:
    objects = _objects(case)
    for obj in objects:
        call(cp, "POST", _path(obj), obj)
    pod = call(cp, "GET", f"/api/v1/namespaces/{case}/pods/p0")
    claims = f"/apis/resource.k8s.io/v1/namespaces/{case}/resourceclaims"
    claim = call(cp, "GET", f"{claims}/c0")
    claim["status"] = _allocation(case, pod["metadata"]["uid"])
    call(cp, "PUT", f"{claims}/c0/status", claim)
    time.sleep(1.0)  # the controller's informers see the allocation before the taint
    current = call(cp, "GET", f"/apis/resource.k8s.io/v1/resourceslices/{case}")
    tainted = _slice(case, [TAINT])
    tainted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    call(cp, "PUT", f"/apis/resource.k8s.io/v1/resourceslices/{case}", tainted)
    deadline = time.monotonic() + SETTLE_SECONDS
    last: dict[str, Any] | None = pod
    while time.monotonic() < deadline and last is not None:
        try:
            last = call(cp, "GET", f"/api/v1/namespaces/{case}/pods/p0")
        except urllib.error.HTTPError as err:
            if err.code != 404:
                raise
            last = None
        time.sleep(0.2)
    events = call(cp, "GET", f"/api/v1/namespaces/{case}/events")["items"]
    return {
        "deleted": last is None,
        "events": sorted(
            (e["reason"], e["message"], e["source"].get("component"))
            for e in events
            if e["involvedObject"]["name"] == "p0"
        ),
    }


def _embedded(case: str) -> dict[str, Any]:
    cluster = MemoryCluster(FakeClock())
    objects = _objects(case)
    for obj in objects:
        cluster.create(parse_object(obj))
    pod = cluster.get("Pod", case, "p0")
    claim = cluster.get("ResourceClaim", case, "c0").model_copy(deep=True)
    claim.status = type(claim.status).model_validate(_allocation(case, pod.metadata.uid))
    cluster.update(claim)
    cluster.clock.step(1.0)
    cluster.advance()
    current = cluster.get("ResourceSlice", None, case)
    tainted = parse_object(_slice(case, [TAINT]))
    tainted.metadata.resource_version = current.metadata.resource_version
    cluster.update(tainted)
    cluster.clock.step(SETTLE_SECONDS)
    cluster.advance()
    return {
        "deleted": cluster.try_get("Pod", case, "p0") is None,
        "events": sorted(
            (e.reason, e.message, e.reporting_controller)
            for e in cluster.events
            if e.involved_name == "p0" and e.reason == "DeviceTaintManagerEviction"
        ),
    }


@pytest.mark.parametrize("case", list(CASES))
def test_device_taint_eviction_is_kube_controller_managers(kcm: ControlPlane, case: str) -> None:
    real = _real(kcm, case)
    assert _embedded(case) == real
