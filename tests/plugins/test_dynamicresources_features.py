"""DynamicResources' gated v1.36 features, unit by unit: consumable capacity (request
policies, shares), device taints, binding conditions, partitionable devices, the filter
timeout, each with its gate on and off, and extended resources backed by DRA."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import (
    Device,
    DeviceClass,
    Pod,
    Quantity,
    ResourceClaim,
    ResourceSlice,
    extended_resource_classes,
    parse_object,
)
from kubesched.api.resource import DeviceCapacity
from kubesched.config import config_to_dict, effective_to_dict
from kubesched.config.defaults import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import FeatureGates, parse_feature_gates
from kubesched.framework.listers import StaticLister
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation
from kubesched_builtin.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    Features,
    _consumed,
    _violates_policy,
    gather_pools,
)
from kubesched_builtin.dynamicresources.cel import CELCache, DeviceEnv
from kubesched_builtin.dynamicresources.extended import requests_and_mappings
from kubesched_builtin.dynamicresources.manager import DRAManager
from kubesched_builtin.dynamicresources.plugin import DynamicResources
from tests.fixtures.dra.record_args import FIXTURE as ARGS_FIXTURE
from tests.fixtures.dra.record_args import kubesched_problems
from tests.plugins.test_dynamicresources import (
    CLASSES,
    DRIVER,
    _claim,
    _exactly,
    _node,
    _slice,
)

RANGE = {"default": "1Gi", "validRange": {"min": "1Gi", "max": "6Gi", "step": "1Gi"}}
VALUES = {"default": "1Gi", "validValues": ["1Gi", "2Gi", "4Gi"]}


@pytest.mark.parametrize(
    ("requested", "policy", "consumed", "violates"),
    [
        (None, None, "8Gi", False),
        (None, RANGE, "1Gi", False),
        ("3Gi", None, "3Gi", False),
        ("9Gi", None, "9Gi", False),  # no policy: the capacity check refuses it, not the policy
        ("1500Mi", RANGE, "2Gi", False),
        ("100Mi", RANGE, "1Gi", False),
        ("6Gi", RANGE, "6Gi", False),
        ("7Gi", RANGE, "7Gi", True),
        ("3Gi", VALUES, "4Gi", False),
        ("1", VALUES, "1Gi", False),
        ("5Gi", VALUES, "5Gi", True),
        ("1500", {"validRange": {"min": "1k", "step": "1k"}}, "2k", False),
        ("1500", {"validRange": {"min": "1k"}}, "1500", False),
    ],
    ids=[
        "nothing-asked-whole",
        "nothing-asked-default",
        "no-policy-as-asked",
        "no-policy-above-value",
        "range-rounds-to-step",
        "range-below-min",
        "range-at-max",
        "range-above-max",
        "values-round-up",
        "values-below-first",
        "values-above-last",
        "decimal-step",
        "range-without-step",
    ],
)
def test_consumed_capacity_follows_the_request_policy(
    requested: str | None, policy: dict[str, Any] | None, consumed: str, violates: bool
) -> None:
    cap = DeviceCapacity.model_validate({"value": "8Gi", "requestPolicy": policy})
    got = _consumed(None if requested is None else Quantity(requested), cap)
    assert (got.canonical(), _violates_policy(got, cap.request_policy)) == (consumed, violates)


def _shared(name: str, mem: str = "8Gi", policy: dict[str, Any] | None = None, **kw: Any) -> dict:
    cap: dict[str, Any] = {"value": mem}
    if policy:
        cap["requestPolicy"] = policy
    return {"name": name, "allowMultipleAllocations": True, "capacity": {"memory": cap}, **kw}


def _mem(amount: str) -> dict[str, Any]:
    return {"capacity": {"requests": {"memory": amount}}}


TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}
OFF = {
    "cc": Features(consumable_capacity=False),
    "taints": Features(device_taints=False),
    "bindings": Features(binding_conditions=False),
    "partitions": Features(partitionable_devices=False),
}


def _run(
    devices: list[dict[str, Any]],
    claims: list[ResourceClaim],
    features: Features | None = None,
    consumed: dict[Any, dict[str, int]] | None = None,
    allocated: set[Any] | None = None,
    extra_slices: list[Any] = (),  # type: ignore[assignment]
) -> list[list[str]] | None:
    node = _node()
    slices = [*extra_slices, _slice("n1", devices, count=1 + len(extra_slices))]
    alloc = Allocator(
        claims,
        allocated or set(),
        CLASSES.get,
        CELCache(),
        {},
        {},
        consumed=consumed,
        features=features,
    )
    outcome = alloc.allocate(node, gather_pools(slices, node))
    if not outcome.fits:
        return None
    out = []
    for a in outcome.allocations():
        row = []
        for r in a.devices.results:
            text = r.device
            if r.share_id is not None:
                text += (
                    "("
                    + ",".join(f"{k}={v.canonical()}" for k, v in r.consumed_capacity.items())
                    + ")"
                )
            if r.binding_conditions:
                text += f"[{','.join(r.binding_conditions)}]"
            row.append(text)
        out.append(row)
    return out


GI = 1024**3 * 10**9  # one Gi in nano-units


@pytest.mark.parametrize(
    ("devices", "claims", "kw", "expected"),
    [
        (
            [_shared("d0")],
            [_claim([_exactly("a", **_mem("3Gi")), _exactly("b", **_mem("5Gi"))])],
            {},
            [["d0(memory=3Gi)", "d0(memory=5Gi)"]],
        ),
        (
            [_shared("d0")],
            [_claim([_exactly("a", **_mem("3Gi")), _exactly("b", **_mem("6Gi"))])],
            {},
            None,
        ),
        (
            [_shared("d0"), _shared("d1")],
            [_claim([_exactly("a", **_mem("3Gi"))])],
            {"consumed": {(DRIVER, "n1", "d0"): {"memory": 6 * GI}}},
            [["d1(memory=3Gi)"]],
        ),
        (
            [_shared("d0", policy=RANGE)],
            [
                _claim([_exactly("a")], name="x"),
                _claim([_exactly("b", **_mem("2500Mi"))], name="y"),
            ],
            {},
            [["d0(memory=1Gi)"], ["d0(memory=3Gi)"]],
        ),
        (
            [_shared("d0", policy=RANGE)],
            [_claim([_exactly("a", count=2, **_mem("1Gi"))])],
            {},
            None,  # one request takes a device once, even a shared one
        ),
        ([_shared("d0")], [_claim([_exactly("a"), _exactly("b")])], {}, None),
        ([_shared("d0")], [_claim([_exactly("a"), _exactly("b")])], {"features": OFF["cc"]}, None),
        ([_shared("d0")], [_claim([_exactly("a")])], {"features": OFF["cc"]}, [["d0"]]),
        (
            [_shared("d0")],
            [_claim([_exactly("a")])],
            {"allocated": {(DRIVER, "n1", "d0")}},
            None,  # held whole by a claim allocated with the feature off
        ),
        (
            [{"name": "d0", "capacity": {"memory": {"value": "8Gi"}}}],
            [_claim([_exactly("a", **_mem("9Gi"))])],
            {},
            None,
        ),
        (
            [{"name": "d0", "capacity": {"memory": {"value": "8Gi"}}}],
            [_claim([_exactly("a", **_mem("8Gi"))])],
            {},
            [["d0"]],
        ),
        (
            [_shared("d0")],
            [_claim([_exactly("a", capacity={"requests": {"bandwidth": "1"}})])],
            {},
            None,
        ),
    ],
    ids=[
        "two-requests-share-a-device",
        "two-requests-overflow",
        "other-claims-shares-count",
        "default-and-rounded-shares",
        "count-two-one-device",
        "nothing-asked-takes-it-whole",
        "gate-off-one-claim-at-a-time",
        "gate-off-no-share",
        "held-whole",
        "exclusive-device-too-small",
        "exclusive-device-exactly",
        "unknown-capacity-name",
    ],
)
def test_consumable_capacity(
    devices: list[dict[str, Any]],
    claims: list[ResourceClaim],
    kw: dict[str, Any],
    expected: list[list[str]] | None,
) -> None:
    assert _run(devices, claims, **kw) == expected


def test_capacity_requests_with_the_gate_off_are_an_error() -> None:
    claim = _claim(
        [{"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "gpu", **_mem("1Gi")}]}]
    )
    with pytest.raises(AllocationError, match=r"^claim default/c, subrequest s: has capacity"):
        _run([_shared("d0")], [claim], features=OFF["cc"])


@pytest.mark.parametrize(
    ("taints", "tolerations", "features", "expected"),
    [
        ([TAINT], [], None, None),
        ([TAINT], [], OFF["taints"], [["d0"]]),
        ([{**TAINT, "effect": "NoExecute"}], [], None, None),
        ([{**TAINT, "effect": "None"}], [], None, [["d0"]]),
        ([TAINT], [{"operator": "Exists"}], None, [["d0"]]),
        ([TAINT], [{"key": "k", "operator": "Exists", "effect": "NoExecute"}], None, None),
        ([TAINT], [{"key": "k", "value": "v"}], None, [["d0"]]),
        ([TAINT], [{"key": "k", "operator": "Equal", "value": "w"}], None, None),
        (
            [TAINT, {"key": "other", "effect": "NoExecute"}],
            [{"key": "k", "operator": "Exists"}],
            None,
            None,
        ),
    ],
    ids=[
        "untolerated",
        "gate-off",
        "no-execute",
        "effect-none-ignored",
        "exists-without-key",
        "wrong-effect",
        "equal-by-default",
        "wrong-value",
        "one-of-two-tolerated",
    ],
)
def test_device_taints(
    taints: list[dict[str, Any]],
    tolerations: list[dict[str, Any]],
    features: Features | None,
    expected: list[list[str]] | None,
) -> None:
    claim = _claim([_exactly("r", tolerations=tolerations)])
    assert _run([{"name": "d0", "taints": taints}], [claim], features=features) == expected


def test_tolerations_are_copied_into_the_result() -> None:
    tolerations = [{"key": "k", "operator": "Exists"}]
    node = _node()
    alloc = Allocator(
        [_claim([_exactly("r", tolerations=tolerations)])], set(), CLASSES.get, CELCache(), {}, {}
    )
    outcome = alloc.allocate(
        node, gather_pools([_slice("n1", [{"name": "d0", "taints": [TAINT]}])], node)
    )
    (result,) = outcome.allocations()[0].devices.results
    assert [t.to_dict() for t in result.tolerations] == tolerations


@pytest.mark.parametrize(
    ("features", "expected"),
    [(None, [["bound[ready]"]]), (OFF["bindings"], [["plain"]])],
    ids=["gate-on", "gate-off-passed-over"],
)
def test_binding_conditions(features: Features | None, expected: list[list[str]]) -> None:
    devices = [
        {"name": "bound", "bindingConditions": ["ready"], "bindingFailureConditions": ["failed"]},
        {"name": "plain"},
    ]
    assert _run(devices, [_claim([_exactly("r")])], features=features) == expected


def test_a_device_binding_to_the_node_pins_the_claim() -> None:
    node = _node()
    device = {"name": "d0", "bindsToNode": True, "bindingConditions": ["ready"]}
    alloc = Allocator([_claim([_exactly("r")])], set(), CLASSES.get, CELCache(), {}, {})
    outcome = alloc.allocate(node, gather_pools([_slice(None, [device], all_nodes=True)], node))
    (allocation,) = outcome.allocations()
    assert allocation.node_selector is not None
    assert allocation.node_selector.node_selector_terms[0].match_fields[0].values == ["n1"]


def _counters_slice() -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": "counters", "uid": "counters"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "resourceSliceCount": 2, "generation": 1},
                "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "8Gi"}}}],
            },
        }
    )


def _part(name: str, amount: str, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": amount}}}],
        **kw,
    }


@pytest.mark.parametrize(
    ("devices", "claims", "features", "expected"),
    [
        ([_part("a", "8Gi")], [_claim([_exactly("r")])], None, [["a"]]),
        ([_part("a", "8Gi")], [_claim([_exactly("r")])], OFF["partitions"], None),
        (
            [
                _part(
                    "a", "8Gi", allowMultipleAllocations=True, capacity={"memory": {"value": "8Gi"}}
                )
            ],
            [_claim([_exactly("r", **_mem("2Gi")), _exactly("s", **_mem("2Gi"))])],
            None,
            [["a(memory=2Gi)", "a(memory=2Gi)"]],
        ),
        (
            [_part("a", "6Gi"), _part("b", "6Gi")],
            [_claim([_exactly("r"), _exactly("s")])],
            None,
            None,
        ),
    ],
    ids=["fits", "gate-off-passed-over", "second-share-takes-no-counters", "counters-exhausted"],
)
def test_partitionable_devices(
    devices: list[dict[str, Any]],
    claims: list[ResourceClaim],
    features: Features | None,
    expected: list[list[str]] | None,
) -> None:
    assert _run(devices, claims, features=features, extra_slices=[_counters_slice()]) == expected


class _Handle:
    client = None

    def __init__(self, gates: dict[str, bool], claims: list[ResourceClaim] = ()) -> None:  # type: ignore[assignment]
        self.feature_enabled = FeatureGates(gates).enabled
        self.lister = StaticLister(list(claims))


@pytest.mark.parametrize(
    ("gates", "timeout"),
    [({}, 10.0), ({"DRASchedulerFilterTimeout": False}, 0.0)],
    ids=["gate-on", "gate-off-no-limit"],
)
def test_filter_timeout_follows_its_gate(gates: dict[str, bool], timeout: float) -> None:
    assert DynamicResources(None, _Handle(gates)).filter_timeout == timeout


ARGS_RECORDING: list[dict[str, Any]] = json.loads(ARGS_FIXTURE.read_text())["cases"]


@pytest.mark.parametrize("case", ARGS_RECORDING, ids=[c["id"] for c in ARGS_RECORDING])
def test_timeouts_under_their_gates_as_recorded(case: dict[str, Any]) -> None:
    """kubesched refuses (or accepts) DynamicResources' timeouts under the DRA gates with
    the field errors the real kube-scheduler v1.36.2 stopped with (dra-args.json)."""
    assert kubesched_problems(case) == case["recorded"]


DEFAULTS_RECORDING: list[dict[str, Any]] = json.loads(ARGS_FIXTURE.read_text())["defaults"]


def _written_args(gates: str, where: str) -> dict[str, Any]:
    """The default profile's args by plugin as ``kubesched config <where>`` prints them
    under ``gates`` (``effective`` names every plugin: those without args are left out)."""
    feature_gates = parse_feature_gates([gates] if gates else [])
    if where == "defaults":
        data = config_to_dict(default_configuration(gates=feature_gates))
        return {pc["name"]: pc["args"] for pc in data["profiles"][0]["pluginConfig"]}
    registry = default_registry()
    config = default_configuration(registry, feature_gates)
    effective = effective_configuration(config, registry, gates=feature_gates)
    args = effective_to_dict(effective)["profiles"][0]["pluginArgs"]
    return {name: value for name, value in args.items() if value is not None}


@pytest.mark.parametrize("where", ["defaults", "effective"])
@pytest.mark.parametrize("case", DEFAULTS_RECORDING, ids=[c["id"] for c in DEFAULTS_RECORDING])
def test_default_args_under_the_gates_as_recorded(case: dict[str, Any], where: str) -> None:
    """``kubesched config defaults`` and ``config effective`` print the default args the
    real kube-scheduler v1.36.2 writes with ``--write-config-to`` under the same gates
    (dra-args.json): an unset field a gate turns off left out, or ``null`` (filterTimeout),
    a default only a gate brings filled in (VolumeBinding's shape), empty fields left out."""
    assert _written_args(case["gates"], where) == case["recorded"]


def test_manager_counts_shares_apart_from_devices_held_whole() -> None:
    def allocated(name: str, device: str, share: str | None, memory: str | None) -> ResourceClaim:
        result: dict[str, Any] = {"request": "r", "driver": DRIVER, "pool": "n1", "device": device}
        if share is not None:
            result["shareID"] = share
            result["consumedCapacity"] = {"memory": memory}
        return ResourceClaim.model_validate(
            {
                "metadata": {"name": name, "namespace": "default", "uid": name},
                "status": {"allocation": {"devices": {"results": [result]}}},
            }
        )

    claims = [
        allocated("a", "d0", "s1", "2Gi"),
        allocated("b", "d0", "s2", "3Gi"),
        allocated("c", "d1", None, None),
    ]
    manager = DRAManager(_Handle({}, claims))
    assert manager.allocated_state() == (
        {(DRIVER, "n1", "d1")},
        {(DRIVER, "n1", "d0"): {"memory": 5 * GI}},
    )


def _ext_pod(init: list[tuple[str, str | None, bool]], main: list[tuple[str, str | None]]) -> Pod:
    def container(name: str, gpus: str | None, sidecar: bool = False) -> dict[str, Any]:
        requests = {"cpu": "100m", **({GPU: gpus} if gpus else {})}
        return {
            "name": name,
            "resources": {"requests": requests},
            **({"restartPolicy": "Always"} if sidecar else {}),
        }

    return Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {
                "initContainers": [container(n, g, s) for n, g, s in init],
                "containers": [container(n, g) for n, g in main],
            },
        }
    )


GPU = "example.com/gpu"


@pytest.mark.parametrize(
    ("init", "main", "requests", "mappings"),
    [
        ([], [("a", "2")], {"container-0-request-1": 2}, {"a": "container-0-request-1"}),
        (
            [],
            [("a", "1"), ("b", None), ("c", "1")],
            {"container-0-request-1": 1, "container-2-request-1": 1},
            {"a": "container-0-request-1", "c": "container-2-request-1"},
        ),
        (
            [("i", "2", False)],
            [("a", "1")],
            {"container-0-request-1": 1, "container-1-request-1": 1},
            {"a": "container-1-request-1", "i": "container-1-request-1+container-0-request-1"},
        ),
        (
            [("i", "1", False)],
            [("a", "1")],
            {"container-1-request-1": 1},
            {"a": "container-1-request-1", "i": "container-1-request-1"},
        ),
        (
            [("i", "1", False), ("j", "3", False)],
            [("a", None)],
            {"container-1-request-1": 3},
            {"i": "container-1-request-1", "j": "container-1-request-1"},
        ),
        (
            [("s", "1", True)],
            [("a", "1")],
            {"container-0-request-1": 1, "container-1-request-1": 1},
            {"s": "container-0-request-1", "a": "container-1-request-1"},
        ),
        ([], [("a", "500m")], {}, {}),
    ],
    ids=[
        "one-container",
        "containers-without-some",
        "init-reuses-then-asks-the-rest",
        "init-reuses-all",
        "inits-share-the-largest",
        "sidecar-keeps-its-own",
        "fraction-asks-nothing",
    ],
)
def test_extended_resource_requests_and_mappings(
    init: list[tuple[str, str | None, bool]],
    main: list[tuple[str, str | None]],
    requests: dict[str, int],
    mappings: dict[str, str],
) -> None:
    got_requests, got_mappings = requests_and_mappings(_ext_pod(init, main), {GPU: 1}, {GPU: "gpu"})
    assert {r["name"]: r["exactly"]["count"] for r in got_requests} == requests
    by_container: dict[str, list[str]] = {}
    for m in got_mappings:
        by_container.setdefault(m["containerName"], []).append(m["requestName"])
    assert {k: "+".join(v) for k, v in by_container.items()} == mappings


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        (
            [("gpu", GPU, "2026-01-01T00:00:00Z")],
            {GPU: "gpu", "deviceclass.resource.kubernetes.io/gpu": "gpu"},
        ),
        (
            [("new", GPU, "2026-02-01T00:00:00Z"), ("old", GPU, "2026-01-01T00:00:00Z")],
            {
                GPU: "new",
                "deviceclass.resource.kubernetes.io/new": "new",
                "deviceclass.resource.kubernetes.io/old": "old",
            },
        ),
        (
            [("plain", None, "2026-01-01T00:00:00Z")],
            {"deviceclass.resource.kubernetes.io/plain": "plain"},
        ),
    ],
    ids=["explicit-and-implicit", "newest-wins", "implicit-only"],
)
def test_extended_resource_classes(
    classes: list[tuple[str, str | None, str]], expected: dict[str, str]
) -> None:
    objects = [
        DeviceClass.model_validate(
            {
                "metadata": {"name": name, "creationTimestamp": created},
                "spec": {"extendedResourceName": resource} if resource else {},
            }
        )
        for name, resource, created in classes
    ]
    assert extended_resource_classes(objects) == expected


def _gpu_cluster() -> Simulation:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {
                "extendedResourceName": GPU,
                "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "d0"}],
            },
        },
    ]
    registry = default_registry()
    config = effective_configuration(default_configuration(registry), registry)
    return Simulation([parse_object(d) for d in docs], config=config, registry=registry)


def _gpu_pod(name: str) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "pause",
                        "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}},
                    }
                ]
            },
        }
    )


def test_a_deleted_pod_gives_its_extended_resource_devices_back() -> None:
    sim = _gpu_cluster()
    try:
        sim.cluster.create(_gpu_pod("a"))
        sim.run()
        first = sim.cluster.get("Pod", "default", "a")
        claim_name = first.status.extended_resource_claim_status.resource_claim_name
        assert first.spec.node_name == "n1"
        assert claim_name.startswith("a-extended-resources-")
        sim.cluster.create(_gpu_pod("b"))
        sim.run()
        assert sim.cluster.get("Pod", "default", "b").spec.node_name is None
        sim.cluster.delete_pod(first, grace_period_seconds=0)
        sim.run()
        assert sim.cluster.try_get("ResourceClaim", "default", claim_name) is None
        assert sim.cluster.get("Pod", "default", "b").spec.node_name == "n1"
    finally:
        sim.close()


@pytest.mark.parametrize(
    ("shared", "expected"),
    [(True, True), (None, False)],
    ids=["shared", "not-set"],
)
def test_cel_sees_allow_multiple_allocations(shared: bool | None, expected: bool) -> None:
    device = Device.model_validate({"name": "d0", "allowMultipleAllocations": shared})
    compiled = CELCache().get_or_compile("device.allowMultipleAllocations")
    assert compiled.device_matches(DeviceEnv(DRIVER, device)) is expected
