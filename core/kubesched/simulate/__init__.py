"""Simulation: schedule manifests on the embedded cluster, then report and explain the result.

The Python API of ``kubesched simulate``::

    from kubesched.api import load_manifests
    from kubesched.simulate import simulate, build_report

    run = simulate(load_manifests(["cluster/", "workload.yaml"]), seed=1)
    report = build_report(run)          # a SimulationReport (pydantic)
    report.pod("default/web-0").node
"""

from kubesched.simulate.driver import (
    DETAIL_FULL,
    DETAIL_SUMMARY,
    Simulation,
    SimulationRun,
    simulate,
)
from kubesched.simulate.invariants import InvariantChecker, InvariantViolation, Violation
from kubesched.simulate.report import (
    SCHEMA_VERSION,
    NodeReport,
    PodReport,
    SimulationReport,
    build_report,
    build_report_data,
    json_schema,
)

__all__ = [
    "DETAIL_FULL",
    "DETAIL_SUMMARY",
    "SCHEMA_VERSION",
    "InvariantChecker",
    "InvariantViolation",
    "NodeReport",
    "PodReport",
    "Simulation",
    "SimulationReport",
    "SimulationRun",
    "Violation",
    "build_report",
    "build_report_data",
    "json_schema",
    "simulate",
]
