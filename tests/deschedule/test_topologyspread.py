"""RemovePodsViolatingTopologySpreadConstraint's domain balancing, case by case after the
descheduler's ``TestTopologySpreadConstraint`` (each id is the upstream case's name)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.deschedule import DeschedulerHandle
from kubesched.simulate.driver import Simulation
from kubesched_builtin.descheduler import defaultevictor as de
from kubesched_builtin.descheduler.balance import (
    RemovePodsViolatingTopologySpreadConstraint,
    SpreadArgs,
)

from .conftest import node, pod

FOO = {"foo": "bar"}
HASH = "pod-template-hash"


def zone(name: str, value: str, cpu: str = "2", pods: str = "10", **kw: Any) -> Any:
    """A node in zone ``value`` (cpu in cores, as the upstream cases' millicores)."""
    labels = {"zone": value, **kw.pop("labels", {})}
    return node(name, cpu=cpu, pods=pods, labels=labels, **kw)


def hosts(name: str, host: str, os: str) -> Any:
    """A node labelled ``node: host`` and ``os``."""
    return node(name, labels={"node": host, "os": os})


def constraint(skew: int = 1, key: str = "zone", when: str = "DoNotSchedule", **kw: Any) -> Any:
    """A spread constraint over ``foo: bar`` pods (upstream's getDefaultTopologyConstraints)."""
    return [
        {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": kw.pop("match", FOO)},
            **kw,
        }
    ]


def pods(*groups: tuple[int, str, dict[str, Any]]) -> list[Any]:
    """Pods ``pod-0``, ``pod-1``… of 100m cpu, owned by one ReplicaSet: per group, a count,
    a node and the pod's ``labels`` (default ``foo: bar``), spec fields, ``owned``."""
    out = []
    for count, node_name, group in groups:
        for _ in range(count):
            kw = dict(group)
            labels = kw.pop("labels", FOO)
            owner = ("rs", 1) if kw.pop("owned", True) else None
            containers = [
                {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}
            ]
            p = pod(f"pod-{len(out)}", node_name, owner=owner, containers=containers, **kw)
            p.metadata.labels = dict(labels)
            out.append(p)
    return out


def run(objects: list[Any], args: dict[str, Any], node_fit: bool) -> list[str]:
    """The pods the strategy evicts (dry run) with DefaultEvictor's ``nodeFit``."""
    sim = Simulation(objects)
    try:
        handle = DeschedulerHandle(sim.cluster, dry_run=True)
        handle.evictors = [de.DefaultEvictor(de.Args(node_fit=node_fit), handle)]
        plugin = RemovePodsViolatingTopologySpreadConstraint(
            SpreadArgs.model_validate(args), handle
        )
        plugin.balance(handle.nodes())
        return sorted(e.pod.split("/")[1] for e in handle.evictions)
    finally:
        sim.close()


AB = [zone("n1", "zoneA"), zone("n2", "zoneB")]
C = {"topologySpreadConstraints": constraint()}
C2 = {"topologySpreadConstraints": constraint(2)}
NODE_C = {"topologySpreadConstraints": constraint(key="node"), "nodeSelector": {"os": "windows"}}
LINUX = [hosts("n1", "linNodeA", "linux"), hosts("n2", "linNodeB", "linux")]
LINUX += [hosts("n3", "linNodeC", "linux")]
WINDOWS = [hosts(f"n{i + 4}", f"winNode{c}", "windows") for i, c in enumerate("ABC")]
SOFT = {"topologySpreadConstraints": constraint(when="ScheduleAnyway")}
BOTH = {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}
NO_SCHEDULE = [{"key": "taint-test", "value": "test", "effect": "NoSchedule"}]
TOLERATES = [{"key": "taint-test", "value": "test", "operator": "Equal", "effect": "NoSchedule"}]
PINNED_A = {"nodeSelector": {"zone": "zoneA"}}
HASHED = {"topologySpreadConstraints": constraint(matchLabelKeys=[HASH])}
WHOAMI = {"app": "whoami"}
MULTI = {
    "labels": WHOAMI,
    "topologySpreadConstraints": [
        *constraint(key="topology.kubernetes.io/zone", when="ScheduleAnyway", match=WHOAMI),
        *constraint(key="kubernetes.io/hostname", match=WHOAMI),
    ],
}
SIX = [
    node(f"n{i}", labels={"topology.kubernetes.io/zone": "zoneA" if i <= 3 else "zoneB"})
    for i in range(1, 7)
]
SERVICE = {"app.kubernetes.io/name": "service"}
APP_NODES = {
    "labels": SERVICE,
    "topologySpreadConstraints": constraint(key="kubernetes.io/hostname", match=SERVICE),
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "app_service", "operator": "Exists"}]}
                ]
            }
        }
    },
}


def _taint(key: str, value: str = "") -> dict[str, str]:
    return {"key": key, "value": value, "effect": "NoSchedule"}


TAINTED_839 = [
    zone(
        "controlplane1",
        "zoneA",
        labels={"kubernetes.io/hostname": "cp-1"},
        taints=[
            _taint("node-role.kubernetes.io/controlplane", "true"),
            _taint("node-role.kubernetes.io/etcd", "true"),
        ],
    ),
    zone(
        "infraservices1",
        "zoneA",
        labels={"infra_service": "true", "kubernetes.io/hostname": "infra-1"},
        taints=[_taint("infra_service")],
    ),
    zone("app1", "zoneA", labels={"app_service": "true", "kubernetes.io/hostname": "app-1"}),
    zone("app2", "zoneB", labels={"app_service": "true", "kubernetes.io/hostname": "app-2"}),
]

# (upstream case name, nodes, pod groups, args, DefaultEvictor nodeFit, evicted count,
#  evicted pods or None when upstream only counts them)
Case = tuple[str, list[Any], list[Any], dict[str, Any], bool, int, list[str] | None]
CASES: list[Case] = [
    (
        "2 domains, sizes [2,1], maxSkew=1, move 0 pods",
        AB,
        pods((1, "n1", C), (1, "n1", {}), (1, "n2", {})),
        {},
        False,
        0,
        None,
    ),
    (
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2]",
        AB,
        pods((1, "n1", C), (2, "n1", {}), (1, "n2", {})),
        {},
        False,
        1,
        None,
    ),
    (
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)",
        AB,
        pods((1, "n1", SOFT), (2, "n1", {}), (1, "n2", {})),
        BOTH,
        False,
        1,
        None,
    ),
    (
        "soft constraints are passed over by default",
        AB,
        pods((1, "n1", SOFT), (2, "n1", {}), (1, "n2", {})),
        {},
        False,
        0,
        None,
    ),
    (
        "includeSoftConstraints adds ScheduleAnyway",
        AB,
        pods((1, "n1", SOFT), (2, "n1", {}), (1, "n2", {})),
        {"includeSoftConstraints": True},
        False,
        1,
        None,
    ),
    (
        "2 domains, sizes [3,1], maxSkew=1, no pods eligible, move 0 pods",
        AB,
        pods(
            (1, "n1", {**C, "owned": False}),
            (2, "n1", {"owned": False}),
            (1, "n2", {"owned": False}),
        ),
        {},
        False,
        0,
        None,
    ),
    (
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2], exclude kube-system",
        AB,
        pods((1, "n1", C), (2, "n1", {}), (1, "n2", {})),
        {"namespaces": {"exclude": ["kube-system"]}},
        True,
        1,
        None,
    ),
    (
        "namespace not included, move 0 pods",
        AB,
        pods((1, "n1", C), (2, "n1", {}), (1, "n2", {})),
        {"namespaces": {"include": ["other"]}},
        False,
        0,
        None,
    ),
    (
        "2 domains, sizes [5,2], maxSkew=1, move 1 pod to achieve [4,3]",
        AB,
        pods((1, "n1", C), (4, "n1", {}), (2, "n2", {})),
        {},
        False,
        1,
        None,
    ),
    (
        "2 domains, sizes [4,0], maxSkew=1, move 2 pods to achieve [2,2]",
        AB,
        pods((1, "n1", C), (3, "n1", {})),
        {},
        False,
        2,
        None,
    ),
    (
        "2 domains, sizes [4,0], maxSkew=1, only move 1 pod since pods with nodeSelector "
        "and nodeAffinity aren't evicted",
        AB,
        pods(
            (2, "n1", {**C, **PINNED_A}),
            (
                1,
                "n1",
                {
                    **C,
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "foo", "operator": "In", "values": ["bar"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                },
            ),
            (1, "n1", C),
        ),
        {},
        True,
        1,
        ["pod-3"],
    ),
    (
        "6 domains, sizes [0,0,0,3,3,2], maxSkew=1, No pod is evicted since topology is balanced",
        [*LINUX, *WINDOWS],
        pods((3, "n4", NODE_C), (3, "n5", NODE_C), (2, "n6", NODE_C)),
        {},
        False,
        0,
        None,
    ),
    (
        "7 domains, sizes [0,0,0,3,3,2], maxSkew=1, two pods are evicted and moved to new node",
        [*LINUX, *WINDOWS, hosts("n7", "winNodeD", "windows")],
        pods((3, "n4", NODE_C), (3, "n5", NODE_C), (2, "n6", NODE_C)),
        {},
        False,
        2,
        None,
    ),
    (
        "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 1 pod is evicted from node 4",
        [*LINUX, *WINDOWS],
        pods((4, "n4", NODE_C), (3, "n5", NODE_C), (1, "n6", NODE_C)),
        {},
        False,
        1,
        None,
    ),
    (
        "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 0 pod is evicted as pods of node:winNodeA "
        "can only be scheduled on this node and nodeFit is true",
        [*LINUX, *WINDOWS],
        pods(
            (4, "n4", {**NODE_C, "nodeSelector": {"node": "winNodeA"}}),
            (3, "n5", NODE_C),
            (1, "n6", NODE_C),
        ),
        {},
        True,
        0,
        None,
    ),
    (
        "2 domains, sizes [4,0], maxSkew=1, move 2 pods since selector matches multiple nodes",
        [
            zone("n1", "zoneA", labels={"region": "boston"}),
            zone("n2", "zoneB", labels={"region": "boston"}),
        ],
        pods(
            (1, "n1", {**C, "nodeSelector": {"region": "boston"}}),
            (3, "n1", {"nodeSelector": {"region": "boston"}}),
        ),
        {},
        False,
        2,
        None,
    ),
    (
        "3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC", pods="110")],
        pods((1, "n2", C), (100, "n3", {})),
        {},
        False,
        66,
        None,
    ),
    (
        "4 domains, sizes [0, 1, 3, 5], should move 3 to get [2, 2, 3, 2]",
        [zone(f"n{i}", f"zone{c}") for i, c in enumerate("ABCD", 1)],
        pods((1, "n2", C), (3, "n3", {}), (5, "n4", {})),
        {},
        False,
        3,
        None,
    ),
    (
        "2 domains size [2 6], maxSkew=2, should move 1 to get [3 5]",
        AB,
        pods((1, "n1", C2), (1, "n1", {}), (6, "n2", {})),
        {},
        False,
        1,
        None,
    ),
    (
        "2 domains size [2 6], maxSkew=2, can't move any because of node taints",
        [
            zone(
                "n1", "zoneA", taints=[{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]
            ),
            zone("n2", "zoneB"),
        ],
        pods((1, "n1", C2), (1, "n1", {}), (6, "n2", {})),
        {},
        True,
        0,
        None,
    ),
    (
        "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU",
        [zone("n1", "zoneA", cpu="200m"), zone("n2", "zoneB")],
        pods((1, "n1", C2), (1, "n1", {}), (6, "n2", {})),
        {},
        True,
        0,
        None,
    ),
    (
        "Multiple constraints (6 nodes/2 zones, 4 pods)",
        SIX,
        pods((1, "n1", MULTI), (1, "n2", MULTI), (1, "n3", MULTI), (1, "n4", MULTI)),
        BOTH,
        False,
        1,
        None,
    ),
    (
        "3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC")],
        pods((8, "n1", C), (7, "n2", C)),
        {},
        False,
        5,
        ["pod-5", "pod-6", "pod-7", "pod-8", "pod-9"],
    ),
    (
        "3 domains size [5 5 5], maxSkew=1, should move 0 to retain [5 5 5]",
        [zone("n1", "zoneA"), zone("n2", "zoneB"), zone("n3", "zoneC")],
        pods((5, "n1", C), (5, "n2", C), (5, "n3", C)),
        {},
        False,
        0,
        None,
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod since pod tolerates the node with taint",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=NO_SCHEDULE)],
        pods((1, "n1", {**C, "tolerations": TOLERATES}), (1, "n1", PINNED_A)),
        {},
        False,
        1,
        ["pod-0"],
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the "
        "tainted node",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=NO_SCHEDULE)],
        pods((1, "n1", C), (1, "n1", PINNED_A)),
        {},
        False,
        0,
        None,
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the "
        "tainted node, and NodeFit is enabled",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=NO_SCHEDULE)],
        pods((1, "n1", C), (1, "n1", PINNED_A)),
        {},
        True,
        0,
        None,
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with PreferNoSchedule Taint",
        [
            zone("n1", "zoneA"),
            zone("n2", "zoneB", taints=[{**NO_SCHEDULE[0], "effect": "PreferNoSchedule"}]),
        ],
        pods((1, "n1", C), (1, "n1", PINNED_A)),
        {},
        False,
        1,
        ["pod-0"],
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 0 pod for node with unmatched label filtering",
        AB,
        pods((1, "n1", C), (1, "n1", {})),
        {
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["baz"]}]
            }
        },
        False,
        0,
        None,
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering",
        AB,
        pods((1, "n1", C), (1, "n1", {})),
        {
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]
            }
        },
        False,
        1,
        ["pod-1"],
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering "
        "(NotIn op)",
        AB,
        pods((1, "n1", C), (1, "n1", {})),
        {
            "labelSelector": {
                "matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["baz"]}]
            }
        },
        False,
        1,
        ["pod-1"],
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 1 pods given matchLabelKeys on same replicaset",
        AB,
        pods((2, "n1", {**HASHED, "labels": {**FOO, HASH: "foo"}})),
        {},
        False,
        1,
        ["pod-1"],
    ),
    (
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods given matchLabelKeys on two different "
        "replicasets",
        AB,
        pods(
            (1, "n1", {**HASHED, "labels": {**FOO, HASH: "foo"}}),
            (1, "n1", {**HASHED, "labels": {**FOO, HASH: "bar"}}),
        ),
        {},
        False,
        0,
        None,
    ),
    (
        "3 domains, sizes [2,3,4], maxSkew=1, NodeFit is enabled, and not enough cpu on zoneA; "
        "nothing should be moved",
        [
            zone("n1", "zoneA", cpu="250m", pods="9"),
            zone("n2", "zoneB", cpu="1", pods="9"),
            zone("n3", "zoneC", cpu="1", pods="9"),
        ],
        pods((2, "n1", C), (3, "n2", C), (4, "n3", C)),
        {},
        True,
        0,
        None,
    ),
    (
        "3 domains, sizes [2,3,4], maxSkew=1, args.NodeFit is false, and not enough cpu on "
        "zoneA; 1 should be moved to force scale-up",
        [
            zone("n1", "zoneA", cpu="250m", pods="9"),
            zone("n2", "zoneB", cpu="1", pods="9"),
            zone("n3", "zoneC", cpu="1", pods="9"),
        ],
        pods((2, "n1", C), (3, "n2", C), (4, "n3", C)),
        {"topologyBalanceNodeFit": False},
        True,
        1,
        None,
    ),
    (
        "3 domains, sizes [[1,0], [1,1], [2,1]], maxSkew=1, NodeFit is enabled, and not enough "
        "cpu on ZoneA; nothing should be moved",
        [
            zone("a1", "zoneA", cpu="150m", pods="9"),
            zone("b1", "zoneB", cpu="1", pods="9"),
            zone("c1", "zoneC", cpu="1", pods="9"),
            zone("a2", "zoneA", cpu="50m", pods="9"),
            zone("b2", "zoneB", cpu="1", pods="9"),
            zone("c2", "zoneC", cpu="1", pods="9"),
        ],
        pods((1, "a1", C), (1, "b1", C), (1, "b2", C), (2, "c1", C), (1, "c2", C)),
        {},
        True,
        0,
        None,
    ),
    (
        "2 domains, sizes [[1,4], [2,1]], maxSkew=1, NodeFit is enabled; should move 1",
        [
            zone("a1", "zoneA", cpu="1", pods="9"),
            zone("a2", "zoneA", cpu="1", pods="9"),
            zone("b1", "zoneB", cpu="1", pods="9"),
            zone("b2", "zoneB", cpu="1", pods="9"),
        ],
        pods((1, "a1", C), (4, "a2", C), (2, "b1", C), (1, "b2", C)),
        {},
        True,
        1,
        ["pod-4"],
    ),
    (
        "2 domains, sizes [3, 1], maxSkew=1, Tainted nodes; nothing should be moved",
        TAINTED_839,
        pods((2, "app1", APP_NODES), (2, "app2", APP_NODES)),
        {},
        True,
        0,
        None,
    ),
    (
        "nodeAffinityPolicy Ignore counts the nodes the pods' affinity leaves out",
        TAINTED_839,
        pods(
            (
                2,
                "app1",
                {
                    **APP_NODES,
                    "topologySpreadConstraints": constraint(
                        key="kubernetes.io/hostname", match=SERVICE, nodeAffinityPolicy="Ignore"
                    ),
                },
            ),
        ),
        {"topologyBalanceNodeFit": False},
        False,
        1,
        None,
    ),
    (
        "nodeTaintsPolicy Honor leaves out the tainted nodes",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=NO_SCHEDULE)],
        pods((2, "n1", {"topologySpreadConstraints": constraint(nodeTaintsPolicy="Honor")})),
        {"topologyBalanceNodeFit": False},
        False,
        0,
        None,
    ),
    (
        "nodeTaintsPolicy Ignore counts the tainted nodes",
        [zone("n1", "zoneA"), zone("n2", "zoneB", taints=NO_SCHEDULE)],
        pods((2, "n1", C)),
        {"topologyBalanceNodeFit": False},
        False,
        1,
        None,
    ),
]


@pytest.mark.parametrize(
    ("nodes", "objects", "args", "node_fit", "count", "names"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_topology_spread(
    nodes: list[Any],
    objects: list[Any],
    args: dict[str, Any],
    node_fit: bool,
    count: int,
    names: list[str] | None,
) -> None:
    evicted = run([*nodes, *objects], args, node_fit)
    assert len(evicted) == count
    if names is not None:
        assert evicted == sorted(names)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"constraints": ["Sometimes"]}, "constraint Sometimes is not one of"),
        ({"namespaces": {"include": ["a"], "exclude": ["b"]}}, "only one of Include/Exclude"),
    ],
    ids=["unknown-constraint", "include-and-exclude"],
)
def test_args_refused(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SpreadArgs.model_validate(args)


def test_args_defaults() -> None:
    a = SpreadArgs()
    assert (a.constraints, a.topology_balance_node_fit) == (["DoNotSchedule"], True)
