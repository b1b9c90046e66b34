"""``kubesched run`` against a real kube-apiserver: binding, conflicts, deletions, restarts."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from kubesched.backend.kube import KubeClient, KubeCluster, load_configuration
from kubesched.backend.protocol import ConflictError, PodCondition, RecordedEvent
from kubesched.testing import make_node
from kubesched.testing.envtest import ControlPlane

from .conftest import FAST, Api, all_bound, bound, pod_manifest, wait_for

pytestmark = pytest.mark.envtest


@pytest.mark.slow
def test_thousand_pods_on_hundred_nodes_are_bound_once(api: Api, in_process) -> None:
    api.nodes(100, cpu="4")
    run = in_process()
    api.create_many([pod_manifest(f"p{i}", cpu="300m") for i in range(1000)])
    placed = wait_for(lambda: all_bound(api, 1000), 240, "1,000 pods bound")
    assert run.stop() == 0
    per_node = Counter(placed.values())
    # 4 CPUs hold at most 13 pods of 300m: the scheduler never over-commits a node.
    assert len(per_node) == 100 and max(per_node.values()) <= 13
    pods = api.pods()
    assert all(
        any(
            c["type"] == "PodScheduled" and c["status"] == "True" for c in p["status"]["conditions"]
        )
        for p in pods
    )


def test_pod_of_another_scheduler_is_untouched(api: Api, in_process) -> None:
    api.nodes(2)
    run = in_process()
    # theirs first: once mine is bound, the scheduler has seen theirs (one pod watch, in
    # order) and would have taken it first; the pause covers a bind still in flight.
    api.create(pod_manifest("theirs", scheduler_name="other-scheduler"))
    api.create(pod_manifest("mine"))
    wait_for(lambda: "mine" in bound(api.pods()), 30, "mine bound")
    run.runner.cluster.events.flush()
    time.sleep(1.5)
    theirs = api.pod("theirs")
    assert theirs is not None
    assert not theirs["spec"].get("nodeName")
    assert not theirs["status"].get("conditions")
    assert not [e for e in api.events() if e["regarding"]["name"] == "theirs"]
    run.stop()


def test_unschedulable_pod_gets_condition_and_one_event_series(api: Api, in_process) -> None:
    api.nodes(2, cpu="1")
    run = in_process({"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1})
    api.create(pod_manifest("big", cpu="2"))
    pod = wait_for(
        lambda: (
            (p := api.pod("big"))
            and any(c["type"] == "PodScheduled" for c in p["status"].get("conditions") or ())
            and p
        ),
        30,
        "PodScheduled condition",
    )
    cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"].startswith(
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    # A node joining with the cpu moves it (NodeResourcesFit's hint; one without would
    # not); it is retried, fails again on the node's taint: still one Event object, its
    # series counting both (waited for: a retry late on a loaded machine proves nothing).
    api.create(
        make_node("m0").capacity(cpu="4", memory="16Gi", pods=110).taint("a", "b").manifest()
    )

    def failures() -> list[dict]:
        run.runner.cluster.events.flush()
        return [e for e in api.events() if e["reason"] == "FailedScheduling"]

    wait_for(
        lambda: sum((e.get("series") or {}).get("count", 1) for e in failures()) >= 2,
        30,
        "the retry's FailedScheduling",
    )
    failed = failures()
    assert len(failed) == 1
    assert failed[0]["reportingController"] == "default-scheduler"
    assert failed[0]["type"] == "Warning"
    assert run.stop() == 0


def test_bind_answered_with_409_forgets_and_requeues(control_plane: ControlPlane, api: Api) -> None:
    api.nodes(1)
    api.create(pod_manifest("p"))
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)
    cluster = KubeCluster(client)
    try:
        pods, _ = cluster.list("Pod")
        pod = next(p for p in pods if p.name == "p")
        cluster.bind(pod, "n0")
        with pytest.raises(ConflictError, match="already assigned"):
            cluster.bind(pod, "n0")
    finally:
        cluster.close()


def test_bind_conflict_in_the_scheduler_rolls_back(api: Api, in_process) -> None:
    """Another client binds the pod between our scheduling cycle and our bind: the API
    answers 409, the scheduler forgets its assumption and the cache follows the watch."""
    api.nodes(2, cpu="2")
    run = in_process()
    s = run.runner.scheduler
    cluster = run.cluster
    real_bind = cluster.bind
    conflicts: list[str] = []

    def racing_bind(pod, node_name):
        other = "n1" if node_name == "n0" else "n0"
        api.client.request(
            "POST",
            f"/api/v1/namespaces/default/pods/{pod.name}/binding",
            body={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod.name},
                "target": {"kind": "Node", "name": other},
            },
        )
        try:
            real_bind(pod, node_name)
        except ConflictError:
            conflicts.append(pod.name)
            raise

    cluster.bind = racing_bind
    api.create(pod_manifest("p", cpu="1500m"))
    wait_for(lambda: conflicts, 30, "the 409")
    wait_for(lambda: bound(api.pods()).get("p"), 10, "p bound by the other client")
    uid = _uid(api, "p")
    wait_for(lambda: s.cache.assumed_pod_info(uid) is None, 10, "assumption forgotten")
    # The node the other client chose counts the pod; the one we chose does not.
    node = bound(api.pods())["p"]
    wait_for(lambda: _requested_cpu(s, node) == 1500, 10, "cache follows the bind")
    other = "n1" if node == "n0" else "n0"
    assert _requested_cpu(s, other) == 0
    assert run.stop() == 0


def _uid(api: Api, name: str) -> str:
    pod = api.pod(name)
    assert pod is not None
    return pod["metadata"]["uid"]


def _requested_cpu(s, node: str) -> int:
    s.cache.update_snapshot(s.snapshot)
    try:
        return s.snapshot.get(node).requested.milli_cpu
    except KeyError:
        return -1


def test_pod_deleted_while_being_bound(api: Api, in_process) -> None:
    api.nodes(1)
    run = in_process()
    cluster = run.cluster
    real_bind = cluster.bind
    deleted = threading.Event()

    def bind_after_delete(pod, node_name):
        api.delete(f"/api/v1/namespaces/default/pods/{pod.name}", gracePeriodSeconds=0)
        deleted.set()
        real_bind(pod, node_name)

    cluster.bind = bind_after_delete
    api.create(pod_manifest("gone"))
    wait_for(deleted.is_set, 30, "the deletion")
    s = run.runner.scheduler
    wait_for(lambda: s.pending_bindings() == 0, 10, "binding cycle done")
    wait_for(lambda: s.queue.get_pod("gone") is None, 10, "the pod leaves the queue")
    s.cache.update_snapshot(s.snapshot)
    assert s.snapshot.get("n0").requested.milli_cpu == 0
    assert api.pod("gone") is None
    assert run.stop() == 0


def test_node_deleted_mid_cycle(api: Api, in_process) -> None:
    """The chosen node disappears while its pod is being bound: the API binds to a node
    name without checking it (as upstream), so the pod is bound; the cache keeps the
    pod on a node without its Node object (upstream's "virtual" node)."""
    api.nodes(1)
    run = in_process()
    cluster = run.cluster
    real_bind = cluster.bind

    def bind_after_node_delete(pod, node_name):
        api.delete(f"/api/v1/nodes/{node_name}")
        wait_for(lambda: "n0" not in cluster.informers["Node"].store, 10, "node watch")
        real_bind(pod, node_name)

    cluster.bind = bind_after_node_delete
    api.create(pod_manifest("orphan"))
    wait_for(lambda: bound(api.pods()).get("orphan") == "n0", 30, "bound to the deleted node")
    cluster.bind = real_bind
    # Nothing is left to schedule on: a new pod waits, unschedulable.
    api.create(pod_manifest("next"))
    pod = wait_for(
        lambda: (p := api.pod("next")) and p["status"].get("conditions") and p, 30, "next fails"
    )
    # The deleted node's pod keeps a node without a Node in the cache, not in the snapshot.
    assert pod["status"]["conditions"][0]["message"] == "no nodes available to schedule pods"
    assert run.stop() == 0


@pytest.mark.slow
def test_apiserver_restart_mid_run(control_plane: ControlPlane, api: Api, in_process) -> None:
    api.nodes(20, cpu="4")
    run = in_process(watch_timeout=30)
    api.create_many([pod_manifest(f"a{i}", cpu="200m") for i in range(100)])
    wait_for(lambda: len(bound(api.pods())) == 100, 60, "first 100 bound")
    control_plane.restart_apiserver()
    # Created while the scheduler's watches reconnect.
    api.create_many([pod_manifest(f"b{i}", cpu="200m") for i in range(100)])
    placed = wait_for(lambda: all_bound(api, 200), 120, "all 200 bound")
    s = run.runner.scheduler
    wait_for(lambda: s.pending_bindings() == 0, 10, "bindings done")
    # Nothing was lost or applied twice: the cache holds each bound pod once, and its
    # per-node totals are the sums of the API's bound pods.
    s.cache.update_snapshot(s.snapshot)
    for node, count in Counter(placed.values()).items():
        assert s.snapshot.get(node).requested.milli_cpu == 200 * count
    # The watches dropped with the server and could not resume while it was down: the
    # informers listed again (and turned the list into the changes they had missed).
    assert all(i.relists >= 1 for i in run.cluster.informers.values())
    assert run.stop() == 0


def test_event_series_aggregates_repeats(control_plane: ControlPlane, api: Api) -> None:
    api.create(pod_manifest("p"))
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)
    cluster = KubeCluster(client)
    try:
        for i in range(50):
            cluster.record_event(
                RecordedEvent(
                    "Pod",
                    "default",
                    "p",
                    "Warning",
                    "FailedScheduling",
                    f"try {i}",
                    action="Scheduling",
                )
            )
        cluster.events.flush()
        events = [e for e in api.events() if e["regarding"]["name"] == "p"]
        assert len(events) == 1
        assert events[0]["series"]["count"] == 2
        assert cluster.events.written == 2
    finally:
        cluster.close()


def test_preemption_respects_a_pod_disruption_budget(api: Api, in_process) -> None:
    """Two nodes, each full with a low-priority pod; a PDB protects the one on n0. The
    high-priority pod preempts the other: DisruptionTarget set, deleted with its grace
    period, the preemptor nominated to n1, then bound there once the victim is gone."""
    api.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 10,
        }
    )
    api.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    api.nodes(2, cpu="1")
    api.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "protect", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "protected"}}},
        }
    )
    run = in_process()
    api.create(
        pod_manifest(
            "guarded", cpu="800m", priority_class="low", labels={"app": "protected"}, grace=30
        )
    )
    wait_for(lambda: "guarded" in bound(api.pods()), 30, "guarded bound")
    guarded_node = bound(api.pods())["guarded"]
    api.create(pod_manifest("victim", cpu="800m", priority_class="low", grace=30))
    wait_for(lambda: "victim" in bound(api.pods()), 30, "victim bound")
    victim_node = bound(api.pods())["victim"]
    assert victim_node != guarded_node
    api.create(pod_manifest("urgent", cpu="800m", priority_class="high"))
    victim = wait_for(
        lambda: (p := api.pod("victim")) and p["metadata"].get("deletionTimestamp") and p,
        30,
        "the victim deleted",
    )
    cond = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler")
    assert cond["message"] == ("default-scheduler: preempting to accommodate a higher priority pod")
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 30
    urgent = wait_for(
        lambda: (p := api.pod("urgent")) and p["status"].get("nominatedNodeName") and p,
        30,
        "nomination",
    )
    assert urgent["status"]["nominatedNodeName"] == victim_node
    guarded = api.pod("guarded")
    assert guarded is not None and not guarded["metadata"].get("deletionTimestamp")
    run.runner.cluster.events.flush()
    assert any(
        e["reason"] == "Preempted" and e["regarding"]["name"] == "victim" for e in api.events()
    )
    # The kubelet would end the victim after its grace period; nothing runs pods here.
    api.delete("/api/v1/namespaces/default/pods/victim", gracePeriodSeconds=0)
    wait_for(lambda: bound(api.pods()).get("urgent") == victim_node, 30, "urgent bound")
    urgent = api.pod("urgent")
    assert not urgent["status"].get("nominatedNodeName")
    assert run.stop() == 0


def test_delay_cache_until_active_standby_lists_nothing_until_it_leads(
    api: Api, in_process
) -> None:
    election = {
        "leaderElect": True,
        "leaseDuration": "4s",
        "renewDeadline": "3s",
        "retryPeriod": "1s",
        "resourceName": "delayed",
    }
    api.nodes(1)
    leader = in_process({"leaderElection": election})
    wait_for(leader.runner.leading.is_set, 30, "the first replica leads")
    standby = in_process(
        {"leaderElection": election, "delayCacheUntilActive": True}, wait_synced=False
    )
    time.sleep(2)
    assert not standby.runner.leading.is_set()
    assert not any(i.synced.is_set() for i in standby.cluster.informers.values())
    assert standby.cluster.informers["Pod"].store == {}
    assert leader.stop() == 0  # releases the lease: the standby takes over at once
    wait_for(standby.cluster.synced, 30, "the standby fills its cache once it leads")
    api.create(pod_manifest("p"))
    wait_for(lambda: bound(api.pods()).get("p") == "n0", 30, "bound by the new leader")
    assert standby.stop() == 0


@pytest.fixture
def cluster(control_plane: ControlPlane):
    c = KubeCluster(KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST))
    yield c
    c.close()


def _current(cluster: KubeCluster, api: Api, name: str):
    return cluster.informers["Pod"].decode(api.pod(name))


def test_status_patch_keeps_transition_time_and_sets_then_clears_nomination(
    api: Api, cluster: KubeCluster
) -> None:
    api.create(pod_manifest("p"))
    first = PodCondition("PodScheduled", "False", "Unschedulable", "0/1 nodes: one")
    cluster.update_pod_status(
        _current(cluster, api, "p"), condition=first, nominated_node_name="n7"
    )
    pod = api.pod("p")
    (cond,) = pod["status"]["conditions"]
    assert (cond["reason"], cond["message"]) == ("Unschedulable", "0/1 nodes: one")
    assert pod["status"]["nominatedNodeName"] == "n7"
    time.sleep(1.1)
    second = PodCondition("PodScheduled", "False", "Unschedulable", "0/1 nodes: two")
    cluster.update_pod_status(
        _current(cluster, api, "p"), condition=second, clear_nominated_node_name=True
    )
    pod = api.pod("p")
    (again,) = pod["status"]["conditions"]
    assert again["message"] == "0/1 nodes: two"
    # Same status: the transition time stays (upstream's UpdatePodCondition).
    assert again["lastTransitionTime"] == cond["lastTransitionTime"]
    assert "nominatedNodeName" not in pod["status"]


@pytest.mark.parametrize(
    ("min_available", "code"),
    [(1, 429), (0, 200)],
    ids=["pdb-forbids", "pdb-allows"],
)
def test_eviction_honours_pod_disruption_budgets(
    api: Api, cluster: KubeCluster, min_available: int, code: int
) -> None:
    api.nodes(1)
    api.create(pod_manifest("p", labels={"app": "x"}))
    # A pending pod may always be evicted: make it a running one (no kubelet here).
    cluster.bind(_current(cluster, api, "p"), "n0")
    api.client.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        body={"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    )
    api.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": "default"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "x"}}},
        }
    )
    if min_available == 0:
        # Without a disruption controller the PDB has no status; the API server then
        # allows an eviction only when the PDB cannot be violated, so set its status.
        pdb = api.client.request(
            "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/pdb"
        )
        pdb["status"] = {
            "disruptionsAllowed": 1,
            "currentHealthy": 1,
            "desiredHealthy": 0,
            "expectedPods": 1,
            "observedGeneration": pdb["metadata"]["generation"],
        }
        api.client.request(
            "PUT", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/pdb/status", body=pdb
        )
    result = cluster.evict_pod(_current(cluster, api, "p"))
    assert result.code == code, result.message


def test_events_are_reported_by_the_profile_scheduler_name(api: Api, in_process) -> None:
    api.nodes(1)
    run = in_process({"profiles": [{"schedulerName": "kubesched"}]})
    api.create(pod_manifest("mine", scheduler_name="kubesched"))
    api.create(pod_manifest("default-one"))  # default-scheduler: not a profile here
    wait_for(lambda: bound(api.pods()).get("mine") == "n0", 30, "mine bound")
    run.runner.cluster.events.flush()
    events = wait_for(lambda: [e for e in api.events() if e["reason"] == "Scheduled"], 10, "event")
    assert [(e["regarding"]["name"], e["reportingController"]) for e in events] == [
        ("mine", "kubesched")
    ]
    assert events[0]["note"] == "Successfully assigned default/mine to n0"
    assert events[0]["action"] == "Binding" and events[0]["type"] == "Normal"
    assert "default-one" not in bound(api.pods())
    assert run.stop() == 0
