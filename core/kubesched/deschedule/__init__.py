"""``kubesched deschedule``: the descheduler's strategies run on a simulated cluster, and
where the evicted pods go. Descheduler plugins import what they need from here."""

from kubesched.deschedule.framework import (
    ENTRY_POINT_GROUP,
    DeschedulerHandle,
    DeschedulerPlugin,
    Eviction,
    percent,
)
from kubesched.deschedule.policy import DeschedulerPolicy, load_policy, parse_policy
from kubesched.deschedule.report import DescheduleReport, json_schema
from kubesched.deschedule.run import deschedule, run_deschedule

__all__ = [
    "ENTRY_POINT_GROUP",
    "DescheduleReport",
    "DeschedulerHandle",
    "DeschedulerPlugin",
    "DeschedulerPolicy",
    "Eviction",
    "deschedule",
    "json_schema",
    "load_policy",
    "parse_policy",
    "percent",
    "run_deschedule",
]
