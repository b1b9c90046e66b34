"""kubesched's FailedScheduling messages and PodScheduled conditions are the real v1.36
kube-scheduler's, case by case, as recorded in tests/fixtures/scheduler/failed-scheduling.json
(re-record with tests/fixtures/scheduler/record.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.config import config_from_dict
from kubesched.simulate.driver import Simulation
from tests.fixtures.scheduler.record import FIXTURE, namespaced

RECORDING: dict[str, Any] = json.loads(FIXTURE.read_text())


def kubesched_outcome(case: dict[str, Any]) -> dict[str, Any]:
    """What kubesched's embedded cluster makes of a recorded case, in the recording's terms."""
    ns = case["id"]
    docs = [*RECORDING["nodes"], *(namespaced(d, ns) for d in case["objects"])]
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": RECORDING["profiles"],
        }
    )
    sim = Simulation([parse_object(d) for d in docs], config=config)
    # The recording's control plane ran kube-controller-manager's ResourceClaim controller
    # only: no pod garbage collector deleted the pod bound to a missing node.
    sim.cluster.node_lifecycle.pod_gc = False
    try:
        sim.run()
        pod = sim.cluster.get("Pod", ns, case["pod"])
        condition = next((c for c in pod.status.conditions or () if c.type == "PodScheduled"), None)
        messages: list[str] = []
        for e in sim.cluster.events:
            if (
                e.reason == "FailedScheduling"
                and (e.involved_namespace, e.involved_name) == (ns, case["pod"])
                and e.message not in messages
            ):
                messages.append(e.message)
    finally:
        sim.close()
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


@pytest.mark.parametrize("case", RECORDING["cases"], ids=[c["id"] for c in RECORDING["cases"]])
def test_messages_are_the_real_schedulers(case: dict[str, Any]) -> None:
    assert kubesched_outcome(case) == case["recorded"]
