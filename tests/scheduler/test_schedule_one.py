"""The scheduling loop end to end on the embedded cluster: success, failure, rollback."""

import time

import pytest

from kubesched import Code, Status, hookimpl
from kubesched.scheduler import num_feasible_nodes_to_find
from kubesched.testing import make_node, make_pod
from kubesched_builtin.noderesources.fit import NodeResourcesFit
from kubesched_builtin.nodeunschedulable import NodeUnschedulable
from kubesched_builtin.schedulinggates import SchedulingGates
from kubesched_builtin.tainttoleration import TaintToleration

from .harness import Harness, nodes

CALLS: list[str] = []


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def test_pods_are_bound_with_events_conditions_and_metrics():
    h = Harness(
        [NodeResourcesFit], nodes(2) + [make_pod(f"p{i}").req(cpu="1").obj() for i in range(4)]
    )
    h.run()
    placed = sorted(h.node_of(f"p{i}") for i in range(4))
    assert placed == ["n0", "n0", "n1", "n1"]
    assert [h.requested_cpu(n) for n in ("n0", "n1")] == [2000, 2000]
    scheduled = h.events("Scheduled")
    assert len(scheduled) == 4
    assert scheduled[0].message.startswith("Successfully assigned default/p")
    assert (
        h.metric(
            "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler"
        )
        == 4
    )
    assert h.metric("scheduler_pod_scheduling_attempts_count") == 4
    assert {r.result for r in h.records} == {"scheduled"}


def test_unschedulable_pod_gets_upstream_diagnosis_then_moves_on_node_add():
    objs = [
        *nodes(2, cpu="1"),
        make_node("tainted").capacity(cpu="8", memory="4Gi").taint("dedicated", "gpu").obj(),
    ]
    h = Harness([NodeResourcesFit, TaintToleration], [*objs, make_pod("big").req(cpu="2").obj()])
    h.run()
    assert h.node_of("big") is None
    failed = h.events("FailedScheduling")
    msg = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    assert [e.message for e in failed] == [msg]
    # The record keeps the statuses, not the Filter rows only PostFilter's map reads.
    diagnosis = h.records[-1].diagnosis
    assert len(diagnosis.node_to_status) == 3
    assert diagnosis.rejected_rows == []
    condition = next(c for c in h.pod("big").status.conditions if c.type == "PodScheduled")
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "Unschedulable",
        msg,
    )
    assert h.scheduler.queue.queue_of(h.pod("big")) == "unschedulable"
    assert (
        h.metric(
            "scheduler_schedule_attempts_total", result="unschedulable", profile="default-scheduler"
        )
        == 1
    )
    # A new node that fits: NodeResourcesFit registered Node/Add, so the pod is retried.
    h.cluster.create(make_node("new").capacity(cpu="4", memory="4Gi").obj())
    h.step(1)
    h.run()
    assert h.node_of("big") == "new"


class Boom:
    name = "Boom"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self, node_info):
        raise RuntimeError("kaput")


def test_plugin_exception_is_an_error_and_the_pod_backs_off():
    h = Harness([Boom], [*nodes(1), make_pod("p").obj()])
    h.run()
    assert h.node_of("p") is None
    record = h.records[-1]
    assert record.result == "error"
    assert record.message == 'running "Boom" filter plugin: kaput'
    condition = next(c for c in h.pod("p").status.conditions if c.type == "PodScheduled")
    assert condition.reason == "SchedulerError"
    assert h.scheduler.queue.queue_of(h.pod("p")) == "backoff"
    # The scheduler goes on: after the backoff the pod is tried again (and fails again);
    # with SchedulerPopFromBackoffQ a 1 s backoff ends once its whole second has passed.
    h.step(2.0)
    h.run()
    assert len(h.records) == 2


def _reserver(name, reserve_result=None):
    def reserve(self):
        CALLS.append(f"{name}.reserve")
        return reserve_result

    def unreserve(self):
        CALLS.append(f"{name}.unreserve")

    return type(
        name,
        (),
        {
            "name": name,
            "__init__": lambda self, args, handle: None,
            "reserve": hookimpl(reserve),
            "unreserve": hookimpl(unreserve),
        },
    )


class FailingBinder:
    name = "FailingBinder"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def bind(self):
        return Status(Code.ERROR, "api server down")


def test_bind_failure_rolls_back_completely():
    r1, r2 = _reserver("R1"), _reserver("R2")
    h = Harness(
        [NodeResourcesFit, r1, r2, FailingBinder],
        [*nodes(1), make_pod("p").req(cpu="1").obj()],
        profiles={"default-scheduler": ["NodeResourcesFit", "R1", "R2", "FailingBinder"]},
    )
    # FailingBinder runs before DefaultBinder is asked only if listed first: make it the
    # only binder by disabling DefaultBinder's bind.
    h.scheduler.frameworks["default-scheduler"].points["Bind"].sort(
        key=lambda r: r.name != "FailingBinder"
    )
    h.run()
    assert h.node_of("p") is None
    assert CALLS == ["R1.reserve", "R2.reserve", "R2.unreserve", "R1.unreserve"]
    assert h.requested_cpu("n0") == 0
    assert not h.scheduler.cache.is_assumed_pod(h.scheduler.queue.get_pod("p").pod_info)
    assert h.records[-1].message == 'running Bind plugin "FailingBinder": api server down'
    assert h.scheduler.queue.queue_of(h.pod("p")) == "backoff"


def test_reserve_rejection_reports_the_node_and_unreserves_in_reverse():
    r1 = _reserver("R1")
    r2 = _reserver("R2", Status.unschedulable("quota exceeded"))
    h = Harness([r1, r2], [*nodes(1), make_pod("p").obj()])
    h.run()
    assert CALLS == ["R1.reserve", "R2.reserve", "R2.unreserve", "R1.unreserve"]
    assert h.records[-1].result == "unschedulable"
    assert h.records[-1].message == "0/1 nodes are available: 1 quota exceeded."
    assert h.scheduler.queue.queue_of(h.pod("p")) == "unschedulable"


class Gate:
    """Permit: pods wait until the pod named "release" is assumed, which allows them."""

    name = "Gate"

    def __init__(self, args, handle):
        self.handle = handle

    @hookimpl
    def permit(self, pod):
        if pod.metadata.name == "release":
            for waiting in self.handle.iterate_over_waiting_pods():
                waiting.allow(self.name)
            return None
        return Status.wait(30)


def test_permit_wait_is_allowed_by_another_pod():
    h = Harness([Gate], [*nodes(2), make_pod("a").obj()])
    h.run()
    assert h.node_of("a") is None
    assert h.scheduler.pending_bindings() == 1
    h.cluster.create(make_pod("release").obj())
    h.run()
    assert h.node_of("a") is not None and h.node_of("release") is not None
    assert h.scheduler.pending_bindings() == 0


def test_permit_timeout_rejects_and_requeues():
    h = Harness([Gate], [*nodes(1), make_pod("a").obj()])
    h.run()
    h.step(29)
    assert h.scheduler.pending_bindings() == 1
    h.step(1)
    assert h.scheduler.pending_bindings() == 0
    assert h.node_of("a") is None
    assert h.records[-1].result == "unschedulable"
    assert "rejected due to timeout after waiting at plugin Gate" in h.records[-1].message
    assert h.requested_cpu("n0") == 0
    # Upstream defers the move for the freed room after a rejection: the pod waits for an
    # event among the unschedulable pods instead of backing off.
    assert h.scheduler.queue.queue_of(h.pod("a")) == "unschedulable"


def test_pods_of_other_schedulers_are_left_alone_and_profiles_are_chosen_by_name():
    objs = [
        make_node("plain").capacity(cpu="2", memory="4Gi").obj(),
        make_node("cordoned").capacity(cpu="2", memory="4Gi").unschedulable().obj(),
        make_pod("strict").scheduler_name("strict-scheduler").obj(),
        make_pod("lax")
        .scheduler_name("lax-scheduler")
        .node_selector({"kubernetes.io/hostname": "cordoned"})
        .obj(),
        make_pod("foreign").scheduler_name("someone-else").obj(),
    ]
    h = Harness(
        [NodeUnschedulable],
        objs,
        profiles={"strict-scheduler": ["NodeUnschedulable"], "lax-scheduler": []},
    )
    h.run()
    assert h.node_of("strict") == "plain"
    # The lax profile has no NodeUnschedulable and no NodeAffinity: any node will do.
    assert h.node_of("lax") in {"plain", "cordoned"}
    assert h.node_of("foreign") is None
    assert not [e for e in h.cluster.events if e.involved_name == "foreign"]
    assert {r.profile for r in h.records} == {"strict-scheduler", "lax-scheduler"}


def test_bound_pods_in_the_manifests_count_as_running():
    objs = [
        *nodes(2, cpu="2"),
        make_pod("running").req(cpu="2").node("n0").obj(),
        make_pod("new").req(cpu="1").obj(),
    ]
    h = Harness([NodeResourcesFit], objs)
    h.run()
    assert h.node_of("new") == "n1"


def test_nominated_node_is_tried_first():
    objs = [*nodes(3, cpu="4"), make_pod("p").req(cpu="1").scheduling_gates("hold").obj()]
    h = Harness([NodeResourcesFit, SchedulingGates], objs)
    h.run()
    # As the API server, the embedded cluster resets a new pod's status: a nomination
    # comes from a status update (as preemption makes it).
    pod = h.pod("p")
    h.cluster.update_pod_status(pod, nominated_node_name="n2")
    h.cluster.update(
        h.pod("p").model_copy(update={"spec": pod.spec.model_copy(update={"scheduling_gates": []})})
    )
    h.run()
    assert h.node_of("p") == "n2"
    assert h.records[-1].evaluated_nodes == 1


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (None, 50, 50),
        (None, 99, 99),
        (None, 100, 100),
        (None, 500, 230),
        (None, 1000, 420),
        (None, 5000, 500),
        (None, 6000, 300),
        (None, 10000, 500),
        (0, 1000, 420),
        (30, 200, 100),
        (50, 1000, 500),
        (100, 5000, 5000),
    ],
    ids=lambda v: str(v),
)
def test_num_feasible_nodes_to_find(percentage, nodes, expected):
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_percentage_of_nodes_to_score_and_round_robin_start():
    objs = [*nodes(200, cpu="64"), *[make_pod(f"p{i}").req(cpu="1").obj() for i in range(3)]]
    h = Harness([NodeResourcesFit], objs, extra={"percentageOfNodesToScore": 50})
    h.run()
    # 50% of 200 is 100 nodes: each attempt evaluates exactly 100, starting where the
    # previous one stopped.
    assert [r.evaluated_nodes for r in h.records] == [100, 100, 100]
    assert h.scheduler.algorithm.next_start_node_index == 300 % 200
    assert all(len(r.feasible) == 100 for r in h.records)


def test_same_seed_same_placement():
    def placement(seed):
        objs = [*nodes(8, cpu="8"), *[make_pod(f"p{i}").req(cpu="1").obj() for i in range(10)]]
        h = Harness([NodeResourcesFit], objs, seed=seed)
        h.run()
        return [h.node_of(f"p{i}") for i in range(10)]

    assert placement(7) == placement(7)
    assert len({tuple(placement(s)) for s in range(6)}) > 1  # ties really are random


def test_nodes_left_out_by_pre_filter_are_named_in_the_diagnosis():
    from kubesched_builtin.nodeaffinity import NodeAffinity

    pinned = (
        make_pod("pinned")
        .req(cpu="4")
        .node_affinity_term(
            match_fields=[{"key": "metadata.name", "operator": "In", "values": ["n0"]}]
        )
    )
    h = Harness([NodeResourcesFit, NodeAffinity], [*nodes(3), pinned.obj()])
    h.run()
    assert h.records[-1].message == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert h.records[-1].diagnosis.unschedulable_plugins == {"NodeAffinity", "NodeResourcesFit"}


class LabelGate:
    """Permit: pods labelled ``gate`` wait (30 s); the others pass."""

    name = "LabelGate"

    def __init__(self, args, handle):
        self.handle = handle

    @hookimpl
    def permit(self, pod):
        return Status.wait(30) if "gate" in pod.metadata.labels else None


def _wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_concurrent_binding_pods_waiting_at_permit_hold_no_binding_thread():
    """A pool of 2 binding threads, 3 pods waiting at Permit: a pod that needs no wait is
    still bound at once (waiting pods must not fill the pool until their timeout)."""
    gated = [make_pod(f"g{i}").labels(gate="yes").obj() for i in range(3)]
    h = Harness([LabelGate], [*nodes(2), *gated], extra={"parallelism": 2}, concurrent_binding=True)
    h.run()
    assert h.scheduler.pending_bindings() == 3
    h.cluster.create(make_pod("free").obj())
    h.run()
    assert _wait_until(lambda: h.node_of("free") is not None, 5)
    assert all(h.node_of(f"g{i}") is None for i in range(3))
    for waiting in h.scheduler.frameworks["default-scheduler"].waiting_pods:
        waiting.allow("LabelGate")
    assert _wait_until(lambda: h.scheduler.pending_bindings() == 0)
    assert all(h.node_of(f"g{i}") is not None for i in range(3))


def test_close_rejects_waiting_pods_and_rolls_them_back():
    h = Harness(
        [LabelGate],
        [
            *nodes(1),
            *(make_pod(f"g{i}").labels(gate="yes").req(cpu="100m").obj() for i in range(4)),
        ],
        extra={"parallelism": 2},
        concurrent_binding=True,
    )
    h.run()
    assert h.scheduler.pending_bindings() == 4
    assert h.requested_cpu("n0") == 400
    started = time.monotonic()
    h.scheduler.close()
    assert time.monotonic() - started < 5  # not the 30 s Permit timeout
    assert h.scheduler.pending_bindings() == 0
    assert all(h.node_of(f"g{i}") is None for i in range(4))
    assert h.requested_cpu("n0") == 0
    assert all("scheduler is shutting down" in r.message for r in h.records)
