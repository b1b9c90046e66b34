"""LimitRanger and ResourceQuota in the embedded cluster: kube-apiserver's recorded answers,
the quota controller's status, quota released by finished and deleted pods, and the
FailedCreate of a controller's refused pods."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import KINDS, Pod, Quantity, ResourceQuota
from kubesched.backend import BackendError
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.admission import LIMIT_RANGER_ANNOTATION
from kubesched.clock import FakeClock
from tests.admission_cases import CASE_IDS, CASES, manifests

from .helpers import obj, template


def _outcome(cluster: MemoryCluster, doc: dict[str, Any]) -> str | None:
    try:
        # Unvalidated: the cluster validates as it creates (422, the server's message).
        cluster.create(KINDS[doc["kind"]].model_validate(doc))
    except BackendError as err:
        return str(err)
    return None


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_admits_as_the_api_server(cluster: MemoryCluster, case: dict[str, Any]) -> None:
    *before, last = manifests(case)
    for doc in before:
        assert _outcome(cluster, doc) is None, doc
    assert _outcome(cluster, last) == case["message"]


def quota(hard: dict[str, str], name: str = "q", namespace: str = "team", **spec: Any) -> Any:
    return obj("ResourceQuota", name, namespace, spec={"hard": hard, **spec})


def sized_pod(name: str, cpu: str, namespace: str = "team", **spec: Any) -> Pod:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    return obj("Pod", name, namespace, spec={"containers": [container], **spec})  # type: ignore[return-value]


def used(cluster: MemoryCluster, name: str = "q", namespace: str = "team") -> dict[str, str]:
    q: ResourceQuota = cluster.get("ResourceQuota", namespace, name)  # type: ignore[assignment]
    return {k: v.canonical() for k, v in q.status.used.items()}


def test_quota_status_counts_what_exists_and_follows_writes(cluster: MemoryCluster) -> None:
    cluster.create(sized_pod("before", "500m"))
    cluster.create(quota({"cpu": "2", "pods": "3", "count/services": "2"}))
    q: ResourceQuota = cluster.get("ResourceQuota", "team", "q")  # type: ignore[assignment]
    assert {k: v.canonical() for k, v in q.status.hard.items()} == {
        "cpu": "2",
        "pods": "3",
        "count/services": "2",
    }
    assert used(cluster) == {"cpu": "500m", "pods": "1", "count/services": "0"}
    cluster.create(sized_pod("after", "1"))
    assert used(cluster) == {"cpu": "1500m", "pods": "2", "count/services": "0"}
    cluster.delete("Pod", "team", "before")  # unscheduled: removed at once
    assert used(cluster) == {"cpu": "1", "pods": "1", "count/services": "0"}


def test_a_finished_pod_releases_its_quota_but_stays_counted_as_an_object(
    cluster: MemoryCluster,
) -> None:
    cluster.create(quota({"pods": "1", "count/pods": "2"}))
    cluster.create(sized_pod("job", "1"))
    refused = pytest.raises(BackendError, match="exceeded quota: q, requested: pods=1")
    with refused:
        cluster.create(sized_pod("next", "1"))
    done = cluster.get("Pod", "team", "job").model_copy(deep=True)
    done.status.phase = "Succeeded"
    cluster._write(done, cluster.get("Pod", "team", "job"))
    assert used(cluster) == {"pods": "0", "count/pods": "1"}
    cluster.create(sized_pod("next", "1"))
    with pytest.raises(BackendError, match="requested: count/pods=1,pods=1"):
        cluster.create(sized_pod("third", "1"))


def test_a_deleted_running_pod_counts_until_it_is_gone(
    cluster: MemoryCluster, clock: FakeClock
) -> None:
    cluster.create(quota({"pods": "1"}))
    cluster.create(obj("Node", "n1", status={"capacity": {"cpu": "4", "pods": "110"}}))
    cluster.bind(cluster.create(sized_pod("a", "1")), "n1")  # type: ignore[arg-type]
    cluster.delete("Pod", "team", "a")  # 30 s of grace: still counted
    with pytest.raises(BackendError, match="exceeded quota"):
        cluster.create(sized_pod("b", "1"))
    clock.set(30)
    cluster.advance()
    cluster.create(sized_pod("b", "1"))


def test_scoped_quota_counts_only_the_pods_it_selects(cluster: MemoryCluster) -> None:
    cluster.create(quota({"pods": "1", "cpu": "1"}, scopes=["Terminating"]))
    cluster.create(sized_pod("long", "2"))
    cluster.create(sized_pod("short", "1", activeDeadlineSeconds=60))
    assert used(cluster) == {"pods": "1", "cpu": "1"}
    with pytest.raises(BackendError, match="exceeded quota"):
        cluster.create(sized_pod("short2", "1", activeDeadlineSeconds=60))


def test_a_controllers_refused_pods_are_failed_creations(cluster: MemoryCluster) -> None:
    cluster.create(quota({"pods": "2"}))
    cluster.create(
        obj(
            "ReplicaSet",
            "web",
            "team",
            spec={
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}),
            },
        )
    )
    assert len(cluster.pods("team")) == 2
    assert [r.source_object_key for r in cluster.rejections] == ["ReplicaSet team/web"]
    message = cluster.rejections[0].message
    assert message.startswith('pods "web-') and message.endswith(
        "is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    )
    failed = [e for e in cluster.events if e.reason == "FailedCreate"]
    assert [e.message for e in failed] == [f"Error creating: {message}"]


@pytest.mark.parametrize(
    ("containers", "annotation"),
    [
        ([{"name": "a", "image": "x"}], "cpu request for container a; cpu limit for container a"),
        (
            [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1"}}}],
            None,
        ),
        (
            [{"name": "a", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
            "cpu limit for container a",
        ),
    ],
    ids=["both-defaulted", "limit-given-request-follows", "limit-defaulted"],
)
def test_limit_range_defaults_are_annotated(
    cluster: MemoryCluster, containers: list[dict[str, Any]], annotation: str | None
) -> None:
    cluster.create(
        obj(
            "LimitRange",
            "lr",
            "team",
            spec={"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
        )
    )
    p = cluster.create(obj("Pod", "p", "team", spec={"containers": containers}))
    note = p.metadata.annotations.get(LIMIT_RANGER_ANNOTATION)
    assert note == (f"LimitRanger plugin set: {annotation}" if annotation else None)
    assert p.spec.containers[0].resources.limits  # type: ignore[attr-defined]


def test_limit_range_api_defaults() -> None:
    lr = obj(
        "LimitRange",
        "lr",
        "team",
        spec={
            "limits": [
                {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}},
                {"type": "Pod", "max": {"cpu": "4"}},
            ]
        },
    )
    container, pod_item = lr.spec.limits  # type: ignore[attr-defined]
    assert container.default == {"cpu": Quantity("2")}
    assert container.default_request == {
        "cpu": Quantity("2"),
        "memory": Quantity("1Mi"),
    }
    assert pod_item.default == {} and pod_item.default_request == {}
