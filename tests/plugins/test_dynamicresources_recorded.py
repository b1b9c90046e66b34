"""DynamicResources' v1.36 features (consumable capacity, device taints, partitionable
devices, extended resources backed by DRA, each with its gate on and off) against the
real kube-scheduler v1.36, case by case, as recorded in tests/fixtures/dra/dra-features.json
(re-record with tests/fixtures/dra/record.py): the same placements, allocated devices,
claims made for extended resources and messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.config import config_from_dict
from kubesched.config.effective import effective_configuration
from kubesched.features import FeatureGates
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation
from tests.fixtures.dra.record import (
    FIXTURE,
    allocation_summary,
    claim_key,
    extended_resource_status,
)
from tests.fixtures.scheduler.record import namespaced

RECORDING: dict[str, Any] = json.loads(FIXTURE.read_text())
CASES = [(group["gates"], case) for group in RECORDING["groups"] for case in group["cases"]]


def _pod_outcome(sim: Simulation, ns: str, name: str) -> dict[str, Any]:
    pod = sim.cluster.get("Pod", ns, name)
    condition = next((c for c in pod.status.conditions or () if c.type == "PodScheduled"), None)
    messages: list[str] = []
    for e in sim.cluster.events:
        if (
            e.reason == "FailedScheduling"
            and (e.involved_namespace, e.involved_name) == (ns, name)
            and e.message not in messages
        ):
            messages.append(e.message)
    return {
        "phase": pod.status.phase,
        "nodeName": pod.spec.node_name,
        "podScheduled": (
            {"status": condition.status, "reason": condition.reason, "message": condition.message}
            if condition is not None
            else None
        ),
        "failedScheduling": messages,
    }


def kubesched_outcome(gates: dict[str, bool], case: dict[str, Any]) -> dict[str, Any]:
    """What kubesched's embedded cluster makes of a recorded case, in the recording's
    terms: the case's pods are added one by one, each scheduled before the next."""
    ns = case["id"]
    pods = {o["metadata"]["name"]: o for o in case["objects"] if o["kind"] == "Pod"}
    others = [namespaced(o, ns) for o in case["objects"] if o["kind"] != "Pod"]
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": RECORDING["profiles"],
        }
    )
    effective = effective_configuration(config, registry, gates=FeatureGates(gates))
    sim = Simulation(
        [parse_object(d) for d in [*RECORDING["nodes"], *others]],
        config=effective,
        registry=registry,
        # The recording's kube-apiserver keeps its default gates: only the scheduler's change.
        apiserver_gates=FeatureGates(),
    )
    sim.cluster.node_lifecycle.pod_gc = False
    # The recording's kube-controller-manager runs the resourceclaim controller only.
    sim.cluster.device_taint_eviction.enabled = False
    seen: dict[str, Any] = {"pods": {}, "claims": {}}
    try:
        for name in case["pods"]:
            sim.cluster.create(parse_object(namespaced(pods[name], ns)))
            sim.run()
            seen["pods"][name] = _pod_outcome(sim, ns, name)
        claims = [c.to_dict() for c in sim.cluster.objects("ResourceClaim", ns)]
        keys = {c["metadata"]["name"]: claim_key(c) for c in claims}
        for claim in sorted(claims, key=claim_key):
            seen["claims"][claim_key(claim)] = allocation_summary(claim)
        for name in case["pods"]:
            pod = sim.cluster.get("Pod", ns, name).to_dict()
            seen["pods"][name]["extendedResourceClaimStatus"] = extended_resource_status(pod, keys)
    finally:
        sim.close()
    return seen


@pytest.mark.parametrize(
    ("gates", "case"),
    CASES,
    ids=[f"{case['id']}{''.join(f'-{k}={v}' for k, v in gates.items())}" for gates, case in CASES],
)
def test_outcomes_are_the_real_schedulers(gates: dict[str, bool], case: dict[str, Any]) -> None:
    ours = kubesched_outcome(gates, case)
    # The embedded cluster's kubelets start a bound pod; the recording's cluster has none,
    # so its pods stay Pending: the phase is the one thing not compared.
    for outcome in (ours, case["recorded"]):
        for pod in outcome["pods"].values():
            pod.pop("phase")
    assert ours == case["recorded"]
