"""Run one extension point, or a whole small simulation, through the real runtime."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api import Node, Pod
from kubesched.cache import Snapshot, new_snapshot
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.framework.results import PreFilterResult
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo
from kubesched.testing.builders import NodeBuilder, PodBuilder, make_node, objects_from
from kubesched.testing.framework import make_framework

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.simulate.driver import SimulationRun

PodLike = Pod | PodInfo | PodBuilder | Mapping[str, Any] | str
"""What the helpers accept as "the pod": an object, its PodInfo, a builder, or its
manifest (a dict, or YAML text)."""
NodesLike = Snapshot | str | Iterable[Node | NodeBuilder | NodeInfo | Mapping[str, Any]]
"""What the helpers accept as "the nodes": a snapshot, or nodes (objects, builders,
NodeInfos whose pods come along, manifests), or YAML text of Node manifests."""


class ExtensionPointError(AssertionError):
    """An extension point ended the attempt (``ERROR``, or a rejection where scores were
    expected); ``status`` is what the runtime returned."""

    def __init__(self, extension_point: str, status: Status) -> None:
        super().__init__(f"{extension_point} failed: {status!r}")
        self.extension_point = extension_point
        self.status = status


def as_pod_info(pod: PodLike) -> PodInfo:
    """``pod`` as a ``PodInfo`` (builders are built, manifests parsed)."""
    if isinstance(pod, PodInfo):
        return pod
    if not isinstance(pod, Pod):
        objs = objects_from(pod)
        if len(objs) != 1 or not isinstance(objs[0], Pod):
            raise TypeError(f"expected one Pod, got {[type(o).__name__ for o in objs]}")
        pod = objs[0]
    return PodInfo(pod)


def snapshot_of(nodes: NodesLike = (), pods: Iterable[PodLike] = ()) -> Snapshot:
    """A snapshot of ``nodes`` with ``pods`` (bound pods: give them ``.node(name)``).

    ``nodes`` may already be a ``Snapshot`` (returned as is when ``pods`` is empty).
    """
    extra = [as_pod_info(p) for p in pods]
    if isinstance(nodes, Snapshot):
        if not extra:
            return nodes
        infos = nodes.list()
        bound = [p for ni in infos for p in ni.pods]
        return new_snapshot([*bound, *extra], [ni.node for ni in infos])
    node_objs: list[Node] = []
    pod_infos: list[PodInfo] = []
    for n in [nodes] if isinstance(nodes, str) else nodes:
        if isinstance(n, NodeInfo):
            node_objs.append(n.node)
            pod_infos.extend(n.pods)
            continue
        for obj in objects_from(n):
            if not isinstance(obj, Node):
                raise TypeError(f"expected Nodes, got a {type(obj).__name__}")
            node_objs.append(obj)
    return new_snapshot([*pod_infos, *extra], node_objs)


def framework_for(
    plugin: type | str,
    *,
    args: Mapping[str, Any] | Any = None,
    weights: Mapping[str, int] | None = None,
    registry: PluginRegistry | None = None,
    **handle: Any,
) -> Framework:
    """A Framework for one plugin: a class, or the name of an installed plugin.

    The plugin is enabled at every extension point it implements (with a FIFO
    QueueSort and a recording Bind added when it has none, see ``make_framework``).
    ``args`` is the plugin's args: a dict in YAML's camelCase or Python's snake_case,
    or an ``Args`` instance; ``weights`` as in ``make_framework``. ``handle`` keywords
    (``client``, ``clock``, ...) go to the Framework.
    """
    plugin_class = plugin
    if isinstance(plugin, str):
        entry = (registry or default_registry()).get(plugin)
        if entry is None:
            raise LookupError(f"plugin {plugin!r} is not installed")
        plugin_class = entry.plugin_class
    named_args = None if args is None else {plugin_class.name: args}
    return make_framework(plugin_class, args=named_args, weights=weights, **handle)


def profile_framework(
    config: Any = None,
    profile: str | None = None,
    *,
    registry: PluginRegistry | None = None,
    **handle: Any,
) -> Framework:
    """The Framework of one profile of a configuration, as the scheduler builds it.

    ``config`` is a ``KubeSchedulerConfiguration``, a mapping as in YAML (validated
    with ``config_from_dict``), or None for the defaults; ``profile`` a scheduler name
    (default: the first profile).
    """
    from kubesched.config import config_from_dict, default_configuration, effective_configuration

    registry = registry or default_registry()
    if config is None:
        config = default_configuration(registry)
    elif isinstance(config, Mapping):
        config = config_from_dict(dict(config), registry)
    effective = effective_configuration(config, registry)
    profiles = {p.scheduler_name: p for p in effective.profiles}
    chosen = effective.profiles[0] if profile is None else profiles[profile]
    return Framework(chosen, registry, **handle)


def _absent_status(rejectors: set[str]) -> Status:
    # The scheduler's status for nodes a PreFilterResult left out (see
    # ``Algorithm.find_nodes_that_fit_pod``); repeated so that the helper agrees with it.
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejectors))}]",
    )


def _success_is_none(status: Status | None) -> Status:
    return Status() if status is None else status


class _ByNode(Mapping[str, Any]):
    """A read-only ``{node: value}`` mapping that carries more about the run beside it."""

    _by_node: dict[str, Any]

    def __getitem__(self, node: str) -> Any:
        return self._by_node[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_node)

    def __len__(self) -> int:
        return len(self._by_node)


class FilterRun(_ByNode):
    """What PreFilter and Filter said about a pod, node by node (``run_filter``'s result).

    As a mapping, each node's status as the scheduler's diagnosis records it: Filter's
    verdict (``Status()`` for success); PreFilter's status on every node when PreFilter
    rejected the pod; the "didn't satisfy plugin(s)" status on the nodes a
    ``PreFilterResult`` left out. ``assert_statuses`` takes it as it is.

    The parts, for tests of PreFilter itself:

    * ``pre_filter``: PreFilter's status (success when every plugin passed or skipped);
    * ``pre_filter_result``: the merged ``PreFilterResult`` (None: no plugin narrowed);
    * ``node_names``: the nodes PreFilter let through (None: all of them);
    * ``skipped``: the plugins whose Filter PreFilter skipped (they returned ``SKIP``);
    * ``per_node``: Filter node by node (``filter``), on the nodes let through;
    * ``batch``: Filter as the scheduler runs it, plugin by plugin over the remaining
      nodes (``filter_nodes`` where implemented), on the same nodes;
    * ``state``: the cycle state after Filter.
    """

    def __init__(
        self,
        statuses: dict[str, Status],
        pre_filter: Status,
        pre_filter_result: PreFilterResult | None,
        skipped: frozenset[str],
        per_node: dict[str, Status],
        batch: dict[str, Status],
        state: CycleState,
    ) -> None:
        self._by_node = statuses
        self.pre_filter = pre_filter
        self.pre_filter_result = pre_filter_result
        self.node_names: frozenset[str] | None = (
            None
            if pre_filter_result is None or pre_filter_result.all_nodes()
            else frozenset(pre_filter_result.node_names)
        )
        self.skipped = skipped
        self.per_node = per_node
        self.batch = batch
        self.state = state

    def __repr__(self) -> str:
        return f"FilterRun(pre_filter={self.pre_filter!r}, statuses={self._by_node!r})"


def _same(a: Status, b: Status) -> bool:
    return a.code is b.code and a.reasons == b.reasons and a.plugin == b.plugin


def run_filter(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    *,
    pods: Iterable[PodLike] = (),
    state: CycleState | None = None,
) -> FilterRun:
    """PreFilter then Filter of ``fw``'s profile, through the real runtime: a
    :class:`FilterRun` (a ``{node: Status}`` mapping, with PreFilter's status, skip set
    and node set, and each node's verdict from both Filter paths).

    Filter runs twice from the same PreFilter state: node by node in configured order,
    stopping at a node's first failure (``run_filter_plugins``), and through the batch
    path the scheduler uses (``run_filter_batch``). An ``AssertionError`` lists the
    nodes where the two disagree, unless a plugin failed with an ``ERROR``.
    ``pods`` are pods already bound to nodes.
    """
    snap = snapshot_of(nodes, pods)
    fw.set_snapshot(snap)
    pi = as_pod_info(pod)
    state = state if state is not None else fw.new_cycle_state()
    infos = snap.list()
    pre, status, rejectors = fw.run_pre_filter_plugins(state, pi, infos)
    skipped = frozenset(state.skip_filter_plugins)
    if not status.is_success():
        every = {ni.name: status for ni in infos}
        return FilterRun(every, status, pre, skipped, {}, {}, state)
    allowed = None if pre is None or pre.all_nodes() else pre.node_names
    rows = [i for i, ni in enumerate(infos) if allowed is None or ni.name in allowed]
    through = [infos[i] for i in rows]
    per_node = {ni.name: fw.run_filter_plugins(state, pi, ni) for ni in through}
    verdicts, error = fw.run_filter_batch(
        state, pi, NodeBatch(snap.table, np.array(rows, dtype=np.intp), through)
    )
    if error is not None:
        batch = {ni.name: error for ni in through}
    else:
        batch = {
            ni.name: _success_is_none(v) for ni, v in zip(through, verdicts.tolist(), strict=True)
        }
        errored = any(s.code is Code.ERROR for s in per_node.values())
        differ = [n for n in per_node if not _same(per_node[n], batch[n])]
        if differ and not errored:
            lines = [f"  {n}: filter {per_node[n]!r}, batch {batch[n]!r}" for n in differ]
            raise AssertionError(
                "Filter node by node and the batch path disagree:\n" + "\n".join(lines)
            )
    statuses = {
        ni.name: per_node[ni.name] if ni.name in per_node else _absent_status(rejectors)
        for ni in infos
    }
    return FilterRun(statuses, status, pre, skipped, per_node, batch, state)


class ScoreRun(_ByNode):
    """Scores of the feasible nodes (``run_score``'s result).

    As a mapping, the chosen view by node name: one plugin's normalised (or raw) score,
    or the weighted totals. ``skipped`` is True when that plugin was skipped (its
    PreScore returned ``SKIP``): the mapping is then empty, as it is when there are no
    feasible nodes, but the two now say different things. ``raw``, ``normalized`` and
    ``weighted`` hold every scoring plugin's scores by plugin then node, ``totals`` the
    weighted sums; ``skipped_plugins`` every skipped Score plugin; ``state`` the cycle
    state after scoring.
    """

    def __init__(
        self,
        scores: dict[str, int],
        skipped: bool,
        raw: dict[str, dict[str, int]],
        normalized: dict[str, dict[str, int]],
        weighted: dict[str, dict[str, int]],
        totals: dict[str, int],
        skipped_plugins: frozenset[str],
        state: CycleState,
    ) -> None:
        self._by_node = scores
        self.skipped = skipped
        self.raw = raw
        self.normalized = normalized
        self.weighted = weighted
        self.totals = totals
        self.skipped_plugins = skipped_plugins
        self.state = state

    def __repr__(self) -> str:
        return f"ScoreRun(skipped={self.skipped}, scores={self._by_node!r})"


def run_score(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    *,
    feasible: Iterable[str | Node | NodeBuilder | NodeInfo] | None = None,
    plugin: str | None = None,
    raw: bool = False,
    pods: Iterable[PodLike] = (),
    state: CycleState | None = None,
    pre_filter: bool = True,
) -> ScoreRun:
    """PreScore, Score and NormalizeScore of ``fw``'s profile on the feasible nodes
    (Filter does not run): a :class:`ScoreRun`, scores by node name.

    ``nodes`` make the snapshot; ``feasible`` (names, or nodes of the snapshot) are the
    nodes scored, in snapshot order, as upstream's score tests pass the feasible nodes
    beside a fuller snapshot; default all of them. PreFilter runs first unless
    ``pre_filter=False`` (a plugin whose PreScore does not need it).

    With one Score plugin (or ``plugin=`` naming one) the mapping is that plugin's
    normalised score (``raw=True``: its score before normalisation); with several and
    no ``plugin``, the weighted totals. Raises ``ExtensionPointError`` when PreFilter
    rejects the pod or a phase fails.
    """
    snap = snapshot_of(nodes, pods)
    fw.set_snapshot(snap)
    pi = as_pod_info(pod)
    state = state if state is not None else fw.new_cycle_state()
    infos = snap.list()
    if pre_filter:
        _, status, _ = fw.run_pre_filter_plugins(state, pi, infos)
        if not status.is_success():
            raise ExtensionPointError("PreFilter", status)
    if feasible is not None:
        wanted = {_node_name(n) for n in feasible}
        unknown = wanted - {ni.name for ni in infos}
        if unknown:
            raise KeyError(f"feasible nodes not in the snapshot: {sorted(unknown)}")
        rows = [i for i, ni in enumerate(infos) if ni.name in wanted]
    else:
        rows = list(range(len(infos)))
    chosen = [infos[i] for i in rows]
    status = fw.run_pre_score_plugins(state, pi, chosen)
    if not status.is_success():
        raise ExtensionPointError("PreScore", status)
    result = fw.run_score_plugins(
        state, pi, NodeBatch(snap.table, np.array(rows, dtype=np.intp), chosen)
    )
    if isinstance(result, Status):
        raise ExtensionPointError("Score", result)
    score_plugins = fw.plugins_at("Score")
    if plugin is None and len(score_plugins) == 1:
        plugin = score_plugins[0]
    if plugin is not None and plugin not in score_plugins:
        raise KeyError(f"{plugin!r} is not a Score plugin of this profile")

    def by_node(values: Any) -> dict[str, int]:
        return dict(zip(result.names, (int(v) for v in values.tolist()), strict=True))

    raws = {ps.plugin: by_node(ps.raw) for ps in result.plugins}
    normalized = {ps.plugin: by_node(ps.normalized) for ps in result.plugins}
    weighted = {ps.plugin: by_node(ps.weighted) for ps in result.plugins}
    totals = by_node(result.totals)
    skipped_plugins = frozenset(state.skip_score_plugins)
    skipped = plugin is not None and plugin in skipped_plugins
    if plugin is None:
        view = totals
    elif skipped:
        view = {}
    else:
        view = (raws if raw else normalized)[plugin]
    return ScoreRun(view, skipped, raws, normalized, weighted, totals, skipped_plugins, state)


def _node_name(node: str | Node | NodeBuilder | NodeInfo) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, NodeInfo):
        return node.name
    if isinstance(node, NodeBuilder):
        node = node.obj()
    return node.metadata.name


def simulate_small(
    *objects: Any,
    nodes: int = 3,
    enable: Sequence[str] = (),
    config: Any = None,
    seed: int = 0,
    node_cpu: str = "4",
    node_memory: str = "8Gi",
    registry: PluginRegistry | None = None,
) -> SimulationRun:
    """A full simulation (embedded cluster, scheduler, virtual time) of ``objects``.

    ``objects`` are Kubernetes objects, builders or manifests (dicts). When none is a
    Node, ``nodes`` nodes ``node-0``, ``node-1``, ... of ``node_cpu`` CPUs and
    ``node_memory`` are added. ``enable`` names plugins to enable, through
    ``multiPoint``, in the default profile on top of the default plugins; ``config``
    (a ``KubeSchedulerConfiguration`` or its mapping) replaces the default
    configuration instead. See ``placements`` for where the pods went.
    """
    from kubesched.config import API_VERSION, KIND, config_from_dict
    from kubesched.simulate.driver import simulate

    registry = registry or default_registry()
    objs = objects_from(*objects)
    if not any(isinstance(o, Node) for o in objs):
        objs = [
            *(
                make_node(f"node-{i}").capacity(cpu=node_cpu, memory=node_memory, pods=110).obj()
                for i in range(nodes)
            ),
            *objs,
        ]
    if config is None and enable:
        config = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"multiPoint": {"enabled": [{"name": n} for n in enable]}},
                }
            ],
        }
    if isinstance(config, Mapping):
        config = config_from_dict(dict(config), registry)
    return simulate(objs, config=config, registry=registry, seed=seed)


def placements(run: SimulationRun) -> dict[str, str | None]:
    """Where each pod of a finished simulation runs: ``{"namespace/name": node or None}``."""
    pods = run.cluster.list("Pod")[0]
    return {f"{p.metadata.namespace}/{p.metadata.name}": p.spec.node_name or None for p in pods}
