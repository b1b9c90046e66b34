"""What a plugin is: the hook markers and the extension points (its args: ``framework.args``)."""

from __future__ import annotations

from dataclasses import dataclass

import pluggy

PROJECT_NAME = "kubesched"
"""The pluggy project name: hookspecs and hookimpls are marked for it."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Mark a plugin method as the implementation of an extension point (``@hookimpl``)."""


@dataclass(frozen=True)
class ExtensionPoint:
    """One configurable extension point of a profile.

    ``config_key`` is its key under a profile's ``plugins`` in
    ``KubeSchedulerConfiguration``; ``hook`` the hookspec a plugin implements to
    extend it; ``companion_hooks`` hooks that belong to it without extending it on
    their own (``normalize_score`` with ``score``, ``unreserve`` with ``reserve``).
    """

    name: str
    config_key: str
    hook: str
    companion_hooks: tuple[str, ...] = ()


EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("PreEnqueue", "preEnqueue", "pre_enqueue"),
    ExtensionPoint("QueueSort", "queueSort", "less"),
    ExtensionPoint(
        "PreFilter", "preFilter", "pre_filter", ("pre_filter_add_pod", "pre_filter_remove_pod")
    ),
    ExtensionPoint("Filter", "filter", "filter"),
    ExtensionPoint("PostFilter", "postFilter", "post_filter"),
    ExtensionPoint("PreScore", "preScore", "pre_score"),
    ExtensionPoint("Score", "score", "score", ("normalize_score",)),
    ExtensionPoint("Reserve", "reserve", "reserve", ("unreserve",)),
    ExtensionPoint("Permit", "permit", "permit"),
    ExtensionPoint("PreBind", "preBind", "pre_bind"),
    ExtensionPoint("Bind", "bind", "bind"),
    ExtensionPoint("PostBind", "postBind", "post_bind"),
    ExtensionPoint("PlacementGenerate", "placementGenerate", "generate_placements"),
    ExtensionPoint(
        "PlacementScore", "placementScore", "score_placement", ("normalize_placement_score",)
    ),
)
"""The extension points in the order a pod meets them (upstream's order), then the two of a
pod group's cycle under TopologyAwareWorkloadScheduling (they wrap the pod-by-pod ones)."""

EXTENSION_POINTS_BY_NAME = {ep.name: ep for ep in EXTENSION_POINTS}
EXTENSION_POINTS_BY_CONFIG_KEY = {ep.config_key: ep for ep in EXTENSION_POINTS}


def extension_points_of(plugin_class: type) -> tuple[str, ...]:
    """The extension points (upstream names, in order) a plugin class implements."""
    return tuple(
        ep.name for ep in EXTENSION_POINTS if _is_hookimpl(getattr(plugin_class, ep.hook, None))
    )


def _is_hookimpl(attr: object) -> bool:
    return attr is not None and hasattr(attr, f"{PROJECT_NAME}_impl")
