"""``kubesched bench --kubeconfig``'s bookkeeping without a server: when a run counts as
stalled, the clean-up that asks again when the API server times a deletion out, the gang
workload in kube-scheduler's terms, and where an extension kind is read on a cluster."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubesched.backend.kube.client import ForbiddenError, UnreachableError
from kubesched.backend.kube.cluster import RESOURCES, resource_for
from kubesched.backend.protocol import BackendError
from kubesched.bench.kube import (
    FIRST_BIND_SECONDS,
    STALL_SECONDS,
    _BindWatch,
    _clean,
    _read_latency,
    as_kube_gangs,
    external_metrics_url,
)
from kubesched.bench.workloads import build_workload

PODS = "/api/v1/namespaces/sched-0/pods"


class FakeClient:
    """Answers LISTs of pods from ``pods_left`` (one entry per LIST) and DELETEs from
    ``deletes`` (an exception to raise, or None for success); records the requests."""

    host = "https://fake"

    def __init__(self, pods_left: list[int], deletes: list[Exception | None]) -> None:
        self.pods_left = list(pods_left)
        self.deletes = list(deletes)
        self.requests: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **_: Any) -> Any:
        self.requests.append((method, path))
        if method == "GET" and path == "/api/v1/pods":  # the watch's first list
            return {"items": [], "metadata": {"resourceVersion": "1"}}
        if method == "GET":
            return {"items": [{}] * self.pods_left.pop(0)}
        if method == "DELETE" and path == PODS:
            outcome = self.deletes.pop(0)
            if outcome is not None:
                raise outcome
        return None


def _pod(name: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "sched-0"}}


@pytest.mark.parametrize(
    ("measured_bound", "idle", "stalled"),
    [
        (0, STALL_SECONDS + 1, False),
        (0, FIRST_BIND_SECONDS - 1, False),
        (0, FIRST_BIND_SECONDS + 1, True),
        (1, STALL_SECONDS - 1, False),
        (1, STALL_SECONDS + 1, True),
    ],
    ids=[
        "before-first-bind-past-stall-window",
        "before-first-bind-within-its-window",
        "no-bind-at-all",
        "after-a-bind-within-window",
        "after-a-bind-stalled",
    ],
)
def test_stall_window_is_longer_before_the_first_binding(
    measured_bound: int, idle: float, stalled: bool
) -> None:
    watch = _BindWatch(FakeClient([], []))  # type: ignore[arg-type]
    watch.measured = {"sched-0/p0", "sched-0/p1"}
    for i in range(measured_bound):
        watch.bound[f"sched-0/p{i}"] = 0.0
    watch.bound["sched-0/not-measured"] = 0.0  # a set-up pod does not count
    assert watch._stalled(time.monotonic() - idle) is stalled


@pytest.mark.parametrize(
    ("pods_left", "deletes", "error", "deletes_made"),
    [
        ([0], [], None, 0),
        ([5, 0], [None], None, 1),
        (
            [25_000, 12_000, 3, 0],
            [UnreachableError("closed"), BackendError("timeout", 504), None],
            None,
            3,
        ),
        ([5], [ForbiddenError("no")], ForbiddenError, 1),
        ([5], [BackendError("broken", 500)], BackendError, 1),
    ],
    ids=["nothing-left", "one-deletion", "server-timeouts-then-done", "forbidden", "server-error"],
)
def test_clean_deletes_pods_until_none_is_left(
    pods_left: list[int],
    deletes: list[Exception | None],
    error: type[Exception] | None,
    deletes_made: int,
) -> None:
    client = FakeClient(pods_left, deletes)
    created = [_pod("p0"), {"kind": "Node", "metadata": {"name": "node-0"}}]
    if error is None:
        _clean(client, created)  # type: ignore[arg-type]
        assert ("DELETE", "/api/v1/nodes/node-0") in client.requests
    else:
        with pytest.raises(error):
            _clean(client, created)  # type: ignore[arg-type]
    assert client.requests.count(("DELETE", PODS)) == deletes_made


def test_as_kube_gangs_maps_min_member_to_min_count() -> None:
    workload = build_workload("gang", 2, 12)
    mapped = as_kube_gangs([o.to_dict() for o in (*workload.setup, *workload.pods)])
    groups = {m["metadata"]["name"]: m for m in mapped if m["kind"] == "PodGroup"}
    assert {n: g["spec"] for n, g in groups.items()} == {
        "gang-0": {"schedulingPolicy": {"gang": {"minCount": 10}}},
        "gang-1": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    assert {g["apiVersion"] for g in groups.values()} == {"scheduling.k8s.io/v1alpha2"}
    pods = [m for m in mapped if m["kind"] == "Pod"]
    assert len(pods) == 12
    for pod in pods:
        label = pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"]
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": label}


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("Node", "/api/v1/nodes"),
        ("PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"),
        ("NoSuchKind", None),
    ],
    ids=["built-in", "extension-kind", "unknown"],
)
def test_resource_for(kind: str, path: str | None) -> None:
    resource = resource_for(kind)
    assert (resource.path if resource else None) == path
    if kind in RESOURCES:
        assert resource is RESOURCES[kind]


@pytest.mark.parametrize(
    ("command", "url"),
    [
        (
            ["ks", "--secure-port=1234", "--authorization-always-allow-paths=/healthz,/metrics"],
            "https://127.0.0.1:1234/metrics",
        ),
        (["ks", "--secure-port=1234", "--authorization-always-allow-paths=/healthz"], None),
        (["ks", "--secure-port=1234"], None),
        (["ks", "--authorization-always-allow-paths=/metrics"], None),
    ],
    ids=["open", "metrics-not-open", "no-allow-paths", "no-port"],
)
def test_external_metrics_url(command: list[str], url: str | None) -> None:
    assert external_metrics_url(command) == url


def test_an_unreadable_external_metrics_endpoint_leaves_the_latency_out() -> None:
    closed = "https://127.0.0.1:9/metrics"  # the discard port: nothing listens
    assert _read_latency(closed, required=False) == {}
    with pytest.raises(OSError):
        _read_latency(closed, required=True)
