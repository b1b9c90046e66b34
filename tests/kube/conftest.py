"""Fixtures for tests against a real kube-apiserver: the control plane, an admin client, a
scheduler run in-process or as a ``kubesched run`` process, and object helpers."""

from __future__ import annotations

import contextlib
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.backend.kube import KubeClient, KubeCluster, load_configuration
from kubesched.backend.protocol import BackendError, NotFoundError
from kubesched.config import effective_configuration, load_config
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.runner import SchedulerRunner
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import (
    ASSETS_ENV,
    DEVICE_TAINT_RULE_APISERVER_ARGS,
    WORKLOAD_APISERVER_ARGS,
    ControlPlane,
    EnvtestError,
    assets_dir,
    create_object,
    create_objects,
    free_port,
)

FAST = ClientConnectionConfiguration(qps=5000, burst=5000)
"""The test clients are not throttled (the server is local and ours)."""
WORKLOAD_COLLECTIONS = tuple(
    f"/apis/scheduling.k8s.io/v1alpha2/namespaces/default/{kind}"
    for kind in ("podgroups", "workloads")
)
"""The Workload API's collections the gang tests fill (PodGroups may carry finalizers that
no controller of the test cluster lifts)."""


def _session_control_plane(**kwargs: Any) -> Iterator[ControlPlane]:
    """A started ``ControlPlane(**kwargs)``; the test is skipped without the binaries."""
    if assets_dir() is None:
        pytest.skip(
            f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver "
            '(export KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)"; see docs/run.md)'
        )
    with ControlPlane(**kwargs) as cp:
        yield cp


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver for the whole session; skipped without the binaries."""
    yield from _session_control_plane()


@pytest.fixture(scope="session")
def workload_control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver serving the Workload API (``WORKLOAD_APISERVER_ARGS``) and
    DeviceTaintRules (``DEVICE_TAINT_RULE_APISERVER_ARGS``) for the whole session, shared
    by the gang tests through ``workload_api`` (one start instead of one per test: a start
    costs seconds, many more on a busy machine)."""
    yield from _session_control_plane(
        apiserver_args=WORKLOAD_APISERVER_ARGS + DEVICE_TAINT_RULE_APISERVER_ARGS
    )


class Api:
    """An admin client for the tests: create objects, read pods, wait for conditions."""

    def __init__(self, control_plane: ControlPlane) -> None:
        self.cp = control_plane
        self.client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """POST one object."""
        return create_object(self.client, manifest)

    def create_many(self, manifests: list[dict[str, Any]]) -> None:
        """Create objects from a few threads."""
        create_objects(self.client, manifests, workers=8)

    def nodes(self, count: int, cpu: str = "4", memory: str = "16Gi", prefix: str = "n") -> None:
        """Create ``count`` Nodes with that capacity."""
        self.create_many(
            [
                make_node(f"{prefix}{i}").capacity(cpu=cpu, memory=memory, pods=110).manifest()
                for i in range(count)
            ]
        )

    def pods(self, namespace: str = "default") -> list[dict[str, Any]]:
        """The pods of ``namespace`` as the API server has them."""
        return self.client.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]

    def pod(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """One pod, or None."""
        try:
            return self.client.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        except NotFoundError:
            return None

    def events(self, namespace: str = "default") -> list[dict[str, Any]]:
        """The events.k8s.io/v1 Events of ``namespace``."""
        return self.client.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")[
            "items"
        ]

    def delete(self, path: str, **query: Any) -> None:
        """DELETE ``path``; a missing object is fine."""
        with contextlib.suppress(NotFoundError):
            self.client.request("DELETE", path, query=query or None)

    def delete_all(self, collection: str) -> None:
        """Delete every object of ``collection``, their finalizers dropped first: no
        controller of the test cluster lifts them (pv/pvc protection, claims' delete
        protection)."""
        for item in self.client.request("GET", collection)["items"]:
            path = f"{collection}/{item['metadata']['name']}"
            with contextlib.suppress(NotFoundError):
                self.client.request(
                    "PATCH",
                    path,
                    body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )
            self.delete(path)

    def node_of(self, pod: str) -> str | None:
        """The node ``pod`` (of ``default``) is bound to, if any."""
        found = self.pod(pod)
        return found["spec"].get("nodeName") if found else None

    def unschedulable(self, pod: str, timeout: float = 30) -> dict[str, Any]:
        """Wait until ``pod`` has ``PodScheduled=False`` and return that condition."""

        def condition() -> dict[str, Any] | None:
            status = (self.pod(pod) or {}).get("status") or {}
            found = next(
                (c for c in status.get("conditions") or () if c["type"] == "PodScheduled"), None
            )
            return found if found is not None and found["status"] == "False" else None

        return wait_for(condition, timeout, f"{pod} to be found unschedulable")

    def clean(self) -> None:
        """Remove what a test made: ReplicaSets, pods, nodes, PDBs, events, priority
        classes, leases, PodGroups and Workloads."""
        self.delete("/apis/apps/v1/namespaces/default/replicasets")
        self.delete("/api/v1/namespaces/default/pods", gracePeriodSeconds=0)
        self.delete("/api/v1/nodes")
        self.delete("/apis/policy/v1/namespaces/default/poddisruptionbudgets")
        self.delete("/apis/events.k8s.io/v1/namespaces/default/events")
        self.delete("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")
        for path in WORKLOAD_COLLECTIONS:
            # Served only with the Workload API's gates (workload_control_plane): else a 404.
            with contextlib.suppress(NotFoundError):
                self.delete_all(path)
        for pc in self.client.request("GET", "/apis/scheduling.k8s.io/v1/priorityclasses")["items"]:
            if not pc["metadata"]["name"].startswith("system-"):
                self.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc['metadata']['name']}")
        wait_for(
            lambda: (
                not self.pods()
                and not self.client.request("GET", "/api/v1/nodes")["items"]
                and not any(self._items(path) for path in WORKLOAD_COLLECTIONS)
            ),
            30,
            "clean-up",
        )

    def _items(self, collection: str) -> list[dict[str, Any]]:
        """The objects of ``collection``; none when the API server does not serve it."""
        try:
            return self.client.request("GET", collection)["items"]
        except NotFoundError:
            return []


def wait_for(condition: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    """Poll ``condition`` until truthy (its value) or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except BackendError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def bound(pods: list[dict[str, Any]]) -> dict[str, str]:
    """Pod name → node of the bound pods."""
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}


def all_bound(api: Api, count: int) -> dict[str, str] | None:
    """Pod name → node once ``count`` pods of ``default`` are bound, else None."""
    placed = bound(api.pods())
    return placed if len(placed) == count else None


def _clean_api(control_plane: ControlPlane) -> Iterator[Api]:
    a = Api(control_plane)
    a.clean()
    yield a
    a.clean()
    a.client.close()


@pytest.fixture
def api(control_plane: ControlPlane) -> Iterator[Api]:
    """An admin client on a clean cluster (cleaned again after the test)."""
    yield from _clean_api(control_plane)


@pytest.fixture
def workload_api(workload_control_plane: ControlPlane) -> Iterator[Api]:
    """An admin client on the clean ``workload_control_plane`` (cleaned again after the
    test: the next test sees none of its objects)."""
    yield from _clean_api(workload_control_plane)


def write_config(tmp_path: Path, extra: dict[str, Any] | None = None) -> Path:
    """A KubeSchedulerConfiguration for tests: no leader election unless ``extra`` sets it,
    unthrottled client; ``extra`` merged at the top level."""
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": 5000, "burst": 5000},
    }
    config.update(extra or {})
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class InProcess:
    """A ``SchedulerRunner`` on a thread of the test process."""

    def __init__(
        self,
        control_plane: ControlPlane,
        config_path: Path,
        gates: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> None:
        """``gates``: ``--feature-gates`` values (``DRADeviceTaintRules=true``)."""
        registry = default_registry()
        config = load_config(config_path, registry)
        client = KubeClient(
            load_configuration(str(control_plane.kubeconfig)), config.client_connection
        )
        self.cluster = KubeCluster(client, **kwargs)
        self.runner = SchedulerRunner(
            effective_configuration(config, registry, gates=parse_feature_gates(gates)),
            registry,
            self.cluster,
        )
        self.status: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.status = self.runner.run()

    def start(self, wait_synced: bool = True) -> InProcess:
        """Start, and (unless told not to) wait until the informers synced."""
        self.thread.start()
        if wait_synced:
            wait_for(self.cluster.synced, 60, "informers to sync")
        return self

    def stop(self) -> int | None:
        """Stop and return the run's exit status."""
        self.runner.stop()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the scheduler did not stop"
        return self.status


@pytest.fixture
def in_process(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Callable[..., InProcess]]:
    """Start in-process schedulers (``in_process(config_extra)``); stopped at the end."""
    started: list[InProcess] = []

    def start(
        extra: dict[str, Any] | None = None, wait_synced: bool = True, **kwargs: Any
    ) -> InProcess:
        r = InProcess(control_plane, write_config(tmp_path / str(len(started)), extra), **kwargs)
        r.start(wait_synced)
        started.append(r)
        return r

    yield start
    for r in started:
        if r.thread.is_alive():
            r.stop()


@contextlib.contextmanager
def kubesched_running(
    control_plane: ControlPlane,
    gates_text: str,
    tmp_path: Path,
    settings: dict[str, Any] | None = None,
) -> Iterator[SchedulerRunner]:
    """kubesched with the feature gates ``gates_text`` (and the top-level configuration
    fields ``settings``) scheduling ``control_plane`` on a thread of this process for the
    ``with`` block, once its informers synced; its runner."""
    registry = default_registry()
    gates = parse_feature_gates([gates_text])
    config = load_config(write_config(tmp_path, settings), registry, gates)
    cluster = KubeCluster(KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST))
    runner = SchedulerRunner(
        effective_configuration(config, registry, gates=gates), registry, cluster
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        wait_for(cluster.synced, 60, "kubesched's informers to sync")
        yield runner
    finally:
        runner.stop()
        thread.join(60)


def kubesched_process(
    kubeconfig: Path, config: Path, *extra: str, port: int | None = None
) -> tuple[subprocess.Popen, int]:
    """``kubesched run`` as a child process, and the port of its HTTPS server (on
    127.0.0.1, a self-signed certificate made at start)."""
    port = free_port() if port is None else port
    cmd = [
        sys.executable,
        "-m",
        "kubesched.cli.main",
        "run",
        "--config",
        str(config),
        "--kubeconfig",
        str(kubeconfig),
        "--bind-address",
        "127.0.0.1",
        "--secure-port",
        str(port),
        *extra,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    return proc, port


def pod_manifest(name: str, cpu: str = "100m", **kw: Any) -> dict[str, Any]:
    """A pod requesting ``cpu`` (and 64Mi), with builder options ``scheduler_name``,
    ``priority_class``, ``labels``."""
    b = make_pod(name).req(cpu=cpu, memory="64Mi")
    if "scheduler_name" in kw:
        b = b.scheduler_name(kw["scheduler_name"])
    if "priority_class" in kw:
        b = b.priority_class(kw["priority_class"])
    if "labels" in kw:
        b = b.labels(kw["labels"])
    manifest = b.manifest()
    manifest["spec"]["terminationGracePeriodSeconds"] = kw.get("grace", 0)
    return manifest


def start_kube_scheduler(
    control_plane: ControlPlane,
    workdir: Path,
    settings: dict[str, Any] | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.Popen:
    """The real kube-scheduler (default profile; ``settings`` and ``args`` as for
    ``ControlPlane.kube_scheduler_command``) serving ``control_plane``, logging to
    ``workdir``, returned once its ``/readyz`` passes (its event handlers synced); skipped
    when the assets have no kube-scheduler. The caller stops it."""
    try:
        command = control_plane.kube_scheduler_command(workdir, settings, args)
    except EnvtestError as err:
        pytest.skip(str(err))
    port = next(a for a in command if a.startswith("--secure-port=")).split("=", 1)[1]
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # its serving certificate is self-signed at start

    def ready() -> bool:
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/readyz", context=context, timeout=5
            ) as resp:
                return resp.status == 200
        except OSError:  # not listening yet, or a 500 while it syncs
            return proc.poll() is not None

    with (workdir / "kube-scheduler.log").open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    wait_for(ready, 120, "kube-scheduler's /readyz")
    if proc.poll() is not None:
        log_path = workdir / "kube-scheduler.log"
        pytest.fail(f"kube-scheduler exited ({proc.returncode}): see {log_path}")
    return proc


@contextlib.contextmanager
def kube_scheduler_running(
    control_plane: ControlPlane,
    workdir: Path,
    args: tuple[str, ...] = (),
    settings: dict[str, Any] | None = None,
) -> Iterator[subprocess.Popen]:
    """``start_kube_scheduler`` (with ``settings`` and ``args``) for the ``with`` block,
    stopped at its end (before the clean-up, so that it does not act on what the clean-up
    deletes)."""
    proc = start_kube_scheduler(control_plane, workdir, settings, args)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)


NOMINATING_SCHEDULERS = ["kube-scheduler", "kubesched"]
"""The schedulers the ``nominating_scheduler`` fixture starts, for ``indirect``
parametrization: the real one and ours, side by side on the same cases."""


@pytest.fixture
def nominating_scheduler(
    request: pytest.FixtureRequest, control_plane: ControlPlane, tmp_path: Path
) -> Callable[[bool], contextlib.AbstractContextManager[None]]:
    """``with nominating_scheduler(gate):`` the scheduler named by the test's parameter
    runs with NominatedNodeNameForExpectation on or off."""

    @contextlib.contextmanager
    def running(gate: bool) -> Iterator[None]:
        flag = f"--feature-gates=NominatedNodeNameForExpectation={str(gate).lower()}"
        if request.param == "kube-scheduler":
            with kube_scheduler_running(control_plane, tmp_path, args=(flag,)):
                yield
        else:
            with kubesched_running(control_plane, flag.split("=", 1)[1], tmp_path / "kubesched"):
                yield

    return running


def status_of(api: Api, name: str) -> dict[str, Any]:
    """The status of pod ``name`` (of ``default``); empty when the pod is gone."""
    return (api.pod(name) or {}).get("status", {})
