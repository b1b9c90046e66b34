"""The HTTP server of ``kubesched run``: /metrics, the health checks, TLS."""

from __future__ import annotations

import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from kubesched.server import HealthServer


@pytest.fixture
def ready() -> dict[str, tuple[bool, str]]:
    return {"informer-sync": (False, "informers not synced")}


@pytest.fixture
def server(ready) -> Iterator[HealthServer]:
    registry = CollectorRegistry()
    Counter("scheduler_schedule_attempts", "help", ["result"], registry=registry).labels(
        "scheduled"
    ).inc(3)
    s = HealthServer(
        registry, port=0, ready_checks={"informer-sync": lambda: ready["informer-sync"]}
    )
    s.start()
    yield s
    s.stop()


def _get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as resp:
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
        ("/nothing", True, 404, "404 page not found\n"),
    ],
    ids=["healthz", "livez", "ready", "not-ready", "ready-verbose", "unknown-path"],
)
def test_health_endpoints(server, ready, path, synced, code, body) -> None:
    if synced:
        ready["informer-sync"] = (True, "")
    assert _get(f"http://127.0.0.1:{server.port}{path}") == (code, body)


def test_metrics_in_prometheus_text(server) -> None:
    code, body = _get(f"http://127.0.0.1:{server.port}/metrics")
    assert code == 200
    assert 'scheduler_schedule_attempts_total{result="scheduled"} 3.0' in body


def test_tls(tmp_path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    s = HealthServer(CollectorRegistry(), port=0, tls_cert_file=str(cert), tls_key_file=str(key))
    s.start()
    try:
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        assert _get(f"https://127.0.0.1:{s.port}/healthz", context) == (200, "ok")
    finally:
        s.stop()
