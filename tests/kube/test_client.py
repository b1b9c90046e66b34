"""KubeClient against a real kube-apiserver: credentials reused, watch lines across chunks."""

from __future__ import annotations

import pytest

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.backend.kube import client as client_module
from kubesched.testing.envtest import ControlPlane

from .conftest import FAST

pytestmark = pytest.mark.envtest


@pytest.mark.parametrize(
    ("refresh", "requests", "asked"),
    [(10.0, 6, 1), (0.0, 6, 6)],
    ids=["reused-within-the-refresh-period", "asked-each-time-without-one"],
)
def test_credentials_are_asked_of_the_configuration_once_per_refresh_period(
    control_plane: ControlPlane, monkeypatch, refresh: float, requests: int, asked: int
) -> None:
    """The configuration's credentials (whose refresh hook re-reads a kubeconfig user's
    token, an exec plugin's, an in-cluster token file) are asked for at most once per
    ``AUTH_REFRESH``; every request still authenticates (a 401 would raise)."""
    monkeypatch.setattr(client_module, "AUTH_REFRESH", refresh)
    configuration = load_configuration(str(control_plane.kubeconfig))
    calls = []
    auth_settings = configuration.auth_settings

    def counting():
        calls.append(1)
        return auth_settings()

    configuration.auth_settings = counting
    client = KubeClient(configuration, FAST)
    try:
        for _ in range(requests):
            assert client.request("GET", "/api/v1/namespaces/default")["metadata"]["name"]
    finally:
        client.close()
    assert len(calls) == asked


@pytest.mark.parametrize(
    ("objects", "padding"),
    [(3, 10), (40, 5000), (4, 150_000)],
    ids=["small-events", "many-events-of-5-kib", "events-longer-than-a-chunk"],
)
def test_a_watch_decodes_every_line_whatever_the_chunks(
    control_plane: ControlPlane, objects: int, padding: int
) -> None:
    """ConfigMaps of ``padding`` bytes, read in 64 KiB chunks: an event longer than a
    chunk arrives in pieces; each event is decoded once, whole."""
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)
    path = "/api/v1/namespaces/default/configmaps"
    names = [f"chunks-{objects}-{i}" for i in range(objects)]
    try:
        rv = client.request("GET", path)["metadata"]["resourceVersion"]
        for name in names:
            client.request(
                "POST",
                path,
                body={"metadata": {"name": name}, "data": {"pad": "x" * padding}},
            )
        resp, events = client.stream(
            path, {"watch": "true", "resourceVersion": rv, "timeoutSeconds": 30}, 60
        )
        seen = []
        for event in events:
            assert event["type"] == "ADDED"
            assert len(event["object"]["data"]["pad"]) == padding
            seen.append(event["object"]["metadata"]["name"])
            if len(seen) == objects:
                break
        resp.shutdown()  # the watch is still open: its connection is not reusable
        resp.release_conn()
        assert seen == names
    finally:
        for name in names:
            client.request("DELETE", f"{path}/{name}")
        client.close()
