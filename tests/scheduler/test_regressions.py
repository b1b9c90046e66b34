"""Regressions found in review: misbehaving plugins, requeue and nomination rules, gating."""

from kubesched import Code, Status, hookimpl
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from kubesched.framework.results import PostFilterResult
from kubesched.testing import make_node, make_pod
from kubesched_builtin.noderesources.fit import NodeResourcesFit
from kubesched_builtin.schedulinggates import SchedulingGates

from .harness import Harness, nodes


class RejectReserve:
    name = "RejectReserve"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def reserve(self):
        return Status.unschedulable("quota")

    @hookimpl
    def unreserve(self):
        pass


def test_reserve_rejection_clears_nomination_like_upstream():
    p = make_pod("p").obj()
    h = Harness([RejectReserve], [*nodes(1), p])
    # pretend an earlier preemption nominated it to n0
    pod = h.pod("p")
    h.cluster.update_pod_status(pod, nominated_node_name="n0")
    h.run()
    assert h.records[-1].result == "unschedulable"
    # upstream: clearNominatedNode on Reserve rejection
    assert h.scheduler.queue.nominator.nominated_node_name(h.pod("p")) is None
    assert h.pod("p").status.nominated_node_name is None


class SkipEnqueue:
    name = "SkipEnqueue"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def pre_enqueue(self):
        return Status.skip()


def test_pre_enqueue_skip_does_not_open_the_scheduling_gates():
    pod = make_pod("gated").scheduling_gates("example.com/wait").obj()
    h = Harness([SkipEnqueue, SchedulingGates], [*nodes(1), pod])
    h.run()
    assert h.node_of("gated") is None
    assert h.scheduler.queue.queue_of(h.pod("gated")) == "gated"


class FloatNormalize:
    name = "FloatNormalize"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def score(self):
        return 10

    @hookimpl
    def normalize_score(self, scores):
        scores.values = scores.values / 2.0


def test_normalize_writing_floats_is_an_error_status_not_a_crash():
    h = Harness([FloatNormalize], [*nodes(2), make_pod("p").obj()])
    h.run()
    assert h.records[-1].result == "error"
    assert h.records[-1].message == "plugin 'FloatNormalize' returned ndarray from normalize_score"
    assert h.scheduler.queue.queue_of(h.pod("p")) == "backoff"


class BoolFilter:
    name = "BoolFilter"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self):
        return True


def test_filter_returning_a_bool_is_an_error_status_not_a_crash():
    h = Harness([BoolFilter], [*nodes(2), make_pod("p").obj()])
    h.run()
    assert h.records[-1].result == "error"
    assert "plugin 'BoolFilter' returned bool from filter" in h.records[-1].message
    assert h.scheduler.queue.queue_of(h.pod("p")) == "backoff"


class DeletingPostFilter:
    """Stands in for the informer deleting the pod while its cycle runs (real cluster)."""

    name = "DeletingPostFilter"

    def __init__(self, args, handle):
        self.handle = handle

    @hookimpl
    def post_filter(self, pod):
        self.handle.client.delete("Pod", pod.metadata.namespace, pod.metadata.name)
        return PostFilterResult(nominated_node_name="n0")


def test_deleted_pod_is_not_left_nominated():
    h = Harness(
        [NodeResourcesFit, DeletingPostFilter],
        [*nodes(1, cpu="1"), make_pod("big").req(cpu="4").obj()],
    )
    h.run()
    assert h.cluster.try_get("Pod", "default", "big") is None
    assert h.scheduler.queue.nominator.nominated_pods_for_node("n0") == []


OPEN = {"v": False}


class Quota:
    """PreEnqueue: holds pods until OPEN; a new Node may open it."""

    name = "Quota"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def pre_enqueue(self):
        return None if OPEN["v"] else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "quota closed")

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]


def test_pod_gated_by_other_plugin_after_gates_removed_is_not_stranded():
    pod = make_pod("p").scheduling_gates("example.com/wait").obj()
    h = Harness(
        [SchedulingGates, Quota], [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), pod]
    )
    h.run()
    q = h.scheduler.queue
    assert q.get_pod("p").gating_plugin == "SchedulingGates"
    # The user removes the scheduling gates: now Quota holds the pod.
    cur = h.pod("p").model_copy(deep=True)
    cur.spec.scheduling_gates = []
    h.cluster.update(cur)
    qpi = q.get_pod("p")
    assert (qpi.gating_plugin, qpi.unschedulable_plugins) == ("Quota", {"Quota"})
    OPEN["v"] = True
    h.cluster.create(make_node("n1").capacity(cpu="2", memory="4Gi").obj())
    h.step(1)
    h.run()
    # Moved by Quota's Node/Add event, not by the 5-minute leftover flush.
    assert h.node_of("p") is not None


class TruePreBind:
    name = "TruePreBind"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def pre_bind(self):
        return True  # a plugin-author mistake: not a Status


def test_pre_bind_returning_a_bool_rolls_the_binding_back():
    h = Harness(
        [NodeResourcesFit, TruePreBind],
        [make_node("n0").capacity(cpu="2", memory="4Gi").obj(), make_pod("p").req(cpu="1").obj()],
    )
    h.run()
    q = h.scheduler.queue
    assert h.records[-1].result == "error"
    assert "plugin 'TruePreBind' returned bool from pre_bind" in h.records[-1].message
    # Nothing leaks: the assumption is forgotten and the pod backs off.
    assert h.node_of("p") is None
    assert h.scheduler.cache.assumed_pod_count() == 0
    assert h.requested_cpu("n0") == 0
    assert h.scheduler.pending_bindings() == 0
    assert q.queue_of(h.pod("p")) == "backoff"
