"""Plugin args through the SDK: null means unset; errors carry Kubernetes paths, texts, types."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from kubesched import ErrorType, PluginArgs, PluginArgsError, UserInputError, hookimpl
from kubesched.testing import framework_for, profile_framework

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
CPU_MEMORY = [("cpu", 1), ("memory", 1)]


def _resources(specs: Any) -> list[tuple[str, int]]:
    return [(r.name, r.weight) for r in specs]


@pytest.mark.parametrize(
    ("plugin", "args", "read", "expected"),
    [
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated", "resources": None}},
            lambda a: _resources(a.scoring_strategy.resources),
            CPU_MEMORY,
        ),
        (
            "NodeResourcesFit",
            {"scoringStrategy": None},
            lambda a: (a.scoring_strategy.type, _resources(a.scoring_strategy.resources)),
            ("LeastAllocated", CPU_MEMORY),
        ),
        ("NodeResourcesFit", {"ignoredResources": None}, lambda a: a.ignored_resources, ()),
        (
            "NodeResourcesFit",
            {"ignoredResourceGroups": None},
            lambda a: a.ignored_resource_groups,
            (),
        ),
        (
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": None}],
                }
            },
            lambda a: _resources(a.scoring_strategy.resources),
            [("cpu", 1)],
        ),
        (
            "NodeResourcesBalancedAllocation",
            {"resources": None},
            lambda a: _resources(a.resources),
            CPU_MEMORY,
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeight": None},
            lambda a: a.hard_pod_affinity_weight,
            1,
        ),
        (
            "PodTopologySpread",
            {"defaultConstraints": None, "defaultingType": None},
            lambda a: (tuple(a.default_constraints), a.defaulting_type),
            ((), "System"),
        ),
        (
            "DefaultPreemption",
            {"minCandidateNodesPercentage": None, "minCandidateNodesAbsolute": None},
            lambda a: (a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute),
            (10, 100),
        ),
    ],
    ids=[
        "fit-resources-null",
        "fit-strategy-null",
        "fit-ignored-resources-null",
        "fit-ignored-groups-null",
        "fit-weight-null",
        "balanced-resources-null",
        "ipa-weight-null",
        "pts-null",
        "preemption-null",
    ],
)
def test_null_is_unset(plugin: str, args: dict, read: Any, expected: Any) -> None:
    fw = framework_for(plugin, args=args)
    assert read(fw.profile.plugin_args[plugin]) == expected


FIT_WEIGHT_101 = {
    "scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}
}


@pytest.mark.parametrize(
    ("plugin", "args", "path", "error_type", "message"),
    [
        (
            "NodeResourcesFit",
            FIT_WEIGHT_101,
            "scoringStrategy.resources[0].weight",
            ErrorType.INVALID,
            "Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "Fastest"}},
            "scoringStrategy.type",
            ErrorType.NOT_SUPPORTED,
            'Unsupported value: "Fastest": supported values: "LeastAllocated", '
            '"MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            "NodeResourcesFit",
            {"ignoredResources": "example.com/foo"},
            "ignoredResources",
            ErrorType.TYPE_INVALID,
            'Invalid value: "example.com/foo": must be a list',
        ),
        (
            "NodeResourcesBalancedAllocation",
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            "resources[1].name",
            ErrorType.DUPLICATE,
            'Duplicate value: "cpu"',
        ),
        (
            "NodeResourcesBalancedAllocation",
            {"resources": [{"weight": 2}]},
            "resources[0].name",
            ErrorType.REQUIRED,
            "Required value",
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeight": "heavy"},
            "hardPodAffinityWeight",
            ErrorType.TYPE_INVALID,
            'Invalid value: "heavy": must be an integer',
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeigth": 1},
            "hardPodAffinityWeigth",
            ErrorType.FORBIDDEN,
            'unknown field "hardPodAffinityWeigth" (did you mean "hardPodAffinityWeight"?)',
        ),
    ],
    ids=[
        "range",
        "unsupported",
        "not-a-list",
        "duplicate",
        "required",
        "not-an-integer",
        "unknown-key",
    ],
)
def test_args_errors_from_python_and_config_agree(
    plugin: str, args: dict, path: str, error_type: ErrorType, message: str
) -> None:
    with pytest.raises(PluginArgsError) as from_python:
        framework_for(plugin, args=args)
    err = from_python.value
    assert (err.plugin, err.path, err.type, err.detail) == (plugin, path, error_type, message)
    assert str(err) == f"invalid args for plugin {plugin!r}: {path}: {message}"

    config = {**API, "profiles": [{"pluginConfig": [{"name": plugin, "args": args}]}]}
    with pytest.raises(UserInputError) as from_config:
        profile_framework(config)
    cfg = from_config.value
    assert (cfg.path, cfg.type, cfg.detail) == (
        f"profiles[0].pluginConfig[0].args.{path}",
        error_type,
        message,
    )


class _Bounded(PluginArgs):
    level: int = Field(default=1, ge=0, le=10)
    name: str = Field(default="x", min_length=1, max_length=3)
    tags: tuple[str, ...] = Field(default=(), max_length=2)
    on: bool = False


@pytest.mark.parametrize(
    ("data", "error_type", "message"),
    [
        ({"level": 11}, ErrorType.INVALID, "Invalid value: 11: must be less than or equal to 10"),
        ({"level": -1}, ErrorType.INVALID, "Invalid value: -1: must be greater than or equal to 0"),
        ({"level": 1.5}, ErrorType.TYPE_INVALID, "Invalid value: 1.5: must be an integer"),
        ({"name": ""}, ErrorType.REQUIRED, "Required value"),
        ({"name": "long"}, ErrorType.TOO_LONG, "Too long: may not be more than 3 bytes"),
        (
            {"tags": ["a", "b", "c"]},
            ErrorType.TOO_MANY,
            "Too many: 3: must have at most 2 items",
        ),
        ({"on": "maybe"}, ErrorType.TYPE_INVALID, 'Invalid value: "maybe": must be a boolean'),
        ({"name": {"a": 1}}, ErrorType.TYPE_INVALID, 'Invalid value: {"a": 1}: must be a string'),
    ],
    ids=["le", "ge", "float", "empty", "too-long", "too-many", "bool", "object"],
)
def test_pydantic_messages_in_kubernetes_wording(
    data: dict, error_type: ErrorType, message: str
) -> None:
    class Bounded:
        name = "Bounded"
        Args = _Bounded

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        @hookimpl
        def filter(self) -> None:
            return None

    with pytest.raises(PluginArgsError) as excinfo:
        framework_for(Bounded, args=data)
    assert (excinfo.value.type, excinfo.value.detail) == (error_type, message)
    assert "Input should" not in str(excinfo.value)
