"""A preemption through the real kube-apiserver under kube-scheduler v1.36 and under
``kubesched run`` with SchedulerAsyncPreemption and SchedulerPopFromBackoffQ on (the
default) and off: the same victim, condition, nomination, events and final node."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.envtest import ControlPlane

from .conftest import (
    Api,
    bound,
    kubesched_process,
    pod_manifest,
    start_kube_scheduler,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.envtest

GATES_OFF = "SchedulerAsyncPreemption=false,SchedulerPopFromBackoffQ=false"


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _bound_pod(name: str, node: str, priority_class: str) -> dict[str, Any]:
    manifest = pod_manifest(name, cpu="800m", priority_class=priority_class, grace=30)
    manifest["spec"]["nodeName"] = node
    return manifest


def _preempt(api: Api, start: Callable[[], subprocess.Popen]) -> dict[str, Any]:
    """Two full nodes (a low-priority pod on n0, a mid-priority one on n1), a scheduler,
    then a high-priority pod: what the cluster shows of its preemption."""
    for name, value in (("low", 10), ("mid", 20), ("high", 1000)):
        api.create(_priority_class(name, value))
    api.nodes(2, cpu="1")
    api.create(_bound_pod("lowpod", "n0", "low"))
    api.create(_bound_pod("midpod", "n1", "mid"))
    proc = start()
    try:
        urgent = api.create(pod_manifest("urgent", cpu="800m", priority_class="high"))
        victim = wait_for(
            lambda: (p := api.pod("lowpod")) and p["metadata"].get("deletionTimestamp") and p,
            90,
            "the victim's deletion",
        )
        nominated = wait_for(
            lambda: ((api.pod("urgent") or {}).get("status") or {}).get("nominatedNodeName"),
            60,
            "the nomination",
        )
        events = wait_for(
            lambda: (
                {e["reason"]: e for e in api.events()}
                if {"Preempted", "FailedScheduling"} <= {e["reason"] for e in api.events()}
                else None
            ),
            60,
            "the events",
        )
        # Nothing runs pods here: end the victim as its kubelet would.
        api.delete("/api/v1/namespaces/default/pods/lowpod", gracePeriodSeconds=0)
        node = wait_for(lambda: bound(api.pods()).get("urgent"), 90, "urgent bound")
    finally:
        proc.terminate()
        proc.wait(60)
    condition = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    preempted, failed = events["Preempted"], events["FailedScheduling"]
    return {
        "victim": victim["metadata"]["name"],
        "midpod kept": not (api.pod("midpod") or {"metadata": {"deletionTimestamp": 1}})[
            "metadata"
        ].get("deletionTimestamp"),
        "condition": (condition["status"], condition["reason"], condition["message"]),
        "nominated": nominated,
        "preempted event": (
            preempted["regarding"]["name"],
            preempted["note"].replace(urgent["metadata"]["uid"], "<uid>"),
        ),
        "failed scheduling": (failed["regarding"]["name"], re.sub(r"\s+", " ", failed["note"])),
        "node": node,
        "nominated after binding": (api.pod("urgent") or {})["status"].get("nominatedNodeName"),
    }


def test_preemption_matches_kube_scheduler_with_gates_on_and_off(
    api: Api, control_plane: ControlPlane, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "kubesched")

    def kubesched(*extra: str) -> Callable[[], subprocess.Popen]:
        def start() -> subprocess.Popen:
            proc, _ = kubesched_process(control_plane.kubeconfig, config, *extra)
            return proc

        return start

    starts = {
        "kube-scheduler": lambda: start_kube_scheduler(control_plane, tmp_path / "kube-scheduler"),
        "kubesched": kubesched(),
        "kubesched, gates off": kubesched(f"--feature-gates={GATES_OFF}"),
    }
    seen: dict[str, dict[str, Any]] = {}
    for name, start in starts.items():
        (tmp_path / "kube-scheduler").mkdir(exist_ok=True)
        seen[name] = _preempt(api, start)
        api.clean()
    want = seen["kube-scheduler"]
    assert want["victim"] == "lowpod" and want["midpod kept"]
    assert want["nominated"] == want["node"] == "n0"
    assert want["preempted event"] == ("lowpod", "Preempted by pod <uid> on node n0")
    for name in ("kubesched", "kubesched, gates off"):
        assert seen[name] == want, name
