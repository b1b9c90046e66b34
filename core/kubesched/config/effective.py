"""The effective configuration: per profile, the plugins of each extension point and their args."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from kubesched.config.defaults import args_to_dict
from kubesched.config.types import (
    PLUGIN_SET_FIELDS,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugin,
    Plugins,
    ignored_extended_resources,
)
from kubesched.config.validation import unknown_plugin_message, validation_error_problems
from kubesched.errors import FieldProblem, UserInputError, problems_from_validation_error
from kubesched.features import FeatureGates
from kubesched.framework.args import PluginArgs
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.registry import PluginRegistry

MAX_NODE_SCORE = 100
NODE_RESOURCES_FIT = "NodeResourcesFit"
"""The plugin whose ``ignoredResources`` the extenders' ignored managed resources set."""
"""The highest score a Score plugin gives a node after normalisation."""
MAX_TOTAL_SCORE = 2**63 - 1
"""Upstream's bound of the sum of weighted scores (``math.MaxInt64``)."""
WEIGHTED_EXTENSION_POINTS = ("Score", "PlacementScore")
"""The extension points whose plugins have a weight."""


def _go_int64(x: int) -> int:
    """``x`` wrapped to int64 as Go's arithmetic wraps it."""
    return (x + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class EnabledPlugin:
    """A plugin at an extension point of a profile.

    ``weight`` is the plugin's score weight at ``Score`` and ``PlacementScore`` (1 when
    not configured) and 0 at every other extension point.
    """

    name: str
    weight: int


@dataclass(frozen=True)
class EffectiveProfile:
    """What a profile runs: the input of the framework runtime.

    ``plugins`` maps every extension point name (``"PreFilter"``, ``"Score"``, ...; all
    of them, in ``EXTENSION_POINTS`` order) to its plugins in the order they run.
    ``plugin_args`` holds, for every plugin the profile instantiates, its validated
    ``Args`` (None for a plugin without an ``Args`` model).
    ``percentage_of_nodes_to_score`` is the profile's value, else the global one, else
    None, meaning adaptive (0 means adaptive too, as upstream).
    """

    scheduler_name: str
    plugins: Mapping[str, tuple[EnabledPlugin, ...]]
    plugin_args: Mapping[str, PluginArgs | None]
    percentage_of_nodes_to_score: int | None

    def plugin_names(self, extension_point: str) -> list[str]:
        """The names of the plugins at ``extension_point``, in order."""
        return [p.name for p in self.plugins[extension_point]]

    def score_weights(self) -> dict[str, int]:
        """Each Score plugin's weight."""
        return {p.name: p.weight for p in self.plugins["Score"]}


@dataclass(frozen=True)
class EffectiveConfiguration:
    """A validated configuration and, in the same order, its profiles as they run, under
    ``feature_gates`` (what ``--feature-gates`` set; the plugins read them)."""

    config: KubeSchedulerConfiguration
    profiles: tuple[EffectiveProfile, ...]
    feature_gates: FeatureGates = field(default_factory=FeatureGates)

    def profile(self, scheduler_name: str) -> EffectiveProfile | None:
        """The profile of ``scheduler_name``, or None."""
        for profile in self.profiles:
            if profile.scheduler_name == scheduler_name:
                return profile
        return None


class _ProfileBuilder:
    """Upstream's ``NewFramework`` for one profile, without instantiating plugins."""

    def __init__(
        self,
        index: int,
        profile: KubeSchedulerProfile,
        registry: PluginRegistry,
        ignored_resources: tuple[str, ...] = (),
    ) -> None:
        self.ignored_resources = ignored_resources
        self.path = f"profiles[{index}]"
        self.index = index
        self.profile = profile
        self.name = profile.scheduler_name or ""
        self.plugins = profile.plugins if profile.plugins is not None else Plugins()
        self.registry = registry
        self.problems: list[FieldProblem] = []

    def _set_path(self, config_key: str) -> str:
        return f"{self.path}.plugins.{config_key}"

    def check_installed(self) -> set[str]:
        """Report every enabled plugin that is not installed; return the needed names."""
        needed: set[str] = set()
        reported: set[str] = set()
        for key, set_field in PLUGIN_SET_FIELDS.items():
            for i, plugin in enumerate(getattr(self.plugins, set_field).enabled):
                needed.add(plugin.name)
                if plugin.name not in self.registry and plugin.name not in reported:
                    reported.add(plugin.name)
                    self.problems.append(
                        FieldProblem(
                            f"{self._set_path(key)}.enabled[{i}]",
                            unknown_plugin_message(plugin.name, self.registry),
                        )
                    )
        return needed

    def _implements(self, name: str, extension_point: str) -> bool:
        entry = self.registry.get(name)
        return entry is not None and extension_point in entry.extension_points

    def extension_point(self, ep_name: str, config_key: str) -> list[str]:
        """The plugins of one extension point: its own set, then multiPoint expansion."""
        plugin_set = self.plugins.plugin_set(config_key)
        # upstream's updatePluginList
        enabled: list[str] = []
        for i, plugin in enumerate(plugin_set.enabled):
            where = f"{self._set_path(config_key)}.enabled[{i}]"
            if plugin.name not in self.registry:
                continue  # reported by check_installed
            if not self._implements(plugin.name, ep_name):
                self.problems.append(
                    FieldProblem(where, f'plugin "{plugin.name}" does not extend {ep_name} plugin')
                )
            elif plugin.name in enabled:
                self.problems.append(
                    FieldProblem(where, f'plugin "{plugin.name}" already registered as "{ep_name}"')
                )
            else:
                enabled.append(plugin.name)

        multi_point = self.plugins.multi_point.enabled
        disabled = {p.name for p in plugin_set.disabled}
        if not multi_point or "*" in disabled:
            return enabled

        # upstream's expandMultiPointPlugins
        overrides: list[str] = []
        from_multi_point: list[str] = []
        for j, plugin in enumerate(multi_point):
            if not self._implements(plugin.name, ep_name) or plugin.name in disabled:
                continue
            if plugin.name in enabled:
                # Named at the extension point itself too: the user re-configures it
                # there (upstream #99582), so that entry wins.
                if plugin.name not in overrides:
                    overrides.append(plugin.name)
                continue
            if plugin.name in from_multi_point:
                self.problems.append(
                    FieldProblem(
                        f"{self._set_path('multiPoint')}.enabled[{j}]",
                        f'plugin "{plugin.name}" already registered as "{ep_name}"',
                    )
                )
                continue
            from_multi_point.append(plugin.name)
        # Order: the overridden plugins (in the extension point's order), then the
        # multiPoint ones, then the rest of the extension point's own plugins.
        first = [name for name in enabled if name in overrides]
        rest = [name for name in enabled if name not in overrides]
        return first + from_multi_point + rest

    def score_weights(
        self, score_plugins: list[str], extension_point: str = "Score", config_key: str = "score"
    ) -> dict[str, int]:
        """Upstream's ``getScoreWeights``: the Score entry's weight, else multiPoint's, else 1
        (the same for PlacementScore, with its own entries)."""
        weights: dict[str, int] = {}
        total = 0
        entries: list[Plugin] = [
            *self.plugins.plugin_set(config_key).enabled,
            *self.plugins.multi_point.enabled,
        ]
        for plugin in entries:
            if plugin.name in weights or not self._implements(plugin.name, extension_point):
                continue
            # A weight of 0 is not permitted: a plugin is disabled explicitly instead.
            weight = plugin.weight or 1
            weights[plugin.name] = weight
            # In int64 as upstream: after a negative weight, MaxTotalScore - total wraps
            # below any weight, so a negative weight followed by any other Score plugin
            # is refused with this message (kube-scheduler v1.36 does exactly that).
            if weight * MAX_NODE_SCORE > _go_int64(MAX_TOTAL_SCORE - total):
                self.problems.append(
                    FieldProblem(
                        self._set_path(config_key),
                        f"total score of {extension_point} plugins could overflow",
                    )
                )
                break
            total = _go_int64(total + weight * MAX_NODE_SCORE)
        for name in score_plugins:
            weights.setdefault(name, 1)
        return weights

    def plugin_args(self, needed: set[str]) -> dict[str, PluginArgs | None]:
        """The validated ``Args`` of every needed plugin (its pluginConfig, else defaults)."""
        result: dict[str, PluginArgs | None] = {}
        configured = {}
        for j, pc in enumerate(self.profile.plugin_config):
            configured.setdefault(pc.name, (j, pc.args))
        for name in sorted(needed):
            entry = self.registry.get(name)
            if entry is None:
                continue
            if entry.args_model is None:
                result[name] = None
                continue
            j, args = configured.get(name, (None, {}))
            try:
                result[name] = entry.args_model.model_validate(args)
                if name == NODE_RESOURCES_FIT and self.ignored_resources:
                    # As upstream: the resources extenders manage with ignoredByScheduler
                    # replace the plugin's ignoredResources.
                    result[name] = result[name].model_copy(
                        update={"ignored_resources": self.ignored_resources}
                    )
            except ValidationError as err:
                if j is None:
                    self.problems.append(
                        FieldProblem(
                            f"{self.path}.pluginConfig",
                            f'plugin "{name}" needs args: add a pluginConfig entry for it '
                            f"({_first_error(err)})",
                        )
                    )
                else:
                    self.problems += validation_error_problems(
                        err, (*_loc(self.path), "pluginConfig", j, "args"), entry.args_model
                    )
        return result

    def build(self, global_percentage: int | None) -> EffectiveProfile | None:
        """The effective profile, or None with ``problems`` filled in."""
        needed = self.check_installed()
        plugins: dict[str, tuple[EnabledPlugin, ...]] = {}
        names_by_ep: dict[str, list[str]] = {}
        for ep in EXTENSION_POINTS:
            names_by_ep[ep.name] = self.extension_point(ep.name, ep.config_key)
        if len(names_by_ep["QueueSort"]) != 1 and not self.problems:
            self.problems.append(
                FieldProblem(
                    self._set_path("queueSort"),
                    f"only one queue sort plugin required for profile with scheduler name "
                    f'"{self.name}", but got {len(names_by_ep["QueueSort"])}',
                )
            )
        if not names_by_ep["Bind"] and not self.problems:
            self.problems.append(
                FieldProblem(
                    self._set_path("bind"),
                    "at least one bind plugin is needed for profile with scheduler name "
                    f'"{self.name}"',
                )
            )
        weights = {
            "Score": self.score_weights(names_by_ep["Score"]),
            "PlacementScore": self.score_weights(
                names_by_ep["PlacementScore"], "PlacementScore", "placementScore"
            ),
        }
        for ep_name, names in names_by_ep.items():
            plugins[ep_name] = tuple(
                EnabledPlugin(name, weights[ep_name][name] if ep_name in weights else 0)
                for name in names
            )
        args = self.plugin_args(needed)
        if self.problems:
            return None
        percentage = self.profile.percentage_of_nodes_to_score
        return EffectiveProfile(
            scheduler_name=self.name,
            plugins=MappingProxyType(plugins),
            plugin_args=MappingProxyType(args),
            percentage_of_nodes_to_score=global_percentage if percentage is None else percentage,
        )


def _first_error(err: ValidationError) -> str:
    return str(problems_from_validation_error(err)[0])


def _loc(path: str) -> tuple[str | int, ...]:
    name, _, index = path.partition("[")
    return (name, int(index.rstrip("]")))


def effective_configuration(
    config: KubeSchedulerConfiguration,
    registry: PluginRegistry,
    *,
    source: str | None = None,
    gates: FeatureGates | None = None,
) -> EffectiveConfiguration:
    """Resolve each profile of a validated configuration into what it runs, under ``gates``
    (default: every feature gate at its default).

    This is upstream's ``NewFramework`` without the plugin instances: every enabled
    plugin must be installed in ``registry`` and implement the extension points it is
    enabled at; multiPoint plugins are expanded to the extension points they
    implement; each profile has exactly one QueueSort plugin and at least one Bind
    plugin, and all profiles the same QueueSort plugin and args. Raises
    ``UserInputError`` (``source`` names the file) naming the profile and the fields.
    """
    profiles: list[EffectiveProfile] = []
    for index, profile in enumerate(config.profiles):
        builder = _ProfileBuilder(
            index, profile, registry, ignored_extended_resources(config.extenders)
        )
        built = builder.build(config.percentage_of_nodes_to_score)
        if built is None:
            raise UserInputError(
                f'invalid profile "{builder.name}"',
                source=source,
                obj=builder.path,
                problems=builder.problems,
            )
        profiles.append(built)
    _check_common_queue_sort(profiles, source)
    return EffectiveConfiguration(
        config=config, profiles=tuple(profiles), feature_gates=gates or FeatureGates()
    )


def _check_common_queue_sort(profiles: list[EffectiveProfile], source: str | None) -> None:
    # upstream's profile.NewMap check: the queue is shared, so is its order.
    if not profiles:
        return
    first = profiles[0]
    first_sort = first.plugins["QueueSort"][0].name
    first_args = _comparable(first.plugin_args.get(first_sort))
    for index, profile in enumerate(profiles[1:], start=1):
        sort = profile.plugins["QueueSort"][0].name
        if sort != first_sort:
            raise UserInputError(
                f'different queue sort plugins for profile "{profile.scheduler_name}": '
                f'"{sort}", first: "{first_sort}"',
                source=source,
                obj=f"profiles[{index}]",
            )
        if _comparable(profile.plugin_args.get(sort)) != first_args:
            raise UserInputError(
                f'different queue sort plugin args for profile "{profile.scheduler_name}"',
                source=source,
                obj=f"profiles[{index}]",
            )


def _comparable(args: PluginArgs | None) -> dict[str, Any] | None:
    # kind/apiVersion are labels: defaulted args carry them, a user's may not.
    return None if args is None else args.model_dump(exclude={"kind", "api_version"})


def effective_to_dict(effective: EffectiveConfiguration) -> dict[str, Any]:
    """The effective configuration as plain data (``kubesched config effective``).

    ``{"profiles": [{"schedulerName", "percentageOfNodesToScore", "plugins":
    {extension point: [{"name", "weight"?}]}, "pluginArgs": {plugin: args | None}}]}``;
    a weight is shown at Score and PlacementScore only.
    """
    profiles = []
    for profile in effective.profiles:
        plugins = {
            ep: [
                {"name": p.name, "weight": p.weight}
                if ep in WEIGHTED_EXTENSION_POINTS
                else {"name": p.name}
                for p in entries
            ]
            for ep, entries in profile.plugins.items()
        }
        args = {
            name: None if value is None else args_to_dict(value, effective.feature_gates)
            for name, value in profile.plugin_args.items()
        }
        profiles.append(
            {
                "schedulerName": profile.scheduler_name,
                "percentageOfNodesToScore": profile.percentage_of_nodes_to_score,
                "plugins": plugins,
                "pluginArgs": args,
            }
        )
    return {"profiles": profiles}
