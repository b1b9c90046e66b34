"""Workload controllers of the embedded cluster: what pods each workload becomes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.api import Pod, Taint, load_manifests
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.controllers import (
    daemon_pod_tolerations,
    replace_daemon_set_pod_node_name_node_affinity,
)
from kubesched.clock import FakeClock

from .helpers import obj, template

SEED = Path(__file__).resolve().parent.parent / "fixtures" / "k8s-docs"
SUFFIX = re.compile(r"[bcdfghjklmnpqrstvwxz2456789]{5}")


def deployment(name: str = "web", replicas: int = 3, image: str = "nginx"):
    t = template({"app": name})
    t["spec"]["containers"][0]["image"] = image
    return obj(
        "Deployment",
        name,
        spec={"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": t},
    )


def names(cluster: MemoryCluster, active_only: bool = True) -> list[str]:
    return [
        p.name for p in cluster.pods() if not active_only or p.metadata.deletion_timestamp is None
    ]


# --- Deployment / ReplicaSet ----------------------------------------------------------------


def test_deployment_creates_replica_set_and_pods(cluster: MemoryCluster):
    d = cluster.create(deployment())
    (rs,) = cluster.objects("ReplicaSet")
    pth = rs.metadata.labels["pod-template-hash"]
    assert rs.name == f"web-{pth}" and 1 <= len(pth) <= 10
    assert rs.metadata.controller_ref.uid == d.metadata.uid
    assert rs.spec.selector.match_labels == {"app": "web", "pod-template-hash": pth}
    assert rs.spec.replicas == 3
    pods = cluster.pods()
    assert len(pods) == 3
    for p in pods:
        prefix, suffix = p.name.rsplit("-", 1)
        assert prefix == rs.name and SUFFIX.fullmatch(suffix)
        assert p.metadata.labels == {"app": "web", "pod-template-hash": pth}
        ref = p.metadata.controller_ref
        assert (ref.kind, ref.name, ref.uid, ref.api_version) == (
            "ReplicaSet",
            rs.name,
            rs.metadata.uid,
            "apps/v1",
        )
        assert p.status.phase == "Pending"


def test_pod_template_hash_is_stable_and_follows_the_template():
    def hash_of(image: str) -> str:
        c = MemoryCluster(FakeClock())
        c.create(deployment(image=image))
        return c.objects("ReplicaSet")[0].metadata.labels["pod-template-hash"]

    assert hash_of("nginx") == hash_of("nginx")
    assert hash_of("nginx") != hash_of("httpd")


def test_same_manifests_give_the_same_pod_names():
    def run() -> list[str]:
        c = MemoryCluster(FakeClock())
        c.apply(
            load_manifests(
                [SEED / "deployment-redis-cache.yaml", SEED / "deployment-web-server.yaml"]
            )
        )
        return names(c)

    first = run()
    assert len(first) == 6 and first == run()


def test_deployment_scale_and_template_change(cluster: MemoryCluster):
    d = cluster.create(deployment(replicas=2))
    d2 = d.model_copy(deep=True)
    d2.spec.replicas = 4
    d = cluster.update(d2)
    assert len(names(cluster)) == 4
    old_rs = cluster.objects("ReplicaSet")[0]
    d3 = d.model_copy(deep=True)
    d3.spec.template.spec.containers[0].image = "httpd"
    cluster.update(d3)
    rss = {rs.name: rs for rs in cluster.objects("ReplicaSet")}
    assert len(rss) == 2
    assert rss[old_rs.name].spec.replicas == 0
    (new_rs,) = [rs for rs in rss.values() if rs.name != old_rs.name]
    assert new_rs.spec.replicas == 4
    assert new_rs.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    active = [p for p in cluster.pods() if p.metadata.deletion_timestamp is None]
    assert {p.metadata.controller_ref.name for p in active} == {new_rs.name}
    assert len(active) == 4


def test_replica_set_replaces_a_deleted_pod_at_once(cluster: MemoryCluster):
    cluster.create(deployment(replicas=2))
    victim = cluster.pods()[0]
    cluster.bind(victim, "n1")
    cluster.delete_pod(cluster.get("Pod", "default", victim.name))  # preemption does this
    pods = cluster.pods()
    assert len(pods) == 3  # the terminating victim and its replacement
    assert len([p for p in pods if p.metadata.deletion_timestamp is None]) == 2
    cluster.advance(30)
    assert len(cluster.pods()) == 2


def test_replica_set_scale_down_deletes_unbound_pods_first(cluster: MemoryCluster):
    rs = cluster.create(
        obj(
            "ReplicaSet",
            "rs",
            spec={
                "replicas": 3,
                "selector": {"matchLabels": {"a": "b"}},
                "template": template({"a": "b"}),
            },
        )
    )
    pods = cluster.pods()
    cluster.bind(pods[0], "n1")
    cluster.bind(pods[2], "n1")
    rs2 = rs.model_copy(deep=True)
    rs2.spec.replicas = 2
    cluster.update(rs2)
    assert sorted(names(cluster)) == sorted([pods[0].name, pods[2].name])


def test_replication_controller(cluster: MemoryCluster):
    rc = cluster.create(
        obj(
            "ReplicationController",
            "rc",
            spec={"replicas": 2, "selector": {"a": "b"}, "template": template({"a": "b"})},
        )
    )
    pods = cluster.pods()
    assert len(pods) == 2
    assert all(p.metadata.controller_ref.uid == rc.metadata.uid for p in pods)
    assert all(p.metadata.controller_ref.api_version == "v1" for p in pods)


def test_owner_deletion_collects_dependents(cluster: MemoryCluster):
    cluster.create(deployment(replicas=2))
    cluster.delete("Deployment", "default", "web")
    assert cluster.objects("ReplicaSet") == []
    assert names(cluster) == []  # unbound pods go at once


def test_controller_refused_pods_are_reported(cluster: MemoryCluster):
    t = template({"app": "x"}, priorityClassName="later")
    rejected = cluster.apply(
        [
            obj(
                "ReplicaSet",
                "rs",
                spec={"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": t},
            )
        ]
    )
    assert [str(r) for r in rejected] == [
        'ReplicaSet default/rs: pods "rs-" is forbidden: no PriorityClass with name later was found'
    ]
    (event,) = cluster.events
    assert (event.reason, event.involved_name) == ("FailedCreate", "rs")
    assert event.message.startswith('Error creating: pods "rs-" is forbidden')
    # Once the class exists the controller succeeds.
    cluster.create(obj("PriorityClass", "later", value=10))
    assert [p.spec.priority for p in cluster.pods()] == [10, 10]


def test_apply_adopts_captured_replica_sets_and_pods(cluster: MemoryCluster):
    d = cluster.create(deployment(replicas=2))
    captured = [d, *cluster.objects("ReplicaSet"), *cluster.pods()]
    fresh = MemoryCluster(FakeClock())
    assert fresh.apply(captured) == []
    assert len(fresh.objects("ReplicaSet")) == 1
    assert sorted(names(fresh)) == sorted(names(cluster))


# --- StatefulSet ----------------------------------------------------------------------------


def statefulset(policy: str = "OrderedReady", replicas: int = 3):
    return obj(
        "StatefulSet",
        "db",
        spec={
            "replicas": replicas,
            "serviceName": "db",
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": "db"}},
            "template": template({"app": "db"}),
        },
    )


def test_stateful_set_ordered_ready_creates_one_at_a_time(cluster: MemoryCluster):
    sts = cluster.create(statefulset())
    assert names(cluster) == ["db-0"]
    p0: Pod = cluster.get("Pod", "default", "db-0")
    assert p0.metadata.labels["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert p0.metadata.labels["apps.kubernetes.io/pod-index"] == "0"
    assert p0.metadata.labels["controller-revision-hash"].startswith("db-")
    assert (p0.spec.hostname, p0.spec.subdomain) == ("db-0", "db")
    assert p0.metadata.controller_ref.uid == sts.metadata.uid
    cluster.bind(p0, "n1")
    assert names(cluster) == ["db-0", "db-1"]
    cluster.bind(cluster.get("Pod", "default", "db-1"), "n1")
    assert names(cluster) == ["db-0", "db-1", "db-2"]


def test_stateful_set_parallel_creates_all(cluster: MemoryCluster):
    cluster.create(statefulset("Parallel"))
    assert names(cluster) == ["db-0", "db-1", "db-2"]


def test_stateful_set_recreates_a_pod_under_its_name_once_gone(cluster: MemoryCluster):
    cluster.create(statefulset("Parallel", replicas=2))
    p1 = cluster.get("Pod", "default", "db-1")
    cluster.bind(p1, "n1")
    cluster.delete_pod(cluster.get("Pod", "default", "db-1"), 10)
    assert len(cluster.pods()) == 2  # no second db-1 while the first terminates
    cluster.advance(10)
    new = cluster.get("Pod", "default", "db-1")
    assert new.metadata.uid != p1.metadata.uid and new.spec.node_name is None


def test_stateful_set_scale_down_from_the_highest_ordinal(cluster: MemoryCluster):
    sts = cluster.create(statefulset("OrderedReady", replicas=3))
    for i in range(3):
        cluster.bind(cluster.get("Pod", "default", f"db-{i}"), "n1")
    sts2 = cluster.get("StatefulSet", "default", "db").model_copy(deep=True)
    sts2.spec.replicas = 1
    cluster.update(sts2)
    assert names(cluster) == ["db-0", "db-1"]  # db-2 terminating first
    cluster.advance(30)
    assert names(cluster) == ["db-0"]
    assert sts.name == "db"


# --- Job ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        ({}, 1),
        ({"parallelism": 3}, 3),
        ({"parallelism": 5, "completions": 2}, 2),
        ({"parallelism": 2, "completions": 10}, 2),
        ({"parallelism": 3, "suspend": True}, 0),
    ],
    ids=[
        "defaults",
        "parallelism",
        "min-with-completions",
        "parallelism-below-completions",
        "suspended",
    ],
)
def test_job_parallelism(cluster: MemoryCluster, spec: dict, count: int):
    job = cluster.create(
        obj("Job", "batch", spec={**spec, "template": template({"x": "y"}, restartPolicy="Never")})
    )
    pods = cluster.pods()
    assert len(pods) == count
    uid = job.metadata.uid
    for p in pods:
        prefix, suffix = p.name.rsplit("-", 1)
        assert prefix == "batch" and SUFFIX.fullmatch(suffix)
        assert p.metadata.labels == {
            "x": "y",
            "job-name": "batch",
            "batch.kubernetes.io/job-name": "batch",
            "controller-uid": uid,
            "batch.kubernetes.io/controller-uid": uid,
        }
        assert (p.metadata.controller_ref.kind, p.metadata.controller_ref.api_version) == (
            "Job",
            "batch/v1",
        )


def test_indexed_job(cluster: MemoryCluster):
    cluster.create(
        obj(
            "Job",
            "idx",
            spec={
                "parallelism": 2,
                "completions": 3,
                "completionMode": "Indexed",
                "template": template({}, restartPolicy="Never"),
            },
        )
    )
    pods = cluster.pods()
    indexes = sorted(
        p.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in pods
    )
    assert indexes == ["0", "1"]
    for p in pods:
        i = p.metadata.labels["batch.kubernetes.io/job-completion-index"]
        assert p.name.startswith(f"idx-{i}-") and p.spec.hostname == f"idx-{i}"


def test_job_replaces_deleted_pods_up_to_the_backoff_limit(cluster: MemoryCluster):
    cluster.create(
        obj("Job", "j", spec={"backoffLimit": 1, "template": template({}, restartPolicy="Never")})
    )
    (p,) = cluster.pods()
    cluster.delete("Pod", "default", p.name)
    # The replacement waits for the pod failure backoff: 10 s after the first failure.
    assert names(cluster) == []
    cluster.clock.set(10)
    cluster.advance()
    (p,) = cluster.pods()
    cluster.delete("Pod", "default", p.name)
    # Two failures > backoffLimit 1: the job fails, no more pods.
    cluster.clock.set(40)
    cluster.advance()
    assert names(cluster) == []
    (job,) = cluster.objects("Job")
    assert [(c.type, c.reason) for c in job.status.conditions] == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]
    assert job.status.failed == 2


# --- DaemonSet ------------------------------------------------------------------------------


def daemonset(**spec):
    return obj(
        "DaemonSet",
        "agent",
        spec={
            "selector": {"matchLabels": {"app": "agent"}},
            "template": template({"app": "agent"}, **spec),
        },
    )


@pytest.mark.parametrize(
    ("nodes", "spec", "want"),
    [
        ([obj("Node", "a"), obj("Node", "b")], {}, ["a", "b"]),
        (
            [obj("Node", "a", metadata={"labels": {"disk": "ssd"}}), obj("Node", "b")],
            {"nodeSelector": {"disk": "ssd"}},
            ["a"],
        ),
        (
            [
                obj("Node", "a", spec={"taints": [{"key": "gpu", "effect": "NoSchedule"}]}),
                obj("Node", "b"),
            ],
            {},
            ["b"],
        ),
        (
            [obj("Node", "a", spec={"taints": [{"key": "gpu", "effect": "NoSchedule"}]})],
            {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
            ["a"],
        ),
        (
            [
                obj(
                    "Node",
                    "a",
                    spec={
                        "unschedulable": True,
                        "taints": [
                            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                        ],
                    },
                )
            ],
            {},
            ["a"],
        ),
        (
            [
                obj(
                    "Node",
                    "a",
                    spec={
                        "taints": [
                            {
                                "key": "node.kubernetes.io/network-unavailable",
                                "effect": "NoSchedule",
                            }
                        ]
                    },
                )
            ],
            {},
            [],
        ),
        (
            [
                obj(
                    "Node",
                    "a",
                    spec={
                        "taints": [
                            {
                                "key": "node.kubernetes.io/network-unavailable",
                                "effect": "NoSchedule",
                            }
                        ]
                    },
                )
            ],
            {"hostNetwork": True},
            ["a"],
        ),
        (
            [obj("Node", "a", metadata={"labels": {"zone": "z1"}}), obj("Node", "b")],
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["z1"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            ["a"],
        ),
    ],
    ids=[
        "every-node",
        "node-selector",
        "untolerated-taint",
        "tolerated-taint",
        "default-daemon-tolerations",
        "network-unavailable-needs-host-network",
        "host-network-tolerates-network-unavailable",
        "required-node-affinity",
    ],
)
def test_daemon_set_nodes(cluster: MemoryCluster, nodes: list, spec: dict, want: list[str]):
    cluster.apply([*nodes, daemonset(**spec)])
    pods = cluster.pods()
    targets = []
    for p in pods:
        req = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        (term,) = req.node_selector_terms
        (field,) = term.match_fields
        assert (field.key, field.operator) == ("metadata.name", "In")
        assert term.match_expressions == []
        targets.append(field.values[0])
        assert p.name.startswith("agent-") and p.spec.node_name is None
    assert sorted(targets) == want


def test_daemon_set_follows_nodes(cluster: MemoryCluster):
    cluster.apply([obj("Node", "a"), daemonset()])
    assert len(cluster.pods()) == 1
    cluster.create(obj("Node", "b"))
    assert len(cluster.pods()) == 2
    cluster.delete("Node", None, "a")
    assert len(cluster.pods()) == 1  # the pending pod of a went at once
    node_b = cluster.get("Node", None, "b").model_copy(deep=True)
    node_b.spec.taints = [Taint(key="evict", effect="NoExecute")]
    cluster.update(node_b)
    assert cluster.pods() == []


def test_daemon_set_pod_tolerations():
    tols = daemon_pod_tolerations([], host_network=False)
    assert [(t.key, t.effect, t.operator, t.toleration_seconds) for t in tols] == [
        ("node.kubernetes.io/not-ready", "NoExecute", "Exists", None),
        ("node.kubernetes.io/unreachable", "NoExecute", "Exists", None),
        ("node.kubernetes.io/disk-pressure", "NoSchedule", "Exists", None),
        ("node.kubernetes.io/memory-pressure", "NoSchedule", "Exists", None),
        ("node.kubernetes.io/pid-pressure", "NoSchedule", "Exists", None),
        ("node.kubernetes.io/unschedulable", "NoSchedule", "Exists", None),
    ]
    assert tols == daemon_pod_tolerations(tols, host_network=False)  # replaced, not added


def test_replace_node_affinity_keeps_preferred_terms():
    from kubesched.api import Affinity

    aff = Affinity.model_validate(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["x"]}
                            ]
                        },
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
                    }
                ],
            }
        }
    )
    out = replace_daemon_set_pod_node_name_node_affinity(aff, "n1")
    req = out.node_affinity.required_during_scheduling_ignored_during_execution
    assert [t.to_dict() for t in req.node_selector_terms] == [
        {
            "matchExpressions": [],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
        }
    ]
    assert len(out.node_affinity.preferred_during_scheduling_ignored_during_execution) == 1
    assert aff.node_affinity.required_during_scheduling_ignored_during_execution is not None
    assert (
        len(
            aff.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
        )
        == 2
    )  # the input is not changed
