"""A resilience sweep: settle the cluster once, play every failure of a set on a copy of it
(in parallel), and rank what each did, worst first."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kubesched.api import KubeObject, Node
from kubesched.capacity.common import frozen_objects
from kubesched.config import EffectiveConfiguration, default_configuration, effective_configuration
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.resilience import engine
from kubesched.resilience.failures import Failure
from kubesched.resilience.report import ResilienceReport, ResilienceSummary
from kubesched.resilience.world import payload, play, setup
from kubesched.simulate.driver import DETAIL_SUMMARY, Simulation

__all__ = ["DEFAULT_WINDOW", "resilience", "settle"]

DEFAULT_WINDOW = 600.0
"""Seconds each failure is played for: the 50 s grace period, the 300 s default
``tolerationSeconds`` and time to re-place what was evicted."""


def settle(
    objects: Iterable[KubeObject],
    config: EffectiveConfiguration,
    *,
    registry: PluginRegistry | None = None,
    seed: int = 0,
) -> tuple[list[KubeObject], int]:
    """Schedule what is pending with the profile, as ``simulate`` does; returns the
    cluster's objects afterwards and how many pods are still pending."""
    sim = Simulation(
        objects,
        config=config,
        registry=registry or default_registry(),
        seed=seed,
        detail=DETAIL_SUMMARY,
        node_pressure_eviction=False,
    )
    try:
        sim.run()
        settled = frozen_objects(sim)
    finally:
        sim.close()
    pending = sum(
        1
        for o in settled
        if o.kind == "Pod"
        and not o.spec.node_name  # type: ignore[attr-defined]
        and o.status.phase not in ("Succeeded", "Failed")  # type: ignore[attr-defined]
    )
    return settled, pending


def resilience(
    objects: Iterable[KubeObject],
    failures: Callable[[list[Node]], list[Failure]],
    *,
    config: EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    seed: int = 0,
    window: float = DEFAULT_WINDOW,
    workers: int | None = None,
    address: str | None = None,
    progress: engine.Progress | None = None,
) -> ResilienceReport:
    """Settle ``objects``, then play each failure ``failures(nodes)`` chooses on the settled
    cluster for ``window`` seconds, with ``config`` (upstream's default profile without
    one), on ``workers`` local processes (all cores by default) or on the Dask scheduler
    at ``address``, telling ``progress(done, total)`` as failures are played; the report
    lists them worst first."""
    started = time.perf_counter()
    registry = registry or default_registry()
    if config is None:
        config = effective_configuration(default_configuration(registry), registry)
    settled, pending = settle(objects, config, registry=registry, seed=seed)
    nodes = [o for o in settled if isinstance(o, Node)]
    chosen = failures(nodes)
    data = payload(settled, config, seed, window)
    del settled
    outcomes = engine.run_sweep(
        data,
        chosen,
        setup=setup,
        play=play,
        workers=workers,
        address=address,
        progress=progress,
    )
    ordered = sorted(outcomes, key=lambda o: (o.severity(), o.failure))
    return ResilienceReport(
        summary=ResilienceSummary(
            failures=len(ordered),
            harmless=sum(1 for o in ordered if o.harmless()),
            nodes=len(nodes),
            pods_pending_before=pending,
            window_seconds=window,
        ),
        failures=ordered,
        wall_time=time.perf_counter() - started,
    )
