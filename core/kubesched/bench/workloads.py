"""scheduler_perf-like workloads for ``kubesched bench``, generated deterministically.

Each workload mirrors a test case of upstream's
``test/integration/scheduler_perf/config/performance-config.yaml`` and its pod
templates: the nodes are upstream's default node (4 cpu, 32Gi, 110 pods) spread
over three zones; the *measured* pods are the ones created pending, which the
benchmark schedules and times. Pods that upstream creates before the measurement
(``initPods``) are, here, either left out (they only warm the cluster up) or —
where the workload needs them, as the low-priority pods of ``preemption`` —
created already bound (``spec.nodeName``), so they are part of the setup and not
of the measured scheduling.

The same ``(nodes, pods, seed)`` always gives the same objects: the seed orders
the pods (interleaving the groups and the kinds of pod) and picks which pods are
the unschedulable share.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from kubesched.api import KubeObject, parse_quantity
from kubesched.api.manifests import parse_object
from kubesched.simulate.driver import DETAIL_SUMMARY, Simulation, SimulationRun

ZONES = ("zone-a", "zone-b", "zone-c")
"""The nodes' ``topology.kubernetes.io/zone`` values, assigned round-robin."""
REGION = "region-1"
NODE_CPU = "4"
NODE_MEMORY = "32Gi"
NODE_PODS = "110"
"""Upstream scheduler_perf's default node (``node-default.yaml``): 4 cpu, 32Gi, 110 pods."""
POD_CPU = "100m"
POD_MEMORY = "500Mi"
"""Upstream's ``pod-default.yaml`` requests (and limits)."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
MEASURE_NAMESPACE = "sched-1"
"""Upstream creates the measured pods of the affinity workloads in ``sched-1``."""

LARGE_POD_CPU = "9"
"""Upstream's ``pod-large-cpu.yaml``: more cpu than any node has."""
UNSCHEDULABLE_SHARE = 0.10
"""Share of the ``unschedulable`` workload's pods that fit nowhere."""

LOW_PRIORITY_PODS_PER_NODE = 4
LOW_PRIORITY_CPU = "900m"
"""Upstream's ``pod-low-priority.yaml`` (PreemptionBasic: 4 per node, 3.6 of 4 cpu)."""
HIGH_PRIORITY_CPU = "3000m"
HIGH_PRIORITY_VALUE = 10
"""Upstream's ``pod-high-priority.yaml`` (priority 10, 3 cpu: must evict 3 low pods)."""
HIGH_PRIORITY_CLASS = "bench-high"

TOPOLOGY_SPREAD_MAX_SKEW = 5
"""Upstream's ``pod-with-topology-spreading.yaml``: zone spread, maxSkew 5, DoNotSchedule."""


@dataclass
class ChurnStep:
    """A change once the cluster has settled: pods deleted, then pods created."""

    delete: list[tuple[str, str]]
    """``(namespace, name)`` of the pods to delete."""
    create: list[KubeObject]
    """Measured pods arriving after the deletions."""


class ParsedOnDemand(Sequence[KubeObject]):
    """The models of a stream of manifests, each parsed when first asked for, then kept.

    :meth:`Workload.simulation` hands a workload's pods to the embedded cluster as they
    are parsed: admission shares what consecutive pods have in common (their spec), so
    the 100,000 pods of a large bench never all exist at once as parsed (4.2 KiB each,
    2.3 KiB once admitted and listed). Any other use parses the rest first.
    """

    def __init__(self, manifests: Iterable[dict[str, Any]]) -> None:
        self._manifests = iter(manifests)
        self._models: list[KubeObject] = []

    def _parse_next(self) -> bool:
        """Parse one more manifest; False once there are none left."""
        manifest = next(self._manifests, None)
        if manifest is None:
            return False
        self._models.append(parse_object(manifest))
        return True

    def _parse_all(self) -> list[KubeObject]:
        while self._parse_next():
            pass
        return self._models

    def __iter__(self) -> Iterator[KubeObject]:
        i = 0
        while i < len(self._models) or self._parse_next():
            yield self._models[i]
            i += 1

    def __len__(self) -> int:
        return len(self._parse_all())

    @overload
    def __getitem__(self, index: int) -> KubeObject: ...
    @overload
    def __getitem__(self, index: slice) -> list[KubeObject]: ...
    def __getitem__(self, index: int | slice) -> KubeObject | list[KubeObject]:
        return self._parse_all()[index]


@dataclass
class Workload:
    """The objects of one benchmark run and what the run should end with."""

    name: str
    nodes: list[KubeObject]
    pods: Sequence[KubeObject]
    """The measured pods: created pending, scheduled (and timed) by the run."""
    setup: Sequence[KubeObject] = field(default_factory=list)
    """Other objects applied before the run: PriorityClasses, already-bound pods."""
    expected_unschedulable: int = 0
    """Measured pods that by construction cannot be placed."""
    churn: list[ChurnStep] = field(default_factory=list)
    """Steps applied one after the other, each once the previous scheduling settled;
    their created pods are measured pods too (and listed in ``pods``)."""

    def simulation(self, config: Any, registry: Any, seed: int = 0) -> Simulation:
        """The embedded cluster and scheduler of a bench run, with the objects handed
        over (stored as built, not copied), each pod admitted as it is parsed, keeping
        only the attempts' summaries."""
        return Simulation(
            [*self.nodes, *self.setup],
            pods=self._first_pods(),
            config=config,
            registry=registry,
            seed=seed,
            detail=DETAIL_SUMMARY,
            owned=True,
        )

    def objects(self) -> list[KubeObject]:
        """Everything to apply to the embedded cluster before the run, in a valid order."""
        return [*self.nodes, *self.setup, *self._first_pods()]

    def _first_pods(self) -> Iterator[KubeObject]:
        """The measured pods created before the run (not those of a churn step)."""
        later = {id(obj) for step in self.churn for obj in step.create}
        return (p for p in self.pods if id(p) not in later)

    def run(self, sim: Simulation) -> SimulationRun:
        """Schedule until settled, then apply each churn step and schedule again."""
        run = sim.run()
        for step in self.churn:
            for namespace, name in step.delete:
                sim.cluster.delete("Pod", namespace, name)
            for obj in step.create:
                sim.cluster.create(obj)
            run = sim.run()
        return run


@dataclass(frozen=True)
class WorkloadSpec:
    """A named workload: how to build it and what it corresponds to upstream."""

    name: str
    upstream: str
    summary: str
    build: Callable[[int, int, int], Workload]
    required_plugins: tuple[str, ...] = ()
    plugins: dict[str, Any] | None = None
    """The default profile's ``plugins`` for this workload (None: the default set)."""
    plugin_config: Callable[[int], list[dict[str, Any]]] | None = None
    """The default profile's ``pluginConfig`` (its plugins' args) for a cluster of that
    many nodes (None: no args)."""


# -- object factories ---------------------------------------------------------------------
def node_manifest(i: int) -> dict[str, Any]:
    """Upstream's default node ``node-{i}`` with zone and region labels and those every
    kubelet sets (so that the embedded cluster has nothing to default)."""
    name = f"node-{i}"
    amounts = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": NODE_PODS}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/region": REGION,
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            },
        },
        "spec": {},
        "status": {
            "capacity": dict(amounts),
            "allocatable": dict(amounts),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_manifest(
    name: str,
    *,
    namespace: str = "default",
    cpu: str = POD_CPU,
    memory: str = POD_MEMORY,
    limits: bool = True,
    labels: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Upstream's ``pod-default.yaml`` shape: one pause container with port 80."""
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
    }
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": PAUSE_IMAGE,
                    "ports": [{"containerPort": 80}],
                    "resources": resources,
                }
            ],
            **(spec or {}),
        },
    }


def _nodes(n: int) -> list[KubeObject]:
    return [parse_object(node_manifest(i)) for i in range(n)]


def _pods(manifests: Iterable[dict[str, Any]]) -> ParsedOnDemand:
    """The models of ``manifests``, parsed on demand (a generator keeps one manifest
    alive at a time)."""
    return ParsedOnDemand(manifests)


def _check_sizes(nodes: int, pods: int) -> None:
    if nodes < 1:
        raise ValueError("a workload needs at least one node")
    if pods < 0:
        raise ValueError("the number of pods must not be negative")


# -- the workloads ------------------------------------------------------------------------
def build_basic(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingBasic: ``pods`` default pods (100m cpu, 500Mi) on ``nodes`` nodes."""
    _check_sizes(nodes, pods)
    return Workload("basic", _nodes(nodes), _pods(pod_manifest(f"pod-{i}") for i in range(pods)))


def anti_affinity_group_size(nodes: int) -> int:
    """Pods per anti-affinity group: half the nodes (at least 1), so a group always fits."""
    return max(1, nodes // 2)


def build_pod_anti_affinity(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingPodAntiAffinity: pods labelled ``color: green`` with a required
    anti-affinity to their own group on ``kubernetes.io/hostname``.

    Upstream puts all its (fewer than nodes) green pods in one group; to scale past
    the node count the pods here form groups of ``nodes // 2``, each pod repelling
    the pods of its group, and the seed interleaves the groups.
    """
    _check_sizes(nodes, pods)
    size = anti_affinity_group_size(nodes)
    order = list(range(pods))
    random.Random(seed).shuffle(order)
    manifests = []
    for i in order:
        group = f"g{i // size}"
        selector = {"matchLabels": {"color": "green", "group": group}}
        manifests.append(
            pod_manifest(
                f"anti-affinity-pod-{i}",
                namespace=MEASURE_NAMESPACE,
                labels={"color": "green", "group": group},
                spec={
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "labelSelector": selector,
                                    "topologyKey": "kubernetes.io/hostname",
                                }
                            ]
                        }
                    }
                },
            )
        )
    return Workload("pod-anti-affinity", _nodes(nodes), _pods(manifests))


def build_topology_spread(nodes: int, pods: int, seed: int) -> Workload:
    """TopologySpreading: ``color: blue`` pods spread over the zones, maxSkew 5,
    DoNotSchedule (upstream's ``pod-with-topology-spreading.yaml``)."""
    _check_sizes(nodes, pods)
    constraint = {
        "maxSkew": TOPOLOGY_SPREAD_MAX_SKEW,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"color": "blue"}},
    }
    manifests = [
        pod_manifest(
            f"spreading-pod-{i}",
            labels={"color": "blue"},
            spec={"topologySpreadConstraints": [constraint]},
        )
        for i in range(pods)
    ]
    return Workload("topology-spread", _nodes(nodes), _pods(manifests))


def _colored_pods(
    prefix: str, color: str, kind: str, rule: str, term: dict[str, Any], pods: int
) -> list[KubeObject]:
    """``pods`` pods ``{prefix}-{i}`` in ``sched-1`` labelled ``color: {color}`` with the
    one pod (anti-)affinity ``term`` under ``affinity.{kind}.{rule}``."""
    return _pods(
        [
            pod_manifest(
                f"{prefix}-{i}",
                namespace=MEASURE_NAMESPACE,
                labels={"color": color},
                spec={"affinity": {kind: {rule: [term]}}},
            )
            for i in range(pods)
        ]
    )


def build_preferred_affinity(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingPreferredPodAffinity: ``color: red`` pods with a preferred (weight 1)
    pod affinity to ``color: red`` on ``kubernetes.io/hostname``."""
    _check_sizes(nodes, pods)
    term = {
        "weight": 1,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"color": "red"}},
            "topologyKey": "kubernetes.io/hostname",
        },
    }
    return Workload(
        "preferred-affinity",
        _nodes(nodes),
        _colored_pods(
            "preferred-affinity-pod",
            "red",
            "podAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            term,
            pods,
        ),
    )


def build_pod_affinity(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingPodAffinity: ``color: blue`` pods in ``sched-1`` with a required pod
    affinity to ``color: blue`` on the zone (upstream's ``pod-with-pod-affinity.yaml``).

    The first pod matches itself (upstream's rule for the first pod of a group), the
    others must then land in its zone.
    """
    _check_sizes(nodes, pods)
    term = {
        "labelSelector": {"matchLabels": {"color": "blue"}},
        "topologyKey": "topology.kubernetes.io/zone",
    }
    return Workload(
        "pod-affinity",
        _nodes(nodes),
        _colored_pods(
            "affinity-pod",
            "blue",
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            term,
            pods,
        ),
    )


def build_preferred_anti_affinity(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingPreferredPodAntiAffinity: ``color: yellow`` pods in ``sched-1`` with a
    preferred (weight 1) pod anti-affinity to ``color: yellow`` on hostname."""
    _check_sizes(nodes, pods)
    term = {
        "weight": 1,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"color": "yellow"}},
            "topologyKey": "kubernetes.io/hostname",
        },
    }
    return Workload(
        "preferred-anti-affinity",
        _nodes(nodes),
        _colored_pods(
            "preferred-anti-affinity-pod",
            "yellow",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            term,
            pods,
        ),
    )


NODE_AFFINITY_ZONES = ZONES[:2]
"""The zones that the ``node-affinity`` workload's pods require."""


def build_node_affinity(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingNodeAffinity: pods with a required node affinity to two of the three
    zones and a preferred one (weight 1) to the first (upstream's
    ``pod-with-node-affinity.yaml`` requires one zone of labelled nodes)."""
    _check_sizes(nodes, pods)
    zone = "topology.kubernetes.io/zone"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": zone, "operator": "In", "values": list(NODE_AFFINITY_ZONES)}
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [
                            {"key": zone, "operator": "In", "values": [NODE_AFFINITY_ZONES[0]]}
                        ]
                    },
                }
            ],
        }
    }
    manifests = [
        pod_manifest(f"node-affinity-pod-{i}", spec={"affinity": affinity}) for i in range(pods)
    ]
    return Workload("node-affinity", _nodes(nodes), _pods(manifests))


def build_topology_spread_min_domains(nodes: int, pods: int, seed: int) -> Workload:
    """TopologySpreading with ``minDomains``: ``color: purple`` pods spread over the
    nodes (hostname), maxSkew 1, DoNotSchedule, ``minDomains`` = the node count, plus
    the zone spread of ``topology-spread`` as a ScheduleAnyway preference."""
    _check_sizes(nodes, pods)
    selector = {"matchLabels": {"color": "purple"}}
    constraints = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "minDomains": nodes,
            "labelSelector": selector,
        },
        {
            "maxSkew": TOPOLOGY_SPREAD_MAX_SKEW,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": selector,
        },
    ]
    manifests = [
        pod_manifest(
            f"min-domains-pod-{i}",
            labels={"color": "purple"},
            spec={"topologySpreadConstraints": constraints},
        )
        for i in range(pods)
    ]
    return Workload("topology-spread-min-domains", _nodes(nodes), _pods(manifests))


CHURN_PRIORITIES = (("bench-low", 0), ("bench-mid", 100), ("bench-high", 1000))
"""The PriorityClasses that the ``churn`` workload's measured pods cycle through."""
CHURN_ROUNDS = 5
CHURN_RUNNING_PER_NODE = 2
CHURN_DELETE_SHARE = 0.25
"""``churn``: measured pods arrive in 5 rounds; before each later round a quarter of
the pods still running from the setup (2 per node) is deleted."""


def build_churn(nodes: int, pods: int, seed: int) -> Workload:
    """Mixed priority churn: nodes already run 2 default pods each; the measured pods,
    of three priorities in turn, arrive in rounds, and before each round after the
    first a seeded quarter of the running setup pods is deleted (as upstream's churn
    operations delete pods while others arrive)."""
    _check_sizes(nodes, pods)
    rng = random.Random(seed)
    setup: list[KubeObject] = [
        parse_object(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
        for name, value in CHURN_PRIORITIES
    ]
    running = []
    for n in range(nodes):
        for j in range(CHURN_RUNNING_PER_NODE):
            name = f"running-pod-{n}-{j}"
            running.append(name)
            setup.append(parse_object(pod_manifest(name, spec={"nodeName": f"node-{n}"})))
    measured = [
        parse_object(
            pod_manifest(
                f"churn-pod-{i}",
                spec={"priorityClassName": CHURN_PRIORITIES[i % len(CHURN_PRIORITIES)][0]},
            )
        )
        for i in range(pods)
    ]
    per_round = -(-pods // CHURN_ROUNDS) if pods else 0
    rounds = [measured[r * per_round : (r + 1) * per_round] for r in range(CHURN_ROUNDS)]
    steps = []
    for batch in rounds[1:]:
        doomed = rng.sample(running, round(len(running) * CHURN_DELETE_SHARE))
        gone = set(doomed)
        running = [name for name in running if name not in gone]
        steps.append(ChurnStep([("default", name) for name in doomed], batch))
    return Workload("churn", _nodes(nodes), measured, setup=setup, churn=steps)


GANG_SIZE = 10
"""Pods per PodGroup of the ``gang`` workload (its ``minMember``)."""
GANG_PLUGINS: dict[str, Any] = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
}
"""The Coscheduling profile of scheduler-plugins' manifests: every extension point,
and its QueueSort instead of PrioritySort."""


def build_gang(nodes: int, pods: int, seed: int) -> Workload:
    """Gang scheduling with Coscheduling: PodGroups of ``minMember`` 10 (the last one
    takes the rest), default pods labelled with their group, the groups interleaved
    by the seed; each pod waits at Permit until its group's quorum is assumed."""
    _check_sizes(nodes, pods)
    groups = [
        list(range(start, min(start + GANG_SIZE, pods))) for start in range(0, pods, GANG_SIZE)
    ]
    setup: list[KubeObject] = [
        parse_object(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": f"gang-{g}", "namespace": "default"},
                "spec": {"minMember": len(members)},
            }
        )
        for g, members in enumerate(groups)
    ]
    order = [(g, i) for g, members in enumerate(groups) for i in members]
    random.Random(seed).shuffle(order)
    manifests = [
        pod_manifest(f"gang-pod-{i}", labels={"scheduling.x-k8s.io/pod-group": f"gang-{g}"})
        for g, i in order
    ]
    return Workload("gang", _nodes(nodes), _pods(manifests), setup=setup)


LOAD_AWARE_PLUGINS: dict[str, Any] = {
    "multiPoint": {
        "enabled": [
            {"name": "TargetLoadPacking"},
            {"name": "LoadVariationRiskBalancing"},
            {"name": "LowRiskOverCommitment"},
            {"name": "Peaks"},
        ]
    },
}
"""The Trimaran plugins (contrib), each at every extension point it has, on top of the
default set."""
LOAD_AWARE_POWER_MODEL = {"k0": 471.74, "k1": -91.5, "k2": -0.0719}
"""Peaks' power model of every node (scheduler-plugins' sample model)."""


def load_aware_plugin_config(nodes: int) -> list[dict[str, Any]]:
    """Peaks' args: the power model of each of the ``nodes`` nodes, by name."""
    models = {f"node-{i}": LOAD_AWARE_POWER_MODEL for i in range(nodes)}
    return [{"name": "Peaks", "args": {"nodePowerModel": models}}]


def _loaded_node(i: int, rng: random.Random) -> dict[str, Any]:
    """Upstream's default node with measured utilisation annotations (the Trimaran
    metrics): cpu 0-80 % ± 0-15 %, memory 0-80 % ± 0-15 %."""
    manifest = node_manifest(i)
    manifest["metadata"]["annotations"] = {
        "kubesched.io/cpu-utilization": f"{rng.uniform(0, 80):.1f}",
        "kubesched.io/cpu-utilization-stddev": f"{rng.uniform(0, 15):.1f}",
        "kubesched.io/memory-utilization": f"{rng.uniform(0, 80):.1f}",
        "kubesched.io/memory-utilization-stddev": f"{rng.uniform(0, 15):.1f}",
    }
    return manifest


def build_load_aware(nodes: int, pods: int, seed: int) -> Workload:
    """Load-aware scoring (Trimaran): default pods on nodes whose measured cpu and memory
    utilisation (average and deviation, seeded) the four Trimaran plugins read from
    node annotations."""
    _check_sizes(nodes, pods)
    rng = random.Random(seed)
    node_objects = [parse_object(_loaded_node(i, rng)) for i in range(nodes)]
    manifests = (pod_manifest(f"pod-{i}") for i in range(pods))
    return Workload("load-aware", node_objects, _pods(manifests))


NETWORK_AWARE_WORKLOADS = 10
"""Workloads of the ``network-aware`` AppGroup: each depends on the next."""
NETWORK_AWARE_MAX_COST = 10
NETWORK_AWARE_PLUGINS: dict[str, Any] = {
    "multiPoint": {"enabled": [{"name": "NetworkOverhead"}]},
    "queueSort": {"enabled": [{"name": "TopologicalSort"}], "disabled": [{"name": "*"}]},
}
"""scheduler-plugins' network-aware profile: TopologicalSort instead of PrioritySort, and
NetworkOverhead on top of the default set."""


def build_network_aware(nodes: int, pods: int, seed: int) -> Workload:
    """Network-aware placement: an AppGroup of 10 workloads in a chain (each depends on the
    next, maxNetworkCost 10), a NetworkTopology of the three zones (cost 5 or 15 between
    them), and default pods of the workloads in turn, interleaved by the seed."""
    _check_sizes(nodes, pods)
    names = [f"w{k}" for k in range(NETWORK_AWARE_WORKLOADS)]

    def info(name: str) -> dict[str, Any]:
        return {"kind": "Deployment", "name": name, "selector": name, "apiVersion": "apps/v1"}

    app_group = {
        "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1",
        "kind": "AppGroup",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "numMembers": len(names),
            "topologySortingAlgorithm": "KahnSort",
            "workloads": [
                {
                    "workload": info(name),
                    "dependencies": [
                        {"workload": info(names[k + 1]), "maxNetworkCost": NETWORK_AWARE_MAX_COST}
                    ]
                    if k + 1 < len(names)
                    else [],
                }
                for k, name in enumerate(names)
            ],
        },
        "status": {
            "topologyOrder": [
                {"workload": info(name), "index": k + 1}
                for k, name in sorted(enumerate(names), key=lambda e: e[1])
            ]
        },
    }
    costs = {("zone-a", "zone-b"): 5, ("zone-b", "zone-c"): 5, ("zone-a", "zone-c"): 15}
    topology = {
        "apiVersion": "networktopology.diktyo.x-k8s.io/v1alpha1",
        "kind": "NetworkTopology",
        "metadata": {"name": "nt-default", "namespace": "default"},
        "spec": {
            "weights": [
                {
                    "name": "UserDefined",
                    "topologyList": [
                        {
                            "topologyKey": "topology.kubernetes.io/zone",
                            "originList": [
                                {
                                    "origin": origin,
                                    "costList": [
                                        {
                                            "destination": dest,
                                            "networkCost": costs.get(
                                                (origin, dest), costs.get((dest, origin), 0)
                                            ),
                                        }
                                        for dest in ZONES
                                        if dest != origin
                                    ],
                                }
                                for origin in ZONES
                            ],
                        }
                    ],
                }
            ]
        },
    }
    order = list(range(pods))
    random.Random(seed).shuffle(order)
    manifests = (
        pod_manifest(
            f"app-pod-{i}",
            labels={
                "appgroup.diktyo.x-k8s.io": "bench",
                "appgroup.diktyo.x-k8s.io.workload": names[i % len(names)],
            },
        )
        for i in order
    )
    setup = [parse_object(app_group), parse_object(topology)]
    return Workload("network-aware", _nodes(nodes), _pods(manifests), setup=setup)


QUOTA_SHARES = (0.40, 0.30, 0.20, 0.10)
"""The share of the measured pods in each namespace ``quota-i`` of the ``quota`` workload."""
QUOTA_MIN_SHARE = 0.25
"""Each ElasticQuota's min, as a share of all the measured pods' requests: the mins add
up to all of them, so the first two namespaces borrow what the last two leave unused."""
QUOTA_MAX_SHARE = 0.45
"""Each ElasticQuota's max, as a share of all the measured pods' requests."""
QUOTA_PLUGINS: dict[str, Any] = {
    "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
    "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
}
"""scheduler-plugins' CapacityScheduling profile: every extension point it has, and no
DefaultPreemption."""


def _quota_amount(pods: int, share: float, per_pod: int, unit: str) -> str:
    return f"{max(1, math.ceil(pods * share)) * per_pod}{unit}"


def build_quota(nodes: int, pods: int, seed: int) -> Workload:
    """Elastic quotas with CapacityScheduling: default pods in four namespaces (40%, 30%,
    20% and 10% of them, interleaved by the seed), each with an ElasticQuota whose min is
    25% of all the pods' requests and whose max is 45%: the first two namespaces go over
    their min, borrowing from the last two, which stay under theirs; every pod fits."""
    _check_sizes(nodes, pods)
    namespaces = [f"quota-{q}" for q in range(len(QUOTA_SHARES))]
    bounds = {
        share: {
            "cpu": _quota_amount(pods, share, 100, "m"),
            "memory": _quota_amount(pods, share, 500, "Mi"),
        }
        for share in (QUOTA_MIN_SHARE, QUOTA_MAX_SHARE)
    }
    setup: list[KubeObject] = [
        parse_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for ns in namespaces
    ]
    setup += [
        parse_object(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "ElasticQuota",
                "metadata": {"name": "quota", "namespace": ns},
                "spec": {"min": bounds[QUOTA_MIN_SHARE], "max": bounds[QUOTA_MAX_SHARE]},
            }
        )
        for ns in namespaces
    ]
    owners = [q for q, share in enumerate(QUOTA_SHARES) for _ in range(math.floor(pods * share))]
    owners += [0] * (pods - len(owners))
    random.Random(seed).shuffle(owners)
    manifests = [
        pod_manifest(f"quota-pod-{i}", namespace=namespaces[q]) for i, q in enumerate(owners)
    ]
    return Workload("quota", _nodes(nodes), _pods(manifests), setup=setup)


NUMA_PLUGINS: dict[str, Any] = {
    "multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
}
"""The default profile plus NodeResourceTopologyMatch (Filter, Score, Reserve)."""
NUMA_POD_CPU = "1"
NUMA_POD_MEMORY = "1Gi"
NUMA_TIGHT_EVERY = 3
"""Every third node's NUMA zones have only 500m cpu free each: a 1-cpu pod fits the
node's total but no single zone there."""


def _nrt_manifest(i: int) -> dict[str, Any]:
    # Two NUMA zones of half the node each; single-numa-node policy, pod scope on even
    # nodes and container scope on odd ones.
    free = "500m" if i % NUMA_TIGHT_EVERY == 0 else "2"
    zone_memory = str(parse_quantity(NODE_MEMORY).value() // 2)
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": f"node-{i}"},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "pod" if i % 2 == 0 else "container"},
        ],
        "zones": [
            {
                "name": f"node-{z}",
                "type": "Node",
                "costs": [
                    {"name": "node-0", "value": 10 if z == 0 else 20},
                    {"name": "node-1", "value": 20 if z == 0 else 10},
                ],
                "resources": [
                    {"name": "cpu", "capacity": "2", "allocatable": "2", "available": free},
                    {
                        "name": "memory",
                        "capacity": zone_memory,
                        "allocatable": zone_memory,
                        "available": zone_memory,
                    },
                ],
            }
            for z in range(2)
        ],
    }


def build_numa(nodes: int, pods: int, seed: int) -> Workload:
    """NUMA-aware placement with NodeResourceTopologyMatch: a NodeResourceTopology object
    per node (two zones of 2 cpu and 16Gi, single-numa-node; a third of the nodes with
    only 500m free per zone), Guaranteed pods of 1 cpu and 1Gi (limits = requests)."""
    _check_sizes(nodes, pods)
    setup = [parse_object(_nrt_manifest(i)) for i in range(nodes)]
    manifests = (
        pod_manifest(f"numa-pod-{i}", cpu=NUMA_POD_CPU, memory=NUMA_POD_MEMORY) for i in range(pods)
    )
    return Workload("numa", _nodes(nodes), _pods(manifests), setup=setup)


def unschedulable_count(pods: int) -> int:
    """How many of ``pods`` the ``unschedulable`` workload makes too large for any node."""
    return round(pods * UNSCHEDULABLE_SHARE)


def build_unschedulable(nodes: int, pods: int, seed: int) -> Workload:
    """Unschedulable: default pods, of which a 10% share (placed by the seed) request
    9 cpu (upstream's ``pod-large-cpu.yaml``) and fit nowhere.

    Upstream creates its large pods first and measures the default pods behind them;
    here they are mixed in, so that every failing attempt is part of the measurement.
    """
    _check_sizes(nodes, pods)
    large = set(random.Random(seed).sample(range(pods), unschedulable_count(pods)))
    manifests = [
        pod_manifest(f"large-pod-{i}", cpu=LARGE_POD_CPU, limits=False)
        if i in large
        else pod_manifest(f"pod-{i}")
        for i in range(pods)
    ]
    return Workload(
        "unschedulable",
        _nodes(nodes),
        _pods(manifests),
        expected_unschedulable=expected_unschedulable("unschedulable", nodes, pods),
    )


def build_preemption(nodes: int, pods: int, seed: int) -> Workload:
    """PreemptionBasic: every node already runs 4 low-priority pods (900m each, grace
    period 0); ``pods`` high-priority pods (priority 10, 3 cpu) must each preempt 3.

    A node takes one high-priority pod, so pods beyond the node count stay pending
    (upstream measures 500 pods on 500 nodes).
    """
    return _preemption("preemption", nodes, pods)


LOW_PRIORITY_LABELS = {"tier": "low"}
"""The low-priority pods' labels in ``preemption-anti-affinity``."""


def build_preemption_anti_affinity(nodes: int, pods: int, seed: int) -> Workload:
    """PreemptionBasic whose high-priority pods carry a required pod anti-affinity on
    hostname to the low-priority pods (``tier: low``): InterPodAffinity rejects every
    node still running one, and each high-priority pod preempts all 4 of a node's.

    Upstream's scheduler_perf has no preemption case with inter-pod constraints; this
    one makes preemption's dry run count victims through InterPodAffinity's PreFilter
    RemovePod/AddPod extension.
    """
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": LOW_PRIORITY_LABELS},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }
    return _preemption("preemption-anti-affinity", nodes, pods, LOW_PRIORITY_LABELS, anti)


def _preemption(
    name: str,
    nodes: int,
    pods: int,
    low_labels: dict[str, str] | None = None,
    high_spec: dict[str, Any] | None = None,
) -> Workload:
    """The preemption workloads: ``nodes`` full of low-priority pods (with
    ``low_labels``), ``pods`` high-priority pods (with ``high_spec`` added)."""
    _check_sizes(nodes, pods)
    setup: list[KubeObject] = [
        parse_object(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": HIGH_PRIORITY_CLASS},
                "value": HIGH_PRIORITY_VALUE,
            }
        )
    ]
    for n in range(nodes):
        for j in range(LOW_PRIORITY_PODS_PER_NODE):
            setup.append(
                parse_object(
                    pod_manifest(
                        f"low-pod-{n}-{j}",
                        cpu=LOW_PRIORITY_CPU,
                        labels=low_labels,
                        spec={"nodeName": f"node-{n}", "terminationGracePeriodSeconds": 0},
                    )
                )
            )
    manifests = [
        pod_manifest(
            f"high-pod-{i}",
            cpu=HIGH_PRIORITY_CPU,
            spec={"priorityClassName": HIGH_PRIORITY_CLASS, **(high_spec or {})},
        )
        for i in range(pods)
    ]
    return Workload(
        name,
        _nodes(nodes),
        _pods(manifests),
        setup=setup,
        expected_unschedulable=expected_unschedulable(name, nodes, pods),
    )


STATEFUL_CLASS = "bench-zonal"
STATEFUL_DRIVER = "disk.csi.bench.example"
STATEFUL_CLAIM_SIZE = "10Gi"
STATEFUL_ZONE_CAPACITY = "100Ti"
STATEFUL_ATTACH_LIMIT = 40


def build_stateful(nodes: int, pods: int, seed: int) -> Workload:
    """``pods`` StatefulSet-shaped pods (``db-<i>``), each with its own 10Gi claim
    ``data-db-<i>`` of a WaitForFirstConsumer class: VolumeBinding provisions every
    claim in the chosen node's zone at PreBind, bounded by per-zone CSIStorageCapacity;
    every node's CSINode publishes an attach limit of 40 (NodeVolumeLimits)."""
    _check_sizes(nodes, pods)
    zone_key = "topology.kubernetes.io/zone"
    setup: list[dict[str, Any]] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": STATEFUL_DRIVER},
            "spec": {"storageCapacity": True},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": STATEFUL_CLASS},
            "provisioner": STATEFUL_DRIVER,
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        *(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {"name": f"{STATEFUL_CLASS}-{zone}", "namespace": "kube-system"},
                "storageClassName": STATEFUL_CLASS,
                "nodeTopology": {"matchLabels": {zone_key: zone}},
                "capacity": STATEFUL_ZONE_CAPACITY,
            }
            for zone in ZONES
        ),
        *(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": f"node-{i}"},
                "spec": {
                    "drivers": [
                        {
                            "name": STATEFUL_DRIVER,
                            "nodeID": f"node-{i}",
                            "topologyKeys": [zone_key],
                            "allocatable": {"count": STATEFUL_ATTACH_LIMIT},
                        }
                    ]
                },
            }
            for i in range(nodes)
        ),
        *(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"data-db-{i}", "namespace": "default"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": STATEFUL_CLASS,
                    "resources": {"requests": {"storage": STATEFUL_CLAIM_SIZE}},
                },
            }
            for i in range(pods)
        ),
    ]
    manifests = [
        pod_manifest(
            f"db-{i}",
            labels={"app": "db", "statefulset.kubernetes.io/pod-name": f"db-{i}"},
            spec={
                "hostname": f"db-{i}",
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}}
                ],
            },
        )
        for i in range(pods)
    ]
    return Workload("stateful", _nodes(nodes), _pods(manifests), setup=_pods(setup))


DRA_DRIVER = "gpu.bench.example.com"
DRA_DEVICES_PER_NODE = 8
DRA_CLASS = "bench-gpu"
DRA_COUNTS = (1, 2, 1, 3, 1, 2, 1, 4)
"""Devices per pod, cycled: 1 to 4, 1.875 on average, so 2,000 pods want 3,750 of the
4,000 devices of 500 nodes (the rest is lost to fragmentation or stays free)."""


def _dra_setup(nodes: int) -> list[KubeObject]:
    objs = [
        parse_object(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DRA_CLASS},
                "spec": {
                    "selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]
                },
            }
        )
    ]
    for count in sorted(set(DRA_COUNTS)):
        objs.append(
            parse_object(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": f"gpus-{count}", "namespace": "default"},
                    "spec": {
                        "spec": {
                            "devices": {
                                "requests": [
                                    {
                                        "name": "gpus",
                                        "exactly": {"deviceClassName": DRA_CLASS, "count": count},
                                    }
                                ]
                            }
                        }
                    },
                }
            )
        )
    for i in range(nodes):
        devices = [
            {
                "name": f"gpu-{d}",
                "attributes": {"index": {"int": d}, "model": {"string": "bench"}},
                "capacity": {"memory": {"value": "40Gi"}},
            }
            for d in range(DRA_DEVICES_PER_NODE)
        ]
        objs.append(
            parse_object(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"node-{i}-{DRA_DRIVER}"},
                    "spec": {
                        "driver": DRA_DRIVER,
                        "nodeName": f"node-{i}",
                        "pool": {"name": f"node-{i}", "generation": 1, "resourceSliceCount": 1},
                        "devices": devices,
                    },
                }
            )
        )
    return objs


def build_dra(nodes: int, pods: int, seed: int) -> Workload:
    """SchedulingWithResourceClaimTemplateStructured: every node publishes 8 devices in a
    ResourceSlice; each pod claims 1 to 4 of them through a ResourceClaimTemplate."""
    _check_sizes(nodes, pods)
    manifests = [
        pod_manifest(
            f"pod-{i}",
            spec={
                "resourceClaims": [
                    {
                        "name": "gpus",
                        "resourceClaimTemplateName": f"gpus-{DRA_COUNTS[i % len(DRA_COUNTS)]}",
                    }
                ]
            },
        )
        for i in range(pods)
    ]
    return Workload("dra", _nodes(nodes), _pods(manifests), setup=_dra_setup(nodes))


WORKLOADS: dict[str, WorkloadSpec] = {
    spec.name: spec
    for spec in (
        WorkloadSpec(
            "basic",
            "SchedulingBasic",
            "default pods (100m, 500Mi), no constraints",
            build_basic,
        ),
        WorkloadSpec(
            "pod-anti-affinity",
            "SchedulingPodAntiAffinity",
            "required pod anti-affinity on hostname within groups of nodes/2 pods",
            build_pod_anti_affinity,
        ),
        WorkloadSpec(
            "topology-spread",
            "TopologySpreading",
            "zone spread, maxSkew 5, DoNotSchedule",
            build_topology_spread,
        ),
        WorkloadSpec(
            "preferred-affinity",
            "SchedulingPreferredPodAffinity",
            "preferred pod affinity (weight 1) on hostname",
            build_preferred_affinity,
        ),
        WorkloadSpec(
            "unschedulable",
            "Unschedulable",
            "10% of the pods request 9 cpu and fit nowhere",
            build_unschedulable,
        ),
        WorkloadSpec(
            "preemption",
            "PreemptionBasic",
            "nodes full of low-priority pods; high-priority pods preempt 3 each",
            build_preemption,
            required_plugins=("DefaultPreemption",),
        ),
        WorkloadSpec(
            "preemption-anti-affinity",
            "PreemptionBasic with required anti-affinity (no upstream case)",
            "as preemption; high-priority pods repel the low ones on hostname: preempt 4 each",
            build_preemption_anti_affinity,
            required_plugins=("DefaultPreemption", "InterPodAffinity"),
        ),
        WorkloadSpec(
            "stateful",
            "none; nearest: SchedulingCSIPVs, with pre-provisioned PVs",
            "a 10Gi WaitForFirstConsumer claim per pod, provisioned per zone at PreBind",
            build_stateful,
            required_plugins=("VolumeBinding",),
        ),
        WorkloadSpec(
            "dra",
            "SchedulingWithResourceClaimTemplateStructured",
            "8 DRA devices per node; each pod claims 1-4 through a claim template",
            build_dra,
            required_plugins=("DynamicResources",),
        ),
        WorkloadSpec(
            "pod-affinity",
            "SchedulingPodAffinity",
            "required pod affinity to the own group on the zone",
            build_pod_affinity,
        ),
        WorkloadSpec(
            "preferred-anti-affinity",
            "SchedulingPreferredPodAntiAffinity",
            "preferred pod anti-affinity (weight 1) on hostname",
            build_preferred_anti_affinity,
        ),
        WorkloadSpec(
            "node-affinity",
            "SchedulingNodeAffinity",
            "required node affinity to two zones, preferred to one",
            build_node_affinity,
        ),
        WorkloadSpec(
            "churn",
            "SchedulingWithMixedChurn",
            "pods of 3 priorities arrive in 5 rounds while running pods are deleted",
            build_churn,
        ),
        WorkloadSpec(
            "gang",
            "Coscheduling (scheduler-plugins)",
            "PodGroups of 10 pods placed all together (the Coscheduling profile)",
            build_gang,
            required_plugins=("Coscheduling",),
            plugins=GANG_PLUGINS,
        ),
        WorkloadSpec(
            "load-aware",
            "Trimaran (scheduler-plugins)",
            "TargetLoadPacking, LoadVariationRiskBalancing, LowRiskOverCommitment and Peaks "
            "on measured node load",
            build_load_aware,
            required_plugins=(
                "TargetLoadPacking",
                "LoadVariationRiskBalancing",
                "LowRiskOverCommitment",
                "Peaks",
            ),
            plugins=LOAD_AWARE_PLUGINS,
            plugin_config=load_aware_plugin_config,
        ),
        WorkloadSpec(
            "network-aware",
            "NetworkAware (scheduler-plugins)",
            "an AppGroup of 10 chained workloads over a zone NetworkTopology "
            "(TopologicalSort, NetworkOverhead)",
            build_network_aware,
            required_plugins=("TopologicalSort", "NetworkOverhead"),
            plugins=NETWORK_AWARE_PLUGINS,
        ),
        WorkloadSpec(
            "quota",
            "CapacityScheduling (scheduler-plugins)",
            "4 namespaces with ElasticQuotas, 2 over their min, 2 under (CapacityScheduling)",
            build_quota,
            required_plugins=("CapacityScheduling",),
            plugins=QUOTA_PLUGINS,
        ),
        WorkloadSpec(
            "topology-spread-min-domains",
            "TopologySpreading (minDomains)",
            "hostname spread, maxSkew 1, minDomains = nodes; zone spread preferred",
            build_topology_spread_min_domains,
        ),
        WorkloadSpec(
            "numa",
            "NodeResourceTopologyMatch (scheduler-plugins)",
            "Guaranteed 1-cpu pods; NRT objects, single-numa-node; a third of nodes too split",
            build_numa,
            required_plugins=("NodeResourceTopologyMatch",),
            plugins=NUMA_PLUGINS,
        ),
    )
}
"""Every workload by name, in the order ``all`` runs them."""


def expected_unschedulable(name: str, nodes: int, pods: int) -> int:
    """How many measured pods of workload ``name`` cannot be placed, by construction."""
    if name == "unschedulable":
        return unschedulable_count(pods)
    if name in ("preemption", "preemption-anti-affinity"):
        return max(0, pods - nodes)
    return 0


def build_workload(name: str, nodes: int, pods: int, seed: int = 0) -> Workload:
    """Build the workload ``name`` (a key of ``WORKLOADS``)."""
    try:
        spec = WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})") from None
    return spec.build(nodes, pods, seed)
