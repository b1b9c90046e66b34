"""The taint eviction controller: tolerationSeconds as upstream computes it, cancellation,
DaemonSet pods, and the seed's examples."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import Toleration
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.tainteviction import matching_tolerations, min_toleration_seconds
from kubesched.clock import FakeClock
from tests.backend.helpers import obj, pod

NO_EXEC = {"key": "key1", "value": "value1", "effect": "NoExecute"}


def tol(**kw: Any) -> dict[str, Any]:
    return {"operator": "Equal", **kw}


def node(name: str = "n1", taints: list[dict] | None = None):
    return obj("Node", name, spec={"taints": taints or []})


def taint_node(cluster: MemoryCluster, name: str, taints: list[dict]) -> None:
    n = cluster.get("Node", None, name).model_copy(deep=True)
    n.spec.taints = [obj("Node", "x", spec={"taints": [t]}).spec.taints[0] for t in taints]
    n.metadata.resource_version = None
    cluster.update(n)


def run_until(cluster: MemoryCluster, clock: FakeClock, t: float) -> None:
    """Carry out every timer and deletion due until ``t``, each at its own time."""
    while (due := cluster.next_event_time()) is not None and due <= t:
        clock.set(max(due, clock.now()))
        cluster.advance()
    clock.set(max(t, clock.now()))
    cluster.advance()


def bound_pod(name: str, tolerations: list[dict], grace: int = 0) -> Any:
    return pod(name, nodeName="n1", tolerations=tolerations, terminationGracePeriodSeconds=grace)


# -- the computation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "want"),
    [
        ([], 0.0),
        ([Toleration(key="a", toleration_seconds=30)], 30.0),
        ([Toleration(key="a", toleration_seconds=30), Toleration(key="b")], 30.0),
        ([Toleration(key="a"), Toleration(key="b")], None),
        (
            [
                Toleration(key="a", toleration_seconds=60),
                Toleration(key="b", toleration_seconds=20),
            ],
            20.0,
        ),
        (
            [Toleration(key="a", toleration_seconds=0), Toleration(key="b", toleration_seconds=20)],
            0.0,
        ),
        ([Toleration(key="a", toleration_seconds=-5)], 0.0),
    ],
    ids=["none-used", "one", "timed-and-untimed", "untimed", "smallest", "zero", "negative"],
)
def test_min_toleration_seconds(tolerations: list[Toleration], want: float | None) -> None:
    assert min_toleration_seconds(tolerations) == want


def test_first_matching_toleration_per_taint_counts() -> None:
    # The first toleration of the pod's list that matches the taint is used, even when a
    # later one (here with a shorter time) also matches: upstream's GetMatchingTolerations.
    taint = obj("Node", "x", spec={"taints": [NO_EXEC]}).spec.taints
    first = Toleration(key="key1", operator="Exists", effect="NoExecute", toleration_seconds=600)
    second = Toleration(key="key1", operator="Equal", value="value1", toleration_seconds=5)
    ok, used = matching_tolerations(taint, [first, second])
    assert ok and used == [first]
    assert min_toleration_seconds(used) == 600


# -- the controller in the embedded cluster ----------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "evicted_at"),
    [
        ([], 0.0),
        ([tol(key="key1", value="value1", effect="NoExecute")], None),
        ([tol(key="key1", value="value1", effect="NoExecute", tolerationSeconds=3600)], 3600.0),
        ([tol(key="key1", value="other", effect="NoExecute", tolerationSeconds=3600)], 0.0),
        ([{"operator": "Exists"}], None),
    ],
    ids=[
        "seed-not-tolerated-evicted-at-once",
        "seed-tolerated-without-seconds-stays-forever",
        "seed-toleration-seconds-3600",
        "wrong-value-not-tolerated",
        "exists-all",
    ],
)
def test_seed_taint_based_eviction(
    cluster: MemoryCluster, clock: FakeClock, tolerations: list[dict], evicted_at: float | None
) -> None:
    cluster.apply([node(), bound_pod("p", tolerations)])
    clock.set(10)
    taint_node(cluster, "n1", [NO_EXEC])
    run_until(cluster, clock, 10 + 7200)
    gone = cluster.try_get("Pod", "default", "p") is None
    if evicted_at is None:
        assert not gone and not cluster.evictions
    else:
        assert gone
        (rec,) = cluster.evictions
        assert rec.by == "taint-manager" and rec.time == 10 + evicted_at
        assert rec.details["taint"] == "key1=value1:NoExecute"


def test_seed_removing_the_taint_in_time_cancels(cluster: MemoryCluster, clock: FakeClock):
    cluster.apply(
        [
            node(),
            bound_pod(
                "p", [tol(key="key1", value="value1", effect="NoExecute", tolerationSeconds=3600)]
            ),
        ]
    )
    taint_node(cluster, "n1", [NO_EXEC])
    run_until(cluster, clock, 1800)
    taint_node(cluster, "n1", [])
    run_until(cluster, clock, 7200)
    assert cluster.try_get("Pod", "default", "p") is not None
    assert not cluster.evictions
    messages = [e.message for e in cluster.events if e.reason == "TaintManagerEviction"]
    assert messages == ["Cancelling deletion of Pod default/p"]


def test_minimum_over_taints_and_deletion_condition(cluster: MemoryCluster, clock: FakeClock):
    cluster.apply(
        [
            node(),
            bound_pod(
                "p",
                [
                    {
                        "key": "a",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 600,
                    },
                    {
                        "key": "b",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 60,
                    },
                ],
                grace=30,
            ),
        ]
    )
    taint_node(
        cluster, "n1", [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoExecute"}]
    )
    run_until(cluster, clock, 60)
    p = cluster.get("Pod", "default", "p")
    cond = next(c for c in p.status.conditions if c.type == "DisruptionTarget")
    assert (cond.reason, cond.message) == (
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    assert p.metadata.deletion_timestamp is not None  # graceful: its own 30 s
    (rec,) = cluster.evictions
    assert rec.details["taint"] == "b:NoExecute" and rec.grace_period_seconds == 30
    run_until(cluster, clock, 90)
    assert cluster.try_get("Pod", "default", "p") is None


def test_a_later_update_does_not_postpone_a_scheduled_eviction(cluster: MemoryCluster, clock):
    # Upstream keeps the earlier schedule (its start time) when the pod is processed again.
    cluster.apply(
        [
            node(),
            bound_pod(
                "p", [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100}]
            ),
        ]
    )
    taint_node(cluster, "n1", [{"key": "a", "effect": "NoExecute"}])
    run_until(cluster, clock, 50)
    taint_node(
        cluster, "n1", [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoExecute"}]
    )
    run_until(cluster, clock, 100)
    assert cluster.try_get("Pod", "default", "p") is None
    assert cluster.evictions[0].time == 100


def _target(p: Any) -> str:
    aff = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    return aff.node_selector_terms[0].match_fields[0].values[0]


def test_daemon_set_pods_tolerate_not_ready_forever(cluster: MemoryCluster, clock: FakeClock):
    ds = obj(
        "DaemonSet",
        "agent",
        spec={
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    )
    web = pod("web", nodeName="n1")
    # A second, healthy node: with every node not ready the controller taints none.
    cluster.apply([node(), node("n2"), ds, web])
    agent = next(p for p in cluster.pods() if p.name.startswith("agent-") and _target(p) == "n1")
    cluster.bind(agent, "n1")
    run_until(cluster, clock, 12)
    # The kubelet reports NotReady; the node lifecycle controller's next pass (every 5 s)
    # adds not-ready:NoExecute.
    cluster.node_lifecycle.set_ready("n1", "False", "KubeletNotReady", "down")
    run_until(cluster, clock, 3600)
    taints = [(t.key, t.effect) for t in cluster.get("Node", None, "n1").spec.taints]
    assert ("node.kubernetes.io/not-ready", "NoExecute") in taints
    names = {p.name for p in cluster.pods()}
    assert agent.name in names  # untimed DaemonSet toleration
    assert "web" not in names  # admission's 300 s default toleration ran out
    assert [r.pod for r in cluster.evictions] == ["default/web"]
    assert cluster.evictions[0].time == 15 + 300
