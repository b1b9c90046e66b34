"""``kubesched bench --kubeconfig``: a bench workload created in a real API server and scheduled
there, by ``kubesched run`` or by whatever scheduler serves the pods (the real kube-scheduler).

The objects are those of the embedded benchmark (:mod:`kubesched.bench.workloads`), so the
two schedulers are compared on the same objects: the nodes and set-up objects first, then
the measured pods, all pending before the scheduler starts (``kubesched``) or while it
runs (``external``). A watch on pods notes when each is first seen bound; throughput runs
from the first binding to the last, or for ``preemption`` from the scheduler's start (the
creation of the pods with ``external``), as upstream's scheduler_perf measures it.

``churn``'s later rounds are applied once the previous one is bound (its deletions, then
its pods); ``gang`` runs on scheduler-plugins' PodGroup CRD under ``kubesched`` and on
kube-scheduler's own alpha gang API under ``external`` (:func:`as_kube_gangs`); the
contrib kinds a set-up creates (Coscheduling's PodGroup, ``network-aware``'s AppGroup and
NetworkTopology) get their CRDs first (:data:`WORKLOAD_CRDS`);
``stateful``'s claims are provisioned by :class:`~kubesched.bench.provisioner.Provisioner`.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.backend.kube.client import MERGE_PATCH, UnreachableError
from kubesched.backend.protocol import BackendError, ConflictError, NotFoundError
from kubesched.bench.provisioner import PV_CONTROLLER, Provisioner
from kubesched.bench.runner import BenchError, workload_plugin_config
from kubesched.bench.workloads import WORKLOADS, build_workload
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


GANG_FEATURE_GATES = "--feature-gates=GenericWorkload=true,GangScheduling=true"
"""kube-scheduler v1.36's own gang scheduling (alpha, off by default): the Workload API
(``scheduling.k8s.io/v1alpha2`` PodGroup, the pods' ``spec.schedulingGroup``) and the
GangScheduling plugin, which joins the default profile when its gate is on."""
GANG_APISERVER_ARGS = (GANG_FEATURE_GATES, "--runtime-config=scheduling.k8s.io/v1alpha2=true")
"""What the API server needs to serve that API (the gang workload with ``external``)."""
GANG_SCHEDULER_ARGS = (GANG_FEATURE_GATES,)
"""What kube-scheduler needs to gang-schedule (the gang workload with ``external``)."""
COSCHEDULING_API = "scheduling.x-k8s.io/v1alpha1"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
WORKLOAD_API = "scheduling.k8s.io/v1alpha2"


def crd(group: str, plural: str, kind: str) -> dict[str, Any]:
    """A namespaced ``v1alpha1`` CustomResourceDefinition whose fields are not checked:
    enough for the API server to store the contrib plugins' objects."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


POD_GROUP_CRD = crd("scheduling.x-k8s.io", "podgroups", "PodGroup")
"""scheduler-plugins' PodGroup CRD (its fields unchecked): what Coscheduling reads under
``kubesched run``; the bench installs it once and leaves it."""
WORKLOAD_CRDS: dict[tuple[str, str], dict[str, Any]] = {
    (COSCHEDULING_API, "PodGroup"): POD_GROUP_CRD,
    ("appgroup.diktyo.x-k8s.io/v1alpha1", "AppGroup"): crd(
        "appgroup.diktyo.x-k8s.io", "appgroups", "AppGroup"
    ),
    ("networktopology.diktyo.x-k8s.io/v1alpha1", "NetworkTopology"): crd(
        "networktopology.diktyo.x-k8s.io", "networktopologies", "NetworkTopology"
    ),
}
"""The CRDs of the contrib kinds a workload's set-up creates, by ``(apiVersion, kind)``:
installed before the set-up (once; left in place, as they are cluster-wide)."""


CONTROLLERS: dict[str, tuple[str, ...]] = {
    "dra": ("resourceclaim-controller",),
    "stateful": (PV_CONTROLLER,),
}
"""The kube-controller-manager controllers a workload needs beside the API server: the
pods' claims made from their templates (dra), claims bound to provisioned volumes
(stateful, with the bench's own :class:`~kubesched.bench.provisioner.Provisioner`)."""

PROTECTED_KINDS = frozenset({"PodGroup", "PersistentVolumeClaim", "PersistentVolume"})
"""Kinds whose admission adds a protection finalizer (``scheduling.k8s.io/podgroup-protection``,
``kubernetes.io/pvc-protection``…) that only kube-controller-manager takes off."""


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
    """From the scheduler's own attempt-duration histogram: ``kubesched run``'s, or an
    ``external_command``'s whose ``/metrics`` it serves to anyone (``external_metrics_url``);
    else None."""
    deleted: int = 0
    """Pods the churn steps deleted."""

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


def start_kubesched(
    kubeconfig: str,
    workdir: Path,
    config: Path | None,
    plugins: dict[str, Any] | None = None,
    feature_gates: str = "",
    plugin_config: list[dict[str, Any]] | None = None,
) -> tuple[Any, str]:
    """``kubesched run`` as a child process (its own interpreter, as in production), with
    the workload's own ``plugins`` (gang: Coscheduling) and ``plugin_config`` when
    ``config`` sets no profile, and ``feature_gates`` (a ``--feature-gates`` value) when
    not empty."""
    data: dict[str, Any] = (
        yaml.safe_load(config.read_text())
        if config
        else {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    if plugins and not data.get("profiles"):
        data["profiles"] = [{"schedulerName": "default-scheduler", "plugins": plugins}]
        if plugin_config:
            data["profiles"][0]["pluginConfig"] = plugin_config
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
    # Its HTTPS server on 127.0.0.1 only, /metrics open to this local reader (no token).
    cmd = [sys.executable, "-m", "kubesched.cli.main", "run", "--config", str(path),
           "--bind-address", "127.0.0.1", "--secure-port", str(port),
           "--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics",
           "--log-level", "warning"]  # fmt: skip
    if feature_gates:
        cmd.append(f"--feature-gates={feature_gates}")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    return proc, f"https://127.0.0.1:{port}/metrics"


def external_metrics_url(command: list[str]) -> str | None:
    """The ``/metrics`` URL of a kube-scheduler ``command`` that serves it to anyone
    (``--authorization-always-allow-paths`` naming it), on 127.0.0.1; else None."""
    flags = dict(arg.split("=", 1) for arg in command if arg.startswith("--") and "=" in arg)
    allowed = flags.get("--authorization-always-allow-paths", "").split(",")
    port = flags.get("--secure-port")
    return f"https://127.0.0.1:{port}/metrics" if port and "/metrics" in allowed else None


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


def _is_pod_group(manifest: dict[str, Any]) -> bool:
    return manifest["kind"] == "PodGroup" and manifest.get("apiVersion") == COSCHEDULING_API


def install_crds(client: KubeClient, crds: list[dict[str, Any]], timeout: float = 60.0) -> None:
    """Create these CRDs (unless there) and wait until each is served."""
    deadline = time.monotonic() + timeout
    for definition in crds:
        with contextlib.suppress(ConflictError):
            create_objects(client, [definition])
        path = f"{collection_path(definition)}/{definition['metadata']['name']}"
        while True:
            status = client.request("GET", path).get("status") or {}
            if any(
                c["type"] == "Established" and c["status"] == "True"
                for c in status.get("conditions") or ()
            ):
                break
            if time.monotonic() >= deadline:
                kind = definition["spec"]["names"]["kind"]
                raise BenchError(f"the {kind} CRD was not established within {timeout:.0f}s")
            time.sleep(0.2)


def install_pod_group_crd(client: KubeClient, timeout: float = 60.0) -> None:
    """Create scheduler-plugins' PodGroup CRD (unless there) and wait until it is served."""
    install_crds(client, [POD_GROUP_CRD], timeout)


def _crds_for(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CRDs (of :data:`WORKLOAD_CRDS`) the kinds of ``manifests`` need, once each."""
    keys = {(m.get("apiVersion"), m["kind"]) for m in manifests}
    return [definition for key, definition in WORKLOAD_CRDS.items() if key in keys]


def _require_workload_api(client: KubeClient) -> None:
    """Raise ``BenchError`` (why ``external`` cannot run gang) unless the API server serves
    kube-scheduler's own PodGroups."""
    try:
        served = client.request("GET", f"/apis/{WORKLOAD_API}")["resources"]
    except NotFoundError:
        served = []
    if not any(r["name"] == "podgroups" for r in served):
        raise BenchError(
            "the gang workload cannot run under external: kube-scheduler v1.36 has no "
            "Coscheduling plugin, and its own gang scheduling needs the API server's "
            f"{WORKLOAD_API} PodGroups, which this API server does not serve (start it with "
            f"{' '.join(GANG_APISERVER_ARGS)}, and kube-scheduler with {GANG_FEATURE_GATES})"
        )


def as_kube_gangs(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gang workload in kube-scheduler's own terms (v1.36): each Coscheduling PodGroup
    becomes a ``scheduling.k8s.io/v1alpha2`` PodGroup with a gang policy of ``minCount`` =
    ``minMember``, and each member pod names it in ``spec.schedulingGroup`` (its label
    stays); the other objects are unchanged."""
    out = []
    for m in manifests:
        if _is_pod_group(m):
            m = {
                "apiVersion": WORKLOAD_API,
                "kind": "PodGroup",
                "metadata": m["metadata"],
                "spec": {"schedulingPolicy": {"gang": {"minCount": m["spec"]["minMember"]}}},
            }
        elif m["kind"] == "Pod" and POD_GROUP_LABEL in (m["metadata"].get("labels") or {}):
            group = {"podGroupName": m["metadata"]["labels"][POD_GROUP_LABEL]}
            m = {**m, "spec": {**m["spec"], "schedulingGroup": group}}
        out.append(m)
    return out


def _key(manifest: dict[str, Any]) -> str:
    return f"{manifest['metadata'].get('namespace') or 'default'}/{manifest['metadata']['name']}"


def _delete_pods(client: KubeClient, pods: list[tuple[str, str]], workers: int = 16) -> None:
    """Delete ``(namespace, name)`` pods at once (no grace period), from ``workers``
    threads; a pod already gone is no error."""

    def delete(key: tuple[str, str]) -> None:
        with contextlib.suppress(NotFoundError):
            client.request(
                "DELETE",
                f"/api/v1/namespaces/{key[0]}/pods/{key[1]}",
                query={"gracePeriodSeconds": 0},
            )

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(delete, pods))


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
            if o["kind"] in PROTECTED_KINDS:
                # No controller runs to take their protection finalizer off.
                client.request(
                    "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                )
            client.request("DELETE", path)


def _read_latency(metrics_url: str, required: bool) -> dict[str, float]:
    """:func:`latency_quantiles` of the scheduler serving ``metrics_url``. An external
    scheduler's ``/metrics`` may still refuse the request (it was not ready, or its
    authorization is delegated elsewhere): its latency is then left out, unless
    ``required``."""
    # Both schedulers' certificates are self-signed at their start.
    insecure = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(metrics_url, timeout=10, context=insecure) as resp:
            return latency_quantiles(resp.read().decode())
    except OSError:
        if required:
            raise
        return {}


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
    feature_gates: str = "",
) -> ApiServerResult:
    """Create workload ``name`` in the API server of ``kubeconfig`` (which must have no
    nodes), have it scheduled by ``scheduler`` and measure; delete it all at the end.

    ``external_command`` (with ``external``) is the scheduler to start once every pod is
    pending, as ``kubesched`` is; without it the external scheduler already runs and the
    pods are created under its eyes, so the figure includes their creation.
    ``feature_gates`` (a ``--feature-gates`` value) goes to ``kubesched run``.
    """
    if scheduler not in SCHEDULERS:
        raise BenchError(f"unknown scheduler {scheduler!r} (known: {', '.join(SCHEDULERS)})")
    client = KubeClient(load_configuration(kubeconfig), _UNTHROTTLED)
    workload = build_workload(name, nodes, pods, seed)
    setup = _manifests([*workload.nodes, *workload.setup])
    later = {id(obj) for step in workload.churn for obj in step.create}
    # The pods pending at the start; the churn steps' pods arrive later.
    measured = _manifests([p for p in workload.pods if id(p) not in later])
    steps = [(step.delete, _manifests(step.create)) for step in workload.churn]
    namespaces = _namespaces(setup + measured + [m for _, c in steps for m in c])
    created = [*setup, *measured, *(m for _, c in steps for m in c)]
    expected = len(measured) - workload.expected_unschedulable
    gang = any(_is_pod_group(m) for m in setup)
    if any(m["kind"] == "ElasticQuota" for m in setup):
        raise BenchError(
            "the quota workload runs on the embedded cluster only: an API server has no "
            "ElasticQuota CRD to create its quotas with"
        )
    deleted = 0
    proc = None
    drivers = {
        m["provisioner"]
        for m in setup
        if m["kind"] == "StorageClass" and m.get("volumeBindingMode") == "WaitForFirstConsumer"
    }
    provisioner = Provisioner(client, drivers) if drivers else None
    try:
        _refuse_a_used_cluster(client)
        if gang and scheduler == "external":
            _require_workload_api(client)
            setup, measured = as_kube_gangs(setup), as_kube_gangs(measured)
            created = [*setup, *measured]  # gang has no churn steps
        install_crds(client, _crds_for(setup))
        for namespace in namespaces:
            with contextlib.suppress(ConflictError):  # left by an earlier run
                client.request("POST", "/api/v1/namespaces", body=namespace)
        create_objects(client, setup)
        starts_after = scheduler == "kubesched" or external_command is not None
        with tempfile.TemporaryDirectory() as tmp:
            if starts_after:
                create_objects(client, measured)
            watch = _BindWatch(client)
            watch.measured = {_key(m) for m in created if m["kind"] == "Pod"} - {
                _key(m) for m in setup
            }
            if provisioner is not None:
                provisioner.start()
            started = time.monotonic()
            deadline = started + timeout
            metrics_url: str | None = None
            if scheduler == "kubesched":
                plugins = WORKLOADS[name].plugins
                proc, metrics_url = start_kubesched(
                    kubeconfig,
                    Path(tmp),
                    config,
                    plugins,
                    feature_gates,
                    workload_plugin_config(name, nodes),
                )
            elif external_command is not None:
                metrics_url = external_metrics_url(external_command)
                log = (Path(tmp) / "external.log").open("w")
                proc = subprocess.Popen(external_command, stdout=log, stderr=subprocess.STDOUT)
            else:
                create_objects(client, measured)
            watch.wait(expected, timeout)
            for doomed, arriving in steps:
                # As the embedded bench: once the scheduling settled, the deletions,
                # then the new pods, and scheduling until it settles again.
                _delete_pods(client, doomed)
                deleted += len(doomed)
                create_objects(client, arriving)
                expected += len(arriving)
                watch.wait(expected, max(0.0, deadline - time.monotonic()))
            latency: dict[str, float] = {}
            if metrics_url is not None:
                latency = _read_latency(metrics_url, required=scheduler == "kubesched")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)
        if provisioner is not None:
            provisioner.stop()
            created += provisioner.created  # after their claims
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
        deleted=deleted,
    )
