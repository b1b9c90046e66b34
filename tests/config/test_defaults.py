"""Upstream's default plugins, the merge of a profile's plugin sets, and default args."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from kubesched.config import (
    DEFAULT_MULTI_POINT_PLUGINS,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugin,
    PluginSet,
    config_from_dict,
    config_to_dict,
    default_configuration,
    merge_plugin_set,
    set_defaults,
)
from kubesched.config.defaults import args_to_dict
from kubesched.config.types import PLUGIN_SET_FIELDS
from kubesched.features import FeatureGates, parse_feature_gates
from kubesched.framework.args import ArgsModel, PluginArgs
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.registry import PluginRegistry

# Upstream's getDefaultPlugins (pkg/scheduler/apis/config/v1/default_plugins.go, the
# version with SchedulingGates first), without EBSLimits, GCEPDLimits and AzureDiskLimits;
# NodeDeclaredFeatures, there while its gate is on (v1.36's default), then GangScheduling,
# TopologyPlacementGenerator and PodGroupPodsCount, there while their gates are on (alpha,
# off by default).
UPSTREAM_DEFAULTS = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),
    ("GangScheduling", None),
    ("TopologyPlacementGenerator", None),
    ("PodGroupPodsCount", 1),
]


def test_default_plugins_are_upstreams() -> None:
    assert [(p.name, p.weight) for p in DEFAULT_MULTI_POINT_PLUGINS] == UPSTREAM_DEFAULTS


def test_plugin_set_keys_cover_every_extension_point() -> None:
    assert set(PLUGIN_SET_FIELDS) == {"multiPoint"} | {ep.config_key for ep in EXTENSION_POINTS}


def _set(enabled=(), disabled=()) -> PluginSet:
    return PluginSet(
        enabled=tuple(p if isinstance(p, Plugin) else Plugin(name=p) for p in enabled),
        disabled=tuple(Plugin(name=n) for n in disabled),
    )


DEFAULT = _set(["A", Plugin(name="B", weight=2), "C"])

MERGE_CASES = [
    ("no change", _set(), [("A", None), ("B", 2), ("C", None)], []),
    ("disable one", _set(disabled=["B"]), [("A", None), ("C", None)], ["B"]),
    ("disable all", _set(disabled=["*"]), [], ["*"]),
    (
        "disable all then enable one",
        _set(["C"], disabled=["*"]),
        [("C", None)],
        ["*"],
    ),
    (
        "re-configure keeps position",
        _set([Plugin(name="B", weight=5)]),
        [("A", None), ("B", 5), ("C", None)],
        [],
    ),
    (
        "custom appended",
        _set(["X", "Y"]),
        [("A", None), ("B", 2), ("C", None), ("X", None), ("Y", None)],
        [],
    ),
    (
        "re-configure and custom",
        _set(["X", Plugin(name="A", weight=4)]),
        [("A", 4), ("B", 2), ("C", None), ("X", None)],
        [],
    ),
    (
        "disable and re-enable at the end",
        _set(["A"], disabled=["A"]),
        [("B", 2), ("C", None), ("A", None)],
        ["A"],
    ),
    (
        "duplicate custom kept for the framework to reject",
        _set(["X", "X"]),
        [("A", None), ("B", 2), ("C", None), ("X", None), ("X", None)],
        [],
    ),
]


@pytest.mark.parametrize(
    ("custom", "enabled", "disabled"),
    [c[1:] for c in MERGE_CASES],
    ids=[c[0] for c in MERGE_CASES],
)
def test_merge_plugin_set(custom: PluginSet, enabled: list, disabled: list) -> None:
    merged = merge_plugin_set(DEFAULT, custom)
    assert [(p.name, p.weight) for p in merged.enabled] == enabled
    assert [p.name for p in merged.disabled] == disabled


def test_defaults_single_profile_named(registry: PluginRegistry) -> None:
    config = set_defaults(KubeSchedulerConfiguration(), registry)
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    assert config.parallelism == 16
    assert config.pod_initial_backoff_seconds == 1
    assert config.pod_max_backoff_seconds == 10
    assert config.percentage_of_nodes_to_score is None
    assert config.enable_contention_profiling is True
    le = config.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True,
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == (
        "leases",
        "kube-scheduler",
        "kube-system",
    )


def test_several_profiles_are_not_named_by_default(registry: PluginRegistry) -> None:
    config = KubeSchedulerConfiguration(
        profiles=(KubeSchedulerProfile(), KubeSchedulerProfile(scheduler_name="b"))
    )
    assert [p.scheduler_name for p in set_defaults(config, registry).profiles] == [None, "b"]


def test_default_args_for_enabled_plugins_with_args(registry: PluginRegistry) -> None:
    profile = default_configuration(registry).profiles[0]
    # upstream appends them in plugin-name order
    assert [pc.name for pc in profile.plugin_config] == [
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
        "VolumeBinding",
    ]
    fit = profile.plugin_args("NodeResourcesFit")
    assert fit is not None
    assert fit["kind"] == "NodeResourcesFitArgs"
    assert fit["scoringStrategy"]["type"] == "LeastAllocated"


def test_user_args_are_completed_with_defaults(registry: PluginRegistry) -> None:
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "pluginConfig": [
                        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}}
                    ]
                }
            ],
        },
        registry,
    )
    profile = config.profiles[0]
    assert profile.plugin_config[0].name == "InterPodAffinity"
    assert profile.plugin_config[0].args == {
        "hardPodAffinityWeight": 5,
        "ignorePreferredTermsOfExistingPods": False,
    }
    assert sum(pc.name == "InterPodAffinity" for pc in profile.plugin_config) == 1


def test_defaults_without_plugins_installed() -> None:
    config = default_configuration(PluginRegistry())
    assert config.profiles[0].plugin_config == ()
    # The gated plugins are out at the gates' defaults (GangScheduling, the placement
    # plugins: alpha, off).
    assert [p.name for p in config.profiles[0].plugins.multi_point.enabled] == [
        name
        for name, _ in UPSTREAM_DEFAULTS
        if name not in ("GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount")
    ]


def test_defaults_round_trip(registry: PluginRegistry) -> None:
    config = default_configuration(registry)
    again = config_from_dict(config_to_dict(config), registry)
    assert again == config
    assert set_defaults(config, registry) == config


class _Inner(ArgsModel):
    """A nested model of ``_ToyArgs``."""

    note: str | None = None
    keys: tuple[str, ...] = ()


class _ToyArgs(PluginArgs):
    """Args with every kind of empty field ``args_to_dict`` decides on."""

    empty_by_default: tuple[int, ...] = ()
    full_by_default: tuple[int, ...] = (1,)
    optional: int | None = None
    flag: bool = False
    inner: _Inner = Field(default_factory=_Inner)
    gated: int = 5
    gated_null: int = 6
    null_when_gated_off = frozenset({"gated_null"})

    @classmethod
    def fields_gated_off(cls, gates: FeatureGates) -> dict[str, str]:
        return {} if gates.enabled("AllAlpha") else {"gated": "off", "gated_null": "off"}


BASE = {"fullByDefault": [1], "flag": False, "inner": {}, "gated": 5, "gatedNull": 6}
"""``_ToyArgs()`` printed with its gate on: a nested model is written even when empty,
as Go writes a struct."""

GATED_OFF = {**{k: v for k, v in BASE.items() if k != "gated"}, "gatedNull": None}
"""``_ToyArgs()`` printed with its gate off."""

ARGS_TO_DICT = [
    # (id, args as given, gates, printed)
    ("empty-by-default-left-out", {}, "AllAlpha=true", BASE),
    (
        "set-empty-where-the-default-is-not-kept",
        {"fullByDefault": [], "inner": {"note": "n"}},
        "AllAlpha=true",
        {**BASE, "fullByDefault": [], "inner": {"note": "n"}},
    ),
    ("gated-off-left-out-or-null", {}, "AllAlpha=false", GATED_OFF),
    ("no-gates-are-the-default-gates", {}, None, GATED_OFF),
    ("optional-set-is-written", {"optional": 3}, "AllAlpha=true", {**BASE, "optional": 3}),
]


@pytest.mark.parametrize(
    ("given", "gates", "printed"), [c[1:] for c in ARGS_TO_DICT], ids=[c[0] for c in ARGS_TO_DICT]
)
def test_args_are_printed_as_upstream_writes_them(
    given: dict[str, Any], gates: str | None, printed: dict[str, Any]
) -> None:
    feature_gates = None if gates is None else parse_feature_gates([gates])
    args = _ToyArgs.model_validate(given)
    assert args_to_dict(args, feature_gates) == printed
    # Printing what was printed gives it again (a null loads as an unset field).
    assert args_to_dict(_ToyArgs.model_validate(printed), feature_gates) == printed
