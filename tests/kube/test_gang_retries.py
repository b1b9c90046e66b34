"""A gang that can never fit, with SchedulerPopFromBackoffQ on (its default), and nothing
else queued: ``kubesched run`` tries each worker a few times and then leaves the gang to
the unschedulable pods (retried after 5 minutes, or on an event that may help). The real
kube-scheduler v1.36.2 on the same objects does not: its rejected members come back through
the backoffQ at once and it retries the gang in a tight loop, thousands of attempts in
seconds. Both are counted with their own ``scheduler_schedule_attempts_total``, one after
the other on the session's control plane serving the Workload API (cleaned in between)."""

from __future__ import annotations

import re
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from kubesched.bench.kube import external_metrics_url

from .conftest import Api, kubesched_running, wait_for

pytestmark = pytest.mark.envtest

GATES = "GenericWorkload=true,GangScheduling=true"
"""Gang scheduling on; SchedulerPopFromBackoffQ keeps its default (on)."""
SETTLE = 15.0
"""Seconds given to the first rounds of attempts (the pods arrive one by one)."""
WATCH = 10.0
"""Seconds then watched: a tight loop would make hundreds of attempts in them."""
MAX_ATTEMPTS_PER_POD = 3
"""What kubesched stays within: the rounds while the gang's pods arrive one by one."""


def gang_that_cannot_fit() -> list[dict[str, Any]]:
    """Two nodes of 4 CPUs and a gang of three workers of 3 CPUs: two find a node, the
    third never does, so the gang is never placed."""
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
            "status": {
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            },
        }
        for i in range(2)
    ]
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    }
    workers = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"w-{i}", "namespace": "default"},
            "spec": {
                "schedulingGroup": {"podGroupName": "g"},
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "3"}}}
                ],
            },
        }
        for i in range(3)
    ]
    return [*nodes, group, *workers]


_UNSCHEDULABLE = re.compile(
    r'^scheduler_schedule_attempts_total\{[^}]*result="unschedulable"[^}]*\} (\S+)$', re.M
)


def unschedulable_attempts(metrics_text: str) -> int:
    """The unschedulable attempts of every profile in a scheduler's ``/metrics`` text."""
    return int(sum(float(v) for v in _UNSCHEDULABLE.findall(metrics_text)))


def attempts_over_time(read: Callable[[], str]) -> tuple[int, int]:
    """The attempts after :data:`SETTLE` seconds, and after :data:`WATCH` more."""
    time.sleep(SETTLE)
    settled = unschedulable_attempts(read())
    time.sleep(WATCH)
    return settled, unschedulable_attempts(read())


@pytest.fixture
def real_attempts(workload_api: Api, tmp_path: Path) -> Iterator[tuple[int, int]]:
    """The real kube-scheduler's counts on the gang."""
    cp = workload_api.cp
    command = cp.kube_scheduler_command(tmp_path, args=(f"--feature-gates={GATES}",))
    url = external_metrics_url(command)
    assert url is not None
    with (tmp_path / "kube-scheduler.log").open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        insecure = ssl._create_unverified_context()  # its certificate is self-signed

        def read() -> str:
            with urllib.request.urlopen(url, timeout=10, context=insecure) as resp:
                return resp.read().decode()

        wait_for(lambda: _readable(read), 60, "kube-scheduler's /metrics")
        workload_api.create_many(gang_that_cannot_fit())
        yield attempts_over_time(read)
    finally:
        proc.terminate()
        proc.wait(30)


def _readable(read: Callable[[], str]) -> bool:
    try:
        read()
    except OSError:
        return False
    return True


@pytest.fixture
def kubesched_attempts(workload_api: Api, tmp_path: Path) -> Iterator[tuple[int, int]]:
    """``kubesched run``'s counts (in this process) on the same objects."""
    with kubesched_running(workload_api.cp, GATES, tmp_path) as runner:
        workload_api.create_many(gang_that_cannot_fit())
        yield attempts_over_time(lambda: generate_latest(runner.metrics.registry).decode())


def test_kubesched_does_not_retry_a_gang_that_cannot_fit_in_a_tight_loop(
    kubesched_attempts: tuple[int, int],
) -> None:
    settled, later = kubesched_attempts
    # Each worker tried a few times while the gang arrived, then parked.
    assert 3 <= settled <= 3 * MAX_ATTEMPTS_PER_POD
    assert later == settled


def test_the_real_kube_scheduler_retries_it_in_a_tight_loop(
    real_attempts: tuple[int, int],
) -> None:
    settled, later = real_attempts
    # What kubesched does differently: far more attempts, and still going.
    assert settled > 10 * 3 * MAX_ATTEMPTS_PER_POD
    assert later > settled
