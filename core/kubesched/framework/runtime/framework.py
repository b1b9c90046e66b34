"""One profile's plugins, run at each extension point with kube-scheduler's semantics."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api import PODS
from kubesched.clock import RealClock
from kubesched.errors import KubeschedError, debug_enabled
from kubesched.features import FeatureGates
from kubesched.framework.cycle_state import PODS_TO_ACTIVATE_KEY, CycleState, PodsToActivate
from kubesched.framework.diagnosis import EXTENDER_NAME
from kubesched.framework.events import WILDCARD_EVENT, ClusterEvent, ClusterEventWithHint
from kubesched.framework.gomath import sat_add_array, saturate
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.preemption import PreemptionExecutor
from kubesched.framework.registry import PluginRegistry
from kubesched.framework.results import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    LazyNames,
    NodeScores,
    Placement,
    PodGroupAssignments,
    PostFilterResult,
    PreFilterResult,
)
from kubesched.framework.runtime.batch import GET_NODE_HINT, OpportunisticBatch
from kubesched.framework.runtime.calls import positional_caller
from kubesched.framework.runtime.pauses import BindingPauses, WallClockPauses
from kubesched.framework.runtime.waiting_pods import (
    MAX_PERMIT_TIMEOUT,
    PERMIT_WAIT_REASON,
    WaitingPod,
    WaitingPods,
)
from kubesched.framework.status import Code, Status, not_none_mask
from kubesched.framework.types import NodeBatch, NodeInfo, NodeToStatus, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    from kubesched.api import Pod
    from kubesched.config import EffectiveProfile
    from kubesched.framework.node_table import NodeTable
    from kubesched.metrics import Metrics

log = logging.getLogger(__name__)

PLUGIN_METRICS_SAMPLE_PERCENT = 10
"""Share of scheduling cycles whose per-plugin durations are recorded (upstream: 10%)."""

OPPORTUNISTIC_BATCHING_GATE = "OpportunisticBatching"
"""The gate under which a profile hands the previous pod's node ranking on (see
:class:`~kubesched.framework.runtime.batch.OpportunisticBatch`)."""
SIGNED_EXTENSION_POINTS = ("PreFilter", "Filter", "PreScore", "Score")
"""The extension points whose plugins must all sign pods for a profile to batch (upstream)."""
SCHEDULER_NAME_SIGNER = "v1.Pod.Spec.SchedulerName"
"""The signature's part that the framework itself adds (upstream's signer name)."""

REJECTING_EXTENSION_POINTS = ("PreEnqueue", "PreFilter", "Filter", "Reserve", "Permit")
"""Extension points whose plugins can reject a pod, and so must say which events may
make it schedulable again."""


PRE_FILTER_EXTENSION_HOOKS = ("pre_filter_add_pod", "pre_filter_remove_pod")
"""The PreFilter extensions: a plugin implementing them tracks pods added and removed."""


class FrameworkError(KubeschedError):
    """A profile that cannot be built: an unknown plugin, a plugin that fails to start."""


class PluginRunner:
    """One plugin instance of a profile, with a fast caller for each hook it implements."""

    __slots__ = ("calls", "name", "placement_weight", "plugin", "weight")

    def __init__(self, name: str, plugin: Any, weight: int) -> None:
        self.name = name
        self.plugin = plugin
        self.weight = weight
        self.placement_weight = 0
        """Its weight at PlacementScore (a plugin may score nodes and placements)."""
        self.calls: dict[str, Callable[..., Any]] = {}

    def call(self, hook: str) -> Callable[..., Any] | None:
        """The positional caller of ``hook``, built on first use; None if not implemented."""
        try:
            return self.calls[hook]
        except KeyError:
            method = getattr(self.plugin, hook, None)
            caller = (
                positional_caller(method, hook)
                if method is not None and hasattr(method, "kubesched_impl")
                else None
            )
            self.calls[hook] = caller
            return caller

    def __repr__(self) -> str:
        return f"PluginRunner({self.name!r})"


NODE_ONLY_FILTER_ATTRIBUTE = "filter_depends_only_on_node"
"""The plugin class attribute that declares a Filter depending only on the node."""


def filter_depends_only_on_node(runner: PluginRunner) -> bool:
    """Whether ``runner``'s Filter verdict for a pod on a node depends only on the pod, the
    Node object and what its PreFilter wrote in the CycleState, never on the node's pods.

    A plugin declares it with the class attribute ``filter_depends_only_on_node = True``
    (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity). A plugin with
    PreFilter AddPod/RemovePod extensions tracks pods by definition and never counts as
    node-only, whatever it declares. Preemption's dry run, which only adds and removes
    pods, skips such a Filter on the nodes where it passed.
    """
    plugin = runner.plugin
    return getattr(type(plugin), NODE_ONLY_FILTER_ATTRIBUTE, False) is True and all(
        runner.call(hook) is None for hook in PRE_FILTER_EXTENSION_HOOKS
    )


SKIP_DECLARATION_ATTRIBUTE = "skips_pods_without"
"""The optional plugin attribute that declares, per extension point (``PreFilter``,
``PreScore``), the pod fields without which the plugin answers ``SKIP`` there."""

SKIP_DECLARATION_POINTS = ("PreFilter", "PreScore")
"""The extension points at which a plugin may declare the pods it skips."""


def _affinity_part(part: str) -> Callable[[PodInfo], bool]:
    def has(pod_info: PodInfo) -> bool:
        affinity = pod_info.pod.spec.affinity
        return affinity is not None and getattr(affinity, part) is not None

    return has


POD_FIELDS: dict[str, Callable[[PodInfo], bool]] = {
    "volumes": lambda pi: bool(pi.pod.spec.volumes),
    "resource_claims": lambda pi: bool(pi.pod.spec.resource_claims),
    "host_ports": lambda pi: bool(pi.host_ports),
    "node_selector": lambda pi: bool(pi.pod.spec.node_selector),
    "node_affinity": _affinity_part("node_affinity"),
    "pod_affinity": _affinity_part("pod_affinity"),
    "pod_anti_affinity": _affinity_part("pod_anti_affinity"),
    "topology_spread_constraints": lambda pi: bool(pi.pod.spec.topology_spread_constraints),
}
"""The pod fields a :data:`SKIP_DECLARATION_ATTRIBUTE` may name, and whether a pod has
one: a non-empty list or map, a set ``spec.affinity`` part, a container host port."""


def skip_declaration(runner: PluginRunner, extension_point: str) -> frozenset[str] | None:
    """The pod fields without which ``runner``'s plugin answers ``SKIP`` at
    ``extension_point``, as its ``skips_pods_without`` attribute declares; ``None`` when
    it declares nothing there (the plugin is then always called).

    The attribute maps an extension point to field names of :data:`POD_FIELDS`
    (``{"PreFilter": ("volumes",)}``); it may be set on the instance, when the plugin's
    args decide. :class:`FrameworkError` for anything else: a wrong declaration would
    silently skip a plugin.
    """
    declared = getattr(runner.plugin, SKIP_DECLARATION_ATTRIBUTE, None)
    if declared is None:
        return None
    where = f"plugin {runner.name!r}: {SKIP_DECLARATION_ATTRIBUTE}"
    if not isinstance(declared, Mapping):
        raise FrameworkError(
            f"{where} must map extension points to pod fields, got {type(declared).__name__}"
        )
    unknown_points = sorted(set(declared) - set(SKIP_DECLARATION_POINTS))
    if unknown_points:
        raise FrameworkError(
            f"{where} names {unknown_points}; only {list(SKIP_DECLARATION_POINTS)} may be declared"
        )
    fields = declared.get(extension_point)
    if fields is None:
        return None
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise FrameworkError(f"{where}[{extension_point!r}] must be a list of pod field names")
    unknown = sorted(set(fields) - set(POD_FIELDS))
    if unknown:
        raise FrameworkError(
            f"{where}[{extension_point!r}] names unknown pod field(s) {unknown}; "
            f"known: {sorted(POD_FIELDS)}"
        )
    return frozenset(fields)


class _SkipDeclarations:
    """One extension point's declared skips: per runner, the pod fields it needs."""

    __slots__ = ("by_runner", "fields")

    def __init__(self, runners: Sequence[PluginRunner], extension_point: str) -> None:
        self.by_runner: dict[str, frozenset[str]] = {}
        for runner in runners:
            fields = skip_declaration(runner, extension_point)
            if fields is not None:
                self.by_runner[runner.name] = fields
        self.fields = tuple(sorted(set().union(*self.by_runner.values())))

    def skipped(self, pod_info: PodInfo) -> frozenset[str]:
        """The plugins that would answer ``SKIP`` for ``pod_info`` by their declaration."""
        if not self.by_runner:
            return frozenset()
        present = {f for f in self.fields if POD_FIELDS[f](pod_info)}
        return frozenset(
            name for name, fields in self.by_runner.items() if present.isdisjoint(fields)
        )


@dataclass(frozen=True)
class PluginScore:
    """One Score plugin's scores of the feasible nodes: raw, after NormalizeScore, weight."""

    plugin: str
    weight: int
    raw: np.ndarray
    normalized: np.ndarray

    @property
    def weighted(self) -> np.ndarray:
        """``normalized × weight``."""
        return self.normalized * self.weight


class ScoreResult:
    """All Score plugins' scores of the feasible nodes and the weighted totals.

    ``names`` may be given as a function returning the list: the scheduler reads one
    name (the host's) per pod, so the list is built only when a report asks for it.
    """

    __slots__ = ("_names", "plugins", "totals")

    def __init__(
        self,
        names: list[str] | Callable[[], list[str]],
        plugins: list[PluginScore],
        totals: np.ndarray,
    ) -> None:
        self._names = names
        self.plugins = plugins
        self.totals = totals

    names = LazyNames()
    """The feasible nodes' names, in the order of ``totals``."""

    def name_at(self, i: int) -> str:
        """The name of the ``i``-th node (without building the list)."""
        names = self._names
        if isinstance(names, _BatchNames):
            return names.at(i)
        return self.names[i]

    def __repr__(self) -> str:
        return f"ScoreResult({self.names!r}, {self.plugins!r}, {self.totals!r})"


class Framework:
    """A profile's plugins, instantiated once with their args, and the Handle they receive.

    The scheduler calls ``run_*`` at each extension point; plugins call the Handle's
    methods (``snapshot``, ``nominator``, ``waiting_pods``, ``run_filter_plugins_*``,
    ``client``, ``event_recorder``, ``lister``). Plugins run one at a time in the
    profile's configured order; an exception in a plugin becomes an ``ERROR`` status
    naming it.
    """

    def __init__(
        self,
        profile: EffectiveProfile,
        registry: PluginRegistry,
        *,
        client: Any = None,
        lister: Any = None,
        event_recorder: Any = None,
        nominator: Any = None,
        metrics: Metrics | None = None,
        clock: Any = None,
        parallelism: int = 16,
        rng: random.Random | None = None,
        feature_gates: FeatureGates | None = None,
        extenders: Sequence[Any] = (),
    ) -> None:
        self.profile_name = profile.scheduler_name
        self.feature_gates = feature_gates or FeatureGates()
        self.extenders: tuple[Any, ...] = tuple(extenders)
        """The scheduler's extenders (``kubesched.extenders.Extender``), called after the
        plugins at Filter and Score, in preemption and at Bind (upstream ``Extenders()``)."""
        self.profile = profile
        self.client = client
        self.lister = lister
        self.event_recorder = event_recorder
        self.nominator = nominator
        self.metrics = metrics
        self.clock = clock
        self.parallelism = parallelism
        self.rng = rng or random.Random()
        self.waiting_pods = WaitingPods()
        self.pauses: BindingPauses = WallClockPauses()
        """How binding cycles pause (:meth:`pause`); the scheduler sets its own."""
        self.run_api_calls: Callable[[Callable[[], None]], None] | None = None
        """Runs a plugin's API calls after its cycle (the preemption's, with
        ``SchedulerAsyncPreemption``): ``kubesched run`` sets a pool of worker threads;
        None (the embedded cluster, tests) runs them at once, in the caller's thread."""
        self.pod_activator: Callable[[Mapping[str, Pod]], None] | None = None
        """The queue's ``activate`` (set by the scheduler), behind :meth:`activate`."""
        self.preemption_executor = PreemptionExecutor(self)
        """Carries this profile's preemptions out: DefaultPreemption's, and a pod group's
        (WorkloadAwarePreemption), so that DefaultPreemption's PreEnqueue holds the pods of
        either while its asynchronous API calls run (upstream's DefaultPreemption owns
        the one Executor that serves both)."""
        self._ep_histograms: dict[tuple[str, Code], Any] = {}
        self._plugin_histograms: dict[tuple[str, str, Code], Any] = {}
        # Per priority, what the nominated pods add, kept current from the nominator's
        # changes (see _nominated_additions).
        self._nominated_by_priority: dict[int, _NominatedAdditions] = {}
        self.snapshot: Any = None
        self.runners: dict[str, PluginRunner] = {}
        self.points: dict[str, list[PluginRunner]] = {}
        self._build(profile, registry)
        self.node_only_filters: frozenset[str] = frozenset(
            r.name for r in self.points["Filter"] if filter_depends_only_on_node(r)
        )
        """The Filter plugins whose verdict on a node cannot change when pods are added to
        or removed from it (see :func:`filter_depends_only_on_node`)."""
        self._declared_skips = {
            ep: _SkipDeclarations(self.points[ep], ep) for ep in SKIP_DECLARATION_POINTS
        }
        self._signers = self._signing_plugins()
        self.batch: OpportunisticBatch | None = (
            OpportunisticBatch((clock or RealClock()).now, self._count_batch, self._observe_batch)
            if self.feature_enabled(OPPORTUNISTIC_BATCHING_GATE)
            else None
        )
        """This profile's opportunistic batch, with the ``OpportunisticBatching`` gate on."""

    # -- construction -------------------------------------------------------------------
    def _build(self, profile: EffectiveProfile, registry: PluginRegistry) -> None:
        weights: dict[str, int] = {p.name: p.weight for p in profile.plugins.get("Score", ())}
        for ep in EXTENSION_POINTS:
            runners = []
            for enabled in profile.plugins.get(ep.name, ()):
                runner = self._runner(enabled.name, registry, profile, weights)
                if ep.name == "PlacementScore":
                    runner.placement_weight = enabled.weight
                if runner.call(ep.hook) is None:
                    raise FrameworkError(
                        f"profile {self.profile_name!r}: plugin {enabled.name!r} "
                        f"does not extend {ep.name} plugin"
                    )
                runners.append(runner)
            self.points[ep.name] = runners
        if len(self.points["QueueSort"]) != 1:
            raise FrameworkError(
                "only one queue sort plugin required for profile with scheduler name "
                f"{self.profile_name!r}, but got {len(self.points['QueueSort'])}"
            )
        if not self.points["Bind"]:
            raise FrameworkError(
                "at least one bind plugin is needed for profile with scheduler name "
                f"{self.profile_name!r}"
            )

    def _signing_plugins(self) -> tuple[PluginRunner, ...] | None:
        """The plugins that sign pods (each once, in extension point order), or None when
        the profile cannot sign any pod: it has extenders, or a PreFilter, Filter,
        PreScore or Score plugin without ``sign_pod`` (upstream logs which, and so do we)."""
        runners = list(dict.fromkeys(r for ep in SIGNED_EXTENSION_POINTS for r in self.points[ep]))
        if self.extenders:
            log.info(
                "Disabling signatures for profile %s because it has extenders configured",
                self.profile_name,
            )
            return None
        unsupported = [r.name for r in runners if r.call("sign_pod") is None]
        if unsupported:
            log.info(
                "Disabling signatures for profile %s because plugins do not support it: %s",
                self.profile_name,
                ", ".join(unsupported),
            )
            return None
        return tuple(runners)

    def sign_pod(self, pod_info: PodInfo) -> str | None:
        """The pod's scheduling signature: two pods with the same one get the same Filter
        verdicts and scores on the same nodes. None when the pod cannot be signed (a plugin
        said so or failed, or the profile signs no pod)."""
        if self._signers is None:
            return None
        pod = pod_info.pod
        fragments: dict[str, Any] = {SCHEDULER_NAME_SIGNER: pod.spec.scheduler_name}
        for runner in self._signers:
            try:
                result = runner.call("sign_pod")(pod, pod_info)
            except Exception:
                log.exception("SignPod failed for plugin %s", runner.name)
                return None
            if isinstance(result, Status):
                if not result.is_success():
                    log.debug("SignPod can't sign pod due to plugin %s: %s", runner.name, result)
                    return None
                continue
            fragments.update(result or ())
        try:
            return json.dumps(fragments, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError):
            log.exception("SignPod failed to marshal signature object")
            return None

    def _count_batch(self, kind: str, label: str) -> None:
        """Count a batch attempt's result or a flush's reason (upstream's metrics)."""
        if self.metrics is None:
            return
        counter = (
            self.metrics.batch_attempts if kind == "attempt" else self.metrics.batch_cache_flushed
        )
        counter.labels(self.profile_name, label).inc()

    def _observe_batch(self, histogram: str, hinted: str, seconds: float) -> None:
        """Observe a batch call's duration in upstream's latency histogram for it."""
        if self.metrics is None:
            return
        if histogram == GET_NODE_HINT:
            child = self.metrics.histogram(
                self.metrics.get_node_hint_duration, hinted, self.profile_name
            )
        else:
            child = self.metrics.histogram(
                self.metrics.store_schedule_results_duration, self.profile_name
            )
        child.observe(seconds)

    def _runner(
        self,
        name: str,
        registry: PluginRegistry,
        profile: EffectiveProfile,
        weights: Mapping[str, int],
    ) -> PluginRunner:
        runner = self.runners.get(name)
        if runner is not None:
            return runner
        entry = registry.get(name)
        if entry is None:
            installed = ", ".join(registry.names()) or "none"
            raise FrameworkError(
                f"profile {self.profile_name!r}: plugin {name!r} is not installed "
                f"(installed plugins: {installed})"
            )
        args = profile.plugin_args.get(name)
        if args is None and entry.args_model is not None:
            args = entry.args_model()
        try:
            plugin = entry.plugin_class(args, self)
        except Exception as err:
            raise FrameworkError(f"initializing plugin {name!r}: {err}") from err
        runner = self.runners[name] = PluginRunner(name, plugin, weights.get(name, 0))
        return runner

    def activate(self, pods: Mapping[str, Pod]) -> None:
        """Move these pods (by key) to the active queue if they wait in it (upstream
        ``Handle.Activate``); a pod being scheduled is retried after its attempt."""
        if self.pod_activator is not None:
            self.pod_activator(pods)

    def feature_enabled(self, name: str) -> bool:
        """Whether feature gate ``name`` is on for this scheduler (``--feature-gates``)."""
        return self.feature_gates.enabled(name)

    def pause(self, seconds: float) -> bool:
        """Pause the calling binding cycle (see ``Handle.pause``); False at shutdown."""
        return self.pauses.pause(seconds)

    def plugin(self, name: str) -> Any:
        """The instance of plugin ``name`` in this profile (KeyError if not enabled)."""
        return self.runners[name].plugin

    def plugins_at(self, extension_point: str) -> list[str]:
        """The names of the plugins enabled at ``extension_point``, in order."""
        return [r.name for r in self.points[extension_point]]

    def has_filter_plugins(self) -> bool:
        """True when the profile has Filter plugins."""
        return bool(self.points["Filter"])

    def has_post_filter_plugins(self) -> bool:
        """True when the profile has PostFilter plugins."""
        return bool(self.points["PostFilter"])

    def has_score_plugins(self) -> bool:
        """True when the profile has Score plugins."""
        return bool(self.points["Score"])

    # -- Handle -------------------------------------------------------------------------
    def set_snapshot(self, snapshot: Any) -> None:
        """The snapshot plugins see through ``handle.snapshot`` for this cycle."""
        self.snapshot = snapshot

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod with ``uid`` if it is waiting at Permit."""
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]:
        """Every pod waiting at Permit."""
        return iter(self.waiting_pods)

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the waiting pod with ``uid``; True if there was one."""
        waiting = self.waiting_pods.get(uid)
        if waiting is None:
            return False
        waiting.reject("", "removed")
        return True

    def new_cycle_state(self) -> CycleState:
        """A fresh CycleState; plugin durations are sampled in 10% of cycles as upstream."""
        state = CycleState()
        state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
        state.record_plugin_metrics = (
            self.metrics is not None and self.rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        )
        return state

    # -- queueing -----------------------------------------------------------------------
    def queue_sort_less(self) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]:
        """The QueueSort plugin's ``less``."""
        return self.points["QueueSort"][0].call("less")

    def queue_sort_key(self) -> Callable[[QueuedPodInfo], Any] | None:
        """The QueueSort plugin's optional ``sort_key`` (``less(a, b)`` exactly when
        ``sort_key(a) < sort_key(b)``), or ``None``: the activeQ then sorts with it in
        C (:class:`kubesched.queue.heap.KeyedHeap`)."""
        key = getattr(self.points["QueueSort"][0].plugin, "sort_key", None)
        return key if callable(key) else None

    def run_pre_enqueue_plugins(self, pod_info: PodInfo) -> Status | None:
        """PreEnqueue: None if the pod may enter the active queue, else the gating status."""
        for runner in self.points["PreEnqueue"]:
            status = self._safe(runner, "pre_enqueue", "PreEnqueue", pod_info.pod, pod_info)
            if status is not None and not status.is_success() and not status.is_skip():
                return status.with_plugin(runner.name)
        return None

    def events_to_register(self) -> list[tuple[str, ClusterEvent, Any]]:
        """``(plugin, event, hint)`` for every event the profile's plugins registered.

        A plugin at a rejecting extension point that registers nothing gets the wildcard
        event, so that the pods it rejects are never stranded.
        """
        registrations: list[tuple[str, ClusterEvent, Any]] = []
        seen: set[str] = set()
        for ep_name in REJECTING_EXTENSION_POINTS:
            for runner in self.points[ep_name]:
                if runner.name in seen:
                    continue
                seen.add(runner.name)
                call = runner.call("events_to_register")
                events: Sequence[ClusterEventWithHint] = (
                    call() if call is not None else [ClusterEventWithHint(WILDCARD_EVENT)]
                )
                for ev in events:
                    if isinstance(ev, ClusterEvent):
                        ev = ClusterEventWithHint(ev)
                    registrations.append((runner.name, ev.event, ev.queueing_hint))
        if self.extenders:
            # Extenders register no events: a pod they rejected moves on any event.
            registrations.append((EXTENDER_NAME, WILDCARD_EVENT, None))
        return registrations

    # -- scheduling cycle ---------------------------------------------------------------
    def run_pre_filter_plugins(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """PreFilter: ``(node narrowing or None, status, plugins that narrowed or rejected)``.

        As upstream: ``UNSCHEDULABLE_AND_UNRESOLVABLE`` stops at once; ``UNSCHEDULABLE``
        lets the remaining plugins run (preemption may still help, kubernetes#119770)
        and is returned at the end; an empty intersection of narrowings rejects the pod.
        The plugins that returned ``SKIP`` are recorded in the cycle state however the
        call ends (upstream does it in a ``defer``), so a later Filter run skips them.
        """
        start = time.perf_counter()
        skip: set[str] = set()
        try:
            result, status, plugins = self._pre_filter(state, pod_info, nodes, skip)
        finally:
            state.skip_filter_plugins = skip
        self._observe("PreFilter", status, start)
        return result, status, plugins

    def _pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo], skip: set[str]
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        result: PreFilterResult | None = None
        narrowing: list[str] = []
        status = Status()
        pod = pod_info.pod
        declared = self._declared_skips["PreFilter"].skipped(pod_info)
        for runner in self.points["PreFilter"]:
            if runner.name in declared:
                self._declared_skip(runner, "PreFilter", state, skip)
                continue
            r = self._safe(runner, "pre_filter", "PreFilter", state, pod, pod_info, nodes, st=state)
            if isinstance(r, Status):
                if r.is_skip():
                    skip.add(runner.name)
                    continue
                if r.is_success():
                    continue
                r.with_plugin(runner.name)
                if r.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, r, set()
                if r.code is Code.UNSCHEDULABLE:
                    status = r
                    continue
                return None, _wrap_error(r, f"running PreFilter plugin {_q(runner.name)}"), set()
            if r is None or r.all_nodes():
                continue
            narrowing.append(runner.name)
            result = r if result is None else result.merge(r)
            if not result.node_names:
                if len(narrowing) == 1:
                    msg = f"node(s) didn't satisfy plugin {narrowing[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), set(narrowing)
        return result, status, set(narrowing)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_info: PodInfo, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        """Every PreFilter plugin's ``pre_filter_add_pod`` (preemption, nominated pods)."""
        return self._run_pre_filter_extension(
            "pre_filter_add_pod", state, pod_info, pod_info_to_add, node_info
        )

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod_info: PodInfo,
        pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        """Every PreFilter plugin's ``pre_filter_remove_pod`` (preemption's victims)."""
        return self._run_pre_filter_extension(
            "pre_filter_remove_pod", state, pod_info, pod_info_to_remove, node_info
        )

    def _run_pre_filter_extension(
        self, hook: str, state: CycleState, pod_info: PodInfo, other: PodInfo, node_info: NodeInfo
    ) -> Status:
        for runner in self.points["PreFilter"]:
            if runner.name in state.skip_filter_plugins or runner.call(hook) is None:
                continue
            status = self._safe(
                runner, hook, "PreFilterExtension", state, pod_info.pod, pod_info, other, node_info
            )
            if status is not None and not status.is_success():
                return _wrap_error(
                    status.with_plugin(runner.name),
                    f"running {hook} on PreFilter plugin {_q(runner.name)}",
                )
        return Status()

    def run_filter_plugins(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status:
        """Filter on one node: the first non-success status, or success."""
        pod = pod_info.pod
        for runner in self.points["Filter"]:
            if runner.name in state.skip_filter_plugins:
                continue
            status = self._safe(
                runner, "filter", "Filter", state, pod, pod_info, node_info, st=state
            )
            if status is not None and not status.is_success():
                status.with_plugin(runner.name)
                if not status.is_rejected():
                    return _wrap_error(status, f"running {_q(runner.name)} filter plugin")
                return status
        return Status()

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status:
        """Filter on one node, counting the pods nominated to it with equal or higher
        priority, as upstream does: filters run once with those pods added (the pod must
        fit beside them) and, if that passes, once without (it must fit alone too)."""
        status = Status()
        added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                added, state_to_use, info_to_use = self._add_nominated_pods(
                    state, pod_info, node_info
                )
                if isinstance(info_to_use, Status):
                    return info_to_use
            elif not added or not status.is_success():
                break
            status = self.run_filter_plugins(state_to_use, pod_info, info_to_use)
            if not status.is_success() and not status.is_rejected():
                return status
        return status

    def _add_nominated_pods(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[bool, CycleState, Any]:
        if self.nominator is None:
            return False, state, node_info
        nominated = self.nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info
        info_out = node_info.clone()
        state_out = state.clone()
        added = False
        for p in nominated:
            if p.priority >= pod_info.priority and p.uid != pod_info.uid:
                info_out.add_pod(p)
                status = self.run_pre_filter_extension_add_pod(state_out, pod_info, p, info_out)
                if not status.is_success():
                    return False, state, status
                added = True
        return added, state_out, info_out

    def pre_filter_extensions_active(
        self, state: CycleState, hooks: Sequence[str] = PRE_FILTER_EXTENSION_HOOKS
    ) -> bool:
        """Whether a PreFilter plugin that PreFilter did not skip implements one of
        ``hooks``: adding or removing pods in a what-if then changes the CycleState,
        which must be cloned per node."""
        return any(
            r.name not in state.skip_filter_plugins and any(r.call(h) is not None for h in hooks)
            for r in self.points["PreFilter"]
        )

    def pre_filter_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        table: NodeTable,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> dict[str, Any] | None:
        """Per plugin whose PreFilter AddPod/RemovePod extension is active for the pod,
        its PreFilter state for copies of the nodes at ``rows`` with ``pods[j]`` removed
        or added on the copy of ``rows[j]``, as its optional ``pre_filter_copies``
        builds it (``view(positions, weights)`` picks the copies and which pods count;
        ``with_added(rows, pods)`` adds more pods). ``None`` when one of them has no such
        method, returns ``None`` or fails: the caller then clones the CycleState node by
        node."""
        out: dict[str, Any] = {}
        for r in self.points["PreFilter"]:
            if r.name in state.skip_filter_plugins or all(
                r.call(h) is None for h in PRE_FILTER_EXTENSION_HOOKS
            ):
                continue
            build = getattr(r.plugin, "pre_filter_copies", None)
            if build is None:
                return None
            try:
                made = build(state, pod_info, table, rows, pods)
            except Exception:
                # The per-node path runs the extensions and reports their errors.
                return None
            if made is None:
                return None
            out[r.name] = made
        return out

    def run_filter_batch_with_nominated_pods(
        self, state: CycleState, pod_info: PodInfo, batch: NodeBatch
    ) -> tuple[np.ndarray, Status | None]:
        """:meth:`run_filter_batch` counting the pods nominated to the batch's nodes: each
        verdict is :meth:`run_filter_plugins_with_nominated_pods`'s on that node.

        The filters run once over the batch as it is (the second pass, "the pod fits
        without the nominated pods") and once, vectorised, over the nodes with nominated
        pods of equal or higher priority as if those were added (the first pass, whose
        rejection takes precedence): their requests are added to a copy of the table's
        columns, and NodeInfo copies are built only for a plugin that reads them. That
        shares the PreFilter state, which is exact when no PreFilter AddPod extension
        is active for the pod. Otherwise the extensions' states for the copies
        (:meth:`pre_filter_copies`, or the batch's ``copies`` in preemption's dry run)
        get the nominated pods added; when a plugin cannot do that, the nodes with such
        pods go through the per-node path, which clones the state.
        """
        verdicts, error = self.run_filter_batch(state, pod_info, batch)
        if error is not None or self.nominator is None or not len(self.nominator):
            return verdicts, error
        adds = self._nominated_additions(pod_info, batch.table)
        positions = np.flatnonzero(adds.has[batch.rows])
        if not len(positions):
            return verdicts, None
        copies = None
        extended = self.pre_filter_extensions_active(state, ("pre_filter_add_pod",))
        if extended:
            copies = self._nominated_copies(state, pod_info, batch, positions, adds)
        if extended and copies is None:
            for i in positions.tolist():
                status = self.run_filter_plugins_with_nominated_pods(state, pod_info, batch.info(i))
                if status.code is Code.ERROR:
                    return verdicts, status
                verdicts[i] = None if status.is_success() else status
            return verdicts, None
        first, error = self.run_filter_batch(state, pod_info, adds.batch(batch, positions, copies))
        if error is not None:
            return verdicts, error
        rejected = np.flatnonzero(not_none_mask(first))
        if len(rejected):
            verdicts[positions[rejected]] = first[rejected]
        return verdicts, None

    def _nominated_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        batch: NodeBatch,
        positions: np.ndarray,
        adds: _NominatedAdditions,
    ) -> dict[str, Any] | None:
        """The extensions' states of the copies of the batch's nodes at ``positions``
        with their nominated pods added, or ``None`` (see :meth:`pre_filter_copies`)."""
        copies = batch.copies
        if copies is None:
            made = self.pre_filter_copies(state, pod_info, batch.table, batch.rows, ())
            if made is None:
                return None
            at = np.arange(len(batch))
            none = np.zeros((len(batch), 0), dtype=np.int64)
            copies = {name: c.view(at, none) for name, c in made.items()}
        rows = batch.rows[positions]
        pods = [adds.pods[r] for r in rows.tolist()]
        return {name: view.with_added(rows, pods) for name, view in copies.items()}

    def _nominated_additions(self, pod_info: PodInfo, table: NodeTable) -> _NominatedAdditions:
        """The :class:`_NominatedAdditions` for ``pod_info`` over ``table``'s rows.

        One is kept per priority (what a nominated pod counts for depends on it) and
        brought up to date from the nodes whose nominations changed since, plus the
        nodes the previous and this pod are nominated to (a pod's own nomination never
        counts): a cycle costs the nodes that changed, not every node with nominated
        pods. It is built anew when the table's node list changed or the nominator
        cannot say what changed."""
        nominator = self.nominator
        priority, uid = pod_info.priority, pod_info.uid
        own = nominator.nominated_node_name(pod_info)
        version = getattr(nominator, "version", None)
        adds = self._nominated_by_priority.get(priority)
        changed = None
        if adds is not None and adds.index is table.index and version is not None:
            since = getattr(nominator, "nodes_changed_since", None)
            changed = since(adds.version) if since is not None else None
        if changed is not None:
            changed.update(name for name in (adds.own, own) if name)
            for name in changed:
                row = table.index.get(name)
                if row is not None:
                    pods = nominator.nominated_pods_for_node(name)
                    adds.set_row(row, _NominatedNode.counted(pods, priority, uid))
        else:
            entries = {}
            for name, pods in nominator.nominated_pods_by_node().items():
                row = table.index.get(name)
                if row is not None:
                    entry = _NominatedNode.counted(pods, priority, uid)
                    if entry is not None:
                        entries[row] = entry
            adds = _NominatedAdditions(table.index, len(table.names), entries)
            if len(self._nominated_by_priority) >= _NOMINATED_PRIORITIES_KEPT:
                self._nominated_by_priority.clear()
            self._nominated_by_priority[priority] = adds
        adds.version, adds.own = version, own
        return adds

    def node_only_filters_pass(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[frozenset[str], np.ndarray] | None:
        """``(plugins, passes)``: the plugins of :attr:`node_only_filters` that PreFilter
        did not skip and, per node of ``nodes`` (the snapshot's NodeInfos), whether they
        all pass; ``None`` when there is no such plugin or the snapshot has no node table.

        Where they pass, they pass on any copy of the node with pods added or removed,
        so preemption's dry run may skip them there: one vectorised call here instead of
        one per node and victim. A plugin that fails or errs on a node leaves it False
        (the dry run then runs it and reports what it says).
        """
        only = self.node_only_filters - state.skip_filter_plugins
        table = getattr(self.snapshot, "table", None)
        if not only or table is None or not nodes:
            return None
        index = table.index
        rows = [index.get(ni.name, -1) for ni in nodes]
        if -1 in rows or any(table.infos[r] is not ni for r, ni in zip(rows, nodes, strict=True)):
            return None
        verdicts, error = self.run_filter_batch(
            state, pod_info, NodeBatch(table, rows, nodes), only=only
        )
        if error is not None:
            return only, np.zeros(len(nodes), dtype=bool)
        return only, ~not_none_mask(verdicts)

    def run_filter_batch(
        self,
        state: CycleState,
        pod_info: PodInfo,
        batch: NodeBatch,
        only: frozenset[str] | None = None,
    ) -> tuple[np.ndarray, Status | None]:
        """Filter on many nodes: ``(verdicts, error)``.

        ``verdicts`` is an object array: ``None`` where node ``i`` passes every plugin,
        else the first rejecting plugin's status, exactly as ``run_filter_plugins``
        node by node. Plugins run one after the other on the nodes still feasible, with
        their vectorised ``filter_nodes`` when they have one. ``error`` is set, and the
        verdicts incomplete, when a plugin failed with an ``ERROR``. ``only``, when
        given, restricts the run to those plugins.
        """
        _, verdicts, error = self.filter_batch(state, pod_info, batch, only)
        if verdicts is None:
            verdicts = np.full(len(batch), None, dtype=object)
        return verdicts, error

    def filter_batch(
        self,
        state: CycleState,
        pod_info: PodInfo,
        batch: NodeBatch,
        only: frozenset[str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None, Status | None]:
        """:meth:`run_filter_batch` for the scheduler: ``(passing, verdicts, error)``.

        ``passing`` are the positions in ``batch`` of the nodes every plugin let
        through; ``verdicts`` is ``None`` when no node failed (no per-node array built:
        the common case), else as :meth:`run_filter_batch`'s.
        """
        pod = pod_info.pod
        verdicts: np.ndarray | None = None
        alive = np.arange(len(batch))
        sub = batch
        for runner in self.points["Filter"]:
            if not len(alive):
                break
            if runner.name in state.skip_filter_plugins or (
                only is not None and runner.name not in only
            ):
                continue
            if len(alive) < len(sub):
                sub = batch.subset(alive)
            results = self._filter_many(runner, state, pod, pod_info, sub)
            if results is None:
                continue  # every node passes
            if isinstance(results, Status):
                return (
                    alive,
                    verdicts,
                    _wrap_error(results, f"running {_q(runner.name)} filter plugin"),
                )
            if not (isinstance(results, np.ndarray) and results.dtype == object):
                results = np.array(results, dtype=object)
            failed = np.flatnonzero(not_none_mask(results))
            if not len(failed):
                continue
            # Vectorised plugins share one Status object among the nodes failing for the
            # same reasons: check and attribute each distinct object once.
            outcomes = results[failed].tolist()
            rejected: dict[int, bool] = {}
            for status in outcomes:
                if id(status) in rejected:
                    continue
                if not isinstance(status, Status):
                    return alive, verdicts, _wrong_result(runner.name, "filter_nodes", status)
                if status.code:
                    status.with_plugin(runner.name)
                    if not status.is_rejected():
                        return (
                            alive,
                            verdicts,
                            _wrap_error(status, f"running {_q(runner.name)} filter plugin"),
                        )
                rejected[id(status)] = bool(status.code)  # False: an explicit success
            if not all(rejected.values()):
                failed = failed[[rejected[id(s)] for s in outcomes]]
                if not len(failed):
                    continue
            if verdicts is None:
                verdicts = np.full(len(batch), None, dtype=object)
            verdicts[alive[failed]] = results[failed]
            keep = np.ones(len(alive), dtype=bool)
            keep[failed] = False
            alive = alive[keep]
        return alive, verdicts, None

    def _filter_many(
        self, runner: PluginRunner, state: CycleState, pod: Any, pod_info: PodInfo, sub: NodeBatch
    ) -> Sequence[Status | None] | Status | None:
        batch_call = runner.call("filter_nodes")
        start = time.perf_counter() if state.record_plugin_metrics else 0.0
        try:
            if batch_call is not None:
                results = batch_call(state, pod, pod_info, sub)
            else:
                call = runner.call("filter")
                results = [call(state, pod, pod_info, ni) for ni in sub.infos]
        except Exception as err:
            return _plugin_raised(err, runner.name, "Filter", pod_info)
        if start:
            self._observe_plugin(runner.name, "Filter", None, start)
        if results is None:
            return None
        if isinstance(results, Status):
            return _wrong_result(runner.name, "filter_nodes", results)
        if len(results) != len(sub):
            return _batch_length_error(
                runner.name, "filter_nodes", "verdicts", len(results), len(sub)
            )
        return results

    def run_post_filter_plugins(
        self, state: CycleState, pod_info: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """PostFilter until one succeeds: ``(result, status)`` as upstream.

        The result is the succeeding plugin's, or else the last one that asked for a
        nomination change while rejecting (upstream keeps the last non-Noop result).
        """
        start = time.perf_counter()
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        pod = pod_info.pod
        final: Status | None = None
        for runner in self.points["PostFilter"]:
            r = self._safe(
                runner, "post_filter", "PostFilter", state, pod, pod_info, node_to_status
            )
            returned = r if isinstance(r, PostFilterResult) else None
            if returned is not None:
                status = returned.status or Status()
            else:
                status = r if r is not None else Status()
            if status.is_success():
                result, final = returned, status
                break
            status.with_plugin(runner.name)
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                result, final = returned, status
                break
            if not status.is_rejected():
                # Upstream keeps the plugin's own words here (no "running ..." context):
                # they end the FailedScheduling message as they are.
                final = Status(Code.ERROR, status.message(), plugin=runner.name, error=status.error)
                break
            if returned is not None and (
                returned.nominated_node_name is not None or returned.details is not None
            ):
                result = returned
            reasons.extend(status.reasons)
            rejector = rejector or runner.name
        if final is None:
            final = Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector or None)
        self._observe("PostFilter", final, start)
        return result, final

    def run_pre_score_plugins(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status:
        """PreScore: success, or the error that ends the attempt; fills the skip set."""
        start = time.perf_counter()
        skip: set[str] = set()
        status = Status()
        declared = self._declared_skips["PreScore"].skipped(pod_info)
        for runner in self.points["PreScore"]:
            if runner.name in declared:
                self._declared_skip(runner, "PreScore", state, skip)
                continue
            s = self._safe(
                runner, "pre_score", "PreScore", state, pod_info.pod, pod_info, nodes, st=state
            )
            if s is None or s.is_success():
                continue
            if s.is_skip():
                skip.add(runner.name)
                continue
            status = _wrap_error(
                s.with_plugin(runner.name), f"running PreScore plugin {_q(runner.name)}"
            )
            break
        state.skip_score_plugins = skip
        self._observe("PreScore", status, start)
        return status

    def run_score_plugins(
        self, state: CycleState, pod_info: PodInfo, batch: NodeBatch
    ) -> ScoreResult | Status:
        """Score, NormalizeScore and weights over the feasible nodes of ``batch``.

        Returns the per-plugin raw and normalised scores and the weighted totals, or the
        ``ERROR`` status of a plugin that failed or left a score outside 0..100.
        """
        start = time.perf_counter()
        names = _BatchNames(batch)
        n = len(batch)
        pod = pod_info.pod
        plugin_scores: list[PluginScore] = []
        totals: np.ndarray | None = None
        for runner in self.points["Score"]:
            if runner.name in state.skip_score_plugins:
                continue
            raw = self._score_many(runner, state, pod, pod_info, batch)
            if isinstance(raw, Status):
                error = _wrap_error(
                    raw, f"running Score plugins: plugin {_q(runner.name)} failed with"
                )
                self._observe("Score", error, start)
                return error
            values = raw
            normalize = runner.call("normalize_score")
            if normalize is not None:
                # NormalizeScore changes the scores in place; ``raw`` is kept as it was.
                scores = NodeScores(names, raw.copy())
                status = self._safe(
                    runner,
                    "normalize_score",
                    "NormalizeScore",
                    state,
                    pod,
                    pod_info,
                    scores,
                    st=state,
                )
                if status is not None and not status.is_success():
                    error = _wrap_error(
                        status.with_plugin(runner.name),
                        f"running Normalize on Score plugins: plugin {_q(runner.name)} failed with",
                    )
                    self._observe("Score", error, start)
                    return error
                values = scores.values
                error = _invalid_scores(runner.name, values, n)
                if error is not None:
                    self._observe("Score", error, start)
                    return error
            elif n and raw.view(np.uint64).max() > MAX_NODE_SCORE:
                # int64 seen as uint64: a negative score is huge, so one reduction checks
                # both ends of 0..100.
                error = _invalid_scores(runner.name, raw, n)
                self._observe("Score", error, start)
                return error
            weight = runner.weight
            plugin_scores.append(PluginScore(runner.name, weight, raw, values))
            # The first plugin's scores start the totals (a new int64 array); a weight
            # of 1 needs no multiplication.
            if totals is None:
                totals = values.astype(np.int64)
                if weight != 1:
                    totals *= weight
            else:
                totals += values if weight == 1 else values * weight
        if totals is None:
            totals = np.zeros(n, dtype=np.int64)
        self._observe("Score", _SUCCESS, start)
        return ScoreResult(names, plugin_scores, totals)

    def _score_many(
        self, runner: PluginRunner, state: CycleState, pod: Any, pod_info: PodInfo, batch: NodeBatch
    ) -> np.ndarray | Status:
        batch_call = runner.call("score_nodes")
        start = time.perf_counter() if state.record_plugin_metrics else 0.0
        try:
            if batch_call is not None:
                raw = batch_call(state, pod, pod_info, batch)
                if isinstance(raw, Status):
                    return raw.with_plugin(runner.name)
                raw = np.asarray(raw)
                if raw.dtype.kind not in "iu":
                    return _wrong_result(runner.name, "score_nodes", raw.dtype)
                raw = raw.astype(np.int64, copy=False)
            else:
                call = runner.call("score")
                values = [call(state, pod, pod_info, ni) for ni in batch.infos]
                for v in values:
                    if isinstance(v, Status):
                        return v.with_plugin(runner.name)
                    if not _is_score(v):
                        return _wrong_result(runner.name, "score", v)
                raw = np.fromiter(values, dtype=np.int64, count=len(values))
        except Exception as err:
            return _plugin_raised(err, runner.name, "Score", pod_info)
        if start:
            self._observe_plugin(runner.name, "Score", None, start)
        if len(raw) != len(batch):
            return _batch_length_error(runner.name, "score_nodes", "scores", len(raw), len(batch))
        return raw

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod_info: PodInfo, node_name: str
    ) -> Status:
        """Reserve in order; the first failure is returned (the caller then unreserves)."""
        start = time.perf_counter()
        status = Status()
        for runner in self.points["Reserve"]:
            s = self._safe(
                runner, "reserve", "Reserve", state, pod_info.pod, pod_info, node_name, st=state
            )
            if s is not None and not s.is_success():
                s.with_plugin(runner.name)
                status = (
                    s
                    if s.is_rejected()
                    else _wrap_error(s, f"running Reserve plugin {_q(runner.name)}")
                )
                break
        self._observe("Reserve", status, start)
        return status

    def run_reserve_plugins_unreserve(
        self, state: CycleState, pod_info: PodInfo, node_name: str
    ) -> None:
        """Unreserve on every Reserve plugin, in reverse order; failures are ignored."""
        start = time.perf_counter()
        for runner in reversed(self.points["Reserve"]):
            call = runner.call("unreserve")
            if call is None:
                continue
            self._safe(
                runner, "unreserve", "Unreserve", state, pod_info.pod, pod_info, node_name, st=state
            )
        self._observe("Unreserve", Status(), start)

    def run_permit_plugins(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Permit: success, a rejection, an error, or ``WAIT`` with the pod now waiting."""
        start = time.perf_counter()
        waits: dict[str, float] = {}
        wait_reasons: list[str] = []
        status: Status | None = None
        for runner in self.points["Permit"]:
            s = self._safe(
                runner, "permit", "Permit", state, pod_info.pod, pod_info, node_name, st=state
            )
            if s is None or s.is_success():
                continue
            s.with_plugin(runner.name)
            if s.is_rejected():
                status = s
                break
            if s.is_wait():
                timeout = s.timeout if s.timeout is not None else 0.0
                waits[runner.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                wait_reasons.extend(s.reasons)
                continue
            status = _wrap_error(s, f"running Permit plugin {_q(runner.name)}")
            break
        if status is None:
            if waits:
                now = self.clock.now() if self.clock is not None else time.monotonic()
                self.waiting_pods.add(WaitingPod(pod_info, {p: now + t for p, t in waits.items()}))
                # v1.36's wording: the waiting plugins' reasons, then the framework's.
                status = Status(Code.WAIT, *wait_reasons, PERMIT_WAIT_REASON)
            else:
                status = Status()
        self._observe("Permit", status, start)
        return status

    def wait_on_permit(self, pod_info: PodInfo) -> Status:
        """Block until a waiting pod is allowed or rejected (real clock); success if the
        pod is not waiting."""
        waiting = self.waiting_pods.get(pod_info.uid)
        if waiting is None:
            return Status()
        try:
            while True:
                deadline = waiting.next_deadline()
                now = self.clock.now() if self.clock is not None else time.monotonic()
                timeout = None if deadline is None else max(0.0, deadline - now)
                verdict = waiting.wait(timeout)
                if verdict is not None:
                    return self.permit_verdict(pod_info, verdict)
                now = self.clock.now() if self.clock is not None else time.monotonic()
                waiting.expire(now)
        finally:
            self.waiting_pods.remove(pod_info.uid)

    @staticmethod
    def permit_verdict(pod_info: PodInfo, verdict: Status) -> Status:
        """A waiting pod's verdict as WaitOnPermit returns it (upstream's wording)."""
        if verdict.is_success():
            return verdict
        if verdict.is_rejected():
            return Status(
                verdict.code,
                f"pod {_q(pod_info.name)} rejected while waiting on permit: {verdict.message()}",
                plugin=verdict.plugin,
            )
        return _wrap_error(verdict, f"error while waiting on permit for pod {_q(pod_info.name)}")

    # -- binding cycle ------------------------------------------------------------------
    def run_pre_bind_plugins(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """PreBind in order, but for the plugins whose pre-flight answered ``SKIP``; the
        first failure is returned."""
        start = time.perf_counter()
        status = Status()
        for runner in self.points["PreBind"]:
            if runner.name in state.skip_pre_bind_plugins:
                continue
            s = self._safe(
                runner, "pre_bind", "PreBind", state, pod_info.pod, pod_info, node_name, st=state
            )
            if s is not None and not s.is_success() and not s.is_skip():
                s.with_plugin(runner.name)
                status = (
                    s
                    if s.is_rejected()
                    else _wrap_error(s, f"running PreBind plugin {_q(runner.name)}")
                )
                break
        self._observe("PreBind", status, start)
        return status

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod_info: PodInfo, node_name: str
    ) -> Status:
        """PreBindPreFlight of every PreBind plugin: success when any has work to do (a
        plugin without the hook has), ``SKIP`` when none has, the first error else. The
        plugins that answered ``SKIP`` are left out of this cycle's PreBind, as upstream's
        ``SkipPreBindPlugins``; nothing is left out after an error, which fails the
        binding anyway."""
        start = time.perf_counter()
        status = Status(Code.SKIP)
        skipped: set[str] = set()
        for runner in self.points["PreBind"]:
            if runner.call("pre_bind_pre_flight") is None:
                status = Status()
                continue
            s = self._safe(
                runner,
                "pre_bind_pre_flight",
                "PreBindPreFlight",
                state,
                pod_info.pod,
                pod_info,
                node_name,
                st=state,
            )
            if s is None or s.is_success():
                status = Status()
            elif s.is_skip():
                skipped.add(runner.name)
            else:
                status = _pre_flight_failure(runner.name, s)
                break
        else:
            state.skip_pre_bind_plugins = skipped
        self._observe("PreBindPreFlight", status, start)
        return status

    def will_wait_on_permit(self, pod_info: PodInfo) -> bool:
        """Whether a Permit plugin made the pod wait (upstream ``WillWaitOnPermit``)."""
        return self.waiting_pods.get(pod_info.uid) is not None

    def run_bind_plugins(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Bind: the first plugin that does not return ``SKIP`` decides."""
        start = time.perf_counter()
        status = Status(Code.SKIP)
        for runner in self.points["Bind"]:
            s = self._safe(
                runner, "bind", "Bind", state, pod_info.pod, pod_info, node_name, st=state
            )
            s = s if s is not None else Status()
            if s.is_skip():
                continue
            s.with_plugin(runner.name)
            status = (
                s
                if s.is_success() or s.is_rejected()
                else _wrap_error(s, f"running Bind plugin {_q(runner.name)}")
            )
            break
        self._observe("Bind", status, start)
        return status

    def run_post_bind_plugins(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        """PostBind, informational."""
        start = time.perf_counter()
        for runner in self.points["PostBind"]:
            self._safe(
                runner, "post_bind", "PostBind", state, pod_info.pod, pod_info, node_name, st=state
            )
        self._observe("PostBind", Status(), start)

    # -- pod group cycle ----------------------------------------------------------------
    def run_placement_generate_plugins(
        self, state: CycleState, pod_group: Any, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Placement], Status]:
        """PlacementGenerate in order, each plugin on every placement of the one before,
        from one placement of all ``nodes``; the placements, or an error status."""
        start = time.perf_counter()
        placements = [Placement("", tuple(nodes))]
        status = Status()
        for runner in self.points["PlacementGenerate"]:
            generated: list[Placement] = []
            for parent in placements:
                result = self._safe(
                    runner, "generate_placements", "PlacementGenerate", state, pod_group, parent
                )
                if isinstance(result, Status) or not isinstance(result, list | tuple):
                    status = _wrap_error(
                        result
                        if isinstance(result, Status) and not result.is_success()
                        else _wrong_result(runner.name, "generate_placements", result),
                        f"running PlacementGenerate plugin {_q(runner.name)}",
                    )
                    break
                generated.extend(result)
            if not status.is_success():
                placements = []
                break
            placements = generated
        self._observe("PlacementGenerate", status, start)
        return placements, status

    def run_placement_score_plugins(
        self, state: CycleState, pod_group: Any, candidates: Sequence[PodGroupAssignments]
    ) -> tuple[list[int], Status]:
        """PlacementScore: each plugin scores every candidate, normalises its scores, and
        the weighted scores add up; the totals (aligned with ``candidates``) or an error."""
        start = time.perf_counter()
        totals = [0] * len(candidates)
        status = Status()
        for runner in self.points["PlacementScore"]:
            scores: list[int] = []
            for candidate in candidates:
                score = self._safe(
                    runner, "score_placement", "PlacementScore", state, pod_group, candidate
                )
                if not _is_score(score):
                    status = (
                        score
                        if isinstance(score, Status) and not score.is_success()
                        else _wrong_result(runner.name, "score_placement", score)
                    )
                    break
                scores.append(int(score))
            if status.is_success():
                normalized = self._safe(
                    runner, "normalize_placement_score", "PlacementScore", state, pod_group, scores
                )
                if isinstance(normalized, Status) and not normalized.is_success():
                    status = normalized
            if not status.is_success():
                status = _wrap_error(status, f"running PlacementScore plugin {_q(runner.name)}")
                break
            totals = [t + s * runner.placement_weight for t, s in zip(totals, scores, strict=True)]
        self._observe("PlacementScore", status, start)
        return totals, status

    # -- helpers ------------------------------------------------------------------------
    def _declared_skip(
        self, runner: PluginRunner, extension_point: str, state: CycleState, skip: set[str]
    ) -> None:
        """A plugin not called because it declared it would answer ``SKIP`` for the pod:
        recorded as if it had answered it (the skip set, a sampled duration)."""
        skip.add(runner.name)
        if state.record_plugin_metrics:
            self._observe_plugin(runner.name, extension_point, _SKIP, time.perf_counter())

    def _safe(
        self, runner: PluginRunner, hook: str, ep: str, *args: Any, st: CycleState | None = None
    ) -> Any:
        """Call ``runner``'s ``hook``; an exception becomes an ERROR status naming it."""
        call = runner.call(hook)
        if call is None:
            return None
        timed = st is not None and st.record_plugin_metrics
        start = time.perf_counter() if timed else 0.0
        try:
            result = call(*args)
        except Exception as err:
            result = _plugin_raised(err, runner.name, ep, next(_pod_infos(args), None))
        else:
            allowed = _RESULT_TYPES.get(hook)
            if allowed is not None and result is not None and not isinstance(result, allowed):
                result = _wrong_result(runner.name, hook, result)
        if timed:
            self._observe_plugin(
                runner.name, ep, result if isinstance(result, Status) else None, start
            )
        return result

    def _observe(self, extension_point: str, status: Status, start: float) -> None:
        if self.metrics is None:
            return
        key = (extension_point, status.code)
        child = self._ep_histograms.get(key)
        if child is None:
            # Looked up once per label set: this runs at every extension point of every pod.
            child = self._ep_histograms[key] = self.metrics.histogram(
                self.metrics.framework_extension_point_duration,
                extension_point,
                status.code.display,
                self.profile_name,
            )
        child.observe(time.perf_counter() - start)

    def _observe_plugin(
        self, plugin: str, extension_point: str, status: Status | None, start: float
    ) -> None:
        if self.metrics is None:
            return
        key = (plugin, extension_point, status.code if status is not None else Code.SUCCESS)
        child = self._plugin_histograms.get(key)
        if child is None:
            # Looked up once per label set: preemption's dry runs time every filter call.
            child = self._plugin_histograms[key] = self.metrics.histogram(
                self.metrics.plugin_execution_duration, plugin, extension_point, key[2].display
            )
        child.observe(time.perf_counter() - start)


_SUCCESS = Status()
"""The success an extension point's duration is recorded with (never handed out)."""

_SKIP = Status(Code.SKIP)
"""The status a declared skip is recorded with (never handed out, so never changed)."""

_STATUS_ONLY = (Status,)
_RESULT_TYPES: dict[str, tuple[type, ...]] = {
    "pre_enqueue": _STATUS_ONLY,
    "pre_filter": (Status, PreFilterResult),
    "pre_filter_add_pod": _STATUS_ONLY,
    "pre_filter_remove_pod": _STATUS_ONLY,
    "filter": _STATUS_ONLY,
    "post_filter": (Status, PostFilterResult),
    "pre_score": _STATUS_ONLY,
    "normalize_score": _STATUS_ONLY,
    "reserve": _STATUS_ONLY,
    "permit": _STATUS_ONLY,
    "pre_bind": _STATUS_ONLY,
    "pre_bind_pre_flight": _STATUS_ONLY,
    "bind": _STATUS_ONLY,
    "normalize_placement_score": _STATUS_ONLY,
}
"""What each hook may return besides None; anything else is the plugin's error (a
misbehaving plugin gets an ERROR status, it does not crash the scheduler)."""


_NOMINATED_PRIORITIES_KEPT = 8
"""How many priorities' nominated additions a framework keeps up to date at most."""


class _NominatedNode:
    """The pods nominated to one node that Filter counts for pods of one priority, and
    what they add to the table's columns (``requested`` by name, the pods column too)."""

    __slots__ = ("non_zero_cpu", "non_zero_memory", "pods", "requested")

    def __init__(self, pods: list[PodInfo]) -> None:
        self.pods = pods
        requested: dict[str, int] = {PODS: len(pods)}
        for p in pods:
            for name, value in p.requests.items():
                if name != PODS:  # the pods column counts pods
                    requested[name] = requested.get(name, 0) + value
        # Saturated as the table's columns: they are added to them.
        self.requested = {name: saturate(value) for name, value in requested.items()}
        self.non_zero_cpu = saturate(sum(p.non_zero_cpu for p in pods))
        self.non_zero_memory = saturate(sum(p.non_zero_memory for p in pods))

    @classmethod
    def counted(cls, pods: list[PodInfo], priority: int, uid: str) -> _NominatedNode | None:
        """Of one node's nominated ``pods``, those that count for a pod of ``priority``
        and ``uid`` (equal or higher priority, not the pod itself); None if none do."""
        counted = [p for p in pods if p.priority >= priority and p.uid != uid]
        return cls(counted) if counted else None


class _NominatedAdditions:
    """For one priority, what the pods nominated to each node add to the table's
    columns: per row, whether there are such pods (``has``), their summed requests and
    the pods themselves (to build NodeInfo copies when a plugin reads them).

    ``version`` is the nominator's version it describes and ``own`` the node of the pod
    it was last brought up to date for, whose own nomination it leaves out."""

    __slots__ = (
        "has",
        "index",
        "n",
        "non_zero_cpu",
        "non_zero_memory",
        "own",
        "pods",
        "requested",
        "version",
    )

    def __init__(self, index: dict[str, int], n: int, entries: dict[int, _NominatedNode]) -> None:
        self.index = index
        self.n = n
        self.version: int | None = None
        self.own: str | None = None
        self.pods = {row: e.pods for row, e in entries.items()}
        rows = list(entries)
        self.has = np.zeros(n, dtype=bool)
        self.has[rows] = True
        values: dict[str, tuple[list[int], list[int]]] = {}
        for row, e in entries.items():
            for name, value in e.requested.items():
                entry = values.get(name)
                if entry is None:
                    entry = values[name] = ([], [])
                entry[0].append(row)
                entry[1].append(value)
        # One row per node: plain assignment, one numpy call per column.
        self.requested: dict[str, np.ndarray] = {}
        for name, (at, amounts) in values.items():
            col = self.requested[name] = np.zeros(n, dtype=np.int64)
            col[at] = amounts
        self.non_zero_cpu = np.zeros(n, dtype=np.int64)
        self.non_zero_cpu[rows] = [e.non_zero_cpu for e in entries.values()]
        self.non_zero_memory = np.zeros(n, dtype=np.int64)
        self.non_zero_memory[rows] = [e.non_zero_memory for e in entries.values()]

    def set_row(self, row: int, entry: _NominatedNode | None) -> None:
        """Row ``row`` now adds ``entry`` (None: nothing). A column once added stays, with
        zeros where nothing is added, which Filter reads as it would an absent one."""
        if entry is None:
            if self.has[row]:
                self.has[row] = False
                del self.pods[row]
                for col in self.requested.values():
                    col[row] = 0
                self.non_zero_cpu[row] = 0
                self.non_zero_memory[row] = 0
            return
        self.has[row] = True
        self.pods[row] = entry.pods
        for name, col in self.requested.items():
            col[row] = entry.requested.get(name, 0)
        for name, value in entry.requested.items():
            if name not in self.requested:
                col = self.requested[name] = np.zeros(self.n, dtype=np.int64)
                col[row] = value
        self.non_zero_cpu[row] = entry.non_zero_cpu
        self.non_zero_memory[row] = entry.non_zero_memory

    def batch(
        self, batch: NodeBatch, positions: np.ndarray, copies: dict[str, Any] | None = None
    ) -> NodeBatch:
        """The nodes at ``positions`` of ``batch`` with their nominated pods added
        (``copies``: the PreFilter extensions' states of those copies)."""
        rows = batch.rows[positions]
        table = batch.table
        requested = {name: col[rows] for name, col in table.requested.items()}
        for name, add in self.requested.items():
            have = requested.get(name)
            requested[name] = add[rows] if have is None else sat_add_array(have, add[rows])
        overlay = table.with_requested(
            rows,
            requested,
            sat_add_array(table.non_zero_cpu[rows], self.non_zero_cpu[rows]),
            sat_add_array(table.non_zero_memory[rows], self.non_zero_memory[rows]),
        )
        position_of = dict(zip(rows.tolist(), positions.tolist(), strict=True))

        def build(row: int) -> NodeInfo:
            copy = batch.info(position_of[row]).clone()
            for p in self.pods[row]:
                copy.add_pod(p)
            return copy

        return NodeBatch(overlay, rows, build=build, copies=copies)


def _wrong_result(plugin: str, hook: str, result: object) -> Status:
    """The ERROR of a hook implementation that returned something its hook does not take."""
    return Status(
        Code.ERROR,
        f"plugin {plugin!r} returned {type(result).__name__} from {hook}",
        plugin=plugin,
    )


def _invalid_scores(plugin: str, values: object, n: int) -> Status | None:
    """The ERROR for normalised scores that are not ``n`` integers in 0..100, else None."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iu":
        return _wrong_result(plugin, "normalize_score", values)
    if len(values) != n:
        return _batch_length_error(plugin, "normalize_score", "scores", len(values), n)
    if not n:
        return None
    if values.dtype == np.int64:
        # Seen as uint64 a negative score is huge: one reduction checks both ends.
        in_range = values.view(np.uint64).max() <= MAX_NODE_SCORE
    else:
        in_range = values.min() >= MIN_NODE_SCORE and values.max() <= MAX_NODE_SCORE
    if not in_range:
        bad = int(values[(values < MIN_NODE_SCORE) | (values > MAX_NODE_SCORE)][0])
        return Status(
            Code.ERROR,
            f"plugin {plugin!r} returns an invalid score {bad}, it should in the "
            f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
            plugin=plugin,
        )
    return None


class _BatchNames:
    """A batch's node names, as a function: built on first call (``NodeBatch.names``)."""

    __slots__ = ("batch",)

    def __init__(self, batch: NodeBatch) -> None:
        self.batch = batch

    def __call__(self) -> list[str]:
        return self.batch.names

    def at(self, i: int) -> str:
        """The ``i``-th name alone."""
        batch = self.batch
        return batch.table.names[int(batch.rows[i])]


def _is_score(value: object) -> bool:
    """An integer score (numpy integers too; a bool is not a score)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _batch_length_error(plugin: str, hook: str, what: str, got: int, want: int) -> Status:
    """The ERROR of a vectorised hook that returned a result of the wrong length."""
    return Status(
        Code.ERROR,
        f"{hook} of plugin {plugin!r} returned {got} {what} for {want} nodes",
        plugin=plugin,
    )


def _plugin_raised(
    err: Exception, plugin: str, extension_point: str, pod_info: PodInfo | None
) -> Status:
    """The ``ERROR`` status of a plugin that raised ``err``, attributed to it (the caller
    adds upstream's "running <point> plugin" context).

    With debugging on, the traceback is logged, as upstream logs "Plugin failed" with
    the error: the status keeps only the message, and a plugin author needs the line
    that raised. Once per plugin, extension point and error: a failing pod is retried
    with backoff, and a simulation would repeat the same traceback at every attempt.
    """
    if debug_enabled():
        seen = (plugin, extension_point, type(err).__name__, str(err))
        if seen not in _LOGGED_RAISES:
            _LOGGED_RAISES.add(seen)
            pod = f" for pod {pod_info.key}" if pod_info is not None else ""
            log.error("%s plugin %s raised%s", extension_point, _q(plugin), pod, exc_info=err)
    return Status.from_error(err, plugin)


_LOGGED_RAISES: set[tuple[str, str, str, str]] = set()
"""The plugin exceptions whose traceback this process logged (see ``_plugin_raised``)."""


def _pod_infos(args: Sequence[Any]) -> Iterator[PodInfo]:
    """The ``PodInfo`` among a hook's arguments (every hook but QueueSort's has one)."""
    return (a for a in args if isinstance(a, PodInfo))


def _q(name: str) -> str:
    """``name`` as Go's ``%q`` writes it: upstream quotes plugin and pod names so."""
    return json.dumps(name)


def _pre_flight_failure(plugin: str, status: Status) -> Status:
    """A PreBindPreFlight that neither succeeded nor skipped, as upstream words it: an error
    wrapped with the plugin's name; any other code (a rejection, a wait) is unsupported
    there and an error too."""
    status.with_plugin(plugin)
    if status.code is Code.ERROR:
        return _wrap_error(status, f"running PreBindPreFlight {_q(plugin)}")
    return Status(
        Code.ERROR,
        f"PreBindPreFlight {plugin} returned {_q(status.code.display)}, which is unsupported. "
        "It is supposed to return Success, Skip, or Error status",
        plugin=plugin,
    )


def _wrap_error(status: Status, context: str) -> Status:
    """An ``ERROR`` status with ``context`` before the plugin's message (upstream's %w)."""
    if status.code is Code.ERROR and status.reasons and status.reasons[0].startswith(context):
        return status
    return Status(
        Code.ERROR,
        f"{context}: {status.message() or status.code.display}",
        plugin=status.plugin,
        error=status.error,
    )


__all__ = [
    "Framework",
    "FrameworkError",
    "PluginRunner",
    "PluginScore",
    "ScoreResult",
]
