"""Effective profiles: multiPoint expansion, overrides, weights, and NewFramework's errors."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.config import EffectiveConfiguration, config_from_dict, effective_configuration
from kubesched.errors import UserInputError
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.registry import PluginLoadError, PluginRegistry

from .toy_plugins import PrioritySortWithArgs, toy_registry

V1 = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def effective(registry: PluginRegistry, **fields: Any) -> EffectiveConfiguration:
    return effective_configuration(config_from_dict({**V1, **fields}, registry), registry)


def one_profile(registry: PluginRegistry, plugins: dict | None = None, **profile: Any):
    if plugins is not None:
        profile["plugins"] = plugins
    return effective(registry, profiles=[profile]).profiles[0]


def names(profile, ep: str) -> list[str]:
    return profile.plugin_names(ep)


def test_default_profile(registry: PluginRegistry) -> None:
    profile = effective(registry).profiles[0]
    assert profile.scheduler_name == "default-scheduler"
    assert list(profile.plugins) == [ep.name for ep in EXTENSION_POINTS]
    assert names(profile, "PreEnqueue") == ["SchedulingGates", "DynamicResources"]
    assert names(profile, "QueueSort") == ["PrioritySort"]
    assert names(profile, "PreFilter") == [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ]
    assert names(profile, "Filter") == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ]
    assert names(profile, "PostFilter") == ["DynamicResources", "DefaultPreemption"]
    assert profile.score_weights() == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "DynamicResources": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert names(profile, "Bind") == ["DefaultBinder"]
    assert all(p.weight == 0 for p in profile.plugins["Filter"])
    assert profile.plugin_args["ImageLocality"] is None
    fit = profile.plugin_args["NodeResourcesFit"]
    assert fit is not None and fit.scoring_strategy.type == "LeastAllocated"
    assert profile.percentage_of_nodes_to_score is None


CASES: list[tuple[str, dict, str, list[Any]]] = [
    (
        "disable one plugin at one extension point",
        {"filter": {"disabled": [{"name": "NodePorts"}]}},
        "Filter",
        [
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
            "NodeDeclaredFeatures",
        ],
    ),
    (
        "disabled at one point stays at the others",
        {"filter": {"disabled": [{"name": "NodePorts"}]}},
        "PreFilter",
        [
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
            "NodeDeclaredFeatures",
        ],
    ),
    (
        "disable all scores, enable one",
        {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "ImageLocality", "weight": 7}],
            }
        },
        "Score",
        [("ImageLocality", 7)],
    ),
    (
        "disable a default in multiPoint",
        {"multiPoint": {"disabled": [{"name": "ImageLocality"}]}},
        "Score",
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
        ],
    ),
    (
        "re-configured default weight keeps its position",
        {"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 10}]}},
        "Score",
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 10),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
    ),
    (
        "specific Score entry overrides multiPoint: first, with its own weight",
        {"score": {"enabled": [{"name": "InterPodAffinity", "weight": 9}]}},
        "Score",
        [
            ("InterPodAffinity", 9),
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
    ),
    (
        # upstream's getScoreWeights: the Score entry wins even without a weight (0 -> 1)
        "specific Score entry without weight gets 1, not multiPoint's",
        {"score": {"enabled": [{"name": "TaintToleration"}]}},
        "Score",
        [
            ("TaintToleration", 1),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
    ),
    (
        "custom plugin at one extension point is appended after multiPoint",
        {"filter": {"enabled": [{"name": "CustomFilter"}]}},
        "Filter",
        [
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
            "NodeDeclaredFeatures",
            "CustomFilter",
        ],
    ),
    (
        "override, then multiPoint, then the rest",
        {"filter": {"enabled": [{"name": "CustomFilter"}, {"name": "NodePorts"}]}},
        "Filter",
        [
            "NodePorts",
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
            "NodeDeclaredFeatures",
            "CustomFilter",
        ],
    ),
    (
        "custom multiPoint plugin expands to the points it implements",
        {"multiPoint": {"enabled": [{"name": "CustomFilterScore", "weight": 4}]}},
        "Score",
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
            ("CustomFilterScore", 4),
        ],
    ),
    (
        "multiPoint plugin disabled at one point",
        {
            "multiPoint": {"enabled": [{"name": "CustomFilterScore"}]},
            "score": {"disabled": [{"name": "CustomFilterScore"}]},
        },
        "Score",
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
    ),
    (
        "replace the binder",
        {"bind": {"disabled": [{"name": "*"}], "enabled": [{"name": "CustomBinder"}]}},
        "Bind",
        ["CustomBinder"],
    ),
    (
        "replace the queue sort",
        {
            "queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "CustomQueueSort"}]},
        },
        "QueueSort",
        ["CustomQueueSort"],
    ),
    (
        "zero weight means 1",
        {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 0}]}},
        "Score",
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
    ),
]


@pytest.mark.parametrize(
    ("plugins", "extension_point", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_expansion(
    registry: PluginRegistry, plugins: dict, extension_point: str, expected: list
) -> None:
    profile = one_profile(registry, plugins)
    if expected and isinstance(expected[0], tuple):
        assert [(p.name, p.weight) for p in profile.plugins[extension_point]] == expected
    else:
        assert names(profile, extension_point) == expected


ERROR_CASES = [
    (
        "does not extend",
        {"filter": {"enabled": [{"name": "ImageLocality"}]}},
        "profiles[0].plugins.filter.enabled[0]",
        'plugin "ImageLocality" does not extend Filter plugin',
    ),
    (
        "double registration at one extension point",
        {"filter": {"enabled": [{"name": "CustomFilter"}, {"name": "CustomFilter"}]}},
        "profiles[0].plugins.filter.enabled[1]",
        'plugin "CustomFilter" already registered as "Filter"',
    ),
    (
        "double registration in multiPoint",
        {"multiPoint": {"enabled": [{"name": "CustomFilter"}, {"name": "CustomFilter"}]}},
        "profiles[0].plugins.multiPoint.enabled[21]",
        'plugin "CustomFilter" already registered as "Filter"',
    ),
    (
        "two queue sorts",
        {"queueSort": {"enabled": [{"name": "CustomQueueSort"}]}},
        "profiles[0].plugins.queueSort",
        'only one queue sort plugin required for profile with scheduler name "default-scheduler", '
        "but got 2",
    ),
    (
        "no queue sort",
        {"queueSort": {"disabled": [{"name": "*"}]}},
        "profiles[0].plugins.queueSort",
        'only one queue sort plugin required for profile with scheduler name "default-scheduler", '
        "but got 0",
    ),
    (
        "no binder",
        {"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}},
        "profiles[0].plugins.bind",
        'at least one bind plugin is needed for profile with scheduler name "default-scheduler"',
    ),
]


@pytest.mark.parametrize(
    ("plugins", "path", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_framework_errors(registry: PluginRegistry, plugins: dict, path: str, message: str) -> None:
    with pytest.raises(UserInputError) as excinfo:
        one_profile(registry, plugins)
    err = excinfo.value
    assert err.obj == "profiles[0]"
    assert [(p.path, p.message) for p in err.problems] == [(path, message)]
    assert "default-scheduler" in str(err)


def test_unknown_plugin_lists_installed_plugins(registry: PluginRegistry) -> None:
    with pytest.raises(UserInputError) as excinfo:
        effective(
            registry,
            profiles=[
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"filter": {"enabled": [{"name": "NodePort"}]}}},
            ],
        )
    err = excinfo.value
    assert err.obj == "profiles[1]"
    assert 'invalid profile "b"' in str(err)
    (problem,) = err.problems
    assert problem.path == "profiles[1].plugins.filter.enabled[0]"
    assert problem.message.startswith(
        'plugin "NodePort" is not installed (did you mean "NodePorts"?); installed plugins: '
        "CustomBinder, CustomFilter,"
    )


def test_unknown_plugin_mentions_load_errors() -> None:
    registry = toy_registry()
    registry.errors.append(PluginLoadError("Broken", "broken-dist", "cannot import x"))
    with pytest.raises(UserInputError, match="plugins that failed to load: plugin 'Broken'"):
        one_profile(registry, {"filter": {"enabled": [{"name": "Broken"}]}})


def test_no_plugins_installed() -> None:
    with pytest.raises(UserInputError, match="installed plugins: none"):
        effective(PluginRegistry())


def test_percentage_of_nodes_to_score_profile_then_global(registry: PluginRegistry) -> None:
    eff = effective(
        registry,
        percentageOfNodesToScore=30,
        profiles=[{"schedulerName": "a"}, {"schedulerName": "b", "percentageOfNodesToScore": 70}],
    )
    assert [p.percentage_of_nodes_to_score for p in eff.profiles] == [30, 70]
    assert eff.profile("b") is eff.profiles[1]


def test_plugin_args_from_plugin_config(registry: PluginRegistry) -> None:
    profile = one_profile(
        registry,
        pluginConfig=[
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
        ],
    )
    args = profile.plugin_args["NodeResourcesFit"]
    assert args.scoring_strategy.type == "MostAllocated"
    assert [r.name for r in args.scoring_strategy.resources] == ["cpu", "memory"]


def test_plugin_needing_args_without_plugin_config(registry: PluginRegistry) -> None:
    with pytest.raises(UserInputError, match='plugin "NeedsArgs" needs args') as err:
        one_profile(registry, {"filter": {"enabled": [{"name": "NeedsArgs"}]}})
    # The args' own problem in Kubernetes' wording, never pydantic's ("Field required").
    assert "Required value" in str(err.value)
    assert "Field required" not in str(err.value)


def test_queue_sort_must_be_the_same_effectively(registry: PluginRegistry) -> None:
    # Validation compares the queueSort sets; a different multiPoint queue sort is
    # caught when the profiles are built (upstream's profile.NewMap).
    with pytest.raises(UserInputError, match='different queue sort plugins for profile "b"'):
        effective(
            registry,
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {
                        "multiPoint": {
                            "disabled": [{"name": "PrioritySort"}],
                            "enabled": [{"name": "CustomQueueSort"}],
                        }
                    },
                },
            ],
        )


def test_queue_sort_args_must_be_the_same_effectively() -> None:
    registry = toy_registry(PrioritySortWithArgs)
    with pytest.raises(UserInputError, match='different queue sort plugin args for profile "b"'):
        effective(
            registry,
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "pluginConfig": [{"name": "PrioritySort", "args": {"reverse": True}}],
                },
            ],
        )


def test_effective_profile_is_immutable(registry: PluginRegistry) -> None:
    profile = effective(registry).profiles[0]
    with pytest.raises(TypeError):
        profile.plugins["Filter"] = ()  # type: ignore[index]


def test_queue_sort_args_equal_modulo_kind() -> None:
    registry = toy_registry(PrioritySortWithArgs)
    eff = effective(
        registry,
        profiles=[
            {"schedulerName": "a"},
            {"schedulerName": "b", "pluginConfig": [{"name": "PrioritySort", "args": {}}]},
        ],
    )
    assert len(eff.profiles) == 2
