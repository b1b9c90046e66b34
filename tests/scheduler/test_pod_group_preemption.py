"""Workload-aware preemption: what a pod group preempts, as a unit, in the embedded cluster
(the cases compared with kube-scheduler v1.36 are in tests/pod_group_scenarios.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubesched import Code, PodInfo
from kubesched.api import parse_object
from kubesched.config import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.scheduler.pod_group_preemption import Victim
from kubesched.simulate.driver import Simulation
from kubesched.testing import make_node, make_pod
from tests.pod_group_scenarios import PREEMPTION_GATES, PRIORITY_CLASSES


def pod_group(name: str, min_count: int, priority_class: str, mode: str = "Pod") -> Any:
    return parse_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": min_count}},
                "priorityClassName": priority_class,
                "disruptionMode": mode,
            },
        }
    )


def pod(
    name: str,
    group: str | None,
    priority_class: str | None,
    node: str | None = None,
    **manifest_fields: Any,
) -> Any:
    """A 3-CPU pod (one per 4-CPU node); ``manifest_fields`` are merged into its
    ``metadata`` / ``spec`` / ``status``."""
    b = make_pod(name).req(cpu="3")
    if priority_class:
        b = b.priority_class(priority_class)
    if node:
        b = b.node(node)
    manifest = b.manifest()
    manifest["spec"]["terminationGracePeriodSeconds"] = 0
    if group:
        manifest["spec"]["schedulingGroup"] = {"podGroupName": group}
    for section, fields in manifest_fields.items():
        manifest.setdefault(section, {}).update(fields)
    return parse_object(manifest)


PREEMPTED_EARLIER = {
    "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
    "status": {
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    },
}
"""A pod the scheduler preempted that is still terminating."""


def simulate(
    first: list[Any],
    then: list[Any],
    *extra: Any,
    nominate: dict[str, str] | None = None,
    gates: str = PREEMPTION_GATES,
    setup: Callable[[Simulation], None] | None = None,
) -> Simulation:
    """Create ``first`` (after the priority classes, three 4-CPU nodes and ``extra``), let
    it settle, then ``then`` (with the pods of ``nominate`` nominated to its nodes, as
    another component may do); the simulation, settled (closed by the caller). ``setup``
    is called on the simulation once ``first`` settled."""
    registry = default_registry()
    gates_ = parse_feature_gates([gates])
    config = effective_configuration(
        default_configuration(registry, gates_), registry, gates=gates_
    )
    objects = [parse_object(pc) for pc in PRIORITY_CLASSES]
    nodes = [make_node(f"n{i}").capacity(cpu="4", pods=110).obj() for i in range(3)]
    sim = Simulation([*objects, *extra, *nodes, *first], config=config, registry=registry)
    sim.run()
    if setup is not None:
        setup(sim)
    for obj in then:
        created = sim.cluster.create(obj)
        if nominate and created.name in nominate:
            sim.cluster.update_pod_status(created, nominated_node_name=nominate[created.name])
    sim.attempts.clear()
    sim.run()
    return sim


def run(first: list[Any], then: list[Any], *extra: Any) -> set[str]:
    """:func:`simulate`; the pods left with a node, by name."""
    sim = simulate(first, then, *extra)
    try:
        return {p.name for p in sim.cluster.objects("Pod") if p.spec.node_name}
    finally:
        sim.close()


def by_kind(names: set[str]) -> tuple[list[str], int]:
    """The group's pods by name and how many victims (``v-<i>``, ``v-?``: any one)."""
    return sorted(n for n in names if n.startswith("g-")), sum(n.startswith("v-") for n in names)


def pod_group_message(sim: Simulation) -> str:
    (group,) = [g for g in sim.cluster.objects("PodGroup") if g.name == "g"]
    (condition,) = [c for c in group.status.conditions if c["type"] == "PodGroupScheduled"]
    return condition.get("message") or ""


GANG = [pod_group("g", 2, "high"), pod("g-0", "g", "high"), pod("g-1", "g", "high")]


@pytest.mark.parametrize(
    ("mode", "left"),
    [
        # One victim pod is enough: the other is given back.
        ("Pod", {"g-0", "g-1", "v-1"}),
        # The victim group is one unit: giving it back would not leave room, so both go.
        ("PodGroup", {"g-0", "g-1"}),
    ],
    ids=["pods-one-by-one", "group-as-a-unit"],
)
def test_a_victim_group_goes_as_a_unit_in_podgroup_disruption_mode(mode, left):
    victims = [pod_group("v", 2, "low", mode), pod("v-0", "v", "low"), pod("v-1", "v", "low")]
    assert run(victims, GANG) == left


def test_higher_priority_pods_are_never_victims():
    first = [pod("v-0", None, "high"), pod("v-1", None, "high"), pod("v-2", None, "high")]
    assert run(first, GANG) == {"v-0", "v-1", "v-2"}


@pytest.mark.parametrize(
    ("gang", "left"),
    [
        # The PodGroup's priority (high) is what preempts, not its pods' (none).
        (
            [pod_group("g", 2, "high"), pod("g-0", "g", None), pod("g-1", "g", None)],
            {"g-0", "g-1", "v-?"},
        ),
        # A PodGroup without a priority class has priority 0: nothing is below it.
        (
            [pod_group("g", 2, ""), pod("g-0", "g", "high"), pod("g-1", "g", "high")],
            {"v-0", "v-1", "v-2"},
        ),
    ],
    ids=["group-priority-preempts", "pods-priority-does-not"],
)
def test_the_group_preempts_with_its_pod_groups_priority(gang, left):
    victims = [pod(f"v-{i}", None, "low") for i in range(3)]
    assert by_kind(run(victims, gang)) == by_kind(left)


@pytest.mark.parametrize(
    ("policies", "left"),
    [
        (("high", "high"), {"g-0", "g-1", "v-?"}),
        (("high-never", "high"), {"v-0", "v-1", "v-2"}),
        (("high", "high-never"), {"v-0", "v-1", "v-2"}),
    ],
    ids=["both-may-preempt", "first-never", "second-never"],
)
def test_one_pod_with_preemption_policy_never_keeps_the_group_from_preempting(policies, left):
    never = parse_object(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high-never"},
            "value": 1000,
            "preemptionPolicy": "Never",
        }
    )
    gang = [pod_group("g", 2, "high"), *(pod(f"g-{i}", "g", c) for i, c in enumerate(policies))]
    victims = [pod(f"v-{i}", None, "low") for i in range(3)]
    sim = simulate(victims, gang, never)
    try:
        bound = {p.name for p in sim.cluster.objects("Pod") if p.spec.node_name}
        assert by_kind(bound) == by_kind(left)
        if "v-0" in left:
            assert pod_group_message(sim) == (
                "pod group is unschedulable, not eligible due to preemptionPolicy=Never."
            )
    finally:
        sim.close()


@pytest.mark.parametrize(
    ("terminating", "nominated", "preempted", "message"),
    [
        # A low pod preempted earlier still terminates on the node a member is nominated
        # to: kube-scheduler v1.36.2 preempts for the group all the same (recorded in
        # tests/pod_group_scenarios.py), and the terminating pod gets no second call.
        (pod("t", None, "low", "n0", **PREEMPTED_EARLIER), "n0", {"v-1", "v-2"}, None),
        (pod("t", None, "low", "n0", **PREEMPTED_EARLIER), "n1", {"v-1", "v-2"}, None),
        # Terminating but not preempted (no DisruptionTarget): a victim like the others.
        (
            pod("t", None, "low", "n0", metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
            "n0",
            {"v-1", "v-2"},
            None,
        ),
        # Not of a lower priority than the group: not a victim, and without it the group
        # fits on no node, so nothing is preempted.
        (
            pod("t", None, "super", "n0", **PREEMPTED_EARLIER),
            "n0",
            set(),
            "pod group is unschedulable, pod group is unschedulable",
        ),
    ],
    ids=["on-the-nominated-node", "on-another-node", "not-preempted", "same-priority"],
)
def test_a_victim_still_terminating_is_not_preempted_again(
    terminating, nominated, preempted, message
):
    """Two 4-CPU nodes run a low pod each, the third the terminating pod ``t``; a gang of
    three (minCount 3) with one member nominated to ``nominated``. ``t`` never gets a
    ``Preempted`` event: a victim already terminating is left to terminate."""
    victims = [pod("v-1", None, "low", "n1"), pod("v-2", None, "low", "n2"), terminating]
    gang = [pod_group("g", 3, "super"), *(pod(f"g-{i}", "g", "high") for i in range(3))]
    sim = simulate(victims, gang, parse_object(PRIORITY_CLASS_SUPER), nominate={"g-0": nominated})
    try:
        events = {e.involved_name for e in sim.cluster.events if e.reason == "Preempted"}
        assert events == preempted
        if message is not None:
            assert pod_group_message(sim) == message
    finally:
        sim.close()


PRIORITY_CLASS_SUPER = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "super"},
    "value": 2000,
}
"""Above ``high``: a group that may preempt a ``high`` pod."""


@pytest.mark.parametrize(
    ("min_count", "attempts"),
    [
        # Two pods are enough for the gang, but a low pod given back would leave the
        # third without a node: all three low pods go at once, and each pod of the group
        # is bound at its second attempt.
        (2, [2, 2, 2]),
        (3, [2, 2, 2]),
    ],
    ids=["min-count-below-the-group", "min-count-the-whole-group"],
)
def test_a_victim_is_given_back_only_if_no_placed_pod_is_lost(min_count, attempts):
    victims = [pod(f"v-{i}", None, "low") for i in range(3)]
    gang = [pod_group("g", min_count, "high"), *(pod(f"g-{i}", "g", "high") for i in range(3))]
    sim = simulate(victims, gang)
    try:
        pods = {p.name: p for p in sim.cluster.objects("Pod")}
        assert sorted(n for n, p in pods.items() if p.spec.node_name) == ["g-0", "g-1", "g-2"]
        got = [len(sim.attempts[pods[f"g-{i}"].metadata.uid]) for i in range(3)]
        assert got == attempts
    finally:
        sim.close()


def _victim(priority: int, pods: int, is_group: bool) -> Victim:
    return Victim(tuple(object() for _ in range(pods)), priority, is_group)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (_victim(10, 1, False), _victim(5, 1, False)),
        (_victim(5, 1, True), _victim(5, 1, False)),
        (_victim(5, 3, True), _victim(5, 2, True)),
    ],
    ids=["higher-priority", "group-before-pod", "larger-group"],
)
def test_more_important_victims_sort_first(a, b, monkeypatch):
    monkeypatch.setattr("kubesched.scheduler.pod_group_preemption.pod_start_time", lambda _p: 0.0)
    assert sorted([b, a], key=Victim.importance) == [a, b]


# -- asynchronous preemption (SchedulerAsyncPreemption) ----------------------------------------

SYNC_GATES = PREEMPTION_GATES + ",SchedulerAsyncPreemption=false"
GROUP_WAITING = "waiting for the preemption for this pod group to be finished"
LOW_PODS = [pod(f"v-{i}", None, "low") for i in range(3)]


def keeping(calls: list[Callable[[], None]]) -> Callable[[Simulation], None]:
    """A ``setup`` that keeps the asynchronous API calls of preemptions in ``calls``
    instead of running them at once (as ``kubesched run``'s workers run them later)."""

    def setup(sim: Simulation) -> None:
        for fwk in sim.scheduler.frameworks.values():
            fwk.run_api_calls = calls.append

    return setup


def refusing(sim: Simulation) -> None:
    """A ``setup`` after which the API server refuses every preemption call."""

    def refuse(node_name: str, preemptor: Any, victim: Any, plugin: str) -> None:
        raise RuntimeError("the API server is unavailable")

    for fwk in sim.scheduler.frameworks.values():
        fwk.preemption_executor.preempt_pod = refuse


def preempted(sim: Simulation) -> list[str]:
    return sorted(e.involved_name for e in sim.cluster.events if e.reason == "Preempted")


def bound(sim: Simulation) -> list[str]:
    return sorted(p.name for p in sim.cluster.objects("Pod") if p.spec.node_name)


@pytest.mark.parametrize(
    ("gates", "held"),
    [(PREEMPTION_GATES, True), (SYNC_GATES, False)],
    ids=["async-held-until-the-calls-are-done", "sync-preempted-in-the-cycle"],
)
def test_the_group_is_held_at_pre_enqueue_while_its_victims_are_preempted(gates, held):
    """The group's cycle hands its two victims to the executor; their API calls wait for
    a worker (as in ``kubesched run``). Meanwhile no victim is touched, the group's pods
    are held at DefaultPreemption's PreEnqueue with upstream's message (the unschedulable
    pods' periodic retry gates them), and once the calls are done the victims' deletions
    bring the group back and it is bound. Without the gate the victims go in the cycle."""
    calls: list[Callable[[], None]] = []
    sim = simulate(LOW_PODS, GANG, gates=gates, setup=keeping(calls))
    try:
        fwk = sim.scheduler.frameworks["default-scheduler"]
        members = [p for p in sim.cluster.objects("Pod") if p.name.startswith("g-")]
        if held:
            assert (len(calls), preempted(sim)) == (1, [])
            assert [sim.scheduler.queue.queue_of(p) for p in members] == ["gated", "gated"]
            for member in members:
                status = fwk.run_pre_enqueue_plugins(PodInfo(member))
                assert status is not None
                assert (status.code, status.message(), status.plugin) == (
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    GROUP_WAITING,
                    "DefaultPreemption",
                )
            for run_calls in calls:
                run_calls()
            assert len(preempted(sim)) == 2
            assert all(fwk.run_pre_enqueue_plugins(PodInfo(m)) is None for m in members)
            sim.run()
        else:
            assert (len(calls), len(preempted(sim))) == (0, 2)
        assert by_kind(set(bound(sim))) == (["g-0", "g-1"], 1)
    finally:
        sim.close()


def test_in_the_embedded_cluster_the_gate_changes_no_event_nor_placement():
    """The embedded cluster makes the calls at once: asynchronous or not, the same
    events in the same order and the same pods bound."""
    seen = []
    for gates in (PREEMPTION_GATES, SYNC_GATES):
        sim = simulate(LOW_PODS, GANG, gates=gates)
        try:
            events = [(e.reason, e.involved_name) for e in sim.cluster.events]
            seen.append((events, bound(sim)))
        finally:
            sim.close()
    assert seen[0] == seen[1]
    assert ("Preempted", "v-1") in seen[0][0] or ("Preempted", "v-0") in seen[0][0]


def test_a_failed_call_activates_the_groups_pods():
    """A victim the API server refuses: the calls end in an error, the group's pods are
    activated (not left among the unschedulable pods for an event that never comes) and
    no longer held."""
    calls: list[Callable[[], None]] = []
    sim = simulate(LOW_PODS, GANG, setup=keeping(calls))
    try:
        fwk = sim.scheduler.frameworks["default-scheduler"]
        activated: list[list[str]] = []
        fwk.pod_activator = lambda pods: activated.append(sorted(pods))
        refusing(sim)
        (run_calls,) = calls
        run_calls()
        assert activated == [["default/g-0", "default/g-1"]]
        assert preempted(sim) == []
        members = [p for p in sim.cluster.objects("Pod") if p.name.startswith("g-")]
        assert all(fwk.run_pre_enqueue_plugins(PodInfo(m)) is None for m in members)
        assert sim.metrics.preemption_goroutines_execution.labels("error")._value.get() == 1
    finally:
        sim.close()


def test_without_async_preemption_a_failed_call_is_the_groups_error():
    """Within the cycle, a refused call ends the group's cycle with an error: its
    PodGroupScheduled condition says SchedulerError, nothing is preempted."""
    sim = simulate(LOW_PODS, GANG, gates=SYNC_GATES, setup=refusing)
    try:
        (group,) = [g for g in sim.cluster.objects("PodGroup") if g.name == "g"]
        (condition,) = [c for c in group.status.conditions if c["type"] == "PodGroupScheduled"]
        assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
        assert "the API server is unavailable" in condition["message"]
        assert preempted(sim) == [] and bound(sim) == ["v-0", "v-1", "v-2"]
    finally:
        sim.close()
