"""The CronJob controller: Jobs created on schedule within the run's time window."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

from kubesched.api import CronJob, CronJobStatus, Job, KubeObject, OwnerReference
from kubesched.api.cron import Schedule, ScheduleError, load_time_zone, parse_schedule
from kubesched.backend.memory.controllers import CONTROLLER_NAMES
from kubesched.backend.memory.naming import EPOCH, timestamp
from kubesched.backend.protocol import BackendError, EventType, RecordedEvent, WatchEvent
from kubesched.notices import notice

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = ["MAX_MISSED_START_TIMES", "SCHEDULED_TIMESTAMP_ANNOTATION", "CronJobController"]

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""On each Job: the scheduled time it was made for (RFC 3339, in the CronJob's zone)."""
MAX_MISSED_START_TIMES = 100
"""More missed start times than this get the ``TooManyMissedTimes`` warning."""


def _seconds(moment: datetime) -> float:
    return (moment - EPOCH).total_seconds()


class CronJobController:
    """``cronjob_controllerv2``, run synchronously on the cluster's virtual time.

    At each scheduled time (in ``spec.timeZone``, else UTC) up to the cluster's
    ``schedule_until``, a CronJob that is not suspended creates the Job
    ``<name>-<scheduled minutes since 1970>`` from its ``jobTemplate`` (owned by it,
    with the scheduled-timestamp annotation), unless the time is more than
    ``startingDeadlineSeconds`` past (``MissSchedule``) or ``concurrencyPolicy: Forbid``
    finds a Job still running (``JobAlreadyActive``); ``Replace`` deletes the running
    ones first. ``status.active`` lists the running Jobs, ``lastScheduleTime`` and
    ``lastSuccessfulTime`` follow them, and finished Jobs beyond the history limits
    are deleted, oldest first. Without a time window (``schedule_until`` None) nothing
    is scheduled and each CronJob gets a notice saying so.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._timers: set[tuple[str, float]] = set()  # (CronJob uid, due) already set
        self._noticed: set[str] = set()
        self._again: dict[str, bool] = {}  # CronJobs being synced: whether to sync again

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Sync a CronJob that changed, or whose Job changed."""
        obj = event.object
        if kind == "CronJob" and event.type is not EventType.DELETED:
            self._sync_current(obj.metadata.namespace, obj.name, obj.metadata.uid)
        elif kind == "Job":
            ref = obj.metadata.controller_ref
            finished = (event.type is EventType.DELETED) or (
                obj.finished is not None and (event.old is None or event.old.finished is None)
            )
            if ref is not None and ref.kind == "CronJob" and finished:
                self._sync_current(obj.metadata.namespace, ref.name, ref.uid)

    def resync_all(self) -> None:
        """Sync every CronJob (after a batch load)."""
        for cj in self.cluster.objects("CronJob"):
            self._sync_current(cj.metadata.namespace, cj.name, cj.metadata.uid)

    def _sync_current(self, namespace: str | None, name: str, uid: str | None) -> None:
        """Sync the CronJob as it is now; asked for during its own sync (whose writes are
        handled at once outside a watch dispatch), once more after it."""
        key = f"{namespace}/{name}"
        if key in self._again:
            self._again[key] = True
            return
        self._again[key] = False
        try:
            while True:
                cur = self.cluster.try_get("CronJob", namespace, name)
                if cur is None or (uid and cur.metadata.uid != uid):
                    return
                self.sync(cur)  # type: ignore[arg-type]
                if not self._again[key]:
                    return
                self._again[key] = False
        finally:
            del self._again[key]

    # -- the sync --------------------------------------------------------------------------

    def sync(self, cj: CronJob) -> None:
        """One ``syncCronJob``: follow the Jobs, clean up history, start what is due."""
        if cj.metadata.deletion_timestamp is not None:
            return
        status = cj.status.model_copy(deep=True)
        jobs = self._jobs(cj)
        by_uid = {j.metadata.uid: j for j in jobs}
        active = []
        for ref in status.active:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                continue  # deleted
            if job.finished is not None:
                self._event(
                    cj,
                    "Normal",
                    "SawCompletedJob",
                    f"Saw completed job: {job.name}, condition: {job.finished}",
                )
                if job.finished == "Complete" and job.status.completion_time is not None:
                    last = status.last_successful_time
                    if last is None or job.status.completion_time > last:
                        status.last_successful_time = job.status.completion_time
                continue
            active.append(ref)
        status.active = active
        self._clean_history(cj, jobs)
        try:
            zone = load_time_zone(cj.spec.time_zone or "")
            schedule = parse_schedule(cj.spec.schedule)
        except ScheduleError:
            return  # refused by validation before it is stored
        if cj.spec.suspend:
            self._write_status(cj, status)
            return
        until = self.cluster.schedule_until
        if until is None:
            if cj.metadata.uid not in self._noticed:
                self._noticed.add(cj.metadata.uid or "")
                notice(
                    "not run: its schedule needs the run's time window, which a "
                    "--timeline (spec.runFor) gives",
                    obj=f"CronJob {cj.key}",
                )
            self._write_status(cj, status)
            return
        now = self.cluster.now()
        scheduled = self._most_recent(cj, status, schedule, zone, now)
        if scheduled is not None:
            self._start(cj, status, scheduled, zone, now)
        self._write_status(cj, status)
        self._requeue(cj, status, schedule, zone, now, until)

    def _jobs(self, cj: CronJob) -> list[Job]:
        uid = cj.metadata.uid or ""
        return [
            j  # type: ignore[misc]
            for j in self.cluster.dependents(uid, "Job")
            if (ref := j.metadata.controller_ref) is not None and ref.uid == uid
        ]

    def _most_recent(
        self, cj: CronJob, status: CronJobStatus, schedule: Schedule, zone: tzinfo, now: float
    ) -> datetime | None:
        """``nextScheduleTime``: the latest scheduled time not after now and after the
        last one started (or the CronJob's creation, or now - startingDeadlineSeconds)."""
        earliest = status.last_schedule_time or cj.metadata.creation_timestamp
        assert earliest is not None
        deadline = cj.spec.starting_deadline_seconds
        if deadline is not None:
            earliest = max(earliest, timestamp(now - deadline))
        moment = timestamp(now)
        first = schedule.next_after(earliest, zone)
        found: datetime | None = None
        missed = 0
        t = first
        while t <= moment and missed <= MAX_MISSED_START_TIMES:
            found, missed = t, missed + 1
            t = schedule.next_after(t, zone)
        if missed > MAX_MISSED_START_TIMES:
            # A long gap (a captured CronJob's old lastScheduleTime): jump to the latest.
            found = schedule.last_at_or_before(moment, first, zone)
            self._event(
                cj,
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
        return found

    def _start(
        self, cj: CronJob, status: CronJobStatus, scheduled: datetime, zone: tzinfo, now: float
    ) -> None:
        """Start the Job of ``scheduled`` into ``status``, as the policies allow."""
        deadline = cj.spec.starting_deadline_seconds
        if deadline is not None and _seconds(scheduled) + deadline < now:
            self._event(
                cj,
                "Warning",
                "MissSchedule",
                "Missed scheduled time to start a job: "
                + scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000"),
            )
            return
        name = f"{cj.name}-{int(scheduled.timestamp()) // 60}"
        if status.last_schedule_time == scheduled or any(
            ref.get("name") == name for ref in status.active
        ):
            return
        if cj.spec.concurrency_policy == "Forbid" and status.active:
            self._event(
                cj,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency "
                "policy is Forbid",
            )
            return
        if cj.spec.concurrency_policy == "Replace":
            for ref in status.active:
                self._delete_job(cj, ref.get("name", ""))
            status.active = []
        job = self._job_from_template(cj, name, scheduled, zone)
        try:
            created = self.cluster.create(job)
        except BackendError as err:
            self._event(cj, "Warning", "FailedCreate", f"Error creating job: {err}")
            return
        self._event(cj, "Normal", "SuccessfulCreate", f"Created job {created.name}")
        status.active.append(
            {
                "kind": "Job",
                "namespace": created.namespace,
                "name": created.name,
                "uid": created.metadata.uid,
                "apiVersion": "batch/v1",
                "resourceVersion": created.metadata.resource_version,
            }
        )
        status.last_schedule_time = scheduled

    def _job_from_template(self, cj: CronJob, name: str, scheduled: datetime, zone: tzinfo) -> Job:
        """``getJobFromTemplate2``: the template's labels, annotations and spec, the
        scheduled time annotated, owned by the CronJob."""
        template = cj.spec.job_template
        annotations = dict(template.metadata.annotations)
        annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = scheduled.astimezone(zone).isoformat()
        owner = OwnerReference(
            api_version="batch/v1",
            kind="CronJob",
            name=cj.name,
            uid=cj.metadata.uid or "",
            controller=True,
            block_owner_deletion=True,
        )
        return Job.model_validate(
            {
                "metadata": {
                    "name": name,
                    "namespace": cj.namespace,
                    "labels": dict(template.metadata.labels),
                    "annotations": annotations,
                    "ownerReferences": [owner.to_dict()],
                },
                "spec": template.spec.to_dict(),
            }
        )

    def _requeue(
        self,
        cj: CronJob,
        status: CronJobStatus,
        schedule: Schedule,
        zone: tzinfo,
        now: float,
        until: float,
    ) -> None:
        """Sync again at the next scheduled time, if the window reaches it."""
        after = max(timestamp(now), status.last_schedule_time or timestamp(now))
        due = _seconds(schedule.next_after(after, zone))
        uid = cj.metadata.uid or ""
        if due > until or (uid, due) in self._timers:
            return
        self._timers.add((uid, due))
        namespace, name = cj.namespace, cj.name

        def fire() -> None:
            self._timers.discard((uid, due))
            self._sync_current(namespace, name, uid)

        self.cluster.call_at(due, fire, progress=True)

    def _clean_history(self, cj: CronJob, jobs: list[Job]) -> None:
        """``cleanupFinishedJobs``: keep the newest finished Jobs within the limits."""
        for kind, limit in (
            ("Complete", cj.spec.successful_jobs_history_limit),
            ("Failed", cj.spec.failed_jobs_history_limit),
        ):
            finished = sorted(
                (j for j in jobs if j.finished == kind),
                key=lambda j: (j.status.start_time or j.metadata.creation_timestamp, j.name),
            )
            for job in finished[: max(0, len(finished) - limit)]:
                self._delete_job(cj, job.name)

    def _delete_job(self, cj: CronJob, name: str) -> None:
        if self.cluster.try_get("Job", cj.namespace, name) is None:
            return
        self.cluster.delete("Job", cj.namespace, name)
        self._event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name}")

    def _write_status(self, cj: CronJob, status: CronJobStatus) -> None:
        cur = self.cluster.try_get("CronJob", cj.namespace, cj.name)
        if cur is None or cur.metadata.uid != cj.metadata.uid or cur.status == status:
            return
        self.cluster.update(cur.model_copy(update={"status": status}))

    def _event(self, cj: KubeObject, etype: str, reason: str, message: str) -> None:
        self.cluster.record_event(
            RecordedEvent(
                involved_kind="CronJob",
                involved_namespace=cj.namespace,
                involved_name=cj.name,
                type=etype,
                reason=reason,
                message=message,
                reporting_controller=CONTROLLER_NAMES["CronJob"],
            )
        )
