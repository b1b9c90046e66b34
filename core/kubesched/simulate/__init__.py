"""Simulation: schedule manifests on the embedded cluster, then report and explain the result.

The Python API of ``kubesched simulate``::

    from kubesched.api import load_manifests
    from kubesched.simulate import simulate, build_report

    run = simulate(load_manifests(["cluster/", "workload.yaml"]), seed=1)
    report = build_report(run)          # a SimulationReport (pydantic)
    report.pod("default/web-0").node
    write_html_report(run, "report.html")  # the self-contained page of simulate --report

With a timeline (``kubesched simulate --timeline``)::

    from kubesched.simulate import Simulation, TimelineRunner, load_timeline

    runner = TimelineRunner(*load_timeline("steps.yaml"))
    run = Simulation(load_manifests(["cluster/"]), timeline=runner).run()
    build_report(run).evictions
"""

from kubesched.simulate.driver import (
    DETAIL_FULL,
    DETAIL_SUMMARY,
    Simulation,
    SimulationRun,
    simulate,
)
from kubesched.simulate.html import StoryCollector, write_html_report
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
from kubesched.simulate.timeline import Timeline, TimelineRunner, load_timeline

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
    "StoryCollector",
    "Timeline",
    "TimelineRunner",
    "Violation",
    "build_report",
    "build_report_data",
    "json_schema",
    "load_timeline",
    "simulate",
    "write_html_report",
]
