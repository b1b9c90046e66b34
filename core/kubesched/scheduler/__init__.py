"""The scheduling loop: schedule_one, failure handling, binding, and the cluster event handlers."""

from kubesched.framework.diagnosis import Diagnosis, FitError
from kubesched.scheduler.algorithm import (
    ScheduleResult,
    SchedulingAlgorithm,
    SchedulingError,
    num_feasible_nodes_to_find,
)
from kubesched.scheduler.eventhandlers import EventHandlers
from kubesched.scheduler.records import (
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    AttemptRecord,
)
from kubesched.scheduler.scheduler import Scheduler

__all__ = [
    "RESULT_ERROR",
    "RESULT_SCHEDULED",
    "RESULT_UNSCHEDULABLE",
    "AttemptRecord",
    "Diagnosis",
    "EventHandlers",
    "FitError",
    "ScheduleResult",
    "Scheduler",
    "SchedulingAlgorithm",
    "SchedulingError",
    "num_feasible_nodes_to_find",
]
