"""Scheduler extenders (the v1 protocol): webhooks, or in-process objects, called after
the plugins at Filter and Score, in preemption and at Bind."""

from kubesched.extenders.extender import (
    ENTRY_POINT_GROUP,
    IN_PROCESS_SCHEME,
    Extender,
    build_extenders,
    in_process_name,
    in_process_names,
)
from kubesched.extenders.types import (
    MAX_EXTENDER_PRIORITY,
    ExtenderBindingArgs,
    ExtenderError,
    ExtenderFilterResult,
    HostPriority,
    InProcessExtender,
    MetaVictims,
    Victims,
)
from kubesched.framework.diagnosis import EXTENDER_NAME

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTENDER_NAME",
    "IN_PROCESS_SCHEME",
    "MAX_EXTENDER_PRIORITY",
    "Extender",
    "ExtenderBindingArgs",
    "ExtenderError",
    "ExtenderFilterResult",
    "HostPriority",
    "InProcessExtender",
    "MetaVictims",
    "Victims",
    "build_extenders",
    "in_process_name",
    "in_process_names",
]
