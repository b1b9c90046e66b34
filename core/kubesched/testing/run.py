"""Run one extension point, or a whole small simulation, through the real runtime."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubesched.api import KubeObject, Node, Pod
from kubesched.cache import Snapshot, new_snapshot
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo
from kubesched.testing.builders import NodeBuilder, PodBuilder, make_node
from kubesched.testing.framework import make_framework

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.simulate.driver import SimulationRun

PodLike = Pod | PodInfo | PodBuilder
"""What the helpers accept as "the pod": an object, its PodInfo, or a builder."""
NodesLike = Snapshot | Iterable[Node | NodeBuilder | NodeInfo]
"""What the helpers accept as "the nodes": a snapshot, or nodes (objects, builders,
NodeInfos whose pods come along)."""


class ExtensionPointError(AssertionError):
    """An extension point ended the attempt (``ERROR``, or a rejection where scores were
    expected); ``status`` is what the runtime returned."""

    def __init__(self, extension_point: str, status: Status) -> None:
        super().__init__(f"{extension_point} failed: {status!r}")
        self.extension_point = extension_point
        self.status = status


def as_pod_info(pod: PodLike) -> PodInfo:
    """``pod`` as a ``PodInfo`` (builders are built)."""
    if isinstance(pod, PodInfo):
        return pod
    if isinstance(pod, PodBuilder):
        pod = pod.obj()
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
    for n in nodes:
        if isinstance(n, NodeBuilder):
            node_objs.append(n.obj())
        elif isinstance(n, NodeInfo):
            node_objs.append(n.node)
            pod_infos.extend(n.pods)
        else:
            node_objs.append(n)
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


def run_filter(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    *,
    pods: Iterable[PodLike] = (),
    state: CycleState | None = None,
) -> dict[str, Status]:
    """PreFilter then Filter of ``fw``'s profile: each node's status, by node name.

    Success is ``Status()`` (code ``SUCCESS``). A PreFilter rejection or error is every
    node's status, as in the scheduler's diagnosis; nodes a ``PreFilterResult`` left
    out get the scheduler's "didn't satisfy plugin(s)" status. Filter runs node by
    node in configured order and stops at a node's first failure (the real
    ``run_filter_plugins``). ``pods`` are pods already bound to nodes.
    """
    snap = snapshot_of(nodes, pods)
    fw.set_snapshot(snap)
    pi = as_pod_info(pod)
    state = state if state is not None else fw.new_cycle_state()
    infos = snap.list()
    pre, status, rejectors = fw.run_pre_filter_plugins(state, pi, infos)
    if not status.is_success():
        return {ni.name: status for ni in infos}
    allowed = None if pre is None or pre.all_nodes() else pre.node_names
    out: dict[str, Status] = {}
    for ni in infos:
        if allowed is not None and ni.name not in allowed:
            out[ni.name] = _absent_status(rejectors)
        else:
            out[ni.name] = fw.run_filter_plugins(state, pi, ni)
    return out


def run_score(
    fw: Framework,
    pod: PodLike,
    nodes: NodesLike,
    *,
    plugin: str | None = None,
    raw: bool = False,
    pods: Iterable[PodLike] = (),
    state: CycleState | None = None,
) -> dict[str, int]:
    """PreFilter, PreScore, Score and NormalizeScore of ``fw``'s profile over ``nodes``
    (taken as the feasible nodes: Filter does not run): scores by node name.

    With one Score plugin (or ``plugin=`` naming one) the result is that plugin's
    normalised score (``raw=True``: its score before normalisation); with several and
    no ``plugin``, the weighted totals. ``{}`` when the plugin was skipped (PreScore
    returned ``SKIP``). Raises ``ExtensionPointError`` when PreFilter rejects the pod
    or a phase fails.
    """
    snap = snapshot_of(nodes, pods)
    fw.set_snapshot(snap)
    pi = as_pod_info(pod)
    state = state if state is not None else fw.new_cycle_state()
    infos = snap.list()
    _, status, _ = fw.run_pre_filter_plugins(state, pi, infos)
    if not status.is_success():
        raise ExtensionPointError("PreFilter", status)
    status = fw.run_pre_score_plugins(state, pi, infos)
    if not status.is_success():
        raise ExtensionPointError("PreScore", status)
    result = fw.run_score_plugins(state, pi, NodeBatch(snap.table, range(len(infos)), infos))
    if isinstance(result, Status):
        raise ExtensionPointError("Score", result)
    by_plugin = {ps.plugin: ps for ps in result.plugins}
    if plugin is None and len(fw.plugins_at("Score")) == 1:
        plugin = fw.plugins_at("Score")[0]
    if plugin is None:
        values: Sequence[int] = result.totals.tolist()
    elif plugin not in by_plugin:
        if plugin not in fw.plugins_at("Score"):
            raise KeyError(f"{plugin!r} is not a Score plugin of this profile")
        return {}
    else:
        ps = by_plugin[plugin]
        values = (ps.raw if raw else ps.normalized).tolist()
    return dict(zip(result.names, (int(v) for v in values), strict=True))


def _objects(items: Iterable[Any]) -> list[KubeObject]:
    from kubesched.api.manifests import parse_object

    out: list[KubeObject] = []
    for item in items:
        if isinstance(item, PodBuilder | NodeBuilder):
            out.append(item.obj())
        elif isinstance(item, Mapping):
            out.append(parse_object(dict(item)))
        else:
            out.append(item)
    return out


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
    objs = _objects(objects)
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
