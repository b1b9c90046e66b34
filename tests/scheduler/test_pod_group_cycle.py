"""The pod group cycle in the embedded cluster: what happens to the pods and to the
PodGroup's PodGroupScheduled condition when things go wrong or change later."""

from __future__ import annotations

from typing import Any

from kubesched.api import parse_object
from kubesched.config import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.scheduler.pod_group_cycle import PodGroupCycle
from kubesched.simulate.driver import Simulation
from kubesched.testing import make_node, make_pod
from tests.pod_group_scenarios import GANG_GATES


def basic_group() -> Any:
    return parse_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"schedulingPolicy": {"basic": {}}},
        }
    )


def pod(name: str, cpu: str = "1") -> Any:
    manifest = make_pod(name).req(cpu=cpu).manifest()
    manifest["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    return parse_object(manifest)


def simulation(objects: list[Any]) -> Simulation:
    registry = default_registry()
    gates = parse_feature_gates([GANG_GATES])
    config = effective_configuration(default_configuration(registry, gates), registry, gates=gates)
    nodes = [make_node(f"n{i}").capacity(cpu="4", pods=110).obj() for i in range(2)]
    return Simulation([*nodes, *objects], config=config, registry=registry)


def condition(sim: Simulation, kind: str, name: str, ctype: str) -> dict[str, Any]:
    obj = next(o for o in sim.cluster.objects(kind) if o.name == name).to_dict()
    return next(c for c in obj["status"]["conditions"] if c["type"] == ctype)


def test_a_bug_in_the_cycle_requeues_every_pod_with_the_error(monkeypatch):
    def broken(self, fwk, members):
        raise RuntimeError("boom")

    monkeypatch.setattr(PodGroupCycle, "schedule", broken)
    sim = simulation([basic_group(), pod("a"), pod("b")])
    try:
        sim.run()
        for name in ("a", "b"):
            scheduled = condition(sim, "Pod", name, "PodScheduled")
            assert (scheduled["status"], scheduled["reason"]) == ("False", "SchedulerError")
            assert "boom" in scheduled["message"]
        group = condition(sim, "PodGroup", "g", "PodGroupScheduled")
        assert (group["status"], group["reason"]) == ("False", "SchedulerError")
    finally:
        sim.close()


def test_a_scheduled_group_stays_scheduled_when_a_later_pod_does_not_fit():
    sim = simulation([basic_group(), pod("a"), pod("b")])
    try:
        sim.run()
        assert condition(sim, "PodGroup", "g", "PodGroupScheduled")["status"] == "True"
        sim.cluster.create(pod("too-big", cpu="5"))
        sim.run()
        refused = condition(sim, "Pod", "too-big", "PodScheduled")
        assert refused["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
        group = condition(sim, "PodGroup", "g", "PodGroupScheduled")
        assert (group["status"], group["reason"]) == ("True", "Scheduled")
    finally:
        sim.close()
