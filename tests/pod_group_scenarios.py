"""Pod group cycles to compare with kube-scheduler v1.36: the objects of each case, the
gates both schedulers run with, and the outcome as compared (placements by rack, refusal
messages, the PodGroup's PodGroupScheduled condition).

``tests/kube/test_gang_scheduling.py`` records the real scheduler's outcome in
``tests/fixtures/scheduler/pod-group-cycle.json`` and holds kubesched on a real API server
to it; ``tests/plugins/test_gangscheduling.py`` holds the embedded cluster to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.kube.test_dra import device_class, node_slice

RECORDING = Path(__file__).resolve().parent / "fixtures" / "scheduler" / "pod-group-cycle.json"

GANG_GATES = "GenericWorkload=true,GangScheduling=true"
TOPOLOGY_GATES = GANG_GATES + ",TopologyAwareWorkloadScheduling=true"
PREEMPTION_GATES = GANG_GATES + ",WorkloadAwarePreemption=true"


def _node(
    name: str, rack: str | None = None, amounts: dict[str, str] | None = None
) -> dict[str, Any]:
    """A node of 4 CPUs and 16Gi, ``amounts`` replacing or adding to them."""
    labels = {"kubernetes.io/hostname": name, **({"rack": rack} if rack else {})}
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110", **(amounts or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": resources, "allocatable": resources},
    }


def _group(
    min_count: int, topology_key: str | None = None, priority_class: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": spec,
    }


def _pod(
    name: str,
    group: str | None = "g",
    priority_class: str | None = None,
    requests: dict[str, str] | None = None,
    node: str | None = None,
    grace: int = 0,
) -> dict[str, Any]:
    """A pod requesting ``requests`` (by default 3 CPUs: one per 4-CPU node), of PodGroup
    ``group`` if given, already bound to ``node`` if given, terminating for ``grace``
    seconds once deleted (no kubelet ends it sooner)."""
    requests = {"cpu": "3"} if requests is None else requests
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": grace,
        "containers": [{"name": "w", "image": "pause", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        spec["priorityClassName"] = priority_class
    extended = {k: v for k, v in requests.items() if "/" in k}
    if extended:
        # Extended resources are not overcommitted: their limits must equal the requests.
        spec["containers"][0]["resources"]["limits"] = extended
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _priority_class(name: str, value: int, policy: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **({"preemptionPolicy": policy} if policy else {}),
    }


WORKERS = [_pod(f"g-{i}") for i in range(3)]
"""A gang of three 3-CPU workers (one per 4-CPU node)."""
PRIORITY_CLASSES = [_priority_class("low", 10), _priority_class("high", 1000)]
HIGH_GANG = [
    _group(2, priority_class="high"),
    *(_pod(f"g-{i}", priority_class="high") for i in range(2)),
]
"""A gang of two 3-CPU workers whose PodGroup has the ``high`` priority."""


NO_MEMORY = {"cpu": "1", "memory": "0"}
"""A gang member's container in the placement score cases: 1 CPU, explicitly no memory
(a missing request would count 200Mi), so that CPU and the resource under test decide."""
DRA_GPU = "example.com/dra-gpu"
"""The extended resource the DeviceClass of the DRA case backs (DRAExtendedResource)."""


def _placement_case(
    b_cpu: str,
    running: dict[str, str],
    member: dict[str, Any],
    amounts: dict[str, dict[str, str]] | None = None,
    *extra: dict[str, Any],
) -> tuple[str, list[dict[str, Any]]]:
    """Racks a (a0, a1: 4 CPUs) and b (b0, b1: ``b_cpu`` CPUs), ``amounts`` per node
    added; a pod requesting ``running`` bound to b0; a gang of two pods ``member`` (a pod
    manifest, renamed g-0 and g-1) kept in one rack. Both racks take the gang, so
    NodeResourcesFit's placement score picks the rack (``extra`` objects created first)."""
    amounts = amounts or {}
    nodes = [
        _node(
            name, name[0], {**({"cpu": b_cpu} if name[0] == "b" else {}), **amounts.get(name, {})}
        )
        for name in ("a0", "a1", "b0", "b1")
    ]
    members = [{**member, "metadata": {**member["metadata"], "name": f"g-{i}"}} for i in range(2)]
    return TOPOLOGY_GATES, [
        *extra,
        *nodes,
        _pod("f-0", None, requests=running, node="b0"),
        _group(2, "rack"),
        *members,
    ]


def _with_init(pod: dict[str, Any], cpu: str, restart: str | None = None) -> dict[str, Any]:
    """``pod`` with an init container requesting ``cpu`` (a sidecar with ``restart:
    Always``)."""
    init: dict[str, Any] = {
        "name": "init",
        "image": "pause",
        "resources": {"requests": {"cpu": cpu, "memory": "0"}},
    }
    if restart:
        init["restartPolicy"] = restart
    return {**pod, "spec": {**pod["spec"], "initContainers": [init]}}


def _with_pod_level(pod: dict[str, Any], requests: dict[str, str]) -> dict[str, Any]:
    """``pod`` with pod-level ``requests`` (``spec.resources``, PodLevelResources)."""
    return {**pod, "spec": {**pod["spec"], "resources": {"requests": requests}}}


def _device_objects() -> list[dict[str, Any]]:
    """The DeviceClass ``gpu`` backing ``DRA_GPU``, and a ResourceSlice of
    two devices on a0 and four on b0."""
    gpu_class = device_class()
    gpu_class["spec"]["extendedResourceName"] = DRA_GPU
    return [gpu_class, node_slice("a0", 2), node_slice("b0", 4)]


def _preemption_case(
    running: list[str | None],
    gang: list[dict[str, Any]],
    *extra: dict[str, Any],
    grace: int = 0,
) -> tuple[str, list[dict[str, Any]]]:
    """One node per entry of ``running``, running a pod of that priority class (none for
    None; each pod terminates for ``grace`` seconds once preempted), then ``gang``, under
    WorkloadAwarePreemption (``extra`` objects created first)."""
    return PREEMPTION_GATES, [
        *PRIORITY_CLASSES,
        *extra,
        *(_node(f"n{i}") for i in range(len(running))),
        *(_pod(f"v-{i}", None, cls, grace=grace) for i, cls in enumerate(running) if cls),
        *gang,
    ]


SCENARIOS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    # Two nodes hold two of the three: nothing is bound.
    "gang-fits-in-part": (GANG_GATES, [_node("n0"), _node("n1"), _group(3), *WORKERS]),
    # One rack of three nodes takes the gang, the rack of two does not.
    "one-rack-fits": (
        TOPOLOGY_GATES,
        [
            *(_node(f"a{i}", "a") for i in range(2)),
            *(_node(f"b{i}", "b") for i in range(3)),
            _group(3, "rack"),
            *WORKERS,
        ],
    ),
    # Four nodes would take it, but no rack alone does.
    "no-rack-fits": (
        TOPOLOGY_GATES,
        [
            *(_node(f"a{i}", "a") for i in range(2)),
            *(_node(f"b{i}", "b") for i in range(2)),
            _group(3, "rack"),
            *WORKERS,
        ],
    ),
    # Both racks take the gang of two; NodeResourcesFit's placement score (MostAllocated
    # over a rack's nodes) prefers rack a, whose node a0 already runs a 1-CPU pod.
    "fuller-rack-wins": (
        TOPOLOGY_GATES,
        [
            *(_node(f"{rack}{i}", rack) for rack in "ab" for i in range(2)),
            _pod("f-0", None, requests={"cpu": "1"}, node="a0"),
            _group(2, "rack"),
            *WORKERS[:2],
        ],
    ),
    # Both racks take the gang of two; the rack of two nodes is fuller with it than the
    # rack of three, so NodeResourcesFit's placement score picks rack a.
    "smaller-rack-wins": (
        TOPOLOGY_GATES,
        [
            *(_node(f"b{i}", "b") for i in range(3)),
            *(_node(f"a{i}", "a") for i in range(2)),
            _group(2, "rack"),
            *WORKERS[:2],
        ],
    ),
    # Rack a runs a pod requesting 100m CPU and no memory, rack b two pods that request
    # nothing: counted as 100m CPU and 200Mi memory each, as in Score, they make rack b
    # the fuller one (counted as nothing, rack a would be).
    "missing-requests-count-as-defaults": (
        TOPOLOGY_GATES,
        [
            *(_node(f"{rack}{i}", rack) for rack in "ab" for i in range(2)),
            _pod("f-0", None, requests={"cpu": "100m", "memory": "0"}, node="a0"),
            _pod("f-1", None, requests={}, node="b0"),
            _pod("f-2", None, requests={}, node="b1"),
            _group(2, "rack"),
            *WORKERS[:2],
        ],
    ),
    # The placement score counts a pod as the scheduler does everywhere else. Each case
    # below puts the gang in rack a (4-CPU nodes) when the sum is right and in rack b
    # (bigger nodes, one running a pod) when the resource under test is summed wrong.
    # An init container asks 3 CPUs, the container 1: a member counts 3 (a: 6/8 CPUs
    # against b: 10/16); counted 1, rack b would be the fuller (6/16 against 2/8).
    "init-container-counts-its-largest-request": _placement_case(
        "8",
        {"cpu": "4", "memory": "0"},
        _with_init(_pod("g", requests={**NO_MEMORY}), "3"),
    ),
    # A sidecar's 1 CPU adds to the container's 2: 3 each (a: 6/8 against b: 11/16);
    # taken as an init container (the larger of 1 and 2), b would be fuller (9/16 vs 4/8).
    "sidecar-adds-to-the-containers": _placement_case(
        "8",
        {"cpu": "5", "memory": "0"},
        _with_init(_pod("g", requests={"cpu": "2", "memory": "0"}), "1", "Always"),
    ),
    # Pod-level requests (PodLevelResources) of 3 CPUs over a container asking 1: 3 each,
    # as in "init-container-counts-its-largest-request".
    "pod-level-requests-count": _placement_case(
        "8",
        {"cpu": "4", "memory": "0"},
        _with_pod_level(_pod("g", requests={**NO_MEMORY}), {"cpu": "3"}),
    ),
    # Scored with ephemeral-storage (SCORED_RESOURCES): 10Gi nodes in a, 20Gi in b where
    # b0 runs a pod requesting 12Gi; each member asks 2Gi. Rack b is the fuller counting
    # that pod (16/40 against 4/20), rack a without it or without ephemeral-storage.
    "ephemeral-storage-requests-count": _placement_case(
        "8",
        {"cpu": "0", "memory": "0", "ephemeral-storage": "12Gi"},
        _pod("g", requests={**NO_MEMORY, "ephemeral-storage": "2Gi"}),
        {
            **{n: {"ephemeral-storage": "10Gi"} for n in ("a0", "a1")},
            **{n: {"ephemeral-storage": "20Gi"} for n in ("b0", "b1")},
        },
    ),
    # Scored with example.com/gpu: a0 has 2, a1 none, b0 4, b1 an explicit 0; b0 runs a
    # 2-CPU pod; each member asks 1 GPU. The nodes without GPUs add nothing: rack a is
    # fuller (GPUs 2/2 against 2/4); leaving GPUs out where a node lacks them, rack b
    # would be (CPUs 4/8 against 2/8).
    "extended-resource-missing-or-zero-on-some-nodes": _placement_case(
        "4",
        {"cpu": "2", "memory": "0"},
        _pod("g", requests={**NO_MEMORY, "example.com/gpu": "1"}),
        {
            "a0": {"example.com/gpu": "2"},
            "b0": {"example.com/gpu": "4"},
            "b1": {"example.com/gpu": "0"},
        },
    ),
    # As above, the GPUs being DRA devices behind an extended resource (DRAExtendedResource):
    # two on a0, four on b0. Counting the devices, rack a is the fuller; not counting
    # them, rack b.
    "dra-backed-extended-resource": _placement_case(
        "4",
        {"cpu": "2", "memory": "0"},
        _pod("g", requests={**NO_MEMORY, DRA_GPU: "1"}),
        None,
        *_device_objects(),
    ),
    # Both nodes run a low-priority pod: the gang preempts both, then runs.
    "preempts-two-low-pods": _preemption_case(["low", "low"], HIGH_GANG),
    # One low and one high pod: preempting the low one is not enough, nothing is.
    "one-victim-is-not-enough": _preemption_case(["low", "high"], HIGH_GANG),
    # The PodGroup has no priority class: nothing has a lower priority than it.
    "no-lower-priority-victims": _preemption_case(
        ["low", "low"], [_group(2), *(_pod(f"g-{i}", priority_class="high") for i in range(2))]
    ),
    # The PodGroup's priority counts, not its pods' (they have none): both low pods go.
    "group-priority-not-the-pods": _preemption_case(
        ["low", "low"], [_group(2, priority_class="high"), _pod("g-0"), _pod("g-1")]
    ),
    # One pod of the group may not preempt (its class says Never): the group preempts
    # nothing.
    "a-member-with-preemption-policy-never": _preemption_case(
        ["low", "low"],
        [
            _group(2, priority_class="high"),
            _pod("g-0", priority_class="high-never"),
            _pod("g-1", priority_class="high"),
        ],
        _priority_class("high-never", 1000, "Never"),
    ),
    # Two of the three pods are enough for the gang, but giving one low pod back would
    # leave the third without a node: all three go, and all three pods run.
    "a-reprieve-may-not-cost-a-placed-pod": _preemption_case(
        ["low", "low", "low"],
        [
            _group(2, priority_class="high"),
            *(_pod(f"g-{i}", priority_class="high") for i in range(3)),
        ],
    ),
    # The two low pods take 5 minutes to terminate: the gang, placed nowhere before they
    # were preempted, waits for them without being nominated, and they are not preempted
    # again while they terminate.
    "victims-still-terminating": _preemption_case(["low", "low"], HIGH_GANG, grace=300),
    # A free node and two running low pods (5 minutes to terminate): the gang's first pod
    # finds the free node, the second none; one low pod is preempted, and the first pod
    # is nominated to the free node while it terminates.
    "a-placed-pod-is-nominated": _preemption_case([None, "low", "low"], HIGH_GANG, grace=300),
    # As "victims-still-terminating"; once settled, another component nominates both pods
    # of the gang to the node of v-0 (still terminating) and v-1 is deleted at once: the
    # gang is tried again, does not fit, and may not preempt while v-0 terminates on the
    # node it is nominated to.
    "a-victim-terminates-on-the-nominated-node": _preemption_case(
        ["low", "low"], HIGH_GANG, grace=300
    ),
}
"""Each case: the gates, then its objects, created in this order (the pods without a group
are scheduled before the PodGroup's pods are created)."""

SCORED_RESOURCES: dict[str, list[str]] = {
    "ephemeral-storage-requests-count": ["cpu", "memory", "ephemeral-storage"],
    "extended-resource-missing-or-zero-on-some-nodes": ["cpu", "memory", "example.com/gpu"],
    "dra-backed-extended-resource": ["cpu", "memory", DRA_GPU],
}
"""The cases whose NodeResourcesFit scores more than CPU and memory: the resources of its
``scoringStrategy``, each of weight 1."""


def scheduler_settings(name: str) -> dict[str, Any]:
    """The top-level KubeSchedulerConfiguration fields case ``name`` runs both schedulers
    with (none for the default profile)."""
    if name not in SCORED_RESOURCES:
        return {}
    resources = [{"name": r, "weight": 1} for r in SCORED_RESOURCES[name]]
    args = {"scoringStrategy": {"type": "LeastAllocated", "resources": resources}}
    profile = {
        "schedulerName": "default-scheduler",
        "pluginConfig": [{"name": "NodeResourcesFit", "args": args}],
    }
    return {"profiles": [profile]}


REAL_API_SERVER_ONLY = frozenset(
    {
        "victims-still-terminating",
        "a-placed-pod-is-nominated",
        "a-victim-terminates-on-the-nominated-node",
    }
)
"""The cases only a real API server can hold: the embedded cluster ends a terminating pod
after its grace period in virtual time, at once, where a real cluster without a kubelet
keeps it terminating."""


def in_two_steps(
    manifests: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The objects to create (and whose pods to let settle) first, and the PodGroup's pods."""
    first = next(i for i, m in enumerate(manifests) if m["metadata"]["name"] == "g-0")
    return manifests[:first], manifests[first:]


def outcome(
    pods: list[dict[str, Any]], racks: dict[str, str], pod_group: dict[str, Any]
) -> dict[str, Any] | None:
    """The case's outcome once settled (None before: a pod neither bound nor refused, or no
    condition on the group): the racks the pods are bound in and the refusals' messages,
    both sorted (which member of a gang is refused first depends on the order the pods
    reach the queue, which a real cluster decides by microseconds), the PodGroup's
    PodGroupScheduled condition (status, reason, message), and, when there are any, the
    number of pods nominated to a node and the DisruptionTarget conditions of victims
    still terminating."""
    bound, refused = [], []
    for pod in pods:
        node = pod["spec"].get("nodeName")
        refusal = next(
            (
                c["message"]
                for c in (pod.get("status") or {}).get("conditions") or ()
                if c["type"] == "PodScheduled" and c["status"] == "False"
            ),
            None,
        )
        if node:
            bound.append(racks.get(node, ""))
        elif refusal is not None:
            refused.append(refusal)
        else:
            return None
    condition = next(
        (
            c
            for c in (pod_group.get("status") or {}).get("conditions") or ()
            if c["type"] == "PodGroupScheduled"
        ),
        None,
    )
    if condition is None:
        return None
    # Counted, not named: which pod is placed first, and which of two equal victims is
    # given back, is as much a matter of microseconds as the refusals' order.
    nominated = sum(bool((p.get("status") or {}).get("nominatedNodeName")) for p in pods)
    disruption_targets = sorted(
        f"{c.get('reason')}: {c.get('message')}"
        for p in pods
        for c in (p.get("status") or {}).get("conditions") or ()
        if c["type"] == "DisruptionTarget"
    )
    return {
        "pods": sorted(p["metadata"]["name"] for p in pods),
        "bound_in_racks": sorted(bound),
        "refusals": sorted(refused),
        "pod_group_scheduled": {k: condition.get(k) or "" for k in ("status", "reason", "message")},
        # Only when some pod has one: the cases whose victims are gone have none.
        **({"nominated": nominated} if nominated else {}),
        **({"disruption_targets": disruption_targets} if disruption_targets else {}),
    }


def racks_of(manifests: list[dict[str, Any]]) -> dict[str, str]:
    """Node name → its ``rack`` label (empty without one)."""
    return {
        m["metadata"]["name"]: m["metadata"]["labels"].get("rack", "")
        for m in manifests
        if m["kind"] == "Node"
    }
