"""The HTTPS server of ``kubesched run``: endpoints, TLS, client certificates, authorization
without a cluster, profiling, and bounded connections."""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from kubesched.metrics import Metrics
from kubesched.server import ConnectionLimits, HealthServer
from kubesched.serving.auth import Authorizer
from kubesched.serving.certs import serving_context
from tests.server.certs import ca_and_client

ALL = Authorizer(None, always_allow_paths=("/*",))
"""Everything served without authorization (``--authorization-always-allow-paths=/*``)."""

UNVERIFIED = ssl._create_unverified_context()


@pytest.fixture
def ready() -> dict[str, tuple[bool, str]]:
    return {"informer-sync": (False, "informers not synced")}


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("scheduler_schedule_attempts", "help", ["result"], registry=registry).labels(
        "scheduled"
    ).inc(3)
    return registry


@pytest.fixture
def server(ready) -> Iterator[HealthServer]:
    s = HealthServer(
        _registry(),
        port=0,
        ready_checks={"informer-sync": lambda: ready["informer-sync"]},
        authorizer=ALL,
        configz=lambda: {"kind": "KubeSchedulerConfiguration", "parallelism": 16},
        profiling=True,
    )
    s.start()
    yield s
    s.stop()


def _get(url: str, context: ssl.SSLContext | None = None, timeout: float = 10) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.mark.parametrize(
    ("path", "synced", "code", "body"),
    [
        ("/healthz", False, 200, "ok"),
        ("/livez", False, 200, "ok"),
        ("/readyz", True, 200, "ok"),
        (
            "/readyz",
            False,
            500,
            "[+]ping ok\n[-]informer-sync failed: informers not synced\nreadyz check failed\n",
        ),
        ("/readyz?verbose", True, 200, "[+]ping ok\n[+]informer-sync ok\nreadyz check passed\n"),
        (
            "/readyz?verbose",
            "leader",
            200,
            "[+]ping ok\n[+]informer-sync ok leader\nreadyz check passed\n",
        ),
        ("/nothing", True, 404, "404 page not found\n"),
        (
            "/configz",
            True,
            200,
            '{"componentconfig": {"kind": "KubeSchedulerConfiguration", "parallelism": 16}}',
        ),
        ("/debug/pprof/nothing", True, 404, "Unknown profile: nothing\n"),
        (
            "/debug/pprof/profile?seconds=0",
            True,
            400,
            "seconds=0: must be an integer in [1, 300]\n",
        ),
        (
            "/debug/pprof/profile?seconds=x",
            True,
            400,
            "seconds=x: must be an integer in [1, 300]\n",
        ),
    ],
    ids=[
        "healthz",
        "livez",
        "ready",
        "not-ready",
        "ready-verbose",
        "verbose-with-detail",
        "unknown-path",
        "configz",
        "unknown-profile",
        "zero-seconds",
        "bad-seconds",
    ],
)
def test_endpoints(server, ready, path, synced, code, body) -> None:
    if synced:
        ready["informer-sync"] = (True, "" if synced is True else synced)
    assert _get(f"http://127.0.0.1:{server.port}{path}") == (code, body)


def test_metrics_in_prometheus_text(server) -> None:
    code, body = _get(f"http://127.0.0.1:{server.port}/metrics")
    assert code == 200
    assert 'scheduler_schedule_attempts_total{result="scheduled"} 3.0' in body


def test_served_metrics_have_no_created_series() -> None:
    # kube-scheduler serves no `*_created` series; kubesched's metrics switch them off.
    metrics = Metrics()
    metrics.schedule_attempts.labels("scheduled", "default-scheduler").inc()
    metrics.preemption_victims.observe(2)
    s = HealthServer(metrics.registry, port=0, ready_checks={}, authorizer=ALL)
    s.start()
    try:
        code, body = _get(f"http://127.0.0.1:{s.port}/metrics")
    finally:
        s.stop()
    assert code == 200
    assert "scheduler_schedule_attempts_total{" in body
    assert "scheduler_preemption_victims_count 1.0" in body
    assert re.findall(r"^\w+_created[{ ]", body, re.MULTILINE) == []


def test_thread_stacks_name_every_thread(server) -> None:
    done = threading.Event()
    worker = threading.Thread(target=done.wait, name="stack-probe", daemon=True)
    worker.start()
    try:
        code, body = _get(f"http://127.0.0.1:{server.port}/debug/pprof/goroutine?debug=2")
    finally:
        done.set()
    assert code == 200
    assert '"stack-probe" daemon:\n' in body and "in wait" in body
    assert _get(f"http://127.0.0.1:{server.port}/debug/pprof/")[1].startswith("/debug/pprof/\n")


def test_cpu_profile_is_speedscope_and_weighs_the_busy_thread(server) -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    busy = threading.Thread(target=spin, name="busy", daemon=True)
    busy.start()
    try:
        code, body = _get(f"http://127.0.0.1:{server.port}/debug/pprof/profile?seconds=1")
    finally:
        stop.set()
    assert code == 200
    profile = json.loads(body)
    assert profile["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = profile["shared"]["frames"]
    by_name = {p["name"].split(" (")[0]: p for p in profile["profiles"]}
    spun = by_name["busy"]
    assert spun["type"] == "sampled" and len(spun["samples"]) == len(spun["weights"]) > 10
    assert any(
        frames[i]["name"] == "test_cpu_profile_is_speedscope_and_weighs_the_busy_thread"
        ".<locals>.spin"
        for i in spun["samples"][0]
    )
    # Weights are CPU seconds (a loaded machine gives the spinning thread less than the
    # 1 s); a thread blocked in a wait uses no CPU: it weighs (next to) nothing.
    assert 0.02 < spun["endValue"] <= 1.5
    assert by_name.get("http-accept", {"endValue": 0})["endValue"] < spun["endValue"] / 5


def test_profiling_off_serves_no_profile() -> None:
    s = HealthServer(CollectorRegistry(), port=0, authorizer=ALL)
    s.start()
    try:
        assert _get(f"http://127.0.0.1:{s.port}/debug/pprof/")[0] == 404
        assert _get(f"http://127.0.0.1:{s.port}/configz")[0] == 404
    finally:
        s.stop()


@pytest.mark.parametrize(
    ("path", "code", "body"),
    [
        ("/healthz", 200, "ok"),
        ("/readyz", 200, "ok"),
        (
            "/metrics",
            403,
            '{"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", '
            '"message": "forbidden: User \\"system:anonymous\\" cannot get path \\"/metrics\\"", '
            '"reason": "Forbidden", "details": {}, "code": 403}\n',
        ),
        ("/healthz/", 403, None),
        ("/nothing", 403, None),
    ],
    ids=["healthz", "readyz", "metrics", "healthz-slash-is-another-path", "unknown-path"],
)
def test_without_a_cluster_only_the_always_allowed_paths_answer(path, code, body) -> None:
    """Upstream without an authorization kubeconfig: everything else is forbidden
    (even a path that does not exist: authorization comes first)."""
    s = HealthServer(CollectorRegistry(), port=0)
    s.start()
    try:
        got = _get(f"http://127.0.0.1:{s.port}{path}")
    finally:
        s.stop()
    assert got[0] == code
    if body is not None:
        assert got[1] == body


def _tls_server(tmp_path: Path, **kwargs) -> HealthServer:
    context = serving_context(
        bind_address="127.0.0.1",
        cert_file=None,
        key_file=None,
        cert_dir=str(tmp_path / "certs"),
        client_ca=kwargs.pop("client_ca", None),
    )
    s = HealthServer(CollectorRegistry(), port=0, tls=context, **kwargs)
    s.start()
    return s


def test_self_signed_certificate_is_kept_in_cert_dir_and_verifies(tmp_path) -> None:
    s = _tls_server(tmp_path)
    try:
        crt = tmp_path / "certs" / "kubesched.crt"
        assert (tmp_path / "certs" / "kubesched.key").stat().st_mode & 0o777 == 0o600
        # Verified against itself, host name included (127.0.0.1 is in its names).
        assert _get(
            f"https://127.0.0.1:{s.port}/healthz", ssl.create_default_context(cafile=str(crt))
        ) == (200, "ok")
    finally:
        s.stop()
    first = crt.read_bytes()
    _tls_server(tmp_path).stop()
    assert crt.read_bytes() == first, "a second start reuses the pair in --cert-dir"


def test_self_signed_in_memory_when_no_cert_dir() -> None:
    context = serving_context(
        bind_address="0.0.0.0", cert_file=None, key_file=None, cert_dir=None, client_ca=None
    )
    s = HealthServer(CollectorRegistry(), port=0, tls=context)
    s.start()
    try:
        assert _get(f"https://127.0.0.1:{s.port}/livez", UNVERIFIED) == (200, "ok")
    finally:
        s.stop()


def test_a_client_certificate_signed_by_the_client_ca_names_the_user(tmp_path) -> None:
    ca, crt, key = ca_and_client(tmp_path, "alice", ["team-a"])
    # Authorization without a cluster forbids /metrics: the refusal names the user.
    s = _tls_server(tmp_path, client_ca=ca)
    try:
        with_cert = ssl._create_unverified_context()
        with_cert.load_cert_chain(str(crt), str(key))
        code, body = _get(f"https://127.0.0.1:{s.port}/metrics", with_cert)
        assert code == 403
        assert json.loads(body)["message"] == ('forbidden: User "alice" cannot get path "/metrics"')
        code, body = _get(f"https://127.0.0.1:{s.port}/metrics", UNVERIFIED)
        assert json.loads(body)["message"].startswith('forbidden: User "system:anonymous"')
    finally:
        s.stop()


def test_a_client_certificate_of_another_ca_is_refused(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ca, _, _ = ca_and_client(tmp_path / "a", "alice", [])
    _, crt, key = ca_and_client(tmp_path / "b", "mallory", ["system:masters"])
    s = _tls_server(tmp_path, client_ca=ca)
    try:
        other = ssl._create_unverified_context()
        other.load_cert_chain(str(crt), str(key))
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            _get(f"https://127.0.0.1:{s.port}/healthz", other)
    finally:
        s.stop()


# -- bounded connections ----------------------------------------------------------------
def _idle_sockets(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]


def test_a_thousand_idle_connections_neither_block_health_nor_add_threads(tmp_path) -> None:
    s = _tls_server(tmp_path, limits=ConnectionLimits(workers=4, max_connections=2048))
    before = threading.active_count()
    idle = _idle_sockets(s.port, 1000)
    try:
        started = time.monotonic()
        assert _get(f"https://127.0.0.1:{s.port}/healthz", UNVERIFIED, timeout=5) == (200, "ok")
        assert time.monotonic() - started < 2
        # Worker threads are made on demand, at most ``workers`` of them.
        assert threading.active_count() <= before + 4
    finally:
        for sock in idle:
            sock.close()
        s.stop()


def test_past_max_connections_the_oldest_idle_one_is_closed() -> None:
    s = HealthServer(
        CollectorRegistry(), port=0, limits=ConnectionLimits(workers=2, max_connections=10)
    )
    s.start()
    idle = _idle_sockets(s.port, 30)
    try:
        assert _get(f"http://127.0.0.1:{s.port}/healthz", timeout=5) == (200, "ok")
        idle[0].settimeout(5)
        assert idle[0].recv(1) == b"", "the oldest idle connection was closed"
    finally:
        for sock in idle:
            sock.close()
        s.stop()


@pytest.mark.parametrize("trickle", [False, True], ids=["idle", "a-byte-now-and-then"])
def test_slow_or_idle_clients_are_cut_at_the_request_timeout(trickle) -> None:
    """An idle client, and one sending its request head a byte every 0.2 s (no single
    read waits long: only the deadline on the whole head cuts it), are cut after the
    request timeout; the server goes on answering."""
    s = HealthServer(
        CollectorRegistry(), port=0, limits=ConnectionLimits(workers=2, request_timeout=1.0)
    )
    s.start()
    sock = socket.create_connection(("127.0.0.1", s.port))
    stop = threading.Event()

    def send_slowly() -> None:
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\n" * 10:
            if stop.wait(0.2):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return

    try:
        started = time.monotonic()
        if trickle:
            threading.Thread(target=send_slowly, daemon=True).start()
        sock.settimeout(10)
        assert sock.recv(1024) == b""
        assert 0.9 < time.monotonic() - started < 2.5
        assert _get(f"http://127.0.0.1:{s.port}/healthz", timeout=5) == (200, "ok")
    finally:
        stop.set()
        sock.close()
        s.stop()
