"""The writer process of ``kubesched run`` against a real API server: writes, errors,
fencing by the lease's deadline, its death, and ``kubesched run``'s exit when it dies."""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kubesched.api import Pod
from kubesched.backend.kube import KubeClient, KubeCluster, load_configuration
from kubesched.backend.kube.client import NotLeaderError, UnreachableError
from kubesched.backend.kube.writer import WriterProcess
from kubesched.backend.protocol import (
    BackendError,
    ConflictError,
    NotFoundError,
    PodCondition,
    RecordedEvent,
)
from kubesched.testing.envtest import ControlPlane

from .conftest import (
    FAST,
    Api,
    all_bound,
    kubesched_process,
    pod_manifest,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.envtest


@pytest.fixture
def writer(control_plane: ControlPlane) -> Iterator[WriterProcess]:
    """A started writer process for the admin user (no leader election: never fenced)."""
    w = WriterProcess(str(control_plane.kubeconfig), FAST)
    w.start("writer-test")
    yield w
    w.close()


@pytest.fixture
def cluster(api: Api, writer: WriterProcess) -> Iterator[KubeCluster]:
    """A cluster whose bindings, status patches and Events go through ``writer``."""
    c = KubeCluster(KubeClient(load_configuration(str(api.cp.kubeconfig)), FAST))
    c.use_writer(writer)
    yield c
    c.close()


def _pod(api: Api, name: str) -> Pod:
    created = api.create(pod_manifest(name))
    return Pod.model_validate({**created, "kind": "Pod"})


def test_bind_status_and_event_go_out_from_the_writer_process(
    api: Api, writer: WriterProcess, cluster: KubeCluster
) -> None:
    api.nodes(1)
    pod = _pod(api, "p0")
    cluster.update_pod_status(
        pod, condition=PodCondition("PodScheduled", "False", "Unschedulable", "why not")
    )
    cluster.bind(pod, "n0")
    cluster.record_event(
        RecordedEvent("Pod", "default", "p0", "Normal", "Scheduled", "assigned", "Binding")
    )
    assert api.node_of("p0") == "n0"
    conditions = {c["type"]: c for c in api.pod("p0")["status"]["conditions"]}
    # The binding turns the condition written before it to True, as the API server does.
    assert conditions["PodScheduled"]["status"] == "True"
    event = wait_for(
        lambda: next((e for e in api.events() if e["reason"] == "Scheduled"), None), 30, "event"
    )
    assert event["reportingInstance"] == "default-scheduler-writer-test"
    assert event["note"] == "assigned"
    assert writer.pid != os.getpid()


@pytest.mark.parametrize(
    ("case", "error"),
    [("bound already", ConflictError), ("no such pod", NotFoundError)],
    ids=["conflict", "not-found"],
)
def test_the_api_servers_refusal_comes_back_as_its_error(
    api: Api, cluster: KubeCluster, case: str, error: type[BackendError]
) -> None:
    api.nodes(1)
    pod = _pod(api, "p0")
    if case == "bound already":
        cluster.bind(pod, "n0")
    else:
        api.delete("/api/v1/namespaces/default/pods/p0", gracePeriodSeconds=0)
        wait_for(lambda: api.pod("p0") is None, 30, "pod deleted")
    with pytest.raises(error):
        cluster.bind(pod, "n0")


@pytest.mark.parametrize(
    "until",
    [None, -math.inf, "past"],
    ids=["lease-lost", "never-led", "deadline-passed"],
)
def test_no_write_leaves_the_writer_process_once_the_lease_deadline_passed(
    api: Api, writer: WriterProcess, cluster: KubeCluster, until: float | str | None
) -> None:
    api.nodes(1)
    pod = _pod(api, "p0")
    writer.fence_until(time.monotonic() - 0.01 if until == "past" else until)  # type: ignore[arg-type]
    with pytest.raises(NotLeaderError):
        cluster.bind(pod, "n0")
    cluster.record_event(
        RecordedEvent("Pod", "default", "p0", "Normal", "Scheduled", "fenced", "Binding")
    )
    time.sleep(1.0)  # time for the event to be (not) written
    assert api.node_of("p0") is None
    assert not [e for e in api.events() if e.get("note") == "fenced"]
    # A renewal moves the deadline on: the writes go out again.
    writer.fence_until(time.monotonic() + 60)
    cluster.bind(pod, "n0")
    assert api.node_of("p0") == "n0"


def test_a_dead_writer_process_fails_the_waiting_writes_and_says_so(
    api: Api, control_plane: ControlPlane
) -> None:
    exits: list[str] = []
    w = WriterProcess(str(control_plane.kubeconfig), FAST, on_exit=exits.append)
    w.start("doomed")
    c = KubeCluster(KubeClient(load_configuration(str(api.cp.kubeconfig)), FAST))
    c.use_writer(w)
    try:
        api.nodes(1)
        pod = _pod(api, "p0")
        assert w.pid is not None
        os.kill(w.pid, signal.SIGKILL)
        wait_for(lambda: exits, 30, "on_exit called")
        assert "the writer process exited (exit code -9)" in exits[0]
        with pytest.raises(UnreachableError):
            c.bind(pod, "n0")
        assert api.node_of("p0") is None
    finally:
        c.close()


def test_the_writer_processs_requests_count_in_the_schedulers_client_metrics(
    api: Api, control_plane: ControlPlane
) -> None:
    registry = CollectorRegistry()
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST, registry)
    w = WriterProcess(str(control_plane.kubeconfig), FAST, observe=client.observe)
    w.start("counted")
    c = KubeCluster(client)
    c.use_writer(w)
    try:
        api.nodes(1)
        pod = _pod(api, "p0")
        c.bind(pod, "n0")
        with pytest.raises(ConflictError):
            c.bind(pod, "n0")
    finally:
        c.close()
    labels = {"method": "POST", "host": client._host_label}
    assert registry.get_sample_value("rest_client_requests_total", {**labels, "code": "201"}) == 1
    assert registry.get_sample_value("rest_client_requests_total", {**labels, "code": "409"}) == 1
    verb = {"verb": "POST", "host": client._host_label}
    assert registry.get_sample_value("rest_client_request_duration_seconds_count", verb) == 2
    assert registry.get_sample_value("rest_client_rate_limiter_duration_seconds_count", verb) == 2


def _writer_pid(parent: int) -> int | None:
    """The writer process: ``parent``'s child (a spawned one would have multiprocessing's
    resource tracker beside it)."""
    for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"resource_tracker" not in cmdline:
            return int(child)
    return None


def test_kubesched_run_exits_non_zero_when_its_writer_process_dies(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    api.nodes(2)
    api.create_many([pod_manifest(f"p{i}") for i in range(4)])
    proc, _ = kubesched_process(control_plane.kubeconfig, write_config(tmp_path))
    try:
        wait_for(lambda: all_bound(api, 4), 120, "pods bound through the writer process")
        pid = wait_for(lambda: _writer_pid(proc.pid), 10, "the writer process")
        os.kill(pid, signal.SIGKILL)
        code = proc.wait(60)
        err = proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 1
    assert "the writer process exited (exit code -9)" in err
    assert "Traceback" not in err


def test_kubesched_run_stops_its_writer_process_on_sigterm(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    api.nodes(1)
    api.create(pod_manifest("p0"))
    proc, _ = kubesched_process(control_plane.kubeconfig, write_config(tmp_path))
    try:
        wait_for(lambda: all_bound(api, 1), 120, "pod bound")
        pid = wait_for(lambda: _writer_pid(proc.pid), 10, "the writer process")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        err = proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, err
    # Forked before any other thread started: nothing imported again.
    assert f"writer process started (pid {pid}, fork)" in err
    assert (
        not Path(f"/proc/{pid}").exists() or b"zombie" in Path(f"/proc/{pid}/status").read_bytes()
    )
