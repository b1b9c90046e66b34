"""DynamicResources: resource.k8s.io/v1 models, CEL selectors, the allocator, the plugin."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import ConflictError, CycleState
from kubesched.api import (
    RESOURCE_CLAIM_FINALIZER,
    AllocationResult,
    DeviceClass,
    Node,
    Pod,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceSlice,
    load_manifests,
    parse_manifests,
)
from kubesched.errors import UserInputError
from kubesched.features import FeatureGates
from kubesched.simulate.driver import Simulation, simulate
from kubesched.simulate.report import MSG_HELD_BACK, build_report
from kubesched.testing import make_pod
from kubesched_builtin.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    gather_pools,
)
from kubesched_builtin.dynamicresources.cel import CELCache, CELError, DeviceEnv
from kubesched_builtin.dynamicresources.plugin import (
    STATE_KEY,
    DynamicResources,
    _ClaimInfo,
    _State,
)

DRIVER = "gpu.example.com"


def _node(name: str = "n1", labels: dict[str, str] | None = None) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": labels or {}}})


def _slice(
    node: str | None,
    devices: list[dict[str, Any]],
    *,
    pool: str | None = None,
    generation: int = 1,
    count: int = 1,
    name: str | None = None,
    all_nodes: bool = False,
) -> ResourceSlice:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {
            "name": pool or node or "global",
            "generation": generation,
            "resourceSliceCount": count,
        },
        "devices": devices,
    }
    if all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": name or f"{node}-{pool}-{generation}", "uid": name or str(node)},
            "spec": spec,
        }
    )


def _gpu(name: str, model: str = "A100", root: str = "r0", mem: str = "80Gi") -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"model": {"string": model}, "pcieRoot": {"string": root}},
        "capacity": {"memory": {"value": mem}},
    }


def _class(name: str, expr: str | None = None) -> DeviceClass:
    selectors = [{"cel": {"expression": expr}}] if expr else []
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": selectors}}
    )


CLASSES = {
    "gpu": _class("gpu", f'device.driver == "{DRIVER}"'),
    "a100": _class("a100", f'device.attributes["{DRIVER}"].model == "A100"'),
    "l4": _class("l4", f'device.attributes["{DRIVER}"].model == "L4"'),
    "broken": _class("broken", "device.driver =="),
    "needs-attr": _class("needs-attr", f'device.attributes["{DRIVER}"].missing == 1'),
}


def _claim(
    requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None, name: str = "c"
) -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"devices": {"requests": requests, "constraints": constraints or []}},
        }
    )


def _exactly(name: str, cls: str = "gpu", **kw: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, **kw}}


def _allocate(
    claims: list[ResourceClaim],
    slices: list[ResourceSlice],
    allocated: set[tuple[str, str, str]] = frozenset(),  # type: ignore[assignment]
    node: Node | None = None,
) -> list[list[str]] | None:
    node = node or _node()
    alloc = Allocator(claims, allocated, CLASSES.get, CELCache(), {}, {})
    outcome = alloc.allocate(node, gather_pools(slices, node))
    if not outcome.fits:
        return None
    return [
        [f"{r.request}={r.device}{'(admin)' if r.admin_access else ''}" for r in a.devices.results]
        for a in outcome.allocations()
    ]


# --- models ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: x}\n"
            "spec: {devices: {requests: [{name: a}]}}",
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
            "`firstAvailable` is required",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: x}\n"
            "spec: {devices: {requests: "
            "[{name: a, exactly: {deviceClassName: g, allocationMode: Some}}]}}",
            "spec.devices.requests[0].exactly.allocationMode",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: x}\n"
            "spec: {devices: {requests: "
            "[{name: a, exactly: {deviceClassName: g, count: -1}}]}}",
            "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: x}\n"
            "spec: {devices: {requests: "
            "[{name: a, exactly: {deviceClassName: g}}], constraints: "
            "[{requests: [b], matchAttribute: d.io/x}]}}",
            'spec.devices.constraints[0].requests[0]: Invalid value: "b"',
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
            "spec: {driver: d, "
            "pool: {name: p, resourceSliceCount: 1}, "
            "nodeName: n, allNodes: true}",
            'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
            "`nodeSelector`, `allNodes`",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
            "spec: {driver: d, "
            "pool: {name: p, resourceSliceCount: 1}, "
            "nodeName: n, devices: [{name: g, attributes: {a: {int: 1, string: x}}}]}",
            'spec.devices[0].attributes[a]: Invalid value: {"IntValue":1,"BoolValue":null,'
            '"StringValue":"x"',
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {resourceClaims: [{name: c}]}",
            "spec.resourceClaims[0]: must specify one of: `resourceClaimName`, "
            "`resourceClaimTemplateName`",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
            "spec: {driver: d, "
            "pool: {name: p, resourceSliceCount: 1}, "
            "nodeName: n, devices: [{name: g}], sharedCounters: [{name: c}]}",
            'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        ),
    ],
    ids=[
        "request-without-exactly-or-firstAvailable",
        "unknown-allocation-mode",
        "negative-count",
        "constraint-names-unknown-request",
        "slice-two-node-fields",
        "attribute-two-values",
        "pod-claim-without-source",
        "slice-with-counters-and-devices",
    ],
)
def test_invalid_objects_name_the_field(doc: str, problem: str) -> None:
    with pytest.raises(UserInputError) as err:
        parse_manifests(doc, source="f.yaml")
    assert problem in str(err.value)
    assert str(err.value).startswith("f.yaml: ")


# --- CEL -------------------------------------------------------------------------------

_DEVICE = ResourceSlice.model_validate(
    {
        "metadata": {"name": "s"},
        "spec": {
            "driver": DRIVER,
            "nodeName": "n",
            "pool": {"name": "p"},
            "devices": [
                {
                    "name": "g0",
                    "attributes": {
                        "model": {"string": "A100"},
                        "index": {"int": 3},
                        "driverVersion": {"version": "1.4.2"},
                        "other.io/flag": {"bool": True},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            ],
        },
    }
).spec.devices[0]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'device.driver == "{DRIVER}"', True),
        (f'device.attributes["{DRIVER}"].model == "A100"', True),
        (f'device.attributes["{DRIVER}"].index > 2', True),
        ('device.attributes["other.io"].flag', True),
        (f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0', True),
        (f'device.capacity["{DRIVER}"].memory == quantity("81920Mi")', True),
        (f'device.capacity["{DRIVER}"].memory.isLessThan(quantity("1Ti"))', True),
        (f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.4.0"))', True),
        (f'device.attributes["{DRIVER}"].driverVersion.major() == 1', True),
        ('semver("v1.2", true).compareTo(semver("1.2.0")) == 0', True),
        ('isQuantity("1Gi") && !isQuantity("1Gx")', True),
        (f'has(device.attributes["{DRIVER}"].nope)', False),
        (f'device.attributes["{DRIVER}"].nope == 1', "no such key: nope"),
        ('device.attributes["unknown.io"].model == "x"', "no such key: model"),
        ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error"),
        (f'device.attributes["{DRIVER}"].index', "must evaluate to bool"),
    ],
    ids=[
        "driver",
        "string-attribute",
        "int-attribute",
        "other-domain",
        "quantity-compareTo",
        "quantity-equality-by-value",
        "quantity-isLessThan",
        "semver-isGreaterThan",
        "semver-major",
        "semver-normalize",
        "isQuantity",
        "has-missing",
        "missing-attribute-runtime-error",
        "missing-domain-names-attribute",
        "syntax-error",
        "not-a-bool",
    ],
)
def test_cel_device_selectors(expression: str, expected: bool | str) -> None:
    env = DeviceEnv(DRIVER, _DEVICE)
    compiled = CELCache().get_or_compile(expression)
    if isinstance(expected, bool):
        assert compiled.device_matches(env) is expected
    else:
        with pytest.raises(CELError) as err:
            compiled.device_matches(env)
        assert str(err.value).startswith(expected)


def test_cel_cache_compiles_each_expression_once_and_evicts_least_recent() -> None:
    cache = CELCache(max_size=2)
    a = cache.get_or_compile("true")
    assert cache.get_or_compile("true") is a
    cache.get_or_compile("false")
    cache.get_or_compile("1 == 1")
    assert cache.compilations == 3
    cache.get_or_compile("true")  # evicted: compiled again
    assert cache.compilations == 4


# --- allocator -------------------------------------------------------------------------

EIGHT = _slice("n1", [_gpu(f"g{i}", root="r0" if i < 4 else "r1") for i in range(8)])
MIXED = _slice("n1", [_gpu("a0"), _gpu("l0", "L4", mem="24Gi"), _gpu("l1", "L4", mem="24Gi")])


@pytest.mark.parametrize(
    ("requests", "constraints", "slices", "allocated", "expected"),
    [
        ([_exactly("r")], None, [EIGHT], set(), [["r=g0"]]),
        ([_exactly("r", count=3)], None, [EIGHT], set(), [["r=g0", "r=g1", "r=g2"]]),
        ([_exactly("r", count=9)], None, [EIGHT], set(), None),
        (
            [_exactly("r", count=2)],
            None,
            [EIGHT],
            {(DRIVER, "n1", "g0"), (DRIVER, "n1", "g2")},
            [["r=g1", "r=g3"]],
        ),
        ([_exactly("r", allocationMode="All")], None, [MIXED], set(), [["r=a0", "r=l0", "r=l1"]]),
        ([_exactly("r", "l4", allocationMode="All")], None, [MIXED], {(DRIVER, "n1", "l1")}, None),
        (
            [_exactly("r", "a100", allocationMode="All")],
            None,
            [_slice("n1", [_gpu("x", "L4")])],
            set(),
            None,
        ),
        (
            [
                {
                    "name": "r",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "a100", "count": 2},
                        {"name": "small", "deviceClassName": "l4"},
                    ],
                }
            ],
            None,
            [MIXED],
            set(),
            [["r/small=l0"]],
        ),
        (
            [
                {
                    "name": "r",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "a100"},
                        {"name": "small", "deviceClassName": "l4"},
                    ],
                }
            ],
            None,
            [MIXED],
            set(),
            [["r/big=a0"]],
        ),
        (
            [_exactly("r", count=4)],
            [{"requests": ["r"], "matchAttribute": f"{DRIVER}/pcieRoot"}],
            [EIGHT],
            {(DRIVER, "n1", "g1")},
            [["r=g4", "r=g5", "r=g6", "r=g7"]],
        ),
        (
            [_exactly("r", count=4)],
            [{"matchAttribute": f"{DRIVER}/pcieRoot"}],
            [EIGHT],
            {(DRIVER, "n1", "g1"), (DRIVER, "n1", "g5")},
            None,
        ),
        (
            [_exactly("a"), _exactly("b")],
            [{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/model"}],
            [MIXED],
            {(DRIVER, "n1", "a0")},
            [["a=l0", "b=l1"]],
        ),
        (
            [_exactly("a"), _exactly("b")],
            [{"requests": ["a", "b"], "distinctAttribute": f"{DRIVER}/model"}],
            [MIXED],
            set(),
            [["a=a0", "b=l0"]],
        ),
        (
            [_exactly("r", count=2, adminAccess=True)],
            None,
            [MIXED],
            {(DRIVER, "n1", "a0"), (DRIVER, "n1", "l0")},
            [["r=a0(admin)", "r=l0(admin)"]],
        ),
        ([_exactly("r")], None, [_slice("other", [_gpu("g0")])], set(), None),
        (
            [_exactly("r")],
            None,
            [_slice(None, [_gpu("net0")], pool="global", all_nodes=True)],
            set(),
            [["r=net0"]],
        ),
        (
            [_exactly("r")],
            None,
            [
                _slice("n1", [_gpu("old")], generation=1, name="s-old"),
                _slice("n1", [_gpu("new")], generation=2, name="s-new"),
            ],
            set(),
            [["r=new"]],
        ),
    ],
    ids=[
        "one-device",
        "count-3-in-slice-order",
        "count-beyond-node",
        "allocated-devices-skipped",
        "all-mode-takes-every-match",
        "all-mode-fails-when-one-is-allocated",
        "all-mode-needs-a-match",
        "firstAvailable-falls-back",
        "firstAvailable-prefers-first",
        "matchAttribute-backtracks-to-other-root",
        "matchAttribute-no-root-with-four-free",
        "matchAttribute-across-requests",
        "distinctAttribute",
        "admin-access-ignores-allocations",
        "slice-of-another-node",
        "all-nodes-slice",
        "newest-pool-generation-only",
    ],
)
def test_allocator(
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None,
    slices: list[ResourceSlice],
    allocated: set[tuple[str, str, str]],
    expected: list[list[str]] | None,
) -> None:
    assert _allocate([_claim(requests, constraints)], slices, allocated) == expected


def test_allocator_keeps_devices_apart_between_claims_of_one_pod() -> None:
    claims = [
        _claim([_exactly("r", count=2)], name="a"),
        _claim([_exactly("r", count=2)], name="b"),
    ]
    assert _allocate(claims, [EIGHT]) == [["r=g0", "r=g1"], ["r=g2", "r=g3"]]
    assert _allocate(claims, [_slice("n1", [_gpu("x"), _gpu("y"), _gpu("z")])]) is None


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        ("broken", "class broken: selector #0: CEL compile error: compilation failed: ERROR"),
        ("needs-attr", "class needs-attr: selector #0: CEL runtime error: no such key: missing"),
    ],
    ids=["compile-error", "runtime-error"],
)
def test_allocator_reports_cel_errors_as_upstream(cls: str, message: str) -> None:
    with pytest.raises(AllocationError) as err:
        _allocate([_claim([_exactly("r", cls)])], [EIGHT])
    assert str(err.value).startswith(message)


def test_all_mode_on_an_incomplete_pool_is_an_error() -> None:
    partial = _slice("n1", [_gpu("g0")], count=2)
    with pytest.raises(AllocationError, match="resource pool n1 is currently being updated"):
        _allocate([_claim([_exactly("r", allocationMode="All")])], [partial])
    assert _allocate([_claim([_exactly("r")])], [partial]) == [["r=g0"]]


def test_allocation_of_node_local_devices_is_pinned_to_the_node() -> None:
    node = _node()
    alloc = Allocator([_claim([_exactly("r")])], set(), CLASSES.get, CELCache(), {}, {})
    result = alloc.allocate(node, gather_pools([EIGHT], node)).allocations()
    term = result[0].node_selector.node_selector_terms[0]
    assert (term.match_fields[0].key, term.match_fields[0].values) == ("metadata.name", ["n1"])


# --- the plugin in the embedded cluster ------------------------------------------------

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, resourceSliceCount: 1}
  devices: [{name: g0}, {name: g1}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
"""


def _pod(name: str, claim: str = "resourceClaimTemplateName: one-gpu") -> str:
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  resourceClaims: [{{name: gpu, {claim}}}]
  containers: [{{name: c, image: busybox, resources: {{claims: [{{name: gpu}}]}}}}]
"""


def _message(run: Any, name: str) -> str:
    conds = run.cluster.get("Pod", "default", name).status.conditions
    return next(c.message for c in conds if c.type == "PodScheduled")


def test_template_claims_are_generated_allocated_and_reserved() -> None:
    run = simulate(parse_manifests(CLUSTER + _pod("p1") + _pod("p2") + _pod("p3")), seed=0)
    pods = {p.name: p for p in run.cluster.pods()}
    assert [pods[n].spec.node_name for n in ("p1", "p2", "p3")].count("n1") == 2
    pending = next(p for p in pods.values() if not p.spec.node_name)
    assert _message(run, pending.name) == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    devices = set()
    for p in pods.values():
        (status,) = p.status.resource_claim_statuses
        assert status.resource_claim_name.startswith(f"{p.name}-gpu-")
        assert len(status.resource_claim_name) == len(f"{p.name}-gpu-") + 5
        claim = run.cluster.get("ResourceClaim", "default", status.resource_claim_name)
        assert claim.metadata.owner_references[0].uid == p.metadata.uid
        if p.spec.node_name:
            assert [r.uid for r in claim.status.reserved_for] == [p.metadata.uid]
            (result,) = claim.status.allocation.devices.results
            devices.add(result.device)
        else:
            assert claim.status.allocation is None
    assert devices == {"g0", "g1"}


def test_deleted_pod_releases_its_devices_for_a_pending_one() -> None:
    sim = Simulation(parse_manifests(CLUSTER + _pod("p1") + _pod("p2") + _pod("p3")), seed=0)
    try:
        run = sim.run()
        bound = sorted(p.name for p in run.cluster.pods() if p.spec.node_name)
        pending = next(p.name for p in run.cluster.pods() if not p.spec.node_name)
        run.cluster.delete("Pod", "default", bound[0], grace_period_seconds=0)
        owners = {c.metadata.owner_references[0].name for c in run.cluster.objects("ResourceClaim")}
        assert bound[0] not in owners  # its generated claim went with it
        run = sim.run()
        assert run.cluster.get("Pod", "default", pending).spec.node_name == "n1"
    finally:
        sim.close()


def test_pod_waits_for_its_claim_then_gets_scheduled() -> None:
    sim = Simulation(parse_manifests(CLUSTER + _pod("p", "resourceClaimName: later")), seed=0)
    try:
        run = sim.run()
        report = build_report(run).pod("default/p")
        # PreEnqueue keeps the pod out of the active queue: no attempt, no event; the
        # report says so.
        assert (report.node, report.attempts, report.message) == (None, 0, MSG_HELD_BACK)
        claim = ResourceClaim.model_validate(
            {
                "metadata": {"name": "later", "namespace": "default"},
                "spec": {"devices": {"requests": [_exactly("gpu")]}},
            }
        )
        run.cluster.create(claim)
        run = sim.run()
        assert run.cluster.get("Pod", "default", "p").spec.node_name == "n1"
        claim = run.cluster.get("ResourceClaim", "default", "later")
        assert [r.name for r in claim.status.reserved_for] == ["p"]
    finally:
        sim.close()


@pytest.mark.parametrize(
    ("claim_ref", "extra", "message"),
    [
        (
            "resourceClaimName: shared",
            """---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: nope}}]}}
""",
            "0/2 nodes are available: request gpu: device class nope does not exist. "
            "no new claims to deallocate, preemption: 0/2 nodes are available: "
            "2 Preemption is not helpful for scheduling.",
        ),
    ],
    ids=["class-missing"],
)
def test_claims_that_cannot_be_used_yet(claim_ref: str, extra: str, message: str) -> None:
    run = simulate(parse_manifests(CLUSTER + extra + _pod("p", claim_ref)), seed=0)
    report = build_report(run)
    p = report.pod("default/p")
    assert p.node is None
    assert p.message == message


def test_pods_without_claims_skip_the_plugin() -> None:
    doc = (
        CLUSTER
        + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: plain}\n"
        + "spec: {containers: [{name: c, image: busybox}]}\n"
    )
    run = simulate(parse_manifests(doc), seed=0)
    assert run.cluster.get("Pod", "default", "plain").spec.node_name in {"n1", "n2"}


def test_gpu_example_end_to_end(tmp_path: Any) -> None:
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "dra-gpu"
    run = simulate(load_manifests([example]), seed=0)
    nodes = {p.name: p.spec.node_name for p in run.cluster.pods()}
    train = sorted(n for name, n in nodes.items() if name.startswith("train-"))
    assert train == ["a100-0", "a100-1"]
    serve = [n for name, n in nodes.items() if name.startswith("serve-")]
    assert sorted(serve) == ["l4-0"] * 4 + ["l4-1"] * 4 + ["t4-0"] * 2
    assert nodes["too-big"] is None
    for claim in run.cluster.objects("ResourceClaim", "ml"):
        if claim.name.startswith("train-"):
            results = claim.status.allocation.devices.results
            roots = {
                s.spec.devices[int(r.device.split("-")[1])].attributes["pcieRoot"].value
                for r in results
                for s in run.cluster.objects("ResourceSlice")
                if s.spec.pool.name == r.pool
            }
            assert len(results) == 4 and len(roots) == 1


def test_report_shows_devices_and_why_nodes_had_none() -> None:
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "dra-gpu"
    run = simulate(load_manifests([example]), seed=0)
    report = build_report(run)
    train = next(p for p in report.pods if p.name.startswith("train-"))
    assert len(train.devices) == 4
    assert {(d.pool, d.slice) for d in train.devices} == {
        (train.node, f"{train.node}-gpu.example.com")
    }
    assert all(d.claim.startswith(f"{train.name}-gpus-") for d in train.devices)
    serve = next(p for p in report.pods if p.name.startswith("serve-") and p.node == "t4-0")
    assert [d.request for d in serve.devices] == ["gpu/t4"]
    too_big = report.pod("ml/too-big")
    details = {f.node: f.details for f in too_big.filters}
    assert details["a100-0"] == [
        "request gpus: 8 device(s) of class large-gpu match, 4 free, 16 wanted"
    ]
    assert details["t4-0"] == [
        "request gpus: 0 device(s) of class large-gpu match, 0 free, 16 wanted"
    ]


def test_post_filter_deallocates_a_claim_stuck_on_an_unusable_node() -> None:
    # The claim was allocated on n2 (node selector) and is reserved for nobody; n2 is
    # cordoned, so the pod fits nowhere: PostFilter frees the claim, and the next attempt
    # allocates it again, on n1.
    allocated = """---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {unschedulable: true}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpus}
spec:
  driver: gpu.example.com
  nodeName: n2
  pool: {name: n2, resourceSliceCount: 1}
  devices: [{name: g0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: stuck}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}
status:
  allocation:
    devices: {results: [{request: gpu, driver: gpu.example.com, pool: n2, device: g0}]}
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n2]}]}]
"""
    cluster = CLUSTER.replace("metadata: {name: n2}\nstatus", "metadata: {name: n2-unused}\nstatus")
    run = simulate(parse_manifests(cluster + allocated + _pod("p", "resourceClaimName: stuck")))
    report = build_report(run).pod("default/p")
    assert report.node == "n1"
    first = run.attempts[run.cluster.get("Pod", "default", "p").metadata.uid][0]
    assert first.message == (
        "0/3 nodes are available: 1 node(s) were unschedulable, "
        "2 resourceclaim not available on the node. deallocation of ResourceClaim completed, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    claim = run.cluster.get("ResourceClaim", "default", "stuck")
    assert [r.pool for r in claim.status.allocation.devices.results] == ["n1"]


@pytest.mark.parametrize(
    ("old_status", "new_status", "uses", "expected"),
    [
        (None, {}, True, "QUEUE"),
        ({}, {}, True, "SKIP"),
        ({}, {"reservedFor": [{"name": "x", "uid": "u"}]}, True, "QUEUE"),
        ({}, {}, False, "SKIP"),
        (
            {"allocation": {"devices": {"results": []}}},
            {},
            False,
            "QUEUE",
        ),
    ],
    ids=[
        "claim-of-the-pod-created",
        "unchanged-status",
        "status-changed",
        "unrelated-claim",
        "any-claim-deallocated",
    ],
)
def test_claim_change_queueing_hint(
    old_status: dict[str, Any] | None, new_status: dict[str, Any], uses: bool, expected: str
) -> None:
    from kubesched import QueueingHint
    from kubesched.framework.listers import StaticLister
    from kubesched_builtin.dynamicresources import DynamicResources

    claim_doc = {
        "metadata": {"name": "mine" if uses else "other", "namespace": "default", "uid": "c1"},
        "spec": {"devices": {"requests": [_exactly("gpu")]}},
    }
    new = ResourceClaim.model_validate({**claim_doc, "status": new_status})
    old = (
        None
        if old_status is None
        else ResourceClaim.model_validate({**claim_doc, "status": old_status})
    )
    (pod,) = parse_manifests(_pod("p", "resourceClaimName: mine"))

    mine = ResourceClaim.model_validate({**claim_doc, "metadata": {"name": "mine", "uid": "m"}})

    class Handle:
        client = None
        lister = StaticLister([new] if uses else [new, mine])
        feature_enabled = FeatureGates().enabled

    plugin = DynamicResources(None, Handle())
    assert plugin.is_schedulable_after_claim_change(pod, old, new) is QueueingHint[expected]


@pytest.mark.parametrize(
    ("pod_name", "claim_name", "expected"),
    [
        ("web-0", "gpu", "web-0-gpu-"),
        ("p" * 40, "c" * 20, "p" * 36 + "-" + "c" * 18),
        ("p" * 56, "c", "p" * 54 + "-"),
    ],
    ids=["short", "both-shortened-in-proportion", "long-pod-short-claim"],
)
def test_generated_claim_name_prefix(pod_name: str, claim_name: str, expected: str) -> None:
    from kubesched.backend.memory.resourceclaims import generate_claim_name_prefix

    assert generate_claim_name_prefix(pod_name, claim_name) == expected


def test_deleting_a_pod_releases_a_shared_claim() -> None:
    shared = """---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}
"""
    docs = (
        CLUSTER
        + shared
        + _pod("a", "resourceClaimName: shared")
        + _pod("b", "resourceClaimName: shared")
    )
    sim = Simulation(parse_manifests(docs), seed=0)
    try:
        run = sim.run()
        claim = run.cluster.get("ResourceClaim", "default", "shared")
        assert sorted(r.name for r in claim.status.reserved_for) == ["a", "b"]
        assert len(claim.status.allocation.devices.results) == 1
        # Allocating protects the claim from deletion; deallocating lifts it (upstream).
        assert claim.metadata.finalizers == ["resource.kubernetes.io/delete-protection"]
        assert {run.cluster.get("Pod", "default", n).spec.node_name for n in "ab"} == {"n1"}
        run.cluster.delete("Pod", "default", "a", grace_period_seconds=0)
        claim = run.cluster.get("ResourceClaim", "default", "shared")
        assert [r.name for r in claim.status.reserved_for] == ["b"]
        assert claim.status.allocation is not None
        run.cluster.delete("Pod", "default", "b", grace_period_seconds=0)
        claim = run.cluster.get("ResourceClaim", "default", "shared")
        assert (claim.status.reserved_for, claim.status.allocation) == ([], None)
        assert claim.metadata.finalizers is None
    finally:
        sim.close()


def _counter_slices(per_device: str, halves: int = 2) -> list[ResourceSlice]:
    """A pool of one 40Gi counter set and ``halves`` partitions each taking ``per_device``."""
    counters = ResourceSlice.model_validate(
        {
            "metadata": {"name": "n1-counters", "uid": "n1-counters"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "resourceSliceCount": 2},
                "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}],
            },
        }
    )
    devices = ResourceSlice.model_validate(
        {
            "metadata": {"name": "n1-devices", "uid": "n1-devices"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "resourceSliceCount": 2},
                "devices": [
                    {
                        "name": f"part-{i}",
                        "consumesCounters": [
                            {"counterSet": "gpu-0", "counters": {"memory": {"value": per_device}}}
                        ],
                    }
                    for i in range(halves)
                ],
            },
        }
    )
    return [counters, devices]


@pytest.mark.parametrize(
    ("per_device", "count", "allocated", "expected"),
    [
        ("20Gi", 2, set(), [["r=part-0", "r=part-1"]]),
        ("40Gi", 2, set(), None),
        ("40Gi", 1, set(), [["r=part-0"]]),
        ("40Gi", 1, {(DRIVER, "n1", "part-0")}, None),
        ("20Gi", 1, {(DRIVER, "n1", "part-0")}, [["r=part-1"]]),
    ],
    ids=[
        "two-partitions-fit-the-counter",
        "two-partitions-exceed-the-counter",
        "one-partition",
        "counter-used-by-an-allocated-partition",
        "room-left-after-an-allocated-partition",
    ],
)
def test_allocator_honours_shared_counters(
    per_device: str, count: int, allocated: set[tuple[str, str, str]], expected: Any
) -> None:
    claim = _claim([_exactly("r", count=count)])
    assert _allocate([claim], _counter_slices(per_device), allocated) == expected


class _RacingClient:
    """A cluster client whose first write of the claim conflicts: someone else changed it
    (added a reservation for ``rival``) just before; ``get`` then gives that version."""

    def __init__(self, claim: ResourceClaim) -> None:
        self.claim = claim
        self.conflicts = 1
        self.gets = 0

    def list(self, kind: str) -> tuple[list[Any], str]:
        return ([self.claim] if kind == "ResourceClaim" else []), "1"

    def watch(self, kind: str, resource_version: str, handler: Any) -> None:
        return None

    def get(self, kind: str, namespace: str, name: str) -> ResourceClaim:
        self.gets += 1
        return self.claim

    def update(self, obj: ResourceClaim) -> ResourceClaim:
        if self.conflicts:
            self.conflicts -= 1
            changed = self.claim.model_copy(deep=True)
            changed.status.reserved_for.append(
                ResourceClaimConsumerReference(resource="pods", name="rival", uid="u-rival")
            )
            changed.metadata.resource_version = str(int(changed.metadata.resource_version) + 1)
            self.claim = changed
            raise ConflictError("the object has been modified")
        written = obj.model_copy(deep=True)
        written.metadata.resource_version = str(int(obj.metadata.resource_version) + 1)
        self.claim = written
        return written


def _racing_plugin(claim: ResourceClaim) -> tuple[DynamicResources, _RacingClient]:
    client = _RacingClient(claim)
    handle = type(
        "Handle", (), {"client": client, "lister": None, "feature_enabled": FeatureGates().enabled}
    )()
    return DynamicResources(None, handle), client


def _pod_obj(name: str) -> Pod:
    return make_pod(name).uid(f"u-{name}").obj()


def test_pre_bind_rereads_the_claim_after_a_conflict() -> None:
    claim = _claim([_exactly("gpu")], name="c")
    claim.metadata.resource_version = "5"
    plugin, client = _racing_plugin(claim)
    pod = _pod_obj("p")
    allocation = AllocationResult.model_validate(
        {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "d0"}]
            }
        }
    )
    state = CycleState()
    state.write(STATE_KEY, _State(claims=[_ClaimInfo(claim, "gpu", allocation=allocation)]))
    assert plugin.pre_bind(state, pod, "n1") is None
    written = client.claim
    assert client.gets == 1
    assert [r.name for r in written.status.reserved_for] == ["rival", "p"]
    assert written.status.allocation == allocation
    assert written.metadata.finalizers == [RESOURCE_CLAIM_FINALIZER]
    # The written claim's devices count as allocated before any watch event.
    assert plugin.manager.allocated_devices() == {(DRIVER, "n1", "d0")}


def test_unreserve_rereads_the_claim_after_a_conflict_and_keeps_the_others() -> None:
    claim = _claim([_exactly("gpu")], name="c")
    claim.metadata.resource_version = "5"
    claim.status.reserved_for = [
        ResourceClaimConsumerReference(resource="pods", name="p", uid="u-p"),
        ResourceClaimConsumerReference(resource="pods", name="other", uid="u-other"),
    ]
    plugin, client = _racing_plugin(claim)
    state = CycleState()
    state.write(STATE_KEY, _State(claims=[_ClaimInfo(claim, "gpu")]))
    plugin.unreserve(state, _pod_obj("p"))
    assert client.gets == 1
    assert [r.name for r in client.claim.status.reserved_for] == ["other", "rival"]
