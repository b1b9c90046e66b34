"""Jobs and pods running to their end in virtual time on the embedded cluster.

The conditions, reasons and messages are kube-controller-manager v1.36.2's (tests/kube/
test_controllers.py sees them on the real one): a job that succeeded has
``SuccessCriteriaMet`` then ``Complete`` (``CompletionsReached``), a failed one
``FailureTarget`` then ``Failed`` (``BackoffLimitExceeded`` or ``DeadlineExceeded``).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import Job
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.kubelet import (
    DEFAULT_JOB_POD_RUN_SECONDS,
    EXIT_CODE_ANNOTATION,
    RUN_SECONDS_ANNOTATION,
)
from kubesched.notices import collecting_notices

from .helpers import obj, pod, template

COMPLETE = [
    ("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
    ("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
]
BACKOFF = [
    ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
]
DEADLINE = [
    ("FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline"),
    ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline"),
]


def job(name: str = "j", run: float | None = 30, code: int = 0, **spec: Any) -> Any:
    ann = {EXIT_CODE_ANNOTATION: str(code)}
    if run is not None:
        ann[RUN_SECONDS_ANNOTATION] = str(run)
    t = template({"job": name}, restartPolicy=spec.pop("restartPolicy", "Never"))
    t["metadata"]["annotations"] = ann
    return obj("Job", name, spec={**spec, "template": t})


KUBELET_LABELS = {
    "kubernetes.io/hostname": "n1",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
}


def run(cluster: MemoryCluster, until: float = 10_000) -> list[tuple[float, str]]:
    """Bind every pending pod at once, advance through the timers; the times at which
    pods were created, as (time, name)."""
    cluster.create(
        obj(
            "Node",
            "n1",
            # The labels every kubelet sets: their defaulting would be noticed too.
            metadata={"labels": KUBELET_LABELS},
            status={"allocatable": {"cpu": "100", "pods": "1000"}},
        )
    )
    created: list[tuple[float, str]] = []
    seen: set[str] = set()
    while True:
        for p in cluster.pods():
            if p.name not in seen:
                seen.add(p.name)
                created.append((cluster.now(), p.name))
            if not p.spec.node_name and p.metadata.deletion_timestamp is None:
                cluster.bind(p, "n1")
        when = cluster.next_event_time()
        if when is None or when > until:
            return created
        cluster.clock.set(max(when, cluster.now()))
        cluster.advance()


def conditions(j: Job) -> list[tuple[str, str | None, str | None]]:
    return [(c.type, c.reason, c.message) for c in j.status.conditions]


@pytest.mark.parametrize(
    ("spec", "starts", "finished_at"),
    [
        ({"completions": 3, "parallelism": 1}, [0, 30, 60], 90),
        ({"completions": 3, "parallelism": 2}, [0, 0, 30], 60),
        ({"completions": 2, "parallelism": 5}, [0, 0], 30),
        ({"parallelism": 2}, [0, 0], 30),
        ({"completions": 3, "parallelism": 2, "completionMode": "Indexed"}, [0, 0, 30], 60),
    ],
    ids=[
        "one-at-a-time",
        "two-at-a-time",
        "parallelism-above-completions",
        "work-queue",
        "indexed",
    ],
)
def test_jobs_complete_in_virtual_time(
    cluster: MemoryCluster, spec: dict, starts: list[float], finished_at: float
):
    cluster.create(job(**spec))
    created = run(cluster)
    assert [t for t, _ in created] == starts
    j = cluster.get("Job", "default", "j")
    assert conditions(j) == COMPLETE
    assert j.status.completion_time == j.status.conditions[-1].last_transition_time
    assert (j.status.succeeded, j.status.failed, j.status.active) == (len(starts), 0, 0)
    assert cluster.now() == finished_at
    assert {p.status.phase for p in cluster.pods()} == {"Succeeded"}
    if spec.get("completionMode") == "Indexed":
        assert j.status.completed_indexes == "0-2"
    assert [e.reason for e in cluster.events if e.involved_kind == "Job"][-1] == "Completed"


@pytest.mark.parametrize(
    ("backoff_limit", "starts"),
    # After each failure the next pod waits 10 s, 20 s, 40 s... (the pod failure backoff).
    [(0, [0]), (1, [0, 40]), (3, [0, 40, 90, 160])],
    ids=["no-retry", "one-retry", "three-retries"],
)
def test_failing_pods_exhaust_the_backoff_limit(
    cluster: MemoryCluster, backoff_limit: int, starts: list[float]
):
    cluster.create(job(code=1, backoffLimit=backoff_limit))
    created = run(cluster)
    assert [t for t, _ in created] == starts
    j = cluster.get("Job", "default", "j")
    assert conditions(j) == BACKOFF
    assert j.status.failed == backoff_limit + 1
    assert all(p.status.phase == "Failed" for p in cluster.pods())


def test_on_failure_pods_fail_too(cluster: MemoryCluster):
    cluster.create(job(code=2, backoffLimit=0, restartPolicy="OnFailure"))
    run(cluster)
    assert conditions(cluster.get("Job", "default", "j")) == BACKOFF


def test_active_deadline_deletes_the_pods_and_fails_the_job(cluster: MemoryCluster):
    cluster.create(job(run=3600, activeDeadlineSeconds=100, completions=2))
    run(cluster)
    j = cluster.get("Job", "default", "j")
    assert conditions(j) == DEADLINE
    assert j.status.failed == 1 and j.status.active == 0
    # Failed once the deleted pod (30 s grace period) is gone.
    assert (
        j.status.conditions[-1].last_transition_time.timestamp() - (j.status.start_time.timestamp())
        == 130
    )
    assert cluster.pods() == []
    deleted = [e.message for e in cluster.events if e.reason == "SuccessfulDelete"]
    assert len(deleted) == 1 and deleted[0].startswith("Deleted pod: j-")


def test_job_pods_without_a_run_time_run_the_default_within_a_time_window(
    cluster: MemoryCluster,
):
    cluster.schedule_until = 3600
    cluster.create(job(run=None))
    run(cluster)
    assert cluster.now() == DEFAULT_JOB_POD_RUN_SECONDS
    assert conditions(cluster.get("Job", "default", "j")) == COMPLETE


def test_without_a_time_window_job_pods_without_a_run_time_run_on(cluster: MemoryCluster):
    with collecting_notices() as notices:
        cluster.create(job(run=None, parallelism=2))
        run(cluster)
    assert {p.status.phase for p in cluster.pods()} == {"Running"}
    assert cluster.get("Job", "default", "j").status.conditions == []
    assert [n.obj for n in notices] == ["Job default/j"]


def test_suspended_job_creates_nothing(cluster: MemoryCluster):
    cluster.create(job(suspend=True))
    assert run(cluster) == []
    assert cluster.get("Job", "default", "j").status.conditions == []


@pytest.mark.parametrize(
    ("annotations", "restart", "phase"),
    [
        ({RUN_SECONDS_ANNOTATION: "5"}, "Never", "Succeeded"),
        ({RUN_SECONDS_ANNOTATION: "5", EXIT_CODE_ANNOTATION: "137"}, "Never", "Failed"),
        ({RUN_SECONDS_ANNOTATION: "5"}, "OnFailure", "Succeeded"),
        ({RUN_SECONDS_ANNOTATION: "5"}, "Always", "Running"),
        ({}, "Never", "Running"),
    ],
    ids=["succeeds", "fails", "on-failure-succeeds", "always-restarts", "no-run-time"],
)
def test_bare_pods_end_after_their_run_time(
    cluster: MemoryCluster, annotations: dict, restart: str, phase: str
):
    p = pod("p", restartPolicy=restart)
    p.metadata.annotations = annotations
    with collecting_notices() as notices:
        cluster.create(p)
        run(cluster)
    got = cluster.get("Pod", "default", "p")
    assert got.status.phase == phase
    if phase != "Running":
        assert cluster.now() == 5
        ready = next(c for c in got.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("False", "PodCompleted")
    assert bool(notices) == (restart == "Always")


def test_a_bad_run_time_is_noticed_and_the_pod_runs_on(cluster: MemoryCluster):
    p = pod("p", restartPolicy="Never")
    p.metadata.annotations = {RUN_SECONDS_ANNOTATION: "soon"}
    with collecting_notices() as notices:
        cluster.create(p)
        run(cluster)
    assert cluster.get("Pod", "default", "p").status.phase == "Running"
    (n,) = notices
    assert "'soon' is not a number of seconds" in n.message and n.obj == "Pod default/p"


def test_a_controller_gets_one_notice_for_all_its_pods(cluster: MemoryCluster):
    t = template({"app": "web"})
    t["metadata"]["annotations"] = {RUN_SECONDS_ANNOTATION: "5"}
    with collecting_notices() as notices:
        cluster.create(
            obj(
                "ReplicaSet",
                "web",
                spec={"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": t},
            )
        )
        run(cluster)
    assert [n.obj for n in notices] == ["ReplicaSet default/web"]
    assert {p.status.phase for p in cluster.pods()} == {"Running"}
