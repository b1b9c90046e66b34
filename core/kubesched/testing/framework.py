"""Build a Framework around a few plugin classes, for unit tests of plugins and of the runtime."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from kubesched.config import EffectiveProfile, EnabledPlugin
from kubesched.config.validation import validation_error_problems
from kubesched.errors import PluginArgsError
from kubesched.framework.args import PluginArgs
from kubesched.framework.node_table import NodeTable
from kubesched.framework.plugin import EXTENSION_POINTS, extension_points_of, hookimpl
from kubesched.framework.registry import PluginRegistry
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import NodeBatch, NodeInfo, QueuedPodInfo

DEFAULT_PROFILE = "default-scheduler"


class FifoSort:
    """A QueueSort for tests that need none in particular: earlier timestamp first."""

    name = "TestFifoSort"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def less(self, pod_info1: QueuedPodInfo, pod_info2: QueuedPodInfo) -> bool:
        return pod_info1.timestamp < pod_info2.timestamp


class RecordingBinder:
    """A Bind plugin for tests: records ``(pod key, node)`` instead of binding."""

    name = "TestRecordingBinder"

    def __init__(self, args: Any, handle: Any) -> None:
        self.bound: list[tuple[str, str]] = []

    @hookimpl
    def bind(self, pod_info: Any, node_name: str) -> None:
        self.bound.append((pod_info.key, node_name))


def make_framework(
    *plugin_classes: type,
    args: Mapping[str, Any] | None = None,
    weights: Mapping[str, int] | None = None,
    profile_name: str = DEFAULT_PROFILE,
    percentage_of_nodes_to_score: int | None = None,
    **handle: Any,
) -> Framework:
    """A Framework whose profile enables each class at every extension point it implements,
    in the order given.

    ``args`` maps a plugin name to its args (a dict validated by the plugin's ``Args``,
    or an ``Args`` instance); ``weights`` maps Score (and PlacementScore) plugins to
    weights (default 1).
    Invalid args raise ``kubesched.PluginArgsError`` (field paths relative to the args,
    Kubernetes messages and error types). When no class implements QueueSort or Bind,
    ``FifoSort`` / ``RecordingBinder`` are added so the profile is valid. ``handle``
    keywords (``client``, ``nominator``, ``lister``, ``clock``, ``metrics``,
    ``event_recorder``, ``rng``) go to the Framework.
    """
    classes = list(plugin_classes)
    implemented = {ep for cls in classes for ep in extension_points_of(cls)}
    if "QueueSort" not in implemented:
        classes.append(FifoSort)
    if "Bind" not in implemented:
        classes.append(RecordingBinder)
    registry = PluginRegistry()
    for cls in classes:
        registry.add_class(cls)
    if registry.errors:
        raise ValueError("; ".join(str(e) for e in registry.errors))
    weights = weights or {}
    plugins: dict[str, tuple[EnabledPlugin, ...]] = {}
    for ep in EXTENSION_POINTS:
        plugins[ep.name] = tuple(
            EnabledPlugin(
                cls.name,
                weights.get(cls.name, 1) if ep.name in ("Score", "PlacementScore") else 0,
            )
            for cls in classes
            if ep.name in extension_points_of(cls)
        )
    plugin_args: dict[str, PluginArgs | None] = {}
    for cls in classes:
        model = getattr(cls, "Args", None)
        given = (args or {}).get(cls.name)
        if model is None:
            plugin_args[cls.name] = None
        elif isinstance(given, PluginArgs):
            plugin_args[cls.name] = given
        else:
            try:
                plugin_args[cls.name] = model.model_validate(given or {})
            except ValidationError as err:
                raise PluginArgsError(cls.name, validation_error_problems(err, (), model)) from None
    profile = EffectiveProfile(
        scheduler_name=profile_name,
        plugins=plugins,
        plugin_args=plugin_args,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
    )
    return Framework(profile, registry, **handle)


def node_batch(node_infos: Sequence[NodeInfo] | Iterable[NodeInfo]) -> NodeBatch:
    """A NodeBatch of ``node_infos`` over a fresh NodeTable (for vectorised hooks)."""
    infos = list(node_infos)
    return NodeBatch(NodeTable(infos), range(len(infos)), infos)


def batch_verdicts(answer: Sequence[Status | None] | None, nodes: int) -> list[Status | None]:
    """A ``filter_nodes`` answer for ``nodes`` nodes as one verdict per node (``None``,
    "every node passes", becomes ``nodes`` times ``None``)."""
    return [None] * nodes if answer is None else list(answer)
