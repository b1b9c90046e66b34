"""Runs a DeschedulerPolicy on a simulated cluster: schedule, evict per profile (Deschedule
then Balance plugins), let the controllers and the scheduler re-place, and report."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from kubesched.api import KubeObject, LabelSelector, Pod, compile_label_selector
from kubesched.backend.memory.naming import EPOCH
from kubesched.config import EffectiveConfiguration, KubeSchedulerConfiguration
from kubesched.deschedule.framework import (
    RESOURCE_NAMES,
    DeschedulerHandle,
    Eviction,
    EvictionLimits,
    PluginEntry,
    discover,
    percent,
)
from kubesched.deschedule.policy import DeschedulerPolicy, Profile
from kubesched.deschedule.report import (
    DeschedulePodCount,
    DescheduleReport,
    EvictionReport,
    NodeUtilization,
    StrategyReport,
    UtilizationGoal,
)
from kubesched.errors import UserInputError, problems_from_validation_error
from kubesched.framework.registry import PluginRegistry
from kubesched.simulate.driver import Simulation, SimulationRun


def _node_filter(policy: DeschedulerPolicy, source: str) -> Any:
    """The policy's ``nodeSelector`` (``k=v,k!=v`` label selector) as a node predicate."""
    if not policy.node_selector:
        return lambda node: True
    reqs = []
    for part in policy.node_selector.split(","):
        key, op, value = part.partition("!=") if "!=" in part else part.partition("=")
        if not key.strip() or not op:
            raise UserInputError(
                f'invalid nodeSelector "{policy.node_selector}": expected key=value or key!=value',
                source=source,
            )
        reqs.append(
            {
                "key": key.strip(),
                "operator": "NotIn" if op == "!=" else "In",
                "values": [value.strip().lstrip("=")],
            }
        )
    matcher = compile_label_selector(LabelSelector.model_validate({"matchExpressions": reqs}))
    return lambda node: matcher.matches(node.metadata.labels)


def _plugins(
    profile: Profile,
    index: int,
    entries: dict[str, PluginEntry],
    handle: DeschedulerHandle,
    source: str,
) -> tuple[list[Any], list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The profile's evictors, Deschedule and Balance plugins, built with their args on
    ``handle``; errors name the file, the profile and the field."""
    obj = f'profiles[{index}] "{profile.name}"'
    built: dict[str, Any] = {}

    def build(name: str, point: str) -> Any:
        entry = entries.get(name)
        if entry is None:
            known = ", ".join(sorted(entries))
            raise UserInputError(
                f'plugin "{name}" (in plugins.{point}) is not installed; known: {known}',
                source=source,
                obj=obj,
            )
        if point not in entry.points:
            raise UserInputError(f'plugin "{name}" does not extend {point}', source=source, obj=obj)
        if name in built:
            return built[name]
        at, raw = profile.args_of(name)
        args: Any = raw
        model = getattr(entry.cls, "Args", None)
        if model is not None:
            try:
                args = model.model_validate(raw)
            except ValidationError as err:
                prefix = ["pluginConfig", at if at is not None else 0, "args"]
                raise UserInputError(
                    f'invalid args of plugin "{name}"',
                    source=source,
                    obj=obj,
                    problems=problems_from_validation_error(err, prefix),
                ) from None
        try:
            built[name] = entry.cls(args, handle)
        except ValueError as err:
            raise UserInputError(
                f'initializing plugin "{name}": {err}', source=source, obj=obj
            ) from None
        return built[name]

    evictors = []
    for name in profile.evictors():
        entry = entries.get(name)
        point = (
            "filter" if entry is not None and "filter" in entry.points else "pre_eviction_filter"
        )
        evictors.append(build(name, point))
    deschedule = [(n, build(n, "deschedule")) for n in profile.plugins.deschedule.enabled]
    balance = [(n, build(n, "balance")) for n in profile.plugins.balance.enabled]
    return evictors, deschedule, balance


def _run_profiles(
    sim: Simulation,
    policy: DeschedulerPolicy,
    entries: dict[str, PluginEntry],
    source: str,
    *,
    dry_run: bool,
    only: tuple[str, str] | None = None,
    reference: datetime | None = None,
) -> list[Eviction]:
    """Every profile's Deschedule plugins, then its Balance plugins, on the cluster now
    (``only``: just that profile's strategy)."""
    accept = _node_filter(policy, source)
    limits = EvictionLimits(
        policy.max_no_of_pods_to_evict_per_node,
        policy.max_no_of_pods_to_evict_per_namespace,
        policy.max_no_of_pods_to_evict_total,
    )
    out: list[Eviction] = []
    for i, profile in enumerate(policy.profiles):
        handle = DeschedulerHandle(
            sim.cluster, profile=profile.name, limits=limits, dry_run=dry_run, reference=reference
        )
        evictors, deschedule, balance = _plugins(profile, i, entries, handle, source)
        handle.evictors = evictors
        nodes = [n for n in handle.nodes() if accept(n)]
        for name, plugin in deschedule:
            if only in (None, (profile.name, name)):
                handle.strategy = name
                plugin.deschedule(nodes)
        for name, plugin in balance:
            if only in (None, (profile.name, name)):
                handle.strategy = name
                plugin.balance(nodes)
        out.extend(handle.evictions)
    return out


def _utilization(sim: Simulation) -> dict[str, dict[str, float]]:
    handle = DeschedulerHandle(sim.cluster)
    out = {}
    for node in handle.nodes():
        used, cap = handle.node_usage(node), handle.node_capacity(node)
        out[node.name] = {r: round(percent(used[r], cap[r]), 2) for r in RESOURCE_NAMES}
    return out


def _counts(sim: Simulation) -> tuple[int, int]:
    pods = [p for p in sim.cluster.pods() if p.metadata.deletion_timestamp is None]
    bound = sum(1 for p in pods if p.spec.node_name)
    pending = sum(1 for p in pods if not p.spec.node_name and p.status.phase in (None, "Pending"))
    return bound, pending


def _classes(
    sim: Simulation, policy: DeschedulerPolicy, entries: dict[str, PluginEntry], source: str
) -> dict[tuple[str, str], tuple[dict[str, float], dict[str, float], list[str], list[str]]]:
    """For each strategy with ``classify(nodes)`` (the utilisation ones): its low and high
    thresholds, and the nodes under every low threshold and over some high one."""
    accept = _node_filter(policy, source)
    out = {}
    for i, profile in enumerate(policy.profiles):
        handle = DeschedulerHandle(sim.cluster, profile=profile.name, dry_run=True)
        _, deschedule, balance = _plugins(profile, i, entries, handle, source)
        nodes = [n for n in handle.nodes() if accept(n)]
        for name, plugin in [*deschedule, *balance]:
            classify = getattr(plugin, "classify", None)
            if classify is None:
                continue
            usage, low, high = classify(nodes)
            under = [n for n, u in usage.items() if all(u[r] < low[r] for r in low)]
            over = [n for n, u in usage.items() if any(u[r] > high[r] for r in high)]
            out[(profile.name, name)] = (low, high, under, over)
    return out


def _wanted(
    sim: Simulation,
    policy: DeschedulerPolicy,
    entries: dict[str, PluginEntry],
    source: str,
    reference: datetime | None,
) -> dict[tuple[str, str], int]:
    """How many evictions each strategy, run alone (dry) on the placement now, would make:
    the violations it sees, not hidden by what the strategies before it would evict."""
    out = {}
    for profile in policy.profiles:
        for name in [*profile.plugins.deschedule.enabled, *profile.plugins.balance.enabled]:
            key = (profile.name, name)
            out[key] = len(
                _run_profiles(
                    sim, policy, entries, source, dry_run=True, only=key, reference=reference
                )
            )
    return out


def _replacements(
    run: Any, snapshot: dict[str, Pod], evicted: list[Eviction]
) -> dict[str, dict[str, str]]:
    """For each evicted pod (by uid): the pod its controller created instead (one not in
    ``snapshot``, the pods before the evictions), where it was bound or why it is pending."""
    new_by_owner: dict[str, list[Pod]] = {}
    for p in run.cluster.pods():
        ref = p.metadata.controller_ref
        if ref is not None and p.metadata.uid not in snapshot:
            new_by_owner.setdefault(ref.uid, []).append(p)
    for pods in new_by_owner.values():
        pods.sort(key=lambda p: (p.metadata.creation_timestamp or EPOCH, p.name))
    out: dict[str, dict[str, str]] = {}
    for e in evicted:
        ref = snapshot[e.uid].metadata.controller_ref
        if ref is None:
            out[e.uid] = {"outcome": "not replaced: no controller manages it"}
            continue
        candidates = new_by_owner.get(ref.uid, [])
        if not candidates:
            out[e.uid] = {"outcome": "not replaced: its controller created no pod in its place"}
            continue
        new = candidates.pop(0)
        rec = {"replacement": new.key}
        if new.spec.node_name:
            rec["replacementNode"] = new.spec.node_name
            rec["outcome"] = f"replaced by {new.key} on {new.spec.node_name}"
        else:
            attempts = run.attempts.get(new.metadata.uid, [])
            why = attempts[-1].message if attempts else "not scheduled yet"
            rec["outcome"] = f"replacement {new.key} pending: {why}"
        out[e.uid] = rec
    return out


def deschedule(
    objects: Iterable[KubeObject], policy: DeschedulerPolicy, **kw: Any
) -> DescheduleReport:
    """The report of :func:`run_deschedule` (same arguments)."""
    return run_deschedule(objects, policy, **kw)[0]


def run_deschedule(
    objects: Iterable[KubeObject],
    policy: DeschedulerPolicy,
    *,
    config: KubeSchedulerConfiguration | EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    seed: int = 0,
    source: str = "<policy>",
    plugins: dict[str, PluginEntry] | None = None,
    reference: datetime | None = None,
) -> tuple[DescheduleReport, SimulationRun]:
    """Schedule ``objects``, run ``policy`` on the result (evicting through the Eviction
    API), re-place the evicted pods with the scheduler's profile, and report per eviction
    where the pod went and per strategy whether its goal was met; with the simulation run
    that re-placed them (the cluster after, for the HTML report). ``plugins`` replaces the
    installed descheduler plugins (tests). ``reference``: the real time a live cluster was
    read, against which its pods' ages are measured (see ``DeschedulerHandle.pod_age``)."""
    entries = plugins if plugins is not None else discover()
    sim = Simulation(objects, config=config, registry=registry, seed=seed)
    try:
        # A policy naming an unknown plugin or bad args fails before the cluster is
        # scheduled, which can take long.
        for i, profile in enumerate(policy.profiles):
            _plugins(profile, i, entries, DeschedulerHandle(sim.cluster, dry_run=True), source)
        sim.run()
        before_nodes = _utilization(sim)
        bound_before, pending_before = _counts(sim)
        wanted_before = _wanted(sim, policy, entries, source, reference)
        classes_before = _classes(sim, policy, entries, source)
        snapshot: dict[str, Pod] = {p.metadata.uid or "": p for p in sim.cluster.pods()}
        done = _run_profiles(sim, policy, entries, source, dry_run=False, reference=reference)
        run = sim.run()
        wanted_after = _wanted(sim, policy, entries, source, reference)
        classes_after = _classes(sim, policy, entries, source)
        after_nodes = _utilization(sim)
        bound_after, pending_after = _counts(sim)
    finally:
        sim.close()
    outcomes = _replacements(run, snapshot, [e for e in done if e.refused is None])
    evictions = []
    for e in done:
        rec = outcomes.get(e.uid, {}) if e.refused is None else {}
        evictions.append(
            EvictionReport(
                pod=e.pod,
                node=e.node,
                profile=e.profile,
                strategy=e.strategy,
                reason=e.reason,
                evicted=e.refused is None,
                refused=e.refused,
                replacement=rec.get("replacement"),
                replacementNode=rec.get("replacementNode"),
                outcome=rec.get("outcome", "")
                if e.refused is None
                else f"not evicted: {e.refused}",
            )
        )
    strategies = []
    for profile in policy.profiles:
        for name in [*profile.plugins.deschedule.enabled, *profile.plugins.balance.enabled]:
            key = (profile.name, name)
            mine = [e for e in done if (e.profile, e.strategy) == key]
            after = wanted_after.get(key, 0)
            goal = None
            if key in classes_before and key in classes_after:
                low, high, under_before, over_before = classes_before[key]
                _, _, under_after, over_after = classes_after[key]
                goal = UtilizationGoal(
                    low=low,
                    high=high,
                    underBefore=under_before,
                    overBefore=over_before,
                    underAfter=under_after,
                    overAfter=over_after,
                )
            strategies.append(
                StrategyReport(
                    profile=profile.name,
                    strategy=name,
                    evictions=sum(1 for e in mine if e.refused is None),
                    refused=sum(1 for e in mine if e.refused is not None),
                    violationsBefore=wanted_before.get(key, 0),
                    violationsAfter=after,
                    goalMet=after == 0,
                    utilization=goal,
                )
            )
    nodes = [
        NodeUtilization(node=n, before=before_nodes.get(n, {}), after=after_nodes.get(n, {}))
        for n in sorted({*before_nodes, *after_nodes})
    ]
    report = DescheduleReport(
        evictions=evictions,
        strategies=strategies,
        nodes=nodes,
        pods=DeschedulePodCount(
            boundBefore=bound_before,
            pendingBefore=pending_before,
            boundAfter=bound_after,
            pendingAfter=pending_after,
        ),
    )
    return report, run


__all__ = ["deschedule", "run_deschedule"]
