"""``kubesched bench``: scheduler_perf-like workloads on the embedded cluster, measured."""

from kubesched.bench.runner import (
    BREAKDOWN_PHASES,
    BenchError,
    BenchResult,
    RunResult,
    bench_configuration,
    environment,
    run_once,
    run_workload,
)
from kubesched.bench.workloads import (
    WORKLOADS,
    Workload,
    WorkloadSpec,
    build_workload,
    expected_unschedulable,
)

__all__ = [
    "BREAKDOWN_PHASES",
    "WORKLOADS",
    "BenchError",
    "BenchResult",
    "RunResult",
    "Workload",
    "WorkloadSpec",
    "bench_configuration",
    "build_workload",
    "environment",
    "expected_unschedulable",
    "run_once",
    "run_workload",
]
