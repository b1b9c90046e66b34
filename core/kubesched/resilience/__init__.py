"""``kubesched resilience``: every node, every zone or random sets of nodes failing, each
played as a timeline on the settled cluster, and which workloads and budgets survive."""

from kubesched.resilience.failures import Failure, every_node, every_zone, random_failures
from kubesched.resilience.report import ResilienceReport, json_schema
from kubesched.resilience.sweep import DEFAULT_WINDOW, resilience, settle

__all__ = [
    "DEFAULT_WINDOW",
    "Failure",
    "ResilienceReport",
    "every_node",
    "every_zone",
    "json_schema",
    "random_failures",
    "resilience",
    "settle",
]
