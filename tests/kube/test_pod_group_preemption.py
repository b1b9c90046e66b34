"""A pod group's preemption carried out asynchronously, against a real kube-apiserver.

kube-scheduler v1.36.2 preempts for a pod group (WorkloadAwarePreemption) through its
preemption executor: with SchedulerAsyncPreemption on, the victims are deleted by a
goroutine after the group's cycle, counted in ``scheduler_preemption_goroutines_execution_total``
and ``scheduler_preemption_victims``. The real scheduler and ``kubesched run`` are held to
the same counts on the ``preempts-two-low-pods`` case of ``tests/pod_group_scenarios.py``.
Then ``kubesched run`` (in this process) with its API-call workers held back shows what
only the asynchronous calls allow: the group's cycle ends and its pods' refusals are
written while the victims still run untouched, the scheduling loop goes on with other
pods, the group's pods are held at DefaultPreemption's PreEnqueue, and once the calls run
the victims go and the group is bound. Last, while victims take minutes to terminate, the
real scheduler holds the group's pods gated (it requeues them at once after their cycle,
while the calls run) where kubesched leaves them among the unschedulable pods: the one
difference, seen only in ``scheduler_pending_pods``.
"""

from __future__ import annotations

import re
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from kubesched import Code, PodInfo
from kubesched.api import parse_object
from kubesched.bench.kube import external_metrics_url
from kubesched.testing.envtest import create_object
from tests.pod_group_scenarios import SCENARIOS, in_two_steps

from .conftest import Api, kube_scheduler_running, kubesched_running, wait_for
from .test_gang_retries import unschedulable_attempts

pytestmark = pytest.mark.envtest

CASE = "preempts-two-low-pods"
"""Two nodes each run a low-priority pod; a gang of two high-priority pods preempts both."""
GATES = SCENARIOS[CASE][0]
GROUP_WAITING = "waiting for the preemption for this pod group to be finished"
WORKERS = ("g-0", "g-1")
VICTIMS = ("v-0", "v-1")


def metric(text: str, name: str, labels: str = "") -> float:
    """The value of the sample ``name{labels}`` in a ``/metrics`` text (0 when absent)."""
    pattern = re.escape(name) + (r"\{" + re.escape(labels) + r"\}" if labels else "") + r" (\S+)$"
    found = re.search(pattern, text, re.M)
    return float(found.group(1)) if found else 0.0


def preemption_counts(text: str) -> dict[str, float]:
    """What the asynchronous preemptions left in the metrics."""
    return {
        "goroutines_succeeded": metric(
            text, "scheduler_preemption_goroutines_execution_total", 'result="success"'
        ),
        "goroutines_failed": metric(
            text, "scheduler_preemption_goroutines_execution_total", 'result="error"'
        ),
        "preemptions": metric(text, "scheduler_preemption_victims_count"),
        "victims": metric(text, "scheduler_preemption_victims_sum"),
    }


def _bound(api: Api, names: tuple[str, ...]) -> bool:
    return all((p := api.pod(n)) is not None and p["spec"].get("nodeName") for n in names)


def _create_case(api: Api, case: str) -> None:
    """Create the case's victims, let them be bound, then the gang."""
    before, after = in_two_steps(SCENARIOS[case][1])
    for manifest in before:
        create_object(api.client, manifest)
    wait_for(lambda: _bound(api, VICTIMS), 60, "the low-priority pods to be bound")
    for manifest in after:
        create_object(api.client, manifest)


def _real_metrics(proc: subprocess.Popen) -> Callable[[], str]:
    """A reader of the ``/metrics`` text of the real kube-scheduler ``proc``."""
    url = external_metrics_url(list(proc.args))
    assert url is not None
    insecure = ssl._create_unverified_context()  # its certificate is self-signed

    def read() -> str:
        with urllib.request.urlopen(url, timeout=10, context=insecure) as resp:
            return resp.read().decode()

    return read


def _run_case(api: Api) -> None:
    """:func:`_create_case`; wait until the gang is bound and the victims are gone."""
    _create_case(api, CASE)
    wait_for(lambda: _bound(api, WORKERS), 90, "the gang to be bound")
    wait_for(lambda: all(api.pod(v) is None for v in VICTIMS), 30, "the victims to go")


def test_the_real_scheduler_preempts_for_the_group_asynchronously(
    workload_api: Api, tmp_path: Path
) -> None:
    args = (f"--feature-gates={GATES}",)
    with kube_scheduler_running(workload_api.cp, tmp_path, args=args) as proc:
        _run_case(workload_api)
        counts = preemption_counts(_real_metrics(proc)())
    assert counts == {
        "goroutines_succeeded": 1.0,
        "goroutines_failed": 0.0,
        "preemptions": 1.0,
        "victims": 2.0,
    }


def test_kubesched_run_preempts_for_the_group_asynchronously_as_the_real_scheduler(
    workload_api: Api, tmp_path: Path
) -> None:
    with kubesched_running(workload_api.cp, GATES, tmp_path) as runner:
        _run_case(workload_api)
        counts = preemption_counts(generate_latest(runner.metrics.registry).decode())
    assert counts == {
        "goroutines_succeeded": 1.0,
        "goroutines_failed": 0.0,
        "preemptions": 1.0,
        "victims": 2.0,
    }


def _refusal(pod: dict[str, Any] | None) -> str | None:
    for condition in ((pod or {}).get("status") or {}).get("conditions") or ():
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition["message"]
    return None


def test_the_groups_pods_are_held_while_its_victims_wait_for_a_worker(
    workload_api: Api, tmp_path: Path
) -> None:
    """``kubesched run`` with the workers that make preemptions' API calls held back."""
    api = workload_api
    release = threading.Event()
    with kubesched_running(api.cp, GATES, tmp_path) as runner:
        fwk = runner.scheduler.frameworks["default-scheduler"]
        submit = fwk.run_api_calls
        assert submit is not None  # kubesched run: a pool of workers

        def held(calls: Callable[[], None]) -> None:
            submit(lambda: (release.wait(120), calls()))

        fwk.run_api_calls = held
        try:
            _create_case(api, CASE)
            # The group's cycle ended: its pods' refusals are written ...
            wait_for(lambda: all(_refusal(api.pod(n)) for n in WORKERS), 60, "the gang's refusals")
            # ... while the victims still run, untouched (no DisruptionTarget, no deletion).
            for name in VICTIMS:
                victim = api.pod(name)
                assert victim is not None
                assert "deletionTimestamp" not in victim["metadata"]
                conditions = (victim.get("status") or {}).get("conditions") or ()
                assert all(c["type"] != "DisruptionTarget" for c in conditions)
            # The loop goes on: another pod is scheduled meanwhile.
            create_object(
                api.client,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "other", "namespace": "default"},
                    "spec": {
                        "containers": [
                            {
                                "name": "w",
                                "image": "pause",
                                "resources": {"requests": {"cpu": "100m"}},
                            }
                        ]
                    },
                },
            )
            wait_for(lambda: _bound(api, ("other",)), 60, "another pod to be scheduled")
            # DefaultPreemption's PreEnqueue holds the group's pods.
            for name in WORKERS:
                pod = parse_object(api.pod(name))
                status = fwk.run_pre_enqueue_plugins(PodInfo(pod))
                assert status is not None
                assert (status.code, status.message()) == (
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    GROUP_WAITING,
                )
        finally:
            release.set()
        # The calls run: the victims go and the group is bound.
        wait_for(lambda: _bound(api, WORKERS), 90, "the gang to be bound")
        assert all(api.pod(v) is None for v in VICTIMS)
        pod = parse_object(api.pod(WORKERS[0]))
        assert fwk.run_pre_enqueue_plugins(PodInfo(pod)) is None


# -- while the victims terminate --------------------------------------------------------------

TERMINATING_CASE = "victims-still-terminating"
"""As ``preempts-two-low-pods``, but the victims take 5 minutes to terminate."""
SETTLE = 12.0
"""Seconds after the gang's refusals are written before the queue is looked at."""


def _pending(text: str) -> dict[str, float]:
    return {
        queue: metric(text, "scheduler_pending_pods", f'queue="{queue}"')
        for queue in ("active", "backoff", "unschedulable", "gated")
    }


def _while_victims_terminate(api: Api, read: Callable[[], str]) -> dict[str, Any]:
    """Create the case, wait for the gang's refusals and the preemption's one run of calls,
    let it settle; the attempts, the preemptions and where the gang's pods wait."""
    _create_case(api, TERMINATING_CASE)
    wait_for(lambda: all(_refusal(api.pod(n)) for n in WORKERS), 60, "the gang's refusals")
    wait_for(lambda: preemption_counts(read())["goroutines_succeeded"] == 1, 30, "the preemption")
    time.sleep(SETTLE)
    text = read()
    return {
        "attempts": unschedulable_attempts(text),
        "preemptions": preemption_counts(text)["preemptions"],
        "pending": _pending(text),
    }


HELD = {"active": 0.0, "backoff": 0.0, "unschedulable": 0.0, "gated": 2.0}
PARKED = {"active": 0.0, "backoff": 0.0, "unschedulable": 2.0, "gated": 0.0}


def test_the_real_scheduler_holds_the_group_gated_while_its_victims_terminate(
    workload_api: Api, tmp_path: Path
) -> None:
    """kube-scheduler v1.36.2 requeues the group's pods at once after its cycle (as it
    retries an unfit gang in a tight loop, see test_gang_retries.py); they meet
    DefaultPreemption's PreEnqueue while the calls run and stay gated: one attempt each."""
    args = (f"--feature-gates={SCENARIOS[TERMINATING_CASE][0]}",)
    with kube_scheduler_running(workload_api.cp, tmp_path, args=args) as proc:
        got = _while_victims_terminate(workload_api, _real_metrics(proc))
    assert got == {"attempts": 2, "preemptions": 1.0, "pending": HELD}


def test_kubesched_run_parks_the_group_while_its_victims_terminate(
    workload_api: Api, tmp_path: Path
) -> None:
    """``kubesched run`` does not requeue the group's pods without a cluster event that may
    help them: they wait among the unschedulable pods, not gated, for the victims to go.
    The same attempts, preemption, pod statuses and PodGroup condition (the recording of
    the case); only the queue they wait in differs."""
    gates = SCENARIOS[TERMINATING_CASE][0]
    with kubesched_running(workload_api.cp, gates, tmp_path) as runner:
        got = _while_victims_terminate(
            workload_api, lambda: generate_latest(runner.metrics.registry).decode()
        )
    assert got == {"attempts": 2, "preemptions": 1.0, "pending": PARKED}
