"""Validation of batch/v1 CronJobs as kube-apiserver does it (``ValidateCronJobCreate``)."""

from __future__ import annotations

from ..cron import ScheduleError, load_time_zone, parse_schedule
from ..workloads import CronJob
from .field import FieldError, invalid, not_supported, required
from .meta import validate_object_meta
from .objects import register_validator
from .pod import _JOB_RESTART_POLICIES, validate_pod_spec
from .syntax import is_dns1123_subdomain, min_error, validate_labels

__all__ = ["CONCURRENCY_POLICIES", "MAX_CRONJOB_NAME_LENGTH"]

MAX_CRONJOB_NAME_LENGTH = 52
"""A CronJob's name leaves room for the ``-<minutes>`` suffix of its Jobs' names (63 - 11)."""
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")


def _nonnegative(value: int | None, path: str) -> list[FieldError]:
    return [] if value is None or value >= 0 else [invalid(path, value, min_error(0))]


def _schedule(schedule: str) -> list[FieldError]:
    if not schedule:
        return [required("spec.schedule")]
    errs: list[FieldError] = []
    try:
        parse_schedule(schedule)
    except ScheduleError as err:
        errs.append(invalid("spec.schedule", schedule, str(err)))
    if "TZ" in schedule:
        errs.append(
            invalid(
                "spec.schedule",
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            )
        )
    return errs


def _time_zone(zone: str | None) -> list[FieldError]:
    if zone is None:
        return []
    if not zone:
        return [invalid("spec.timeZone", zone, "timeZone must be nil or non-empty string")]
    if zone.lower() == "local":
        return [
            invalid(
                "spec.timeZone",
                zone,
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
            )
        ]
    try:
        load_time_zone(zone)
    except ScheduleError as err:
        return [invalid("spec.timeZone", zone, str(err))]
    return []


@register_validator("CronJob")
def _cron_job(cj: CronJob) -> list[FieldError]:
    spec = cj.spec
    errs = validate_object_meta(cj.metadata, namespaced=True, name_rule=is_dns1123_subdomain)
    errs.extend(_schedule(spec.schedule))
    errs.extend(_nonnegative(spec.starting_deadline_seconds, "spec.startingDeadlineSeconds"))
    errs.extend(_time_zone(spec.time_zone))
    if spec.concurrency_policy not in CONCURRENCY_POLICIES:
        errs.append(
            not_supported("spec.concurrencyPolicy", spec.concurrency_policy, CONCURRENCY_POLICIES)
        )
    job = spec.job_template.spec
    prefix = "spec.jobTemplate.spec"
    errs.extend(_nonnegative(job.parallelism, f"{prefix}.parallelism"))
    errs.extend(_nonnegative(job.completions, f"{prefix}.completions"))
    errs.extend(_nonnegative(job.active_deadline_seconds, f"{prefix}.activeDeadlineSeconds"))
    errs.extend(_nonnegative(job.backoff_limit, f"{prefix}.backoffLimit"))
    labels = job.template.metadata.labels
    if labels:
        errs.extend(validate_labels(labels, f"{prefix}.template.metadata.labels"))
    errs.extend(
        validate_pod_spec(
            job.template.spec, f"{prefix}.template.spec", labels, _JOB_RESTART_POLICIES
        )
    )
    if job.selector is not None:
        errs.append(
            invalid(
                f"{prefix}.selector", job.selector.to_dict(), "`selector` will be auto-generated"
            )
        )
    if job.manual_selector:
        errs.append(not_supported(f"{prefix}.manualSelector", True, ("nil", "false")))
    errs.extend(_nonnegative(spec.successful_jobs_history_limit, "spec.successfulJobsHistoryLimit"))
    errs.extend(_nonnegative(spec.failed_jobs_history_limit, "spec.failedJobsHistoryLimit"))
    if len(cj.metadata.name or "") > MAX_CRONJOB_NAME_LENGTH:
        errs.append(
            invalid(
                "metadata.name",
                cj.metadata.name,
                f"must be no more than {MAX_CRONJOB_NAME_LENGTH} characters",
            )
        )
    return errs
