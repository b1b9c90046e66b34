"""Pod requests (resourcehelper.PodRequests), non-zero requests, allocatable, scalar names."""

from __future__ import annotations

import pytest

from kubesched.api import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    Node,
    Pod,
    is_scalar_resource_name,
    load_manifests,
    node_allocatable,
    pod_non_zero_requests,
    pod_requests,
    pod_scoring_requests,
)

Mi = 1024**2


def c(requests=None, limits=None, restart_policy=None) -> dict:
    """A container manifest with requests/limits."""
    out: dict = {"name": "c", "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = requests
    if limits is not None:
        out["resources"]["limits"] = limits
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def pod(containers=(), init=(), overhead=None) -> Pod:
    """A pod from container manifests."""
    spec: dict = {"containers": list(containers), "initContainers": list(init)}
    if overhead is not None:
        spec["overhead"] = overhead
    return Pod.model_validate({"metadata": {"name": "p"}, "spec": spec})


CASES = [
    ("no-containers", pod(), {}),
    (
        "one-container",
        pod([c({"cpu": "500m", "memory": "100Mi"})]),
        {"cpu": 500, "memory": 100 * Mi},
    ),
    (
        "containers-summed",
        pod([c({"cpu": "500m"}), c({"cpu": "1500m", "memory": "1Gi"})]),
        {"cpu": 2000, "memory": 1024 * Mi},
    ),
    (
        "limits-default-requests",
        pod([c(limits={"cpu": "1", "memory": "1Gi"})]),
        {"cpu": 1000, "memory": 1024 * Mi},
    ),
    ("explicit-request-beats-limit", pod([c({"cpu": "100m"}, {"cpu": "2"})]), {"cpu": 100}),
    (
        "rounded-once-on-total",
        pod([c({"cpu": "0.5m"}), c({"cpu": "0.5m"}), c({"cpu": "0.5m"})]),
        {"cpu": 2},
    ),
    ("memory-rounded-up", pod([c({"memory": "1500m"})]), {"memory": 2}),
    (
        "extended-resources",
        pod([c({"nvidia.com/gpu": 1}), c({"nvidia.com/gpu": "2"})]),
        {"nvidia.com/gpu": 3},
    ),
    (
        "hugepages-and-storage",
        pod([c({"hugepages-2Mi": "4Mi", "ephemeral-storage": "1G"})]),
        {"hugepages-2Mi": 4 * Mi, "ephemeral-storage": 10**9},
    ),
    (
        "init-larger-than-containers",
        pod([c({"cpu": "100m"})], [c({"cpu": "2", "memory": "1Gi"})]),
        {"cpu": 2000, "memory": 1024 * Mi},
    ),
    ("init-smaller-than-containers", pod([c({"cpu": "3"})], [c({"cpu": "2"})]), {"cpu": 3000}),
    ("init-max-not-sum", pod([c({"cpu": "1"})], [c({"cpu": "2"}), c({"cpu": "3"})]), {"cpu": 3000}),
    (
        "init-only-resource",
        pod([c({"cpu": "1"})], [c({"example.com/foo": "1"})]),
        {"cpu": 1000, "example.com/foo": 1},
    ),
    # Sidecars (restartable init containers) run alongside the containers.
    (
        "sidecar-added-to-containers",
        pod([c({"cpu": "1"})], [c({"cpu": "500m"}, None, "Always")]),
        {"cpu": 1500},
    ),
    # KEP-753 example: init use(i) = sidecars started before i + init i.
    (
        "sidecar-then-init",
        pod([c({"cpu": "1"})], [c({"cpu": "500m"}, None, "Always"), c({"cpu": "2"})]),
        {"cpu": 2500},
    ),
    (
        "init-then-sidecar",
        pod([c({"cpu": "1"})], [c({"cpu": "2"}), c({"cpu": "500m"}, None, "Always")]),
        {"cpu": 2000},
    ),
    (
        "two-sidecars-and-init",
        pod(
            [c({"cpu": "100m"})],
            [c({"cpu": "1"}, None, "Always"), c({"cpu": "1"}, None, "Always"), c({"cpu": "1500m"})],
        ),
        {"cpu": 3500},
    ),
    (
        "init-restart-never-is-regular",
        pod([c({"cpu": "1"})], [c({"cpu": "500m"}, None, "Never")]),
        {"cpu": 1000},
    ),
    (
        "overhead-added",
        pod([c({"cpu": "1"})], overhead={"cpu": "250m", "memory": "120Mi"}),
        {"cpu": 1250, "memory": 120 * Mi},
    ),
    (
        "overhead-after-init-max",
        pod([c({"cpu": "1"})], [c({"cpu": "2"})], {"cpu": "250m"}),
        {"cpu": 2250},
    ),
]


@pytest.mark.parametrize(("the_pod", "expected"), [x[1:] for x in CASES], ids=[x[0] for x in CASES])
def test_pod_requests(the_pod: Pod, expected: dict[str, int]) -> None:
    assert pod_requests(the_pod) == expected


DEFAULTS = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}

NON_MISSING = [
    ("empty-container-gets-defaults", pod([c()]), {"cpu": 100, "memory": 200 * Mi}),
    ("each-container-gets-defaults", pod([c(), c()]), {"cpu": 200, "memory": 400 * Mi}),
    ("explicit-zero-stays-zero", pod([c({"cpu": "0", "memory": "0"})]), {"cpu": 0, "memory": 0}),
    ("only-missing-replaced", pod([c({"cpu": "1"})]), {"cpu": 1000, "memory": 200 * Mi}),
    (
        "init-container-gets-defaults",
        pod([c({"cpu": "10m", "memory": "1Mi"})], [c()]),
        {"cpu": 100, "memory": 200 * Mi},
    ),
    ("no-containers-no-defaults", pod(), {}),
]


@pytest.mark.parametrize(
    ("the_pod", "expected"), [x[1:] for x in NON_MISSING], ids=[x[0] for x in NON_MISSING]
)
def test_pod_requests_non_missing_defaults(the_pod: Pod, expected: dict[str, int]) -> None:
    assert pod_requests(the_pod, non_missing_defaults=DEFAULTS) == expected


NON_ZERO = [
    ("best-effort", pod([c()]), (100, 200 * Mi)),
    ("requests-given", pod([c({"cpu": "250m", "memory": "64Mi"})]), (250, 64 * Mi)),
    ("explicit-zero", pod([c({"cpu": "0"})]), (0, 200 * Mi)),
    ("with-overhead", pod([c()], overhead={"cpu": "50m"}), (150, 200 * Mi)),
]


@pytest.mark.parametrize(
    ("the_pod", "expected"), [x[1:] for x in NON_ZERO], ids=[x[0] for x in NON_ZERO]
)
def test_pod_non_zero_requests(the_pod: Pod, expected: tuple[int, int]) -> None:
    assert pod_non_zero_requests(the_pod) == expected


def test_seed_pod_overhead_example(fixtures_dir) -> None:
    """The Kubernetes docs, Pod Overhead: 2000m/200Mi of containers + kata-fc's 250m/120Mi."""
    objs = {
        o.kind: o
        for o in load_manifests(
            [
                fixtures_dir / "k8s-docs" / "pod-overhead-test-pod.yaml",
                fixtures_dir / "k8s-docs" / "runtimeclass-kata-fc.yaml",
            ]
        )
    }
    test_pod, runtime_class = objs["Pod"], objs["RuntimeClass"]
    assert pod_requests(test_pod) == {"cpu": 2000, "memory": 200 * Mi}
    # What the RuntimeClass admission controller does.
    test_pod.spec.overhead = dict(runtime_class.overhead.pod_fixed)
    assert pod_requests(test_pod) == {"cpu": 2250, "memory": 320 * Mi}
    assert pod_requests(test_pod)["memory"] == 335544320  # the seed's memory.limit_in_bytes


def test_node_allocatable_uses_allocatable_only() -> None:
    node = Node.model_validate(
        {
            "metadata": {"name": "n"},
            "status": {
                "capacity": {
                    "cpu": "4",
                    "memory": "8Gi",
                    "pods": "110",
                    "ephemeral-storage": "100Gi",
                },
                "allocatable": {
                    "cpu": "3500m",
                    "memory": "7Gi",
                    "pods": 110,
                    "nvidia.com/gpu": "2",
                },
            },
        }
    )
    assert node_allocatable(node) == {
        "cpu": 3500,
        "memory": 7 * 1024 * Mi,
        "pods": 110,
        "nvidia.com/gpu": 2,
    }


SCALAR = [
    ("nvidia.com/gpu", True),
    ("example.com/foo", True),
    ("hugepages-2Mi", True),
    ("hugepages-1Gi", True),
    ("attachable-volumes-aws-ebs", True),
    ("kubernetes.io/something", True),  # prefixed native resources count too
    ("cpu", False),
    ("memory", False),
    ("ephemeral-storage", False),
    ("pods", False),
    ("requests.example.com/foo", False),
    ("Example.com/foo", False),  # prefix must be a lowercase DNS subdomain
    ("a/b/c", False),
    ("example.com/-bad", False),
]


@pytest.mark.parametrize(("name", "expected"), SCALAR, ids=[s[0] for s in SCALAR])
def test_is_scalar_resource_name(name: str, expected: bool) -> None:
    assert is_scalar_resource_name(name) is expected


def pod_level(resources: dict, containers=(), overhead=None) -> Pod:
    """A pod with pod-level ``spec.resources``."""
    spec: dict = {"containers": list(containers), "resources": resources}
    if overhead is not None:
        spec["overhead"] = overhead
    return Pod.model_validate({"metadata": {"name": "p"}, "spec": spec})


POD_LEVEL_CASES = [
    (
        "pod-level-replaces-containers-sum",
        pod_level({"requests": {"cpu": "8", "memory": "64Gi"}}, [c({"cpu": "1"}), c({"cpu": "1"})]),
        {"cpu": 8000, "memory": 64 * 1024 * Mi},
        (8000, 64 * 1024 * Mi),
    ),
    (
        "pod-level-memory-only-cpu-from-containers",
        pod_level({"requests": {"memory": "1Gi"}}, [c({"cpu": "300m"}), c()]),
        {"cpu": 300, "memory": 1024 * Mi},
        # cpu is requested by the pod (a container has it): no default is added.
        (300, 1024 * Mi),
    ),
    (
        "pod-level-memory-only-no-cpu-anywhere",
        pod_level({"requests": {"memory": "1Gi"}}, [c(), c()]),
        {"memory": 1024 * Mi},
        # Nobody requests cpu: each container counts the 100m default.
        (2 * DEFAULT_MILLI_CPU_REQUEST, 1024 * Mi),
    ),
    (
        "pod-level-limits-default-requests",
        pod_level({"limits": {"cpu": "2"}}, [c()]),
        {"cpu": 2000},
        (2000, DEFAULT_MEMORY_REQUEST),
    ),
    (
        "pod-level-extended-resources-are-not-pod-level",
        pod_level(
            {"requests": {"cpu": "1", "example.com/gpu": "4"}}, [c({"example.com/gpu": "1"})]
        ),
        {"cpu": 1000, "example.com/gpu": 1},
        (1000, DEFAULT_MEMORY_REQUEST),
    ),
    (
        "overhead-added-after-the-override",
        pod_level({"requests": {"cpu": "1"}}, [c({"cpu": "4"})], overhead={"cpu": "250m"}),
        {"cpu": 1250},
        (1250, DEFAULT_MEMORY_REQUEST),
    ),
]


@pytest.mark.parametrize(
    ("p", "requests", "non_zero"),
    [case[1:] for case in POD_LEVEL_CASES],
    ids=[case[0] for case in POD_LEVEL_CASES],
)
def test_pod_level_resources(p, requests, non_zero):
    assert pod_requests(p) == requests
    assert pod_non_zero_requests(p) == non_zero


POD_LEVEL_SCORING = {
    # id: (the scoring strategies' cpu and memory, the requests with the gate off)
    "pod-level-replaces-containers-sum": ((8000, 64 * 1024 * Mi), {"cpu": 2000}),
    # The containers' defaults apply before the override: the container without a cpu
    # request counts 100m here, unlike on the node's side (300m above).
    "pod-level-memory-only-cpu-from-containers": ((400, 1024 * Mi), {"cpu": 300}),
    "pod-level-memory-only-no-cpu-anywhere": ((2 * DEFAULT_MILLI_CPU_REQUEST, 1024 * Mi), {}),
    "pod-level-limits-default-requests": ((2000, DEFAULT_MEMORY_REQUEST), {}),
    "pod-level-extended-resources-are-not-pod-level": (
        (1000, DEFAULT_MEMORY_REQUEST),
        {"example.com/gpu": 1},
    ),
    "overhead-added-after-the-override": ((1250, DEFAULT_MEMORY_REQUEST), {"cpu": 4250}),
}


@pytest.mark.parametrize(
    ("p", "scoring", "gate_off"),
    [(case[1], *POD_LEVEL_SCORING[case[0]]) for case in POD_LEVEL_CASES],
    ids=[case[0] for case in POD_LEVEL_CASES],
)
def test_pod_level_resources_when_scoring_and_with_the_gate_off(p, scoring, gate_off):
    """``calculatePodResourceRequest`` (defaults per container, then the pod-level
    override) and ``SkipPodLevelResources`` (the PodLevelResources gate off)."""
    got = pod_scoring_requests(p)
    assert (got.get("cpu", 0), got.get("memory", 0)) == scoring
    assert pod_requests(p, pod_level=False) == gate_off
