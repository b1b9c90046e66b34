"""MemoryCluster as an API store: CRUD, resourceVersions, watches, binding, deletion, leases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubesched.api import Lease, Pod, parse_object
from kubesched.backend import (
    BackendError,
    ConflictError,
    EventType,
    NotFoundError,
    PodCondition,
    RecordedEvent,
    WatchEvent,
)
from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.framework.listers import StaticLister

from .helpers import obj, pod, template

# --- CRUD and metadata ----------------------------------------------------------------------


def test_create_stamps_rv_uid_and_creation_timestamp(cluster: MemoryCluster, clock: FakeClock):
    clock.set(90)
    node = cluster.create(obj("Node", "n1"))
    p = cluster.create(pod("p"))
    assert node.metadata.resource_version == "1"
    # The pod's namespace "default" was created on the way (rv 2), the pod is rv 3.
    assert cluster.get_namespace("default") is not None
    assert p.metadata.resource_version == "3"
    assert cluster.resource_version == "3"
    assert node.metadata.uid and p.metadata.uid and node.metadata.uid != p.metadata.uid
    assert p.metadata.creation_timestamp == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)


def test_same_inputs_give_same_uids_and_names():
    def build() -> list[tuple[str, str]]:
        c = MemoryCluster(FakeClock())
        c.create(obj("Node", "n1"))
        c.create(
            obj(
                "Pod",
                "",
                metadata={"generateName": "web-"},
                spec={"containers": [{"name": "c", "image": "busybox"}]},
            )
        )
        return [(o.name, o.metadata.uid or "") for k in ("Node", "Pod") for o in c.objects(k)]

    assert build() == build()


def test_create_keeps_given_uid_and_refuses_duplicates(cluster: MemoryCluster):
    cluster.create(obj("Node", "n1", metadata={"uid": "given"}))
    assert cluster.get("Node", None, "n1").metadata.uid == "given"
    with pytest.raises(ConflictError, match='nodes "n1" already exists'):
        cluster.create(obj("Node", "n1"))


def test_create_copies_its_input(cluster: MemoryCluster):
    n = obj("Node", "n1", metadata={"labels": {"a": "1"}})
    cluster.create(n)
    n.metadata.labels["a"] = "2"
    assert cluster.get("Node", None, "n1").metadata.labels["a"] == "1"


@pytest.mark.parametrize("kind", ["Node", "Pod"], ids=["node", "pod-through-admission"])
def test_create_owned_stores_the_object_itself(cluster: MemoryCluster, kind: str):
    given = obj("Node", "n1") if kind == "Node" else pod("p")
    stored = cluster.create(given, owned=True)
    assert stored is given  # handed over: no copy
    assert cluster.get(kind, stored.namespace, stored.name) is given
    assert given.metadata.uid and given.metadata.resource_version  # stamped in place
    if kind == "Pod":
        assert given.spec.scheduler_name == "default-scheduler"  # admitted in place
        assert given.spec.tolerations  # the default not-ready/unreachable tolerations


def test_new_pending_pods_share_their_status_without_leaks(cluster: MemoryCluster):
    # PrepareForCreate: a new pod's status is Pending and nothing else, one shared
    # instance; a status write or a bind of one pod leaves the others' as they were.
    cluster.create(obj("Node", "n1"))
    given = pod("a")
    given.status.message = "from the manifest"
    given.status.nominated_node_name = "n1"
    a, b, c = cluster.create(given), cluster.create(pod("b")), cluster.create(pod("c"))
    assert a.status is b.status is c.status
    assert a.status.model_dump(exclude_none=True) == {
        "phase": "Pending", "conditions": [], "resource_claim_statuses": [],
        "container_statuses": [], "init_container_statuses": [],
    }  # fmt: skip
    cluster.update_pod_status(a, condition=PodCondition("PodScheduled", "False", "Unschedulable"))
    cluster.bind(b, "n1")
    a, b, c = (cluster.get("Pod", "default", n) for n in "abc")
    assert [x.type for x in a.status.conditions] == ["PodScheduled"]
    assert b.status.phase == "Running"
    assert c.status.phase == "Pending" and c.status.conditions == []


def test_pods_bound_at_one_moment_share_their_status_without_leaks(
    cluster: MemoryCluster, clock: FakeClock
):
    # A pod bound straight from Pending gets the running status of that moment, one
    # instance per moment; a pod with a status of its own gets its own copy.
    cluster.create(obj("Node", "n1"))
    a, b, c, d = (cluster.create(pod(n)) for n in "abcd")
    cluster.update_pod_status(c, condition=PodCondition("PodScheduled", "False", "Unschedulable"))
    for p in (a, b, c):
        cluster.bind(p, "n1")
    clock.step(5)
    cluster.bind(d, "n1")
    a, b, c, d = (cluster.get("Pod", "default", n) for n in "abcd")
    assert a.status is b.status
    assert c.status is not a.status and d.status is not a.status
    for p in (a, c, d):
        assert p.status.phase == "Running"
        assert [(x.type, x.status) for x in p.status.conditions] == [
            ("PodScheduled", "True"), ("Ready", "True")
        ]  # fmt: skip
    assert a.status.start_time != d.status.start_time
    assert c.status.model_dump() == a.status.model_dump()
    # A status write on one leaves the other as it was.
    cluster.update_pod_status(a, condition=PodCondition("DisruptionTarget", "True", "Test"))
    assert [x.type for x in cluster.get("Pod", "default", "b").status.conditions] == [
        "PodScheduled", "Ready"
    ]  # fmt: skip
    assert cluster.get("Pod", "default", "a").status.conditions[-1].type == "DisruptionTarget"


def test_apply_owned_equals_apply_with_copies(clock: FakeClock):
    def objects():
        return [obj("Node", "n1"), pod("a"), pod("b", priorityClassName="missing")]

    copied, owned = MemoryCluster(clock), MemoryCluster(clock)
    rejected = copied.apply(objects())
    assert [str(r) for r in owned.apply(objects(), owned=True)] == [str(r) for r in rejected]
    for kind in ("Node", "Pod"):
        assert [o.model_dump() for o in owned.objects(kind)] == [
            o.model_dump() for o in copied.objects(kind)
        ]


@pytest.mark.parametrize(
    ("stale", "error"),
    [(False, None), (True, ConflictError)],
    ids=["current-rv", "stale-rv-conflicts"],
)
def test_update_checks_resource_version(cluster: MemoryCluster, stale: bool, error):
    created = cluster.create(obj("Node", "n1"))
    new = created.model_copy(deep=True)
    new.metadata.labels = {"x": "y"}
    if stale:
        new.metadata.resource_version = "999"
    if error is None:
        updated = cluster.update(new)
        assert updated.metadata.resource_version == "2"
        assert updated.metadata.uid == created.metadata.uid
    else:
        with pytest.raises(error, match="the object has been modified"):
            cluster.update(new)


def test_update_bumps_generation_on_spec_change_only(cluster: MemoryCluster):
    pdb = cluster.create(obj("PodDisruptionBudget", "b", spec={"minAvailable": 1}))
    assert pdb.metadata.generation == 1
    same = cluster.update(
        pdb.model_copy(
            update={
                "metadata": pdb.metadata.model_copy(
                    update={"labels": {"a": "b"}, "resource_version": None}
                )
            }
        )
    )
    assert same.metadata.generation == 1
    changed = same.model_copy(deep=True)
    changed.spec.min_available = 2
    assert cluster.update(changed).metadata.generation == 2


def test_get_missing_and_delete(cluster: MemoryCluster):
    with pytest.raises(NotFoundError, match='nodes "nope" not found'):
        cluster.get("Node", None, "nope")
    assert cluster.try_get("Node", None, "nope") is None
    cluster.create(obj("Node", "n1"))
    cluster.delete("Node", None, "n1")
    assert cluster.try_get("Node", None, "n1") is None
    with pytest.raises(NotFoundError):
        cluster.delete("Node", None, "n1")


@pytest.mark.parametrize(
    "change",
    ["create", "update", "delete", "other-kind"],
    ids=["create", "update", "delete", "another-kind-leaves-it"],
)
def test_kind_generation_changes_with_its_kind_only(cluster: MemoryCluster, change: str):
    cluster.create(obj("Service", "s", "default"))
    before = cluster.kind_generation("Service")
    assert before > 0 and cluster.kind_generation("Namespace") > 0
    assert cluster.kind_generation("Node") == 0
    if change == "create":
        cluster.create(obj("Service", "t", "default"))
    elif change == "update":
        svc = cluster.get("Service", "default", "s")
        cluster.update(
            svc.model_copy(update={"spec": svc.spec.model_copy(update={"selector": {"a": "b"}})})
        )
    elif change == "delete":
        cluster.delete("Service", "default", "s")
    else:
        cluster.create(obj("Node", "n"))
    assert (cluster.kind_generation("Service") != before) == (change != "other-kind")


@pytest.mark.parametrize("change", ["add", "replace", "remove"])
def test_static_lister_kind_generation(change: str):
    svc = obj("Service", "s", "default")
    lister = StaticLister([svc])
    before = lister.kind_generation("Service")
    assert before == 1 and lister.kind_generation("Node") == 0
    if change == "add":
        lister.add(obj("Service", "t", "default"))
    elif change == "replace":
        lister.add(obj("Service", "s", "default"))
    else:
        lister.remove(svc)
    assert lister.kind_generation("Service") == before + 1
    assert lister.kind_generation("Node") == 0


def test_list_is_sorted_and_returns_the_rv(cluster: MemoryCluster):
    for name in ("c", "a", "b"):
        cluster.create(obj("Node", name))
    nodes, rv = cluster.list("Node")
    assert [n.name for n in nodes] == ["a", "b", "c"]
    assert rv == "3"


def test_unknown_kind_is_refused(cluster: MemoryCluster):
    with pytest.raises(BackendError, match="unsupported kind"):
        cluster.list("Widget")


def test_object_lister(cluster: MemoryCluster):
    cluster.create(obj("Namespace", "prod", metadata={"labels": {"team": "a"}}))
    cluster.create(obj("Service", "s1", "prod", spec={"selector": {"app": "x"}}))
    cluster.create(obj("Service", "s2", "other"))
    cluster.create(
        obj(
            "StatefulSet",
            "db",
            "prod",
            spec={
                "replicas": 0,
                "selector": {"matchLabels": {"app": "db"}},
                "template": template({"app": "db"}),
            },
        )
    )
    assert cluster.get_namespace("prod").metadata.labels == {
        "team": "a",
        "kubernetes.io/metadata.name": "prod",
    }
    assert [s.name for s in cluster.list_services("prod")] == ["s1"]
    assert [s.name for s in cluster.list_stateful_sets("prod")] == ["db"]
    assert cluster.list_replica_sets("prod") == []
    assert cluster.list_replication_controllers("prod") == []


@pytest.mark.parametrize("first_query", ["before", "after"], ids=["indexed-early", "indexed-late"])
def test_pods_with_label_follows_every_change(cluster: MemoryCluster, first_query: str):
    """The label index answers as a walk over every pod would, whether it was built
    before the changes (and kept current) or after them."""

    def walk(namespace: str, value: str) -> list[str]:
        return [
            p.name
            for p in cluster.pods(namespace)
            if (p.metadata.labels or {}).get("group") == value
        ]

    def indexed(namespace: str, value: str) -> list[str]:
        return [p.name for p in cluster.list_pods_with_label(namespace, "group", value)]

    if first_query == "before":
        assert indexed("default", "a") == []
    cluster.create(pod("b1", labels={"group": "a"}))
    cluster.create(pod("a1", labels={"group": "a"}))
    cluster.create(pod("c1", labels={"group": "b"}))
    cluster.create(pod("n1", "other", labels={"group": "a"}))  # another namespace
    cluster.create(pod("free"))  # no label
    moved = cluster.try_get("Pod", "default", "c1")
    cluster.update(
        moved.model_copy(
            update={"metadata": moved.metadata.model_copy(update={"labels": {"group": "a"}})}
        )
    )
    relabelled = cluster.try_get("Pod", "default", "b1")
    cluster.update(
        relabelled.model_copy(
            update={"metadata": relabelled.metadata.model_copy(update={"labels": {"other": "x"}})}
        )
    )
    cluster.delete_pod(cluster.try_get("Pod", "default", "a1"))  # unbound: removed at once
    for namespace, value in [("default", "a"), ("default", "b"), ("other", "a"), ("none", "a")]:
        assert indexed(namespace, value) == walk(namespace, value)
    assert indexed("default", "a") == ["c1"]
    assert indexed("other", "a") == ["n1"]


# --- watches --------------------------------------------------------------------------------


def _recorder(log: list[tuple[str, str, str]], tag: str):
    def handler(ev: WatchEvent) -> None:
        log.append((tag, ev.type.value, f"{ev.object.name}@{ev.object.metadata.resource_version}"))

    return handler


def test_watch_is_synchronous_and_ordered(cluster: MemoryCluster):
    log: list[tuple[str, str, str]] = []
    _, rv = cluster.list("Node")
    cluster.watch("Node", rv, _recorder(log, "a"))
    cluster.watch("Node", rv, _recorder(log, "b"))
    n = cluster.create(obj("Node", "n1"))
    assert log == [("a", "ADDED", "n1@1"), ("b", "ADDED", "n1@1")]
    n2 = n.model_copy(deep=True)
    n2.metadata.labels = {"x": "1"}
    cluster.update(n2)
    cluster.delete("Node", None, "n1")
    assert [e[1] for e in log] == ["ADDED", "ADDED", "MODIFIED", "MODIFIED", "DELETED", "DELETED"]
    assert log[-1] == ("b", "DELETED", "n1@3")


def test_modified_event_carries_the_old_object(cluster: MemoryCluster):
    events: list[WatchEvent] = []
    cluster.create(obj("Node", "n1"))
    cluster.watch("Node", cluster.resource_version, events.append)
    n = cluster.get("Node", None, "n1").model_copy(deep=True)
    n.metadata.labels = {"x": "1"}
    cluster.update(n)
    assert events[0].old is not None and "x" not in events[0].old.metadata.labels


def test_writes_from_a_handler_reach_every_handler_in_rv_order(cluster: MemoryCluster):
    log: list[tuple[str, str, str]] = []

    def writer(ev: WatchEvent) -> None:
        log.append(("a", ev.type.value, ev.object.name))
        if ev.object.name == "n1":
            cluster.create(obj("Node", "n2"))  # nested write

    cluster.watch("Node", cluster.resource_version, writer)
    cluster.watch("Node", cluster.resource_version, _recorder(log, "b"))
    cluster.create(obj("Node", "n1"))
    # b sees n1 before n2 although a created n2 while handling n1.
    assert log == [
        ("a", "ADDED", "n1"),
        ("b", "ADDED", "n1@1"),
        ("a", "ADDED", "n2"),
        ("b", "ADDED", "n2@2"),
    ]


@pytest.mark.parametrize(
    ("from_rv", "expected"),
    [
        ("1", ["n2", "n3"]),
        ("2", ["n3"]),
        ("3", []),
        ("", ["n1", "n2", "n3"]),
    ],
    ids=["replay-after-1", "replay-after-2", "current-rv", "empty-rv-synthetic-added"],
)
def test_watch_from_an_older_rv_replays(cluster: MemoryCluster, from_rv: str, expected: list[str]):
    for name in ("n1", "n2", "n3"):
        cluster.create(obj("Node", name))
    seen: list[str] = []
    cluster.watch("Node", from_rv, lambda ev: seen.append(ev.object.name))
    assert seen == expected
    cluster.create(obj("Node", "n4"))
    assert seen == [*expected, "n4"]


def test_watch_from_a_compacted_rv_is_gone():
    cluster = MemoryCluster(FakeClock(), event_log_size=2)
    for name in ("n1", "n2", "n3", "n4"):
        cluster.create(obj("Node", name))
    with pytest.raises(BackendError, match="too old resource version") as err:
        cluster.watch("Node", "1", lambda ev: None)
    assert err.value.code == 410
    seen: list[str] = []
    cluster.watch("Node", "2", lambda ev: seen.append(ev.object.name))
    assert seen == ["n3", "n4"]


def test_watch_only_sees_its_kind_and_stops(cluster: MemoryCluster):
    seen: list[str] = []
    w = cluster.watch("Node", cluster.resource_version, lambda ev: seen.append(ev.object.name))
    cluster.create(obj("Service", "s"))
    cluster.create(obj("Node", "n1"))
    w.stop()
    w.stop()
    cluster.create(obj("Node", "n2"))
    assert seen == ["n1"]


# --- bind and status ------------------------------------------------------------------------


def test_bind_starts_the_pod(cluster: MemoryCluster, clock: FakeClock):
    p = cluster.create(pod("p"))
    assert p.status.phase == "Pending"
    clock.set(5)
    cluster.bind(p, "n1")
    bound: Pod = cluster.get("Pod", "default", "p")
    assert bound.spec.node_name == "n1"
    assert bound.status.phase == "Running"
    assert bound.status.start_time == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert {(c.type, c.status) for c in bound.status.conditions} == {
        ("PodScheduled", "True"),
        ("Ready", "True"),
    }


@pytest.mark.parametrize(
    ("setup", "error", "message"),
    [
        ("bound", ConflictError, 'pod p is already assigned to node "n1"'),
        ("gone", NotFoundError, 'pods "p" not found'),
        ("recreated", NotFoundError, 'pods "p" not found'),
        ("terminating", ConflictError, "pod p is being deleted, cannot be assigned to a host"),
    ],
    ids=["already-bound", "deleted", "other-uid", "terminating"],
)
def test_bind_conflicts(cluster: MemoryCluster, setup: str, error, message: str):
    p = cluster.create(pod("p"))
    if setup == "bound":
        cluster.bind(p, "n1")
    elif setup == "gone":
        cluster.delete("Pod", "default", "p")
    elif setup == "recreated":
        cluster.delete("Pod", "default", "p")
        cluster.create(pod("p"))
    elif setup == "terminating":
        cluster.bind(p, "n1")
        cluster.delete_pod(cluster.get("Pod", "default", "p"))
        p = cluster.get("Pod", "default", "p")
        new = p.model_copy(deep=True)
        new.spec.node_name = None
        cluster._write(new, p)  # a terminating, unbound pod (only reachable by hand)
    with pytest.raises(error, match=message):
        cluster.bind(p, "n2")


def test_update_pod_status_condition_and_nomination(cluster: MemoryCluster):
    p = cluster.create(pod("p"))
    cond = PodCondition("PodScheduled", "False", "Unschedulable", "0/1 nodes are available")
    cluster.update_pod_status(p, condition=cond, nominated_node_name="n1")
    cur: Pod = cluster.get("Pod", "default", "p")
    assert cur.status.nominated_node_name == "n1"
    (c,) = cur.status.conditions
    assert (c.type, c.status, c.reason) == ("PodScheduled", "False", "Unschedulable")
    rv = cur.metadata.resource_version
    cluster.update_pod_status(cur, condition=cond)  # nothing changes: no write
    assert cluster.get("Pod", "default", "p").metadata.resource_version == rv
    cluster.update_pod_status(cur, clear_nominated_node_name=True)
    assert cluster.get("Pod", "default", "p").status.nominated_node_name is None


# --- graceful deletion in virtual time ------------------------------------------------------


@pytest.mark.parametrize(
    ("grace_spec", "grace_arg", "bound", "removed_at"),
    [
        (None, None, True, 30.0),
        (10, None, True, 10.0),
        (10, 3, True, 3.0),
        (10, 0, True, None),
        (10, None, False, None),
    ],
    ids=["default-30s", "spec-grace", "explicit-grace", "grace-0-at-once", "unbound-at-once"],
)
def test_delete_pod_grace_period(
    cluster: MemoryCluster,
    clock: FakeClock,
    grace_spec: int | None,
    grace_arg: int | None,
    bound: bool,
    removed_at: float | None,
):
    spec = {} if grace_spec is None else {"terminationGracePeriodSeconds": grace_spec}
    p = cluster.create(pod("p", **spec))
    if bound:
        # An existing node: pod GC would delete a pod bound to a missing one. Its first
        # node-lifecycle pass is due at once.
        cluster.create(obj("Node", "n1"))
        cluster.advance()
        cluster.bind(p, "n1")
    clock.set(100)
    cluster.delete_pod(p, grace_arg)
    cur = cluster.try_get("Pod", "default", "p")
    if removed_at is None:
        assert cur is None
        assert cluster.next_event_time() is None
        return
    assert cur is not None and cur.metadata.deletion_timestamp is not None
    assert cur.metadata.deletion_grace_period_seconds == int(removed_at)
    assert cluster.next_event_time() == 100 + removed_at
    assert cluster.advance(100 + removed_at - 0.5) == 0
    assert cluster.try_get("Pod", "default", "p") is not None
    clock.set(100 + removed_at)
    assert cluster.advance() == 1
    assert cluster.try_get("Pod", "default", "p") is None
    assert cluster.next_event_time() is None


def test_second_delete_only_shortens(cluster: MemoryCluster):
    cluster.create(obj("Node", "n1"))
    cluster.advance()
    p = cluster.create(pod("p"))
    cluster.bind(p, "n1")
    cluster.delete_pod(p, 20)
    cluster.delete_pod(p, 50)
    assert cluster.next_event_time() == 20
    cluster.delete_pod(p, 5)
    assert cluster.next_event_time() == 5
    cluster.advance(5)
    assert cluster.try_get("Pod", "default", "p") is None
    assert cluster.next_event_time() is None


def test_deletion_events(cluster: MemoryCluster, clock: FakeClock):
    p = cluster.create(pod("p"))
    cluster.bind(p, "n1")
    seen: list[str] = []
    cluster.watch("Pod", cluster.resource_version, lambda ev: seen.append(ev.type.value))
    cluster.delete_pod(p, 1)
    clock.step(1)
    cluster.advance()
    assert seen == ["MODIFIED", "DELETED"]


# --- apply ----------------------------------------------------------------------------------


def test_apply_orders_kinds_and_reports_rejections(cluster: MemoryCluster):
    kinds: list[str] = []
    for kind in ("Namespace", "PriorityClass", "Node", "Pod"):
        cluster.watch(kind, "0", lambda ev: kinds.append(f"{ev.object.kind}/{ev.object.name}"))
    rejected = cluster.apply(
        [
            pod("bad", "prod", priorityClassName="nope"),
            pod("good", "prod", priorityClassName="high"),
            obj("Node", "n1"),
            obj("PriorityClass", "high", value=1000),
        ]
    )
    assert [str(r) for r in rejected] == [
        'Pod prod/bad: pods "bad" is forbidden: no PriorityClass with name nope was found'
    ]
    # Namespace prod was created for the pods; classes and nodes before pods.
    assert kinds == ["PriorityClass/high", "Node/n1", "Namespace/prod", "Pod/good"]
    assert cluster.get("Pod", "prod", "good").spec.priority == 1000


def test_apply_replaces_existing_objects_but_not_pods(cluster: MemoryCluster):
    cluster.apply([obj("Node", "n1"), pod("p")])
    rejected = cluster.apply([obj("Node", "n1", metadata={"labels": {"a": "b"}}), pod("p")])
    assert cluster.get("Node", None, "n1").metadata.labels["a"] == "b"
    assert [r.message for r in rejected] == ['pods "p" already exists']


# --- events and leases ----------------------------------------------------------------------


def test_record_event_timestamps_with_the_clock(cluster: MemoryCluster, clock: FakeClock):
    clock.set(7)
    cluster.record_event(RecordedEvent("Pod", "default", "p", "Normal", "Scheduled", "ok"))
    assert cluster.events[0].timestamp == 7


def test_leases_with_resource_version_conflicts(cluster: MemoryCluster):
    assert cluster.get_lease("kube-system", "kube-scheduler") is None
    lease = Lease.model_validate(
        {
            "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
            "spec": {"holderIdentity": "a"},
        }
    )
    created = cluster.create_lease(lease)
    with pytest.raises(ConflictError):
        cluster.create_lease(lease)
    mine = created.model_copy(deep=True)
    mine.spec.holder_identity = "b"
    updated = cluster.update_lease(mine)
    assert updated.spec.holder_identity == "b"
    with pytest.raises(ConflictError):
        cluster.update_lease(mine)  # the rv it carries is stale now
    fetched = cluster.get_lease("kube-system", "kube-scheduler")
    assert fetched is not None and fetched.spec.holder_identity == "b"


def test_event_type_values():
    assert [e.value for e in EventType] == ["ADDED", "MODIFIED", "DELETED"]


WORKLOAD_PODGROUP = "scheduling.k8s.io/v1alpha2/PodGroup"
COSCHEDULING_PODGROUP = "scheduling.x-k8s.io/v1alpha1/PodGroup"


def _pod_groups() -> list:
    """One PodGroup of each group, both ``default/g``."""
    return [
        parse_object(doc)
        for doc in (
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            },
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"minMember": 3},
            },
        )
    ]


@pytest.mark.parametrize(
    ("kind", "group"),
    [
        (WORKLOAD_PODGROUP, "scheduling.k8s.io"),
        (COSCHEDULING_PODGROUP, "scheduling.x-k8s.io"),
    ],
    ids=["workload-api", "coscheduling"],
)
def test_two_groups_pod_groups_of_one_name_are_two_objects(cluster: MemoryCluster, kind, group):
    for pod_group in _pod_groups():
        cluster.create(pod_group)
    assert len(cluster.objects("PodGroup")) == 2
    found = cluster.get_object(kind, "default", "g")
    assert found is not None and found.api_version.startswith(group + "/")
    assert [o.api_version for o in cluster.list_objects(kind)] == [found.api_version]
    # Deleting one leaves the other, and the second create of one is refused.
    cluster.delete(kind, "default", "g")
    assert cluster.get_object(kind, "default", "g") is None
    assert len(cluster.objects("PodGroup")) == 1
    cluster.create(found)
    with pytest.raises(ConflictError):
        cluster.create(found)


@pytest.mark.parametrize("kind", [WORKLOAD_PODGROUP, COSCHEDULING_PODGROUP], ids=["kube", "x"])
def test_static_lister_keeps_both_groups_pod_groups(kind):
    lister = StaticLister(_pod_groups())
    found = lister.get_object(kind, "default", "g")
    assert found is not None and kind.startswith(found.api_version)
    assert lister.list_objects(kind) == [found]
