"""The kube backend's parts that need no API server: rate limiter, errors, event series."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import pytest

from kubesched.api import PersistentVolumeClaim
from kubesched.backend.kube.client import (
    ForbiddenError,
    GoneError,
    NotLeaderError,
    TokenBucket,
    UnauthorizedError,
    UnreachableError,
    status_error,
)
from kubesched.backend.kube.cluster import RESOURCES, KubeCluster, merge_patch
from kubesched.backend.kube.events import (
    MAX_QUEUED_EVENTS,
    MAX_TRIES_PER_EVENT,
    EventBroadcaster,
)
from kubesched.backend.protocol import BackendError, ConflictError, NotFoundError, RecordedEvent


class _Clock:
    """The rate limiter's clock: ``sleep`` moves it on, so that the test measures what
    the bucket makes a caller wait, not how much CPU a loaded machine gives the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(
    ("qps", "burst", "requests", "waited"),
    [
        (10, 5, 5, 0.0),  # the burst goes at once
        (10, 5, 8, 0.3),  # then 10 a second: 3 more take 0.3 s
        (-1, 1, 50, 0.0),  # a negative qps turns the limiter off (client-go)
    ],
    ids=["burst", "then-qps", "disabled"],
)
def test_token_bucket(monkeypatch, qps, burst, requests, waited) -> None:
    clock = _Clock()
    monkeypatch.setattr("kubesched.backend.kube.client.time", clock)
    bucket = TokenBucket(qps, burst)
    started = clock.now
    for _ in range(requests):
        bucket.take()
    assert clock.now - started == pytest.approx(waited)


@pytest.mark.parametrize(
    ("code", "body", "cls", "message"),
    [
        (
            404,
            b'{"kind":"Status","message":"pods \\"p\\" not found"}',
            NotFoundError,
            'pods "p" not found',
        ),
        (
            409,
            b'{"message":"pod p is already assigned to node \\"n\\""}',
            ConflictError,
            'pod p is already assigned to node "n"',
        ),
        (403, b'{"message":"forbidden"}', ForbiddenError, "forbidden"),
        (410, b'{"message":"too old resource version"}', GoneError, "too old resource version"),
        (500, b"not json", BackendError, "not json"),
        (503, b"", BackendError, "HTTP 503"),
        (401, b'{"message": "Unauthorized"}', UnauthorizedError, "Unauthorized"),
    ],
    ids=["404", "409", "403", "410", "500-text", "503-empty", "401"],
)
def test_status_error(code, body, cls, message) -> None:
    err = status_error(code, body)
    assert type(err) is cls
    assert (err.code, str(err)) == (code, message)


class FakeApi:
    """Records the requests of the event writer."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict]] = []
        self.gate = threading.Event()
        self.gate.set()

    def request(self, method, path, *, body=None, **_kw):
        self.gate.wait()
        self.requests.append((method, path, body))
        return body


def _event(name: str = "p", reason: str = "FailedScheduling", message: str = "m") -> RecordedEvent:
    return RecordedEvent("Pod", "default", name, "Warning", reason, message, action="Scheduling")


def test_series_create_then_count_then_refresh() -> None:
    api = FakeApi()
    events = EventBroadcaster(api, refresh=0.3, finish=60)
    try:
        for i in range(10):
            events.record(_event(message=f"attempt {i}"))  # the note may differ
        events.record(_event(name="q"))
        events.flush()
        methods = [(m, b.get("series", {}).get("count")) for m, _p, b in api.requests]
        assert methods == [("POST", None), ("PATCH", 2), ("POST", None)]
        created = api.requests[0][2]
        assert created["reason"] == "FailedScheduling" and created["note"] == "attempt 0"
        assert created["regarding"] == {
            "kind": "Pod",
            "namespace": "default",
            "name": "p",
            "apiVersion": "v1",
        }
        time.sleep(1.5)  # the refresh writes the running series' count back once
        patches = [b for m, _p, b in api.requests if m == "PATCH"]
        assert [p["series"]["count"] for p in patches] == [2, 10]
    finally:
        events.close()


def test_a_full_queue_drops_instead_of_blocking() -> None:
    api = FakeApi()
    api.gate.clear()  # the API server hangs
    events = EventBroadcaster(api)
    try:
        # The API server never answers: a record that blocked would block for good.
        recorder = threading.Thread(
            target=lambda: [
                events.record(_event(name=f"p{i}")) for i in range(MAX_QUEUED_EVENTS + 50)
            ]
        )
        recorder.start()
        recorder.join(30)
        assert not recorder.is_alive(), "record() blocked on a full queue"
        assert events.dropped >= 49
    finally:
        api.gate.set()
        events.close(timeout=1)


class FlakyApi(FakeApi):
    """Fails the first requests with the errors given, in order, then succeeds."""

    def __init__(self, *errors: BackendError) -> None:
        super().__init__()
        self.errors = list(errors)

    def request(self, method, path, *, body=None, **kw):
        self.requests.append((method, path, body))
        if self.errors:
            raise self.errors.pop(0)
        return body


def _settle(events: EventBroadcaster, api: FakeApi, count: int, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while len(api.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    events.flush()
    time.sleep(0.1)


@pytest.mark.parametrize(
    ("errors", "requests", "written", "given_up"),
    [
        ([UnreachableError("refused")] * 3, ["POST"] * 4, 1, 0),
        ([UnreachableError("refused")] * MAX_TRIES_PER_EVENT, ["POST"] * MAX_TRIES_PER_EVENT, 0, 1),
        ([BackendError("bad note", 422)], ["POST"], 0, 0),
        ([ForbiddenError("no")], ["POST"], 0, 0),
        ([NotLeaderError("not sent")], ["POST"], 0, 0),
    ],
    ids=["transport-retried", "gives-up-after-12", "refused-422", "forbidden", "not-leader"],
)
def test_a_write_is_retried_only_on_transport_errors(errors, requests, written, given_up) -> None:
    api = FlakyApi(*errors)
    events = EventBroadcaster(api, retry_sleep=0.01)
    try:
        events.record(_event())
        _settle(events, api, len(requests))
        assert [m for m, _p, _b in api.requests] == requests
        assert (events.written, events.given_up, events.pending_retries()) == (written, given_up, 0)
    finally:
        events.close()


@pytest.mark.parametrize(
    ("errors", "requests"),
    [
        ([NotFoundError("gone")], ["POST", "PATCH", "POST"]),
        ([NotFoundError("gone"), ConflictError("exists")], ["POST", "PATCH", "POST", "PATCH"]),
        ([UnreachableError("down")], ["POST", "PATCH", "PATCH"]),
    ],
    ids=["deleted-event-created-again", "already-exists-retried", "transport-retried"],
)
def test_a_series_write_recovers_as_client_go(errors, requests) -> None:
    api = FlakyApi()
    events = EventBroadcaster(api, retry_sleep=0.01)
    try:
        events.record(_event())
        _settle(events, api, 1)
        api.errors = list(errors)
        events.record(_event())
        _settle(events, api, len(requests))
        assert [m for m, _p, _b in api.requests] == requests
        assert api.requests[-1][2]["series"]["count"] == 2
    finally:
        events.close()


def test_times_are_the_wall_clock() -> None:
    api = FakeApi()
    events = EventBroadcaster(api)
    try:
        before = time.time()
        events.record(_event())
        events.record(_event())
        events.flush()
        after = time.time()
        created, patched = api.requests[0][2], api.requests[1][2]
        for stamp in (created["eventTime"], patched["series"]["lastObservedTime"]):
            assert stamp.endswith("Z") and len(stamp) == len("2026-01-01T00:00:00.000000Z")
            seconds = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            assert before - 1e-6 <= seconds <= after + 1e-6
    finally:
        events.close()


def test_the_cache_forgets_the_least_recently_seen_beyond_its_size() -> None:
    api = FakeApi()
    events = EventBroadcaster(api, cache_size=3)
    try:
        for name in ("a", "b", "c", "a", "d"):  # "a" seen again: "b" is the oldest
            events.record(_event(name=name))
        events.flush()
        assert events.cached == 3
        events.record(_event(name="b"))  # forgotten: a new event, not a series
        events.record(_event(name="a"))  # remembered: its series goes on (count 3)
        events.flush()
        posts = [b["regarding"]["name"] for m, _p, b in api.requests if m == "POST"]
        assert posts == ["a", "b", "c", "d", "b"]
    finally:
        events.close()


def test_finished_series_are_written_and_forgotten() -> None:
    api = FakeApi()
    events = EventBroadcaster(api, finish=0.3)
    try:
        for _ in range(5):
            events.record(_event())
        events.record(_event(name="single"))
        events.flush()
        deadline = time.monotonic() + 5
        while events.cached and time.monotonic() < deadline:
            time.sleep(0.05)
        assert events.cached == 0
        patches = [b["series"]["count"] for m, _p, b in api.requests if m == "PATCH"]
        assert patches == [2, 5]  # the last count is written when the series ends
    finally:
        events.close()


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        ({"a": 1}, {"a": 1}, {}),
        ({"a": 1}, {"a": 2}, {"a": 2}),
        ({"a": 1}, {}, {"a": None}),
        ({}, {"m": {"k": "v"}}, {"m": {"k": "v"}}),
        ({"m": {"k": "v", "x": "y"}}, {"m": {"k": "w", "x": "y"}}, {"m": {"k": "w"}}),
        ({"m": {"k": "v"}}, {"m": {}}, {"m": {"k": None}}),
        ({"l": [1, 2]}, {"l": [1]}, {"l": [1]}),
        ({"s": {"a": 1}}, {"s": 3}, {"s": 3}),
    ],
    ids=[
        "equal",
        "changed",
        "removed",
        "added-map",
        "nested",
        "nested-removed",
        "list-whole",
        "type",
    ],
)
def test_merge_patch(old: dict, new: dict, patch: dict) -> None:
    assert merge_patch(old, new) == patch


@pytest.mark.parametrize(
    ("kind", "group", "plural", "path"),
    [
        (
            "PersistentVolumeClaim",
            "",
            "persistentvolumeclaims",
            "/api/v1/namespaces/ns/persistentvolumeclaims/x/status",
        ),
        ("PersistentVolume", "", "persistentvolumes", "/api/v1/persistentvolumes/x/status"),
        (
            "StorageClass",
            "storage.k8s.io",
            "storageclasses",
            "/apis/storage.k8s.io/v1/storageclasses/x/status",
        ),
        (
            "ResourceClaim",
            "resource.k8s.io",
            "resourceclaims",
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/x/status",
        ),
    ],
    ids=["namespaced-core", "cluster-core", "cluster-group", "namespaced-group"],
)
def test_resource_paths(kind: str, group: str, plural: str, path: str) -> None:
    resource = RESOURCES[kind]
    assert (resource.group, resource.plural) == (group, plural)
    assert resource.object_path("ns", "x", "status") == path


@pytest.mark.parametrize(
    ("kinds", "writes", "wanted", "unwanted"),
    [
        ((), (), [("list", "", "nodes", "", "")], [("list", "", "persistentvolumes", "", "")]),
        (
            ("PersistentVolume",),
            ("PersistentVolume",),
            [
                ("watch", "", "persistentvolumes", "", ""),
                ("get", "", "persistentvolumes", "", ""),
                ("patch", "", "persistentvolumes", "", ""),
            ],
            [("list", "resource.k8s.io", "resourceclaims", "", "")],
        ),
        (
            ("ResourceClaim",),
            ("ResourceClaim", "ResourceClaim/status"),
            [
                ("list", "resource.k8s.io", "resourceclaims", "", ""),
                ("get", "resource.k8s.io", "resourceclaims", "", ""),
                ("patch", "resource.k8s.io", "resourceclaims", "", ""),
                ("patch", "resource.k8s.io", "resourceclaims", "status", ""),
            ],
            [("get", "resource.k8s.io", "resourceclaims", "status", "")],
        ),
        (
            ("ResourceClaim",),
            ("ResourceClaim/create",),
            [("create", "resource.k8s.io", "resourceclaims", "", "")],
            [
                ("patch", "resource.k8s.io", "resourceclaims", "create", ""),
                ("get", "resource.k8s.io", "resourceclaims", "", ""),
            ],
        ),
    ],
    ids=["base-only", "volumes", "claims-and-status", "claims-created"],
)
def test_required_access_follows_the_kinds_and_writes(kinds, writes, wanted, unwanted) -> None:
    cluster = KubeCluster(object(), kinds=kinds)  # type: ignore[arg-type]
    cluster.events.close()  # no API server: only the permissions are looked at
    cluster.writes.update(writes)
    access = cluster.required_access()
    assert all(a in access for a in wanted)
    assert not any(a in access for a in unwanted)
    assert len(access) == len(set(access))


def test_kinds_it_cannot_watch_are_reported() -> None:
    cluster = KubeCluster(object())  # type: ignore[arg-type]
    cluster.events.close()
    assert cluster.watch_kinds(["NoSuchKind", "StorageClass"]) == ["NoSuchKind"]
    assert "StorageClass" in cluster.watchable_kinds
    assert "NoSuchKind" not in cluster.watchable_kinds


def test_an_extension_kind_is_watched_from_its_crd_collection() -> None:
    """Coscheduling's PodGroup (an entry-point kind): its CRD's collection, and the
    list/watch permissions on it."""
    cluster = KubeCluster(object())  # type: ignore[arg-type]
    cluster.events.close()
    assert cluster.watch_kinds(["PodGroup"]) == []
    assert cluster.informers["PodGroup"].resource.path == (
        "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    )
    access = cluster.required_access()
    assert ("list", "scheduling.x-k8s.io", "podgroups", "", "") in access
    assert ("watch", "scheduling.x-k8s.io", "podgroups", "", "") in access
    # Only the Workload API's PodGroups get their PodGroupScheduled condition written.
    assert not any(a[2:4] == ("podgroups", "status") for a in access)


def test_the_workload_apis_podgroups_are_watched_and_their_status_patched() -> None:
    cluster = KubeCluster(object())  # type: ignore[arg-type]
    cluster.events.close()
    assert cluster.watch_kinds(["scheduling.k8s.io/v1alpha2/PodGroup"]) == []
    access = cluster.required_access()
    assert ("watch", "scheduling.k8s.io", "podgroups", "", "") in access
    assert ("patch", "scheduling.k8s.io", "podgroups", "status", "") in access


@pytest.mark.parametrize(
    ("mine", "other", "newer"),
    [
        ("12", "9", True),
        ("9", "12", False),
        ("5", "5", False),
        ("5", None, True),
        ("x", "1", False),
    ],
    ids=["numerically-newer", "older", "same", "other-unset", "not-a-number"],
)
def test_newer_than_compares_resource_versions_as_numbers(mine, other, newer) -> None:
    def claim(rv):
        return PersistentVolumeClaim.model_validate(
            {"metadata": {"name": "c", "resourceVersion": rv}}
        )

    assert claim(mine).newer_than(claim(other)) is newer
