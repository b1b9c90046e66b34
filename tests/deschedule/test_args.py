"""The strategies' args against the descheduler's args types, defaults and validation
messages (its ``Validate...Args`` functions and their tests)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from kubesched_builtin.descheduler import balance, defaultevictor, violations

LNU = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}

REFUSED: list[tuple[str, type[BaseModel], dict[str, Any], str]] = [
    (
        "lnu-evictable-namespaces-include",
        balance.UtilizationArgs,
        {**LNU, "evictableNamespaces": {"include": ["a"]}},
        "only Exclude namespaces can be set, inclusion is not supported",
    ),
    (
        "lnu-metrics-utilization",
        balance.UtilizationArgs,
        {**LNU, "metricsUtilization": {"source": "KubernetesMetrics"}},
        "metricsUtilization is not modelled",
    ),
    (
        "lnu-no-thresholds",
        balance.UtilizationArgs,
        {"thresholds": {}, "targetThresholds": {}},
        "thresholds config is not valid: no resource threshold is configured",
    ),
    (
        "lnu-threshold-out-of-range",
        balance.UtilizationArgs,
        {"thresholds": {"cpu": 120}, "targetThresholds": {"cpu": 130}},
        r"thresholds config is not valid: cpu threshold not in \[0, 100\] range",
    ),
    (
        "lnu-no-target-thresholds",
        balance.UtilizationArgs,
        {"thresholds": {"cpu": 20}},
        "targetThresholds config is not valid: no resource threshold is configured",
    ),
    (
        "hnu-no-thresholds",
        balance.HighArgs,
        {"thresholds": {}},
        "Value error, no resource threshold is configured",
    ),
    (
        "lnu-threshold-over-target",
        balance.UtilizationArgs,
        {"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}},
        "thresholds' cpu percentage is greater than targetThresholds'",
    ),
    (
        "lnu-different-resources",
        balance.UtilizationArgs,
        {"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 50}},
        "thresholds and targetThresholds configured different resources",
    ),
    (
        "hnu-evictable-namespaces-include",
        balance.HighArgs,
        {"thresholds": {"cpu": 20}, "evictableNamespaces": {"include": ["a"]}},
        "only Exclude namespaces can be set, inclusion is not supported",
    ),
    (
        "lifetime-unknown-state",
        violations.LifeTimeArgs,
        {"maxPodLifeTimeSeconds": 60, "states": ["Sleeping"]},
        "states must be one of",
    ),
    (
        "lifetime-no-max",
        violations.LifeTimeArgs,
        {"states": ["Running"]},
        "maxPodLifeTimeSeconds",
    ),
    (
        "affinity-unknown-type",
        violations.AffinityArgs,
        {"nodeAffinityType": ["requiredDuringScheduling"]},
        'invalid nodeAffinityType "requiredDuringScheduling"',
    ),
    (
        "hnu-unknown-eviction-mode",
        balance.HighArgs,
        {"thresholds": {"cpu": 20}, "evictionModes": ["Everything"]},
        "invalid eviction mode Everything",
    ),
    (
        "evictor-extra-protection-unknown",
        defaultevictor.Args,
        {"podProtections": {"extraEnabled": ["InvalidPolicy"]}},
        'invalid pod protection policy in ExtraEnabled: "InvalidPolicy". Valid options are: '
        r"\[PodsWithPVC PodsWithoutPDB PodsWithResourceClaims\]",
    ),
    (
        "evictor-default-protection-in-extra",
        defaultevictor.Args,
        {"podProtections": {"extraEnabled": ["DaemonSetPods"]}},
        'invalid pod protection policy in ExtraEnabled: "DaemonSetPods"',
    ),
    (
        "evictor-extra-protection-in-default-disabled",
        defaultevictor.Args,
        {"podProtections": {"defaultDisabled": ["PodsWithPVC"]}},
        'invalid pod protection policy in DefaultDisabled: "PodsWithPVC"',
    ),
    (
        "evictor-deprecated-field-with-protections",
        defaultevictor.Args,
        {"evictDaemonSetPods": True, "podProtections": {"extraEnabled": ["PodsWithPVC"]}},
        "cannot use Deprecated fields alongside PodProtections.ExtraEnabled or "
        "PodProtections.DefaultDisabled",
    ),
    (
        "failed-exit-code-not-a-number",
        violations.FailedArgs,
        {"exitCodes": ["one"]},
        "exitCodes",
    ),
    (
        "failed-misspelt-key",
        violations.FailedArgs,
        {"exitCode": [1]},
        "exitCode",
    ),
    (
        "failed-negative-lifetime",
        violations.FailedArgs,
        {"minPodLifetimeSeconds": -1},
        "minPodLifetimeSeconds",
    ),
    (
        "failed-include-and-exclude",
        violations.FailedArgs,
        {"namespaces": {"include": ["a"], "exclude": ["b"]}},
        "only one of Include/Exclude namespaces can be set",
    ),
]


@pytest.mark.parametrize(
    ("model", "args", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_refused(model: type[BaseModel], args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model.model_validate(args)


def test_lnu_deviation_defaults_missing_resources_to_zero() -> None:
    a = balance.UtilizationArgs.model_validate(
        {"thresholds": {"cpu": 10}, "targetThresholds": {"cpu": 10}, "useDeviationThresholds": True}
    )
    assert a.thresholds == {"cpu": 10, "memory": 0, "pods": 0}


def test_failed_defaults() -> None:
    a = violations.FailedArgs()
    assert (a.reasons, a.exit_codes, a.including_init_containers) == ([], [], False)
    assert (a.exclude_owner_kinds, a.min_pod_lifetime_seconds) == ([], None)
