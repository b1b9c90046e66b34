"""kubesched with StorageCapacityScoring and VolumeLimitScaling chooses the nodes, and says
the FailedScheduling messages, that the real v1.36.2 kube-scheduler did on the cases of
``tests/storage_gates.py`` (recorded in tests/fixtures/scheduler/storage-gates.json)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.config import config_from_dict, effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation
from tests.fixtures.scheduler.record import namespaced
from tests.storage_gates import (
    CASES,
    NODES,
    RECORDING,
    SETUPS,
    chosen_node,
    node,
    profiles_for,
)

RECORDED: dict[str, Any] = json.loads(RECORDING.read_text())


def kubesched_outcome(case: dict[str, Any]) -> dict[str, Any]:
    """The node kubesched's embedded cluster chose for the case's pod, and its
    FailedScheduling messages, in the recording's terms."""
    gates_text = SETUPS[case["setup"]]
    gates = parse_feature_gates([gates_text] if gates_text else [])
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": profiles_for(gates_text),
        },
        registry,
        gates=gates,
    )
    ns = case["id"]
    docs = [node(n) for n in NODES] + [namespaced(o, ns) for o in case["objects"]]
    sim = Simulation(
        [parse_object(d) for d in docs],
        config=effective_configuration(config, registry, gates=gates),
    )
    try:
        sim.run()
        pod = sim.cluster.get("Pod", ns, "app")
        claims = [
            c.model_dump(mode="json", by_alias=True)
            for c in sim.cluster.objects("PersistentVolumeClaim")
            if c.namespace == ns
        ]
        messages: list[str] = []
        for e in sim.cluster.events:
            if (
                e.reason == "FailedScheduling"
                and (e.involved_namespace, e.involved_name) == (ns, "app")
                and e.message not in messages
            ):
                messages.append(e.message)
    finally:
        sim.close()
    chosen = chosen_node(pod.model_dump(mode="json", by_alias=True), claims)
    return {"node": chosen, "failedScheduling": messages}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_nodes_and_messages_are_the_real_schedulers(case: dict[str, Any]) -> None:
    assert kubesched_outcome(case) == RECORDED[case["id"]]
