"""Run a benchmark workload on the embedded cluster and measure it.

What is measured, and how:

- ``build_s``: generating the workload's objects (manifests validated into models;
  the measured pods are parsed on demand, in ``setup_s``).
- ``setup_s``: ``Simulation(...)`` — admission of every object into the embedded
  ``MemoryCluster`` (each measured pod parsed as it is admitted) and construction of
  the scheduler (profiles, queue, cache).
- ``schedule_s``: ``Simulation.run()`` — the informers' initial listing (nodes into
  the cache, pending pods into the queue) and every scheduling and binding cycle
  until nothing more can happen (wall time, ``time.perf_counter``).
- ``pods_per_second``: pods bound by the run / ``schedule_s``.
- attempt latency (``p50_ms``, ``p99_ms``): the runner wraps the scheduler's
  ``schedule_one`` with ``perf_counter``; one call is pop → scheduling cycle →
  binding cycle (which the simulator runs right after the scheduling cycle), i.e.
  one attempt, wall time, exact (no histogram buckets). Calls that made no attempt
  (an empty queue, a skipped pod) are not counted.
- ``peak_memory_mb``: growth of the process's peak resident set size
  (``ru_maxrss``) over its resident size just before the workload is built. Each
  run happens in a fresh forked process (``isolate=True``, the default) so that the
  peak belongs to that run alone; in-process, only the first run's figure is exact.
- ``setup_memory_mb``: growth of the resident set size from the same point to the end
  of the setup: the workload's objects admitted into the embedded cluster and the
  scheduler built, every pod still pending (the state a "per pending pod" memory
  figure is about; the queue's entries are added by the informers in ``schedule_s``).
- ``breakdown`` (optional, ``breakdown=True``): ``perf_counter`` wrappers set on the
  instance attributes of that run's scheduler, exclusive time per phase (a wrapped
  call inside another is subtracted from the outer one):

  ``queue``: ``queue.pop`` and the requeue of a failed pod (``add_unschedulable_if_not_present``);
  ``snapshot``: ``cache.update_snapshot``;
  ``filter``: ``algorithm.find_nodes_that_fit_pod`` (PreFilter + Filter);
  ``score``: ``algorithm.prioritize_nodes`` (PreScore + Score + NormalizeScore);
  ``postfilter``: ``_post_filter`` (preemption);
  ``bind``: ``_binding_cycle`` (Permit wait, PreBind, Bind — including the embedded
  cluster's watch events and the cache/queue updates they cause — PostBind);
  ``failure``: ``_fail`` (FailedScheduling event, pod status update);
  ``informer``: the initial listing (``EventHandlers.connect``);
  ``timers``: virtual-time steps (backoff flushes, graceful deletions of victims);
  ``other``: the rest of ``schedule_s`` (cycle state, assume, Reserve, Permit, host
  selection, observers, the loop itself).

  The wrappers cost about a microsecond per call, a few per attempt.
- ``profile``: a cProfile of one extra run (not one of the timed repeats).
"""

from __future__ import annotations

import cProfile
import gc
import os
import platform
import resource
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kubesched import __version__
from kubesched.bench.workloads import (
    WORKLOADS,
    Workload,
    build_workload,
    expected_unschedulable,
)
from kubesched.config import EffectiveConfiguration, config_from_dict, effective_configuration
from kubesched.errors import KubeschedError
from kubesched.features import FeatureGates
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.simulate.driver import Simulation

BREAKDOWN_PHASES = (
    "queue",
    "snapshot",
    "filter",
    "score",
    "postfilter",
    "bind",
    "failure",
    "informer",
    "timers",
    "other",
)
"""The phases of ``breakdown``, in display order."""


class BenchError(KubeschedError):
    """A benchmark that cannot run (a workload needs a plugin that is not installed…)."""


@dataclass
class RunResult:
    """One timed run of a workload."""

    workload: str
    nodes: int
    pods: int
    seed: int
    scheduled: int
    pending: int
    attempts: int
    build_s: float
    setup_s: float
    schedule_s: float
    pods_per_second: float
    p50_ms: float
    p99_ms: float
    mean_ms: float
    peak_memory_mb: float
    setup_memory_mb: float = 0.0
    breakdown: dict[str, float] | None = None
    """Seconds per phase (see ``BREAKDOWN_PHASES``)."""


@dataclass
class BenchResult:
    """A workload's result over ``repeat`` runs: medians, and each run's figures."""

    workload: str
    upstream: str
    nodes: int
    pods: int
    seed: int
    percentage_of_nodes_to_score: int | None
    repeat: int
    scheduled: int
    pending: int
    expected_unschedulable: int
    attempts: int
    pods_per_second: float
    p50_ms: float
    p99_ms: float
    mean_ms: float
    peak_memory_mb: float
    build_s: float
    setup_s: float
    schedule_s: float
    setup_memory_mb: float = 0.0
    breakdown: dict[str, float] | None = None
    """Median seconds per phase."""
    runs: list[dict[str, Any]] = field(default_factory=list)
    profile: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def environment() -> dict[str, Any]:
    """What the numbers depend on besides the code: versions and the machine."""
    return {
        "kubesched_version": __version__,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


# -- configuration --------------------------------------------------------------------------
def bench_configuration(
    registry: PluginRegistry,
    percentage_of_nodes_to_score: int | None = None,
    plugins: dict[str, Any] | None = None,
    gates: FeatureGates | None = None,
    extenders: list[dict[str, Any]] | None = None,
    plugin_config: list[dict[str, Any]] | None = None,
) -> EffectiveConfiguration:
    """The default configuration (with ``percentageOfNodesToScore`` when given, and the
    default profile's ``plugins`` replaced by ``plugins`` and its ``pluginConfig`` by
    ``plugin_config``, a workload's own), calling ``extenders`` (the ``extenders`` of a
    configuration file) when given.

    DefaultPreemption is disabled when it is not installed, so that the other
    workloads run without it.
    """
    data: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if percentage_of_nodes_to_score is not None:
        data["percentageOfNodesToScore"] = percentage_of_nodes_to_score
    if extenders:
        data["extenders"] = extenders
    profile_plugins: dict[str, Any] = {k: dict(v) for k, v in (plugins or {}).items()}
    if "DefaultPreemption" not in registry:
        multi = profile_plugins.setdefault("multiPoint", {})
        multi["disabled"] = [*multi.get("disabled", []), {"name": "DefaultPreemption"}]
    if profile_plugins:
        data["profiles"] = [{"schedulerName": "default-scheduler", "plugins": profile_plugins}]
    if plugin_config:
        data["profiles"][0]["pluginConfig"] = plugin_config
    config = config_from_dict(data, registry, source="<bench>", gates=gates)
    return effective_configuration(config, registry, source="<bench>", gates=gates)


def workload_plugin_config(name: str, nodes: int) -> list[dict[str, Any]] | None:
    """The ``pluginConfig`` workload ``name`` sets for ``nodes`` nodes (None: none)."""
    make = WORKLOADS[name].plugin_config
    return make(nodes) if make is not None else None


def check_workload(name: str, registry: PluginRegistry) -> None:
    """Raise ``BenchError`` when ``name`` is unknown or needs a plugin not installed."""
    spec = WORKLOADS.get(name)
    if spec is None:
        raise BenchError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)}, all)")
    missing = [p for p in spec.required_plugins if p not in registry]
    if missing:
        raise BenchError(
            f"workload {name!r} needs the plugin(s) {', '.join(missing)}, which are not "
            "installed (see `kubesched plugins`)"
        )


# -- instrumentation -----------------------------------------------------------------------
class _Timers:
    """Exclusive wall time per phase, from ``perf_counter`` wrappers that may nest."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = dict.fromkeys(BREAKDOWN_PHASES, 0.0)
        self._stack: list[list[float]] = []  # per open call: [children's time]

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        totals = self.totals
        stack = self._stack
        clock = time.perf_counter

        def timed(*args: Any, **kwargs: Any) -> Any:
            frame = [0.0]
            stack.append(frame)
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = clock() - start
                stack.pop()
                totals[phase] += elapsed - frame[0]
                if stack:
                    stack[-1][0] += elapsed

        return timed


def _instrument(sim: Simulation, timers: _Timers) -> None:
    s = sim.scheduler
    s.queue.pop = timers.wrap("queue", s.queue.pop)
    s.queue.add_unschedulable_if_not_present = timers.wrap(
        "queue", s.queue.add_unschedulable_if_not_present
    )
    s.cache.update_snapshot = timers.wrap("snapshot", s.cache.update_snapshot)
    s.algorithm.find_nodes_that_fit_pod = timers.wrap("filter", s.algorithm.find_nodes_that_fit_pod)
    s.algorithm.prioritize_nodes = timers.wrap("score", s.algorithm.prioritize_nodes)
    s._post_filter = timers.wrap("postfilter", s._post_filter)
    s._binding_cycle = timers.wrap("bind", s._binding_cycle)
    s._fail = timers.wrap("failure", s._fail)
    sim.handlers.connect = timers.wrap("informer", sim.handlers.connect)
    sim._advance = timers.wrap("timers", sim._advance)


def _attempt_timer(sim: Simulation, latencies: list[float]) -> None:
    """Time each ``schedule_one`` call that produced an attempt record."""
    s = sim.scheduler
    inner = s.schedule_one
    finished = [0]
    s.observers.append(lambda _record: finished.__setitem__(0, finished[0] + 1))
    clock = time.perf_counter

    def schedule_one(*args: Any, **kwargs: Any) -> bool:
        before = finished[0]
        start = clock()
        result = inner(*args, **kwargs)
        elapsed = clock() - start
        if finished[0] != before:
            latencies.append(elapsed)
        return result

    s.schedule_one = schedule_one


# -- one run -------------------------------------------------------------------------------
def rss_bytes() -> int:
    """The current resident set size (Linux ``/proc``; 0 where unavailable): what
    ``setup_memory_mb`` and ``peak_memory_mb`` are measured from."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _max_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of sorted values."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def run_once(
    workload_name: str,
    nodes: int,
    pods: int,
    *,
    seed: int = 0,
    percentage_of_nodes_to_score: int | None = None,
    breakdown: bool = False,
    profile_path: str | None = None,
    registry: PluginRegistry | None = None,
    feature_gates: FeatureGates | None = None,
    extenders: list[dict[str, Any]] | None = None,
) -> tuple[RunResult, Workload]:
    """Build the workload, set the cluster up, schedule, and measure (in this process),
    under ``feature_gates`` (default: every gate at its default)."""
    registry = registry or default_registry()
    check_workload(workload_name, registry)
    config = bench_configuration(
        registry,
        percentage_of_nodes_to_score,
        WORKLOADS[workload_name].plugins,
        gates=feature_gates,
        extenders=extenders,
        plugin_config=workload_plugin_config(workload_name, nodes),
    )
    gc.collect()
    rss_before = rss_bytes()

    t0 = time.perf_counter()
    workload = build_workload(workload_name, nodes, pods, seed)
    t1 = time.perf_counter()
    sim = workload.simulation(config, registry, seed)
    t2 = time.perf_counter()
    set_up = max(0, rss_bytes() - rss_before) if rss_before else 0
    if sim.rejections:
        raise BenchError(
            f"workload {workload_name!r}: {len(sim.rejections)} object(s) rejected by "
            f"admission, first: {sim.rejections[0]}"
        )

    latencies: list[float] = []
    _attempt_timer(sim, latencies)
    timers = _Timers() if breakdown else None
    if timers is not None:
        _instrument(sim, timers)

    profiler = cProfile.Profile() if profile_path else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    run = workload.run(sim)
    if profiler is not None:
        profiler.disable()
    schedule_s = time.perf_counter() - started
    if profiler is not None and profile_path:
        profiler.dump_stats(profile_path)

    peak = max(0, _max_rss_bytes() - rss_before) if rss_before else 0
    measured = {p.metadata.uid for p in workload.pods}
    scheduled = sum(
        1 for p in run.cluster.pods() if p.metadata.uid in measured and p.spec.node_name
    )
    latencies.sort()
    result = RunResult(
        workload=workload_name,
        nodes=nodes,
        pods=pods,
        seed=seed,
        scheduled=scheduled,
        pending=len(workload.pods) - scheduled,
        attempts=len(latencies),
        build_s=t1 - t0,
        setup_s=t2 - t1,
        schedule_s=schedule_s,
        pods_per_second=scheduled / schedule_s if schedule_s > 0 else 0.0,
        p50_ms=_percentile(latencies, 50) * 1000,
        p99_ms=_percentile(latencies, 99) * 1000,
        mean_ms=(sum(latencies) / len(latencies) * 1000) if latencies else 0.0,
        peak_memory_mb=peak / 2**20,
        setup_memory_mb=set_up / 2**20,
    )
    if timers is not None:
        phases = dict(timers.totals)
        phases["other"] = max(0.0, schedule_s - sum(phases.values()))
        result.breakdown = phases
    return result, workload


WORKER_STOP_SECONDS = 5.0
"""How long a worker stopped early (Ctrl-C, SIGTERM) has to end before it is killed."""


def _run_isolated(kwargs: dict[str, Any]) -> RunResult:
    """``run_once`` in a forked child, so that its memory peak is its own.

    The child never outlives the parent: whatever ends the wait (Ctrl-C, SIGTERM made
    an exception by the command line, an error) terminates it, and on Linux the kernel
    kills it if the parent dies without a word (SIGKILL)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    parent_pid = os.getpid()

    def target() -> None:
        _worker_signals(parent_pid)
        try:
            result, _ = run_once(**kwargs)
            child.send(("ok", asdict(result)))
        except BaseException as err:  # report to the parent, never hang it
            child.send(("error", f"{type(err).__name__}: {err}"))
        finally:
            child.close()

    proc = ctx.Process(target=target)
    proc.start()
    child.close()
    try:
        status, payload = parent.recv()
    except BaseException as err:
        _stop_worker(proc)
        if isinstance(err, EOFError):
            raise BenchError(f"benchmark process died (exit code {proc.exitcode})") from None
        raise
    proc.join()
    if status != "ok":
        raise BenchError(payload)
    return RunResult(**payload)


def _worker_signals(parent_pid: int) -> None:
    """A worker's signals: the parent decides about Ctrl-C (a terminal sends SIGINT to
    both; the parent stops the worker), SIGTERM ends it at once (the handler the fork
    inherited would raise inside the run), and it dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)


def _stop_worker(proc: Any) -> None:
    """Terminate ``proc`` and wait for it; kill it if SIGTERM did not end it in time."""
    if proc.is_alive():
        proc.terminate()
        proc.join(WORKER_STOP_SECONDS)
        if proc.is_alive():
            proc.kill()
    proc.join()


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def run_workload(
    workload_name: str,
    nodes: int,
    pods: int,
    *,
    seed: int = 0,
    repeat: int = 1,
    percentage_of_nodes_to_score: int | None = None,
    breakdown: bool = False,
    profile_path: str | None = None,
    isolate: bool = True,
    registry: PluginRegistry | None = None,
    on_run: Callable[[RunResult], None] | None = None,
    feature_gates: FeatureGates | None = None,
    extenders: list[dict[str, Any]] | None = None,
) -> BenchResult:
    """Run ``workload_name`` ``repeat`` times and report the medians.

    With ``profile_path``, one more run is made under cProfile and its stats written
    there (the timed runs are not profiled). ``isolate`` runs each in a forked
    process (where ``fork`` exists), which inherits ``registry``.
    ``on_run`` is called with each timed run's result; ``feature_gates`` as in ``run_once``.
    ``extenders`` (a configuration's ``extenders``, as mappings) are called in every run.
    """
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    registry = registry or default_registry()
    check_workload(workload_name, registry)
    isolate = isolate and hasattr(os, "fork")
    kwargs: dict[str, Any] = {
        "registry": registry,
        "workload_name": workload_name,
        "nodes": nodes,
        "pods": pods,
        "seed": seed,
        "percentage_of_nodes_to_score": percentage_of_nodes_to_score,
        "breakdown": breakdown,
        "feature_gates": feature_gates,
        "extenders": extenders,
    }
    runs: list[RunResult] = []
    for _ in range(repeat):
        if isolate:
            result = _run_isolated(kwargs)
        else:
            result, _ = run_once(**kwargs)
        runs.append(result)
        if on_run is not None:
            on_run(result)
    if profile_path:
        kw = {**kwargs, "breakdown": False, "profile_path": profile_path}
        if isolate:
            _run_isolated(kw)
        else:
            run_once(**kw)
    spec = WORKLOADS[workload_name]
    first = runs[0]
    merged: dict[str, float] | None = None
    if breakdown:
        merged = {
            phase: _median([r.breakdown[phase] for r in runs if r.breakdown])
            for phase in BREAKDOWN_PHASES
        }
    return BenchResult(
        workload=workload_name,
        upstream=spec.upstream,
        nodes=nodes,
        pods=pods,
        seed=seed,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        repeat=repeat,
        scheduled=first.scheduled,
        pending=first.pending,
        expected_unschedulable=expected_unschedulable(workload_name, nodes, pods),
        attempts=first.attempts,
        pods_per_second=_median([r.pods_per_second for r in runs]),
        p50_ms=_median([r.p50_ms for r in runs]),
        p99_ms=_median([r.p99_ms for r in runs]),
        mean_ms=_median([r.mean_ms for r in runs]),
        peak_memory_mb=_median([r.peak_memory_mb for r in runs]),
        build_s=_median([r.build_s for r in runs]),
        setup_s=_median([r.setup_s for r in runs]),
        schedule_s=_median([r.schedule_s for r in runs]),
        setup_memory_mb=_median([r.setup_memory_mb for r in runs]),
        breakdown=merged,
        runs=[
            {
                "pods_per_second": r.pods_per_second,
                "schedule_s": r.schedule_s,
                "setup_s": r.setup_s,
                "p50_ms": r.p50_ms,
                "p99_ms": r.p99_ms,
                "peak_memory_mb": r.peak_memory_mb,
                "setup_memory_mb": r.setup_memory_mb,
                "scheduled": r.scheduled,
            }
            for r in runs
        ],
        profile=profile_path,
    )
