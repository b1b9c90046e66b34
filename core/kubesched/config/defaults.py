"""Upstream's defaults: the default plugins, their merge with a profile's, and default args."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from kubesched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    PLUGIN_SET_FIELDS,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from kubesched.features import FeatureGates
from kubesched.framework.args import ARGS_FEATURE_GATES, PluginArgs
from kubesched.framework.registry import PluginRegistry, default_registry

DEFAULT_MULTI_POINT_PLUGINS: tuple[Plugin, ...] = (
    Plugin(name="SchedulingGates"),
    Plugin(name="PrioritySort"),
    Plugin(name="NodeUnschedulable"),
    Plugin(name="NodeName"),
    Plugin(name="TaintToleration", weight=3),
    Plugin(name="NodeAffinity", weight=2),
    Plugin(name="NodePorts"),
    Plugin(name="NodeResourcesFit", weight=1),
    Plugin(name="VolumeRestrictions"),
    Plugin(name="NodeVolumeLimits"),
    Plugin(name="VolumeBinding"),
    Plugin(name="VolumeZone"),
    Plugin(name="PodTopologySpread", weight=2),
    Plugin(name="InterPodAffinity", weight=2),
    Plugin(name="DynamicResources", weight=2),
    Plugin(name="DefaultPreemption"),
    Plugin(name="NodeResourcesBalancedAllocation", weight=1),
    Plugin(name="ImageLocality", weight=1),
    Plugin(name="DefaultBinder"),
    Plugin(name="NodeDeclaredFeatures"),
    Plugin(name="GangScheduling"),
    Plugin(name="TopologyPlacementGenerator"),
    Plugin(name="PodGroupPodsCount", weight=1),
)
"""The default profile's plugins, all enabled through ``multiPoint``: upstream v1.36's
default set, in its order and with its score weights
(``pkg/scheduler/apis/config/v1/default_plugins.go``). ``EBSLimits``, ``GCEPDLimits`` and
``AzureDiskLimits``, still listed by some upstream versions, are rejected by upstream's own
v1 validation and are not among them."""

GATED_DEFAULT_PLUGINS: dict[str, str] = {
    "NodeDeclaredFeatures": "NodeDeclaredFeatures",
    "GangScheduling": "GangScheduling",
    "TopologyPlacementGenerator": "TopologyAwareWorkloadScheduling",
    "PodGroupPodsCount": "TopologyAwareWorkloadScheduling",
}
"""Default plugins that upstream leaves out of the default profile while a feature gate is
off: plugin name → gate (``applyFeatureGates`` of upstream's ``default_plugins.go``)."""


def default_plugins(gates: FeatureGates | None = None) -> Plugins:
    """The default profile's plugin sets under ``gates`` (default: every gate at its
    default): everything through ``multiPoint``."""
    gates = gates or FeatureGates()
    enabled = tuple(
        p
        for p in DEFAULT_MULTI_POINT_PLUGINS
        if p.name not in GATED_DEFAULT_PLUGINS or gates.enabled(GATED_DEFAULT_PLUGINS[p.name])
    )
    return Plugins(multi_point=PluginSet(enabled=enabled))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Merge a profile's plugin set into the default one, as upstream's ``mergePluginSet``.

    - ``custom.disabled`` removes default plugins by name, or all of them with ``"*"``;
      the disabled names are kept so that multiPoint expansion skips them too.
    - A default plugin that ``custom.enabled`` names again is replaced in place by the
      custom entry (its weight wins, its position is the default's).
    - Every other custom plugin is appended, in the custom order (duplicates included:
      building the framework reports them).
    """
    disabled = [Plugin(name=p.name) for p in custom.disabled]
    disabled += [Plugin(name=p.name) for p in default.disabled]
    disabled_names = {p.name for p in disabled}
    custom_by_name: dict[str, tuple[int, Plugin]] = {}
    for index, plugin in enumerate(custom.enabled):
        custom_by_name[plugin.name] = (index, plugin)

    enabled: list[Plugin] = []
    replaced: set[int] = set()
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_by_name:
                index, plugin = custom_by_name[plugin.name]
                replaced.add(index)
            enabled.append(plugin)
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Merge every plugin set of ``custom`` into ``default`` (upstream's ``mergePlugins``)."""
    if custom is None:
        return default
    return Plugins(
        **{
            field: merge_plugin_set(getattr(default, field), getattr(custom, field))
            for field in PLUGIN_SET_FIELDS.values()
        }
    )


def enabled_plugin_names(plugins: Plugins) -> list[str]:
    """Every plugin enabled in any set of ``plugins`` (incl. multiPoint), sorted by name."""
    return sorted(
        {p.name for field in PLUGIN_SET_FIELDS.values() for p in getattr(plugins, field).enabled}
    )


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | tuple | dict) and not value)


def _omitted(model: BaseModel) -> dict[str, Any]:
    """``model_dump``'s ``exclude`` for the fields of ``model`` (and of the models in it)
    that are empty (null, ``[]``, ``{}``) and empty by default: upstream's JSON leaves them
    out (``omitempty``), and leaving them out loads back to the same value."""
    exclude: dict[str, Any] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            inner = _omitted(value)
            if inner:
                exclude[name] = inner
        elif isinstance(value, list | tuple) and value and isinstance(value[0], BaseModel):
            items = {i: inner for i, item in enumerate(value) if (inner := _omitted(item))}
            if items:
                exclude[name] = items
        elif _empty(value) and _empty(info.get_default(call_default_factory=True)):
            exclude[name] = True
    return exclude


def args_to_dict(args: PluginArgs, gates: FeatureGates | None = None) -> dict[str, Any]:
    """A plugin's validated args as the mapping ``pluginConfig`` holds (camelCase keys),
    as upstream writes them: without the fields that are empty and empty by default, and
    without the unset fields whose feature gate ``gates`` turn off (upstream does not
    default them; those of ``null_when_gated_off`` are written as ``null``); no
    ``gates``: every gate at its default, so that the mapping loads back under them."""
    gates = gates or FeatureGates()
    data = args.model_dump(mode="json", by_alias=True, exclude=_omitted(args))
    for name in args.fields_gated_off(gates).keys() - args.model_fields_set:
        key = type(args).model_fields[name].alias or name
        data.pop(key, None)
        if name in args.null_when_gated_off:
            data[key] = None
    return data


def default_plugin_args(
    name: str, registry: PluginRegistry, gates: FeatureGates | None = None
) -> dict[str, Any] | None:
    """The default args of plugin ``name``, or None if it is not installed or takes none.

    Like upstream's defaulted args they carry ``kind: <Name>Args`` and ``apiVersion``.
    An ``Args`` model that cannot be built without input (a required field) has no
    default; building the profile then reports it.
    """
    entry = registry.get(name)
    if entry is None or entry.args_model is None:
        return None
    try:
        args = entry.args_model.model_validate({})
    except ValidationError:
        return None
    return {"kind": f"{name}Args", "apiVersion": API_VERSION, **args_to_dict(args, gates)}


def _normalized_args(
    name: str, args: dict[str, Any], registry: PluginRegistry, gates: FeatureGates | None
) -> dict[str, Any]:
    # Upstream runs its defaulting functions on the user's args too; here the plugin's
    # Args model fills in its defaults. Args that do not validate are left as given,
    # for validation to report with their field paths.
    entry = registry.get(name)
    if entry is None or entry.args_model is None:
        return args
    try:
        # Under the gates, as upstream's defaulting reads them (an empty VolumeBinding
        # shape takes its default only while StorageCapacityScoring is on).
        context = None if gates is None else {ARGS_FEATURE_GATES: gates}
        validated = entry.args_model.model_validate(args, context=context)
    except ValidationError:
        return args
    return args_to_dict(validated, gates)


def set_profile_defaults(
    profile: KubeSchedulerProfile, registry: PluginRegistry, gates: FeatureGates | None = None
) -> KubeSchedulerProfile:
    """Merge the profile's plugins with the defaults and fill in default plugin args.

    Every enabled plugin that has an ``Args`` model and no ``pluginConfig`` entry gets
    one with its default args, appended in plugin-name order (as upstream).
    """
    plugins = merge_plugins(default_plugins(gates), profile.plugins)
    plugin_config = [
        PluginConfig(name=pc.name, args=_normalized_args(pc.name, pc.args, registry, gates))
        for pc in profile.plugin_config
    ]
    configured = {pc.name for pc in plugin_config}
    for name in enabled_plugin_names(plugins):
        if name in configured:
            continue
        args = default_plugin_args(name, registry, gates)
        if args is not None:
            plugin_config.append(PluginConfig(name=name, args=args))
    return profile.model_copy(update={"plugins": plugins, "plugin_config": tuple(plugin_config)})


def set_defaults(
    config: KubeSchedulerConfiguration,
    registry: PluginRegistry | None = None,
    gates: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    """Apply upstream's v1 defaulting to a configuration as read from a file.

    No profile means one profile; a single profile without ``schedulerName`` is
    ``default-scheduler`` (with several, each must be named: validation says so);
    plugins are merged with the defaults; default args are added for installed
    plugins (``registry``, default: the discovered plugins); ``gates`` pick the default
    plugins as upstream's feature gates do. Applying it twice gives the same result.
    """
    registry = default_registry() if registry is None else registry
    profiles = list(config.profiles) or [KubeSchedulerProfile()]
    if len(profiles) == 1 and profiles[0].scheduler_name is None:
        profiles[0] = profiles[0].model_copy(update={"scheduler_name": DEFAULT_SCHEDULER_NAME})
    update: dict[str, Any] = {
        "profiles": tuple(set_profile_defaults(p, registry, gates) for p in profiles)
    }
    if config.enable_contention_profiling is None:
        update["enable_contention_profiling"] = config.enable_profiling
    return config.model_copy(update=update)


def default_configuration(
    registry: PluginRegistry | None = None, gates: FeatureGates | None = None
) -> KubeSchedulerConfiguration:
    """Upstream's default configuration under ``gates``, with the default args of the
    installed plugins."""
    return set_defaults(KubeSchedulerConfiguration(), registry, gates)
