"""DynamicResources' gated v1.36 allocator features, unit by unit: consumable capacity
(request policies, shares), device taints, binding conditions, partitionable devices and
the filter timeout, each with its gate on and off."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import Quantity, ResourceClaim, ResourceSlice
from kubesched.api.resource import DeviceCapacity
from kubesched.features import FeatureGates
from kubesched.framework.listers import StaticLister
from kubesched_builtin.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    Features,
    _consumed,
    _violates_policy,
    gather_pools,
)
from kubesched_builtin.dynamicresources.cel import CELCache
from kubesched_builtin.dynamicresources.manager import DRAManager
from kubesched_builtin.dynamicresources.plugin import DynamicResources
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
