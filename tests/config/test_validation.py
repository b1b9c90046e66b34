"""Validation: upstream's rules and messages, each problem at its field path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kubesched.config import load_config
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry

TWO_PROFILES = """\
profiles:
- schedulerName: a
- schedulerName: b
"""

CASES = [
    (
        "global percentage 101",
        "percentageOfNodesToScore: 101\n",
        [("percentageOfNodesToScore", "Invalid value: 101: not in valid range [0-100]")],
    ),
    (
        "profile percentage -1",
        "profiles:\n- percentageOfNodesToScore: -1\n",
        [("profiles[0].percentageOfNodesToScore", "Invalid value: -1: not in valid range [0-100]")],
    ),
    (
        "parallelism 0",
        "parallelism: 0\n",
        [("parallelism", "Invalid value: 0: should be an integer value greater than zero")],
    ),
    (
        "initial backoff 0",
        "podInitialBackoffSeconds: 0\n",
        [
            ("podInitialBackoffSeconds", "Invalid value: 0: must be greater than 0"),
        ],
    ),
    (
        "max backoff below initial",
        "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
        [
            (
                "podMaxBackoffSeconds",
                "Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
            )
        ],
    ),
    (
        "duplicate schedulerName",
        "profiles:\n- schedulerName: a\n- schedulerName: b\n- schedulerName: a\n",
        [
            (
                "profiles[2].schedulerName",
                'Duplicate value: "a" (also profiles[0].schedulerName)',
            )
        ],
    ),
    (
        "schedulerName required with several profiles",
        "profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 10\n",
        [("profiles[1].schedulerName", "Required value")],
    ),
    (
        "queueSort differs across profiles",
        TWO_PROFILES
        + "  plugins:\n    queueSort:\n      enabled:\n      - name: CustomQueueSort\n",
        [("profiles[1].plugins.queueSort", "must be the same for all profiles")],
    ),
    (
        "duplicate pluginConfig",
        """\
profiles:
- pluginConfig:
  - name: NodeAffinity
  - name: NodeAffinity
""",
        [("profiles[0].pluginConfig[1]", 'Duplicate value: "NodeAffinity"')],
    ),
    (
        "bad args via the plugin's Args model",
        """\
profiles:
- schedulerName: a
- schedulerName: b
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: Fastest
""",
        [
            (
                "profiles[1].pluginConfig[0].args.scoringStrategy.type",
                'Unsupported value: "Fastest": supported values: "LeastAllocated", '
                '"MostAllocated", "RequestedToCapacityRatio"',
            )
        ],
    ),
    (
        "unknown args key",
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n"
        "      hardPodAffinityWeigth: 3\n",
        [
            (
                "profiles[0].pluginConfig[0].args.hardPodAffinityWeigth",
                'unknown field "hardPodAffinityWeigth" (did you mean "hardPodAffinityWeight"?)',
            )
        ],
    ),
    (
        "args for a plugin without Args",
        "profiles:\n- pluginConfig:\n  - name: ImageLocality\n    args:\n      foo: 1\n",
        [("profiles[0].pluginConfig[0].args", 'plugin "ImageLocality" takes no args (got foo)')],
    ),
    (
        "typo profiles[0].plugin",
        "profiles:\n- plugin:\n    filter: {}\n",
        [("profiles[0].plugin", 'unknown field "plugin" (did you mean "plugins"?)')],
    ),
    (
        "removed volume limits plugin",
        "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: EBSLimits\n",
        [
            (
                "profiles[0].plugins.filter.enabled[0]",
                'Invalid value: "EBSLimits": was invalid in version '
                '"kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version '
                '"kubescheduler.config.k8s.io/v1")',
            )
        ],
    ),
    (
        "two binding extenders",
        "extenders:\n- urlPrefix: http://x\n  bindVerb: b\n- urlPrefix: http://y\n  bindVerb: b\n",
        [
            (
                "extenders",
                'Invalid value: "found 2 extenders implementing bind": only one extender can '
                "implement bind",
            )
        ],
    ),
    (
        "negative burst",
        "clientConnection:\n  burst: -1\n",
        [("clientConnection.burst", "Invalid value: -1: must be non-negative")],
    ),
    (
        "lease duration not above renew deadline",
        "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n",
        [
            (
                "leaderElection.leaseDuration",
                'Invalid value: "10s": must be greater than renewDeadline (10s)',
            )
        ],
    ),
    (
        "renew deadline not above retry period x 1.2",
        "leaderElection:\n  renewDeadline: 2400ms\n",
        [
            (
                "leaderElection.renewDeadline",
                'Invalid value: "2.4s": must be greater than retryPeriod*JitterFactor (2s*1.2)',
            )
        ],
    ),
    (
        "zero retry period",
        "leaderElection:\n  retryPeriod: 0s\n",
        [("leaderElection.retryPeriod", 'Invalid value: "0s": must be greater than zero')],
    ),
    (
        "endpoints lock",
        "leaderElection:\n  resourceLock: endpoints\n",
        [
            (
                "leaderElection.resourceLock",
                'Invalid value: "endpoints": resourceLock value must be "leases"',
            )
        ],
    ),
    (
        "empty lock name",
        "leaderElection:\n  resourceName: ''\n",
        [("leaderElection.resourceName", "Required value")],
    ),
    (
        "leader election rules skipped when not electing",
        "leaderElection:\n  leaderElect: false\n  leaseDuration: 1s\n  resourceLock: endpoints\n",
        [],
    ),
    (
        "bare number duration",
        "leaderElection:\n  leaseDuration: 15\n",
        [
            (
                "leaderElection.leaseDuration",
                'invalid duration 15: must be a string with a unit, such as "15s", "1m30s" or '
                '"500ms"',
            )
        ],
    ),
    (
        "bad duration string",
        "leaderElection:\n  retryPeriod: 2 seconds\n",
        [
            (
                "leaderElection.retryPeriod",
                'invalid duration "2 seconds": use a number with a unit (ns, us, ms, s, m, h), '
                'such as "15s", "1m30s" or "500ms"',
            )
        ],
    ),
    (
        "pluginConfig for a plugin that is not installed",
        "profiles:\n- pluginConfig:\n  - name: NodeResourceFit\n",
        [
            (
                "profiles[0].pluginConfig[0].name",
                'plugin "NodeResourceFit" is not installed (did you mean "NodeResourcesFit"?); '
                "installed plugins: CustomBinder, CustomFilter, CustomFilterScore, "
                "CustomQueueSort, CustomScore, DefaultBinder, DefaultPreemption, "
                "DynamicResources, ImageLocality, "
                "InterPodAffinity, NeedsArgs, NodeAffinity, NodeDeclaredFeatures, NodeName, "
                "NodePorts, "
                "NodeResourcesBalancedAllocation, NodeResourcesFit, NodeUnschedulable, "
                "NodeVolumeLimits, PodTopologySpread, PrioritySort, SchedulingGates, "
                "TaintToleration, VolumeBinding, VolumeRestrictions, VolumeZone",
            )
        ],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation(
    registry: PluginRegistry,
    write_config: Callable[..., Path],
    body: str,
    expected: list[tuple[str, str]],
) -> None:
    path = write_config(body)
    if not expected:
        load_config(path, registry)
        return
    with pytest.raises(UserInputError) as excinfo:
        load_config(path, registry)
    err = excinfo.value
    assert err.source == str(path)
    assert err.obj == "KubeSchedulerConfiguration"
    assert [(p.path, p.message) for p in err.problems] == expected


def test_all_problems_reported_at_once(
    registry: PluginRegistry, write_config: Callable[..., Path]
) -> None:
    path = write_config("parallelism: -1\npercentageOfNodesToScore: 200\n")
    with pytest.raises(UserInputError) as excinfo:
        load_config(path, registry)
    assert [p.path for p in excinfo.value.problems] == ["parallelism", "percentageOfNodesToScore"]
    text = str(excinfo.value)
    assert text.startswith(f"{path}: KubeSchedulerConfiguration: invalid configuration:\n")
    assert "  - percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]" in text


def test_plugin_config_of_installed_but_disabled_plugin_is_validated(
    registry: PluginRegistry, write_config: Callable[..., Path]
) -> None:
    path = write_config(
        """\
profiles:
- plugins:
    multiPoint:
      disabled:
      - name: InterPodAffinity
  pluginConfig:
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 1000
"""
    )
    with pytest.raises(UserInputError) as excinfo:
        load_config(path, registry)
    assert [(p.path, p.message) for p in excinfo.value.problems] == [
        (
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
            "Invalid value: 1000: must be less than or equal to 100",
        )
    ]
