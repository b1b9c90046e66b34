"""Coscheduling end to end: manifests with PodGroups, simulated on the embedded cluster."""

from __future__ import annotations

import pytest

from kubesched.api import parse_manifests
from kubesched.simulate.driver import Simulation, simulate

from .helpers import coscheduling_config, placements, scheduled_condition


def manifests(
    nodes: int,
    groups: dict[str, tuple[int, int, str]],
    *,
    node_cpu: str = "1",
    pod_cpu: str = "1",
) -> list:
    """``nodes`` nodes of ``node_cpu``; ``groups``: name -> (pods, minMember, created)."""
    docs = []
    for i in range(nodes):
        docs.append(f"""
apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status:
  capacity: {{cpu: "{node_cpu}", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "{node_cpu}", memory: 8Gi, pods: "110"}}
""")
    for g, (count, min_member, created) in groups.items():
        docs.append(f"""
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: {g}, creationTimestamp: "{created}"}}
spec: {{minMember: {min_member}, scheduleTimeoutSeconds: 30}}
""")
        for i in range(count):
            docs.append(f"""
apiVersion: v1
kind: Pod
metadata:
  name: {g}-{i}
  labels: {{scheduling.x-k8s.io/pod-group: {g}}}
spec:
  containers:
  - {{name: c, image: app, resources: {{requests: {{cpu: "{pod_cpu}"}}}}}}
""")
    return parse_manifests("---".join(docs))


T0 = "2026-01-01T00:00:00Z"


def test_gang_that_cannot_fit_gets_no_node():
    # Room for 2 pods, the group needs 3: none is bound (all or nothing).
    sim = simulate(manifests(2, {"g": (3, 3, T0)}), config=coscheduling_config())
    # Rejected whole, the group waits in the unschedulable pods for an event that may help
    # it: the nodes its own members gave back do not count, so the run settles.
    assert sim.stop_reason == "settled"
    assert placements(sim) == {"g-0": None, "g-1": None, "g-2": None}
    messages = {p.metadata.name: scheduled_condition(p).message for p in sim.cluster.pods()}
    assert all(scheduled_condition(p).status == "False" for p in sim.cluster.pods())
    # The member that found no node says why, and that the whole group was rejected.
    assert any(
        "Insufficient cpu" in m
        and "PodGroup default/g gets rejected due to Pod" in m
        and "is unschedulable even after PostFilter" in m
        for m in messages.values()
    ), messages
    # The others were reserved, then rejected while waiting at Permit.
    assert any(
        "rejected while waiting on permit: optimistic rejection in PostFilter" in m
        for m in messages.values()
    ), messages
    assert not any(e.reason == "Scheduled" for e in sim.cluster.events)


def test_without_coscheduling_the_same_workload_is_placed_partially():
    run = simulate(manifests(2, {"g": (3, 3, T0)}))
    assert sum(node is not None for node in placements(run).values()) == 2


def test_gang_that_fits_is_bound_whole():
    run = simulate(manifests(3, {"g": (3, 3, T0)}), config=coscheduling_config())
    assert sorted(placements(run).values()) == ["n0", "n1", "n2"]


def test_gang_with_too_few_pods_waits_with_prefilter_reason():
    run = simulate(manifests(3, {"g": (2, 3, T0)}), config=coscheduling_config())
    assert placements(run) == {"g-0": None, "g-1": None}
    cond = scheduled_condition(run.cluster.pods()[0])
    assert cond.reason == "Unschedulable"
    assert (
        "pre-filter pod g-0 cannot find enough sibling pods, current pods number: 2, "
        "minMember of group: 3" in cond.message
    )


def test_minimum_placed_then_the_rest_as_they_fit():
    # minMember 2 of 3 pods, room for 2: the quorum is bound, the third stays pending.
    sim = simulate(manifests(2, {"g": (3, 2, T0)}), config=coscheduling_config())
    placed = placements(sim)
    assert sum(node is not None for node in placed.values()) == 2


@pytest.mark.parametrize(
    ("created_a", "created_b", "winner"),
    [
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z", "a"),
        ("2026-01-01T00:00:05Z", "2026-01-01T00:00:00Z", "b"),
    ],
    ids=["older-a-wins", "older-b-wins"],
)
def test_two_groups_competing_the_older_group_gets_the_room(created_a, created_b, winner):
    # Room for 3 pods; two groups of 3 (minMember 3): the group created first is placed
    # whole, the other gets nothing (rather than 2 + 1 and neither running).
    sim = simulate(
        manifests(3, {"a": (3, 3, created_a), "b": (3, 3, created_b)}),
        config=coscheduling_config(),
    )
    placed = placements(sim)
    loser = "b" if winner == "a" else "a"
    assert all(placed[f"{winner}-{i}"] is not None for i in range(3)), placed
    assert all(placed[f"{loser}-{i}"] is None for i in range(3)), placed


@pytest.mark.parametrize(
    ("backoff", "refused"),
    [(600, True), (0, False)],
    ids=["backoff-past-the-retry", "no-backoff"],
)
def test_group_backoff_refuses_the_retry_within_it(backoff, refused):
    """The rejected group is retried with the unschedulable pods after 5 minutes; within
    its ``podGroupBackoffSeconds`` PreFilter refuses it at once."""
    sim = simulate(
        manifests(2, {"g": (3, 3, T0)}),
        config=coscheduling_config({"podGroupBackoffSeconds": backoff}),
    )
    assert set(placements(sim).values()) == {None}
    retried = [r for records in sim.attempts.values() for r in records if r.started_at > 0]
    assert retried
    assert all(("podGroup default/g failed recently" in r.message) is refused for r in retried)


def test_pods_added_later_complete_the_group():
    # 2 of 3 pods first: PreFilter rejects them; the third arrives and they all fit.
    objs = manifests(3, {"g": (3, 3, T0)})
    third = next(o for o in objs if o.kind == "Pod" and o.metadata.name == "g-2")
    sim = Simulation([o for o in objs if o is not third], config=coscheduling_config())
    first = sim.run()
    assert first.stop_reason == "settled"
    assert set(placements(sim).values()) == {None}
    sim.cluster.create(third)
    sim.run()
    sim.close()
    assert sorted(v for v in placements(sim).values() if v) == ["n0", "n1", "n2"]
