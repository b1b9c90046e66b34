"""Orphan adoption (``ClaimPods``) and the pod limit of the embedded cluster's controllers.

What kube-controller-manager v1.36.2 did with the same objects (tests/kube/
test_controllers.py asks it): a ReplicationController of 2 adopted a bare pod matching
its selector and created one pod; a StatefulSet adopted ``db-1`` but not ``db-x``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import Pod
from kubesched.backend.memory import MemoryCluster

from .helpers import obj, pod, template


def owner_of(p: Pod) -> tuple[str, str] | None:
    ref = p.metadata.controller_ref
    return (ref.kind, ref.name) if ref is not None else None


def owners(cluster: MemoryCluster) -> dict[str, tuple[str, str] | None]:
    return {p.name: owner_of(p) for p in cluster.pods()}


def rs(name: str = "web", replicas: int = 2, labels: dict | None = None) -> Any:
    labels = labels or {"app": "web"}
    return obj(
        "ReplicaSet",
        name,
        spec={
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": template(labels),
        },
    )


def rc(replicas: int = 2, selector: dict | None = None) -> Any:
    spec: dict[str, Any] = {"replicas": replicas, "template": template({"app": "rc"})}
    if selector is not None:
        spec["selector"] = selector
    return obj("ReplicationController", "rc", spec=spec)


def sts(replicas: int = 3) -> Any:
    return obj(
        "StatefulSet",
        "db",
        spec={
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": template({"app": "db"}),
        },
    )


@pytest.mark.parametrize(
    ("first", "workload", "want"),
    [
        (
            [pod("orphan", labels={"app": "rc"})],
            rc(),
            {"orphan": ("ReplicationController", "rc")},
        ),
        (
            [pod("orphan", labels={"app": "rc"})],
            rc(selector={"app": "rc"}),
            {"orphan": ("ReplicationController", "rc")},
        ),
        ([pod("orphan", labels={"app": "web"})], rs(), {"orphan": ("ReplicaSet", "web")}),
        ([pod("other", labels={"app": "api"})], rs(), {"other": None}),
        (
            [pod("db-1", labels={"app": "db"}), pod("db-x", labels={"app": "db"})],
            sts(),
            {"db-1": ("StatefulSet", "db"), "db-x": None},
        ),
        ([pod("web-0", labels={"app": "web"})], sts(), {"web-0": None}),
    ],
    ids=[
        "rc-default-selector",
        "rc-selector",
        "replicaset",
        "replicaset-other-labels",
        "statefulset-by-ordinal-name",
        "statefulset-other-set-name",
    ],
)
def test_orphans_created_first_are_adopted(
    cluster: MemoryCluster, first: list, workload: Any, want: dict
):
    for p in first:
        cluster.create(p)
    cluster.create(workload)
    got = owners(cluster)
    assert {name: got[name] for name in want} == want
    # The adopted pods count towards the replicas: no pod more than asked for.
    owned = [p for p in cluster.pods() if owner_of(p) is not None]
    assert len(owned) == workload.spec.replicas


def test_statefulset_writes_its_identity_labels_on_the_adopted_pod(cluster: MemoryCluster):
    cluster.create(pod("db-1", labels={"app": "db"}))
    cluster.create(sts())
    labels = cluster.get("Pod", "default", "db-1").metadata.labels
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert sorted(p.name for p in cluster.pods()) == ["db-0", "db-1", "db-2"]


def test_orphan_created_after_the_workload_is_adopted_and_a_surplus_pod_deleted(
    cluster: MemoryCluster,
):
    cluster.create(rs(replicas=2))
    cluster.create(pod("late", labels={"app": "web"}))
    # Three pods for two replicas: the unassigned newest one goes.
    assert len(cluster.pods()) == 2
    assert all(owner_of(p) == ("ReplicaSet", "web") for p in cluster.pods())


def test_a_batch_load_adopts_whatever_the_order(cluster: MemoryCluster):
    cluster.apply(
        [rs(replicas=3), pod("a", labels={"app": "web"}), pod("b", labels={"app": "web"})]
    )
    assert len(cluster.pods()) == 3
    assert owners(cluster)["a"] == owners(cluster)["b"] == ("ReplicaSet", "web")


@pytest.mark.parametrize(
    ("prepare", "adopted"),
    [("finished", False), ("terminating", False), ("running", True)],
    ids=["finished-pods-stay-orphans", "terminating-pods-stay-orphans", "running-pod-adopted"],
)
def test_replicaset_adopts_only_live_pods(cluster: MemoryCluster, prepare: str, adopted: bool):
    cluster.create(obj("Node", "n1"))
    p = cluster.create(pod("p", labels={"app": "web"}, restartPolicy="Never"))
    cluster.bind(p, "n1")
    p = cluster.get("Pod", "default", "p")
    if prepare == "finished":
        done = p.model_copy(deep=True)
        done.status.phase = "Succeeded"
        cluster._write(done, p)
    elif prepare == "terminating":
        cluster.delete_pod(p)
    cluster.create(rs(replicas=1))
    assert (owner_of(cluster.get("Pod", "default", "p")) is not None) == adopted


def test_a_pod_relabelled_out_of_the_selector_is_released(cluster: MemoryCluster):
    cluster.create(rs(replicas=1))
    (p,) = cluster.pods()
    moved = p.model_copy(deep=True)
    moved.metadata.labels = {"app": "debug"}
    cluster.update(moved)
    got = owners(cluster)
    assert got[p.name] is None
    assert sorted(v for v in got.values() if v) == [("ReplicaSet", "web")]


def test_job_with_a_manual_selector_adopts_and_counts_finished_pods(cluster: MemoryCluster):
    cluster.create(obj("Node", "n1"))
    p = cluster.create(pod("done", labels={"batch": "x"}, restartPolicy="Never"))
    cluster.bind(p, "n1")
    p = cluster.get("Pod", "default", "done")
    done = p.model_copy(deep=True)
    done.status.phase = "Succeeded"
    cluster._write(done, p)
    cluster.create(
        obj(
            "Job",
            "j",
            spec={
                "manualSelector": True,
                "selector": {"matchLabels": {"batch": "x"}},
                "completions": 2,
                "template": template({"batch": "x"}, restartPolicy="Never"),
            },
        )
    )
    assert owner_of(cluster.get("Pod", "default", "done")) == ("Job", "j")
    job = cluster.get("Job", "default", "j")
    assert (job.status.succeeded, job.status.active) == (1, 1)


def test_job_without_manual_selector_leaves_matching_pods_alone(cluster: MemoryCluster):
    cluster.create(pod("bare", labels={"batch": "x"}, restartPolicy="Never"))
    cluster.create(
        obj("Job", "j", spec={"template": template({"batch": "x"}, restartPolicy="Never")})
    )
    assert owners(cluster)["bare"] is None


def test_deployment_adopts_a_matching_replica_set(cluster: MemoryCluster):
    old = rs("old", replicas=2)
    old.metadata.labels = {"app": "web"}  # a ReplicaSet is claimed by its own labels
    cluster.create(old)
    cluster.create(rs("unlabelled", replicas=1))
    cluster.create(
        obj(
            "Deployment",
            "web",
            spec={
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web", "v": "2"}),
            },
        )
    )
    old = cluster.get("ReplicaSet", "default", "old")
    assert old.metadata.controller_ref.name == "web"
    # An adopted ReplicaSet of another template is an old one: scaled down.
    assert old.spec.replicas == 0
    assert cluster.get("ReplicaSet", "default", "unlabelled").metadata.controller_ref is None
    assert len([p for p in cluster.pods() if p.metadata.deletion_timestamp is None]) == 3


# --- the pod limit --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "spec", "who", "wanted", "of"),
    [
        (
            "Deployment",
            {"replicas": 100_000_000, "selector": {"matchLabels": {"app": "w"}}},
            "ReplicaSet default/big-",
            100_000_000,
            " (of Deployment default/big)",
        ),
        (
            "StatefulSet",
            {"replicas": 11, "serviceName": "big", "selector": {"matchLabels": {"app": "w"}}},
            "StatefulSet default/big",
            11,
            "",
        ),
        ("Job", {"parallelism": 11, "completions": 20}, "Job default/big", 11, ""),
    ],
    ids=["deployment", "statefulset", "job"],
)
def test_a_workload_past_the_pod_limit_is_refused_before_any_pod(
    cluster: MemoryCluster, kind: str, spec: dict, who: str, wanted: int, of: str
):
    cluster.max_pods = 10
    restart = {"restartPolicy": "Never"} if kind == "Job" else {}
    cluster.create(obj(kind, "big", spec={**spec, "template": template({"app": "w"}, **restart)}))
    assert cluster.pods() == []
    (rejection,) = cluster.rejections
    assert rejection.source_object_key.startswith(who)
    assert rejection.message == (
        f"{wanted} pods{of} would make {wanted} in the run, more than its limit of 10 pods "
        "(--max-pods); none created"
    )
    (event,) = [e for e in cluster.events if e.reason == "FailedCreate"]
    assert "--max-pods" in event.message


def test_within_the_pod_limit_everything_is_created(cluster: MemoryCluster):
    cluster.max_pods = 3
    cluster.create(rs(replicas=3))
    assert len(cluster.pods()) == 3 and cluster.rejections == []
