"""``kubesched bench --kubeconfig``: a bench workload created in a real API server and scheduled
there, by ``kubesched run`` or by whatever scheduler serves the pods (the real kube-scheduler).

The objects are those of the embedded benchmark (:mod:`kubesched.bench.workloads`), so the
two schedulers are compared on the same objects: the nodes and set-up objects first, then
the measured pods, all pending before the scheduler starts (``kubesched``) or while it
runs (``external``). A watch on pods notes when each is first seen bound; throughput runs
from the first binding to the last, or for ``preemption`` from the scheduler's start (the
creation of the pods with ``external``), as upstream's scheduler_perf measures it.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.backend.kube.client import MERGE_PATCH, UnreachableError
from kubesched.backend.protocol import BackendError, ConflictError, NotFoundError
from kubesched.bench.runner import BenchError
from kubesched.bench.workloads import build_workload
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.testing.envtest import collection_path, create_objects, free_port

SCHEDULERS = ("kubesched", "external")
"""Who schedules: ``kubesched run`` started by the bench, or a scheduler already running."""
FROM_START = frozenset({"preemption", "preemption-anti-affinity"})
"""Workloads measured from the scheduler's start rather than from the first binding."""
STALL_SECONDS = 60.0
"""A run ends when no pod was bound or deleted for this long (the rest are taken as
unschedulable)."""
FIRST_BIND_SECONDS = 300.0
"""How long the first binding may take from the scheduler's start: its informers list
every object first (30,000 pods and nodes in preemption at 5,000 nodes, more than a
minute on a busy machine), and a preemptor binds only once its victims are gone."""
LATENCY_METRIC = "scheduler_scheduling_attempt_duration_seconds"
_UNTHROTTLED = ClientConnectionConfiguration(qps=5000, burst=5000)
HTTP_GATEWAY_TIMEOUT = 504
"""The API server's answer to a request it ended at its request timeout."""
CLEAN_TIMEOUT = 120.0
"""Seconds one deletion of a namespace's pods may take: longer than the API server's own
request timeout (60 s by default), which ends it first."""


@dataclass
class ApiServerResult:
    """One workload scheduled through an API server."""

    workload: str
    scheduler: str
    nodes: int
    pods: int
    bound: int
    expected_unschedulable: int
    pods_per_second: float | None
    measured_from: str
    """``first binding`` or ``scheduler start``."""
    seconds: float
    p50_ms: float | None
    p99_ms: float | None
    """From ``kubesched run``'s own attempt-duration histogram; None for ``external``."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _refuse_a_used_cluster(client: KubeClient) -> None:
    nodes = client.request("GET", "/api/v1/nodes", query={"limit": 1})["items"]
    if nodes:
        raise BenchError(
            f"the API server at {client.host} already has nodes (such as "
            f"{nodes[0]['metadata']['name']}): bench --kubeconfig creates its own nodes and "
            "pods and needs a scratch control plane without any"
        )


def _manifests(objects: list[Any]) -> list[dict[str, Any]]:
    return [_without_empty(o.to_dict()) for o in objects]


def _without_empty(value: Any) -> Any:
    """``value`` without its empty lists, at any depth: the models write their defaults
    (``ownerReferences: []``), which the API server treats as absent but refuses in places
    (a ResourceClaimTemplate's ``spec.metadata``). Empty maps stay (``emptyDir: {}``)."""
    if isinstance(value, dict):
        out = {k: _without_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v != []}
    if isinstance(value, list):
        return [_without_empty(v) for v in value]
    return value


def _namespaces(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = sorted({o["metadata"].get("namespace") for o in objects} - {None, "default"})
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names]


class _BindWatch:
    """The moments pods are first seen bound, from a watch started before the scheduler."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.bound: dict[str, float] = {}
        self.measured: set[str] = set()
        self.rv = ""
        self._list()

    def _list(self) -> None:
        """Note the pods bound now (a watch error may have hidden some) and where to watch from."""
        listed = self.client.request("GET", "/api/v1/pods")
        now = time.monotonic()
        for pod in listed["items"]:
            self._seen(pod, now)
        self.rv = listed["metadata"]["resourceVersion"]

    def _seen(self, pod: dict[str, Any], when: float) -> bool:
        key = f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        if (pod.get("spec") or {}).get("nodeName") and key not in self.bound:
            self.bound[key] = when
            return True
        return False

    def wait(self, expected: int, timeout: float) -> None:
        """Watch until ``expected`` measured pods are bound, none was bound or deleted for
        ``STALL_SECONDS`` (``FIRST_BIND_SECONDS`` before the first binding), or
        ``timeout``."""
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while self._count() < expected:
            now = time.monotonic()
            if now > deadline or self._stalled(last):
                return
            resp, events = self.client.stream(
                "/api/v1/pods",
                {
                    "watch": "true",
                    "resourceVersion": self.rv,
                    "timeoutSeconds": 10,
                    "allowWatchBookmarks": "true",
                },
                30,
            )
            try:
                for ev in events:
                    obj = ev["object"]
                    if ev["type"] == "ERROR":  # e.g. 410 Gone: list again, then watch
                        self._list()
                        break
                    self.rv = obj["metadata"].get("resourceVersion", self.rv)
                    if ev["type"] == "BOOKMARK":
                        continue
                    # A deletion is progress too: preemption's victims go long before
                    # their preemptors bind (each is tried once before any is retried).
                    if self._seen(obj, time.monotonic()) or ev["type"] == "DELETED":
                        last = time.monotonic()
                    if self._count() >= expected or self._stalled(last):
                        break
            finally:
                # Closed, not returned to the pool: the rest of the stream is unread.
                resp.close()

    def _stalled(self, last: float) -> bool:
        """Nothing happened since ``last`` for longer than the run allows."""
        window = STALL_SECONDS if self._count() else FIRST_BIND_SECONDS
        return time.monotonic() - last > window

    def _count(self) -> int:
        return sum(1 for k in self.bound if k in self.measured)

    def times(self) -> list[float]:
        return sorted(t for k, t in self.bound.items() if k in self.measured)


def _start_kubesched(kubeconfig: str, workdir: Path, config: Path | None) -> tuple[Any, str]:
    """``kubesched run`` as a child process (its own interpreter, as in production)."""
    data: dict[str, Any] = (
        yaml.safe_load(config.read_text())
        if config
        else {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    data["leaderElection"] = {"leaderElect": False}
    data["clientConnection"] = {
        **(data.get("clientConnection") or {}),
        "kubeconfig": kubeconfig,
        "qps": 5000,
        "burst": 5000,
    }
    path = workdir / "kubesched.yaml"
    path.write_text(yaml.safe_dump(data))
    port = free_port()
    log = (workdir / "kubesched.log").open("w")
    cmd = [sys.executable, "-m", "kubesched.cli.main", "run", "--config", str(path),
           "--port", str(port), "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    return proc, f"http://127.0.0.1:{port}/metrics"


def latency_quantiles(metrics_text: str) -> dict[str, float]:
    """p50 and p99 (ms) of successful attempts from the Prometheus text of
    ``scheduler_scheduling_attempt_duration_seconds``, interpolated in the buckets as
    Prometheus' ``histogram_quantile`` does."""
    buckets: dict[float, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith(f"{LATENCY_METRIC}_bucket") and 'result="scheduled"' in line:
            match = re.search(r'[{,]le="([^"]+)"', line)
            if match is None:
                continue
            bound = float("inf") if match.group(1) == "+Inf" else float(match.group(1))
            buckets[bound] = buckets.get(bound, 0.0) + float(line.rsplit(" ", 1)[1])
    ordered = sorted(buckets.items())
    if not ordered or ordered[-1][1] == 0:
        return {}
    return {"p50_ms": 1000 * _quantile(0.5, ordered), "p99_ms": 1000 * _quantile(0.99, ordered)}


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    rank = q * buckets[-1][1]
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return prev_bound
            width = count - prev_count
            return prev_bound + (bound - prev_bound) * ((rank - prev_count) / width if width else 0)
        prev_bound, prev_count = bound, count
    return prev_bound


def _clean(client: KubeClient, created: list[dict[str, Any]]) -> None:
    """Delete what the run created (pods at once, with no grace period), and the claims
    made for its pods, so that the next run finds the devices free."""
    namespaces = sorted(
        {o["metadata"].get("namespace") or "default" for o in created if o["kind"] == "Pod"}
    )
    for namespace in namespaces:
        path = f"/api/v1/namespaces/{namespace}/pods"
        # The API server ends a deletion of many pods (the 25,000 of preemption at 5,000
        # nodes) at its request timeout, having deleted some: ask again until none is left.
        # An unreachable server fails the LIST.
        while client.request("GET", path, query={"limit": 1})["items"]:
            try:
                client.request(
                    "DELETE", path, query={"gracePeriodSeconds": 0}, timeout=CLEAN_TIMEOUT
                )
            except UnreachableError:
                pass  # the server closed the connection at its request timeout
            except BackendError as err:
                if err.code != HTTP_GATEWAY_TIMEOUT:
                    raise
    if any(o.get("apiVersion", "").startswith("resource.k8s.io/") for o in created):
        for namespace in namespaces:
            claims = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
            for claim in client.request("GET", claims)["items"]:
                path = f"{claims}/{claim['metadata']['name']}"
                with contextlib.suppress(NotFoundError):
                    # The scheduler's delete protection: nothing deallocates them now.
                    client.request(
                        "PATCH",
                        path,
                        body={"metadata": {"finalizers": None}},
                        content_type=MERGE_PATCH,
                    )
                    client.request("DELETE", path)
    for o in created:
        # Namespaces stay (empty): without a namespace controller, as on a scratch
        # control plane, a deleted namespace would stay Terminating for good.
        if o["kind"] in ("Pod", "Namespace"):
            continue
        try:
            path = f"{collection_path(o)}/{o['metadata']['name']}"
        except KeyError:
            continue  # a kind envtest cannot create: its creation failed first
        with contextlib.suppress(NotFoundError):
            client.request("DELETE", path)


def run_on_api_server(
    name: str,
    nodes: int,
    pods: int,
    *,
    kubeconfig: str,
    scheduler: str = "kubesched",
    seed: int = 0,
    config: Path | None = None,
    external_command: list[str] | None = None,
    timeout: float = 1800.0,
) -> ApiServerResult:
    """Create workload ``name`` in the API server of ``kubeconfig`` (which must have no
    nodes), have it scheduled by ``scheduler`` and measure; delete it all at the end.

    ``external_command`` (with ``external``) is the scheduler to start once every pod is
    pending, as ``kubesched`` is; without it the external scheduler already runs and the
    pods are created under its eyes, so the figure includes their creation.
    """
    if scheduler not in SCHEDULERS:
        raise BenchError(f"unknown scheduler {scheduler!r} (known: {', '.join(SCHEDULERS)})")
    client = KubeClient(load_configuration(kubeconfig), _UNTHROTTLED)
    workload = build_workload(name, nodes, pods, seed)
    setup = _manifests([*workload.nodes, *workload.setup])
    measured = _manifests(workload.pods)
    namespaces = _namespaces(setup + measured)
    created = [*setup, *measured]
    expected = len(measured) - workload.expected_unschedulable
    proc = None
    try:
        _refuse_a_used_cluster(client)
        for namespace in namespaces:
            with contextlib.suppress(ConflictError):  # left by an earlier run
                client.request("POST", "/api/v1/namespaces", body=namespace)
        create_objects(client, setup)
        starts_after = scheduler == "kubesched" or external_command is not None
        with tempfile.TemporaryDirectory() as tmp:
            if starts_after:
                create_objects(client, measured)
            watch = _BindWatch(client)
            watch.measured = {
                f"{m['metadata'].get('namespace') or 'default'}/{m['metadata']['name']}"
                for m in measured
            }
            started = time.monotonic()
            if scheduler == "kubesched":
                proc, metrics_url = _start_kubesched(kubeconfig, Path(tmp), config)
            elif external_command is not None:
                log = (Path(tmp) / "external.log").open("w")
                proc = subprocess.Popen(external_command, stdout=log, stderr=subprocess.STDOUT)
            else:
                create_objects(client, measured)
            watch.wait(expected, timeout)
            latency: dict[str, float] = {}
            if scheduler == "kubesched":
                with urllib.request.urlopen(metrics_url, timeout=10) as resp:
                    latency = latency_quantiles(resp.read().decode())
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)
        _clean(client, created)
        client.close()
    times = watch.times()
    from_start = name in FROM_START
    first = started if from_start else (times[0] if times else started)
    span = (times[-1] - first) if times else 0.0
    count = len(times) if from_start else len(times) - 1
    return ApiServerResult(
        workload=name,
        scheduler=scheduler,
        nodes=nodes,
        pods=pods,
        bound=len(times),
        expected_unschedulable=workload.expected_unschedulable,
        pods_per_second=round(count / span, 1) if span > 0 and count > 0 else None,
        measured_from="scheduler start" if from_start else "first binding",
        seconds=round(span, 3),
        p50_ms=round(latency["p50_ms"], 2) if "p50_ms" in latency else None,
        p99_ms=round(latency["p99_ms"], 2) if "p99_ms" in latency else None,
    )
