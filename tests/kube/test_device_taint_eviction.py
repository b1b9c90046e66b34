"""The embedded cluster's device taint eviction controller answers as kube-controller-manager
v1.36's device-taint-eviction-controller does: the same bound pod and allocated claim, the
same NoExecute taint put on the device, on a real control plane and on the embedded
cluster, give the same verdict (deleted or kept) and events. (A toleration without an
effect does not count: upstream's controller looks only at NoExecute tolerations.)

With DRADeviceTaintRules the taint comes from a DeviceTaintRule instead, and the rule's
``EvictionInProgress`` condition is compared too, once the controller's delayed status
update after an eviction has come."""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.testing.envtest import (
    DEVICE_TAINT_RULE_APISERVER_ARGS,
    DEVICE_TAINT_RULE_GATES,
    ControlPlane,
    EnvtestError,
    assets_dir,
)

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
RULE_CASES = {
    # case: (the rule's effect, the device it selects, the request's tolerations)
    "rule-untolerated": ("NoExecute", "d0", []),
    "rule-tolerated": ("NoExecute", "d0", [{**EXISTS, "effect": "NoExecute"}]),
    "rule-tolerated-for-2s": (
        "NoExecute",
        "d0",
        [{**EXISTS, "effect": "NoExecute", "tolerationSeconds": 2}],
    ),
    "rule-other-device": ("NoExecute", "d1", []),
    "rule-effect-none": ("None", "d0", []),
    "rule-noschedule": ("NoSchedule", "d0", []),
}
RULE_SETTLE_SECONDS = 15.0
"""After the rule: the eviction (2 s at most) and the status update 10 s after it."""


def _kcm(
    apiserver_args: tuple[str, ...] = (), args: tuple[str, ...] = ()
) -> Iterator[ControlPlane]:
    """A control plane of its own with the device taint eviction controller and node n1."""
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS does not name the control plane's binaries")
    with ControlPlane(apiserver_args=apiserver_args) as cp:
        try:
            cp.start_controller_manager(("device-taint-eviction-controller",), args=args)
        except EnvtestError as err:
            pytest.skip(str(err))
        call(
            cp,
            "POST",
            "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        )
        yield cp


@pytest.fixture(scope="module")
def kcm() -> Iterator[ControlPlane]:
    """The device taint eviction controller with v1.36's default gates."""
    yield from _kcm()


def _tolerations(case: str) -> list[dict[str, Any]]:
    return RULE_CASES[case][2] if case in RULE_CASES else CASES[case]


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
                            "exactly": {
                                "deviceClassName": case,
                                "tolerations": _tolerations(case),
                            },
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
            "devices": [{"name": "d0", "taints": taints}, {"name": "d1"}],
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
                        "tolerations": _tolerations(case),
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
        "DeviceTaintRule": "/apis/resource.k8s.io/v1beta2/devicetaintrules",
    }[obj["kind"]]
    return plural.format(ns=obj["metadata"].get("namespace", ""))


def _rule(case: str) -> dict[str, Any]:
    effect, device, _ = RULE_CASES[case]
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": case},
        "spec": {
            "deviceSelector": {"driver": f"{case}.example.com", "device": device},
            "taint": {"key": "example.com/broken", "effect": effect},
        },
    }


def _taint_real(cp: ControlPlane, case: str) -> None:
    """Create the case's objects and allocation, then taint the device (its slice, or a
    DeviceTaintRule for the rule cases)."""
    for obj in _objects(case):
        call(cp, "POST", _path(obj), obj)
    pod = call(cp, "GET", f"/api/v1/namespaces/{case}/pods/p0")
    claims = f"/apis/resource.k8s.io/v1/namespaces/{case}/resourceclaims"
    claim = call(cp, "GET", f"{claims}/c0")
    claim["status"] = _allocation(case, pod["metadata"]["uid"])
    call(cp, "PUT", f"{claims}/c0/status", claim)
    time.sleep(1.0)  # the controller's informers see the allocation before the taint
    if case in RULE_CASES:
        rule = _rule(case)
        call(cp, "POST", _path(rule), rule)
        return
    current = call(cp, "GET", f"/apis/resource.k8s.io/v1/resourceslices/{case}")
    tainted = _slice(case, [TAINT])
    tainted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    call(cp, "PUT", f"/apis/resource.k8s.io/v1/resourceslices/{case}", tainted)


def _outcome_real(cp: ControlPlane, case: str, settle: float) -> dict[str, Any]:
    """Whether the case's pod was deleted within ``settle`` seconds, and the events."""
    deadline = time.monotonic() + settle
    last: dict[str, Any] | None = {}
    while last is not None:
        try:
            last = call(cp, "GET", f"/api/v1/namespaces/{case}/pods/p0")
        except urllib.error.HTTPError as err:
            if err.code != 404:
                raise
            last = None
        if time.monotonic() >= deadline:
            break
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


def _real(cp: ControlPlane, case: str) -> dict[str, Any]:
    _taint_real(cp, case)
    return _outcome_real(cp, case, SETTLE_SECONDS)


def _embedded(case: str, settle: float = SETTLE_SECONDS) -> dict[str, Any]:
    cluster = MemoryCluster(FakeClock())
    cluster.device_taint_eviction.taint_rules = case in RULE_CASES
    objects = _objects(case)
    for obj in objects:
        cluster.create(parse_object(obj))
    pod = cluster.get("Pod", case, "p0")
    claim = cluster.get("ResourceClaim", case, "c0").model_copy(deep=True)
    claim.status = type(claim.status).model_validate(_allocation(case, pod.metadata.uid))
    cluster.update(claim)
    cluster.clock.step(1.0)
    cluster.advance()
    if case in RULE_CASES:
        cluster.create(parse_object(_rule(case)))
    else:
        current = cluster.get("ResourceSlice", None, case)
        tainted = parse_object(_slice(case, [TAINT]))
        tainted.metadata.resource_version = current.metadata.resource_version
        cluster.update(tainted)
    for _ in range(int(settle)):  # second by second: each timer runs at its own time
        cluster.clock.step(1.0)
        cluster.advance()
    outcome: dict[str, Any] = {
        "deleted": cluster.try_get("Pod", case, "p0") is None,
        "events": sorted(
            (e.reason, e.message, e.reporting_controller)
            for e in cluster.events
            if e.involved_name == "p0" and e.reason == "DeviceTaintManagerEviction"
        ),
    }
    if case in RULE_CASES:
        outcome["condition"] = _condition(cluster.get("DeviceTaintRule", None, case).to_dict())
    return outcome


def _condition(rule: dict[str, Any]) -> dict[str, Any] | None:
    """The rule's ``EvictionInProgress`` condition without its time."""
    for c in (rule.get("status") or {}).get("conditions") or ():
        if c["type"] == "EvictionInProgress":
            return {k: v for k, v in c.items() if k != "lastTransitionTime"}
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_device_taint_eviction_is_kube_controller_managers(kcm: ControlPlane, case: str) -> None:
    real = _real(kcm, case)
    assert _embedded(case) == real


@pytest.fixture(scope="module")
def rule_outcomes() -> Iterator[dict[str, dict[str, Any]]]:
    """What kube-controller-manager with DRADeviceTaintRules made of every rule case: all
    set up first, then observed together (the status update comes 10 s after an
    eviction, which would make one case after the other slow)."""
    for cp in _kcm(DEVICE_TAINT_RULE_APISERVER_ARGS, (DEVICE_TAINT_RULE_GATES,)):
        for case in RULE_CASES:
            _taint_real(cp, case)
        time.sleep(RULE_SETTLE_SECONDS)
        outcomes = {}
        for case in RULE_CASES:
            # Deleted pods stay deleted: one look after the wait tells.
            outcomes[case] = _outcome_real(cp, case, 0.0)
            rule = call(cp, "GET", f"{_path(_rule(case))}/{case}")
            outcomes[case]["condition"] = _condition(rule)
        yield outcomes


@pytest.mark.parametrize("case", list(RULE_CASES))
def test_device_taint_rule_eviction_is_kube_controller_managers(
    rule_outcomes: dict[str, dict[str, Any]], case: str
) -> None:
    assert _embedded(case, RULE_SETTLE_SECONDS) == rule_outcomes[case]
