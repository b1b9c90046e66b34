"""CronJobs on the embedded cluster: Jobs on schedule within the run's time window."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import CronJobStatus
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.cronjobs import SCHEDULED_TIMESTAMP_ANNOTATION
from kubesched.backend.memory.kubelet import RUN_SECONDS_ANNOTATION
from kubesched.notices import collecting_notices

from .helpers import obj, template
from .test_memory_jobs import run


def cron_job(schedule: str = "*/10 * * * *", run_seconds: float = 60, **spec: Any) -> Any:
    t = template({"app": "report"}, restartPolicy="Never")
    t["metadata"]["annotations"] = {RUN_SECONDS_ANNOTATION: str(run_seconds)}
    return obj(
        "CronJob",
        "report",
        spec={"schedule": schedule, "jobTemplate": {"spec": {"template": t}}, **spec},
    )


def jobs(cluster: MemoryCluster) -> list[str]:
    return sorted(j.name for j in cluster.objects("Job"))


def reasons(cluster: MemoryCluster) -> list[str]:
    return [e.reason for e in cluster.events if e.involved_kind == "CronJob"]


def test_jobs_are_created_on_schedule_within_the_window(cluster: MemoryCluster):
    cluster.schedule_until = 3600
    cluster.create(cron_job(successfulJobsHistoryLimit=10))
    created = run(cluster)
    # 2026-01-01T00:10Z is minute 29,453,770 since 1970: the Job's name suffix.
    assert jobs(cluster) == [f"report-{29453760 + 10 * i}" for i in range(1, 7)]
    assert [t for t, _ in created] == [600.0 * i for i in range(1, 7)]
    cj = cluster.get("CronJob", "default", "report")
    assert cj.status.last_schedule_time.isoformat() == "2026-01-01T01:00:00+00:00"
    # The last Job's pod ended at 01:01, after the window: it ran to its end.
    assert cj.status.active == []
    assert cj.status.last_successful_time.isoformat() == "2026-01-01T01:01:00+00:00"
    first = cluster.get("Job", "default", "report-29453770")
    assert first.metadata.annotations[SCHEDULED_TIMESTAMP_ANNOTATION] == "2026-01-01T00:10:00+00:00"
    assert first.metadata.controller_ref.kind == "CronJob"
    assert first.finished == "Complete"
    assert reasons(cluster).count("SuccessfulCreate") == 6


def test_history_limits_keep_the_newest_finished_jobs(cluster: MemoryCluster):
    cluster.schedule_until = 3600
    cluster.create(cron_job(successfulJobsHistoryLimit=2))
    run(cluster)
    # Six ran to their end (the last after the window); the two newest are kept.
    assert jobs(cluster) == ["report-29453810", "report-29453820"]
    assert reasons(cluster).count("SuccessfulDelete") == 4


@pytest.mark.parametrize(
    ("policy", "want_jobs", "reason"),
    [
        ("Allow", 3, None),
        ("Forbid", 1, "JobAlreadyActive"),
        ("Replace", 1, "SuccessfulDelete"),
    ],
    ids=["allow", "forbid", "replace"],
)
def test_concurrency_policy(cluster: MemoryCluster, policy: str, want_jobs: int, reason):
    cluster.schedule_until = 1800
    # Each Job's pod runs 25 minutes: the next schedule finds it running.
    cluster.create(cron_job(run_seconds=1500, concurrencyPolicy=policy))
    run(cluster, until=1800)
    assert len(jobs(cluster)) == want_jobs
    if reason is not None:
        assert reason in reasons(cluster)


def test_suspended_cron_job_starts_nothing(cluster: MemoryCluster):
    cluster.schedule_until = 3600
    cluster.create(cron_job(suspend=True))
    run(cluster)
    assert jobs(cluster) == []


def test_time_zone_moves_the_schedule(cluster: MemoryCluster):
    cluster.schedule_until = 86_400
    cluster.create(cron_job(schedule="0 9 * * *", timeZone="Asia/Tokyo"))
    created = run(cluster, until=86_400)
    # 09:00 in Tokyo is 00:00 UTC: the next one is a day after the start.
    assert [t for t, _ in created] == [86_400.0]
    (job,) = cluster.objects("Job")
    assert job.metadata.annotations[SCHEDULED_TIMESTAMP_ANNOTATION] == "2026-01-02T09:00:00+09:00"


@pytest.mark.parametrize("deadline", [None, 60], ids=["no-deadline", "starting-deadline"])
def test_schedules_before_the_cron_job_was_created_do_not_run(
    cluster: MemoryCluster, deadline: int | None
):
    cluster.schedule_until = 7200
    cluster.clock.set(3000)  # created at 00:50, after the 00:10..00:50 starts
    extra = {} if deadline is None else {"startingDeadlineSeconds": deadline}
    cluster.create(cron_job(successfulJobsHistoryLimit=10, **extra))
    run(cluster)
    assert jobs(cluster)[0] == "report-29453820"  # 01:00
    assert "MissSchedule" not in reasons(cluster)


def test_without_a_time_window_nothing_runs_and_a_notice_says_so(cluster: MemoryCluster):
    with collecting_notices() as notices:
        cluster.create(cron_job())
        run(cluster)
    assert jobs(cluster) == []
    (n,) = notices
    assert n.obj == "CronJob default/report" and "--timeline" in n.message


@pytest.mark.parametrize("schedule", ["*/10 * * * *", "@every 10m"], ids=["cron-fields", "every"])
def test_a_long_gap_since_the_last_schedule_starts_only_the_latest(
    cluster: MemoryCluster, schedule: str
):
    cluster.schedule_until = 3600
    cj = cron_job(schedule=schedule)
    # Captured a year after its last run: 52,560 start times were missed.
    cj.status = CronJobStatus.model_validate({"lastScheduleTime": "2025-01-01T00:00:00Z"})
    cluster.create(cj)
    assert jobs(cluster) == ["report-29453760"]  # 2026-01-01T00:00, the latest
    assert "TooManyMissedTimes" in reasons(cluster)
