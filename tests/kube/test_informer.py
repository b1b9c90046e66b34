"""Informers against a real kube-apiserver: every change delivered once, across relists."""

from __future__ import annotations

import pytest

from kubesched.api import Node
from kubesched.backend.kube import (
    RESOURCES,
    GoneError,
    Informer,
    KubeClient,
    Resource,
    load_configuration,
)
from kubesched.backend.protocol import BackendError, EventType
from kubesched.testing import make_node
from kubesched.testing.envtest import ControlPlane

from .conftest import FAST, Api, pod_manifest, wait_for

pytestmark = pytest.mark.envtest

NODES = Resource("Node", "/api/v1/nodes", Node)


@pytest.fixture
def informer(control_plane: ControlPlane, api: Api):
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)
    events: list = []
    inf = Informer(client, NODES, events.append)
    inf.events = events
    yield inf
    inf.stop()
    client.close()


def _label(api: Api, name: str, value: str) -> None:
    api.client.request(
        "PATCH",
        f"/api/v1/nodes/{name}",
        body={"metadata": {"labels": {"v": value}}},
        content_type="application/merge-patch+json",
    )


def test_relist_turns_missed_changes_into_one_event_each(api: Api, informer) -> None:
    for name in ("keep", "change", "drop"):
        api.create(make_node(name).manifest())
    informer.relist()
    assert sorted((e.type, e.object.name) for e in informer.events) == [
        (EventType.ADDED, "change"),
        (EventType.ADDED, "drop"),
        (EventType.ADDED, "keep"),
    ]
    informer.events.clear()
    # Changes while no watch runs (a dropped watch, a 410): the next list makes them up.
    _label(api, "change", "1")
    _label(api, "change", "2")  # two updates, one event: the informer sees the last state
    api.delete("/api/v1/nodes/drop")
    api.create(make_node("new").manifest())
    informer.relist()
    got = sorted((e.type, e.object.name) for e in informer.events)
    assert got == [
        (EventType.ADDED, "new"),
        (EventType.DELETED, "drop"),
        (EventType.MODIFIED, "change"),
    ]
    modified = next(e for e in informer.events if e.type is EventType.MODIFIED)
    assert modified.old.metadata.labels.get("v") is None
    assert modified.object.metadata.labels["v"] == "2"
    informer.events.clear()
    informer.relist()  # nothing changed: nothing delivered
    assert informer.events == []
    assert informer.relists == 2


def test_watch_after_list_delivers_each_change_once(api: Api, informer) -> None:
    api.create(make_node("a").manifest())
    informer.start()
    wait_for(informer.synced.is_set, 30, "list")
    _label(api, "a", "x")
    api.create(make_node("b").manifest())
    api.delete("/api/v1/nodes/a")
    wait_for(lambda: len(informer.events) >= 4, 30, "four events")
    assert [(e.type, e.object.name) for e in informer.events] == [
        (EventType.ADDED, "a"),
        (EventType.MODIFIED, "a"),
        (EventType.ADDED, "b"),
        (EventType.DELETED, "a"),
    ]
    assert set(informer.store) == {"b"}


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({"type": "ERROR", "object": {"code": 410, "message": "too old"}}, GoneError),
        ({"type": "ERROR", "object": {"code": 500, "message": "boom"}}, BackendError),
    ],
    ids=["410-relists", "other-error-retries"],
)
def test_watch_errors_end_the_watch(informer, raw, error) -> None:
    with pytest.raises(error):
        informer._apply(raw)


def test_bookmark_moves_the_resource_version_only(informer) -> None:
    informer._apply({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}})
    assert informer.resource_version == "42"
    assert informer.events == [] and informer.store == {}


def test_replayed_event_is_not_applied_twice(api: Api, informer) -> None:
    created = api.create(make_node("a").manifest())
    raw = {"type": "ADDED", "object": created}
    informer._apply(dict(raw, object=dict(created)))
    informer._apply(dict(raw, object=dict(created)))  # a watch resumed from an older rv
    informer._apply({"type": "MODIFIED", "object": dict(created)})
    assert [e.type for e in informer.events] == [EventType.ADDED]
    informer._apply({"type": "DELETED", "object": dict(created)})
    informer._apply({"type": "DELETED", "object": dict(created)})
    assert [e.type for e in informer.events] == [EventType.ADDED, EventType.DELETED]


def test_pod_informer_drops_finished_pods(control_plane: ControlPlane, api: Api) -> None:
    """As upstream's scheduler: Succeeded/Failed pods are not watched (they hold no
    resources); a pod that finishes arrives as a deletion."""
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)
    events: list = []
    inf = Informer(client, RESOURCES["Pod"], events.append)
    try:
        api.create(pod_manifest("done"))
        api.create(pod_manifest("running"))
        _set_phase(api, "done", "Succeeded")
        inf.start()
        wait_for(inf.synced.is_set, 30, "list")
        assert set(inf.store) == {"default/running"}
        _set_phase(api, "running", "Failed")
        wait_for(lambda: not inf.store, 30, "the finished pod leaves")
        assert [(e.type, e.object.name) for e in events] == [
            (EventType.ADDED, "running"),
            (EventType.DELETED, "running"),
        ]
    finally:
        inf.stop()
        client.close()


def _set_phase(api: Api, name: str, phase: str) -> None:
    api.client.request(
        "PATCH",
        f"/api/v1/namespaces/default/pods/{name}/status",
        body={"status": {"phase": phase}},
        content_type="application/merge-patch+json",
    )
