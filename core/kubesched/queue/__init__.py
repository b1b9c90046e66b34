"""The scheduling queue (activeQ, backoffQ, unschedulable and gated pods) and the nominator."""

from kubesched.queue.heap import Heap
from kubesched.queue.nominator import Nominator, PodLister
from kubesched.queue.scheduling_queue import (
    ASSIGNED_POD_ADD,
    BACKOFF_COMPLETE,
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
    FORCE_ACTIVATE,
    FORCE_ACTIVATE_EVENT,
    POD_ADD,
    POD_UPDATE,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULABLE_TIMEOUT_EVENT,
    Less,
    PreEnqueueCheck,
    PriorityQueue,
    ProfileQueueing,
    calculate_backoff_duration,
    is_pod_updated,
)

__all__ = [
    "ASSIGNED_POD_ADD",
    "BACKOFF_COMPLETE",
    "DEFAULT_POD_INITIAL_BACKOFF",
    "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
    "FORCE_ACTIVATE",
    "FORCE_ACTIVATE_EVENT",
    "POD_ADD",
    "POD_UPDATE",
    "SCHEDULE_ATTEMPT_FAILURE",
    "UNSCHEDULABLE_TIMEOUT",
    "UNSCHEDULABLE_TIMEOUT_EVENT",
    "Heap",
    "Less",
    "Nominator",
    "PodLister",
    "PreEnqueueCheck",
    "PriorityQueue",
    "ProfileQueueing",
    "calculate_backoff_duration",
    "is_pod_updated",
]
