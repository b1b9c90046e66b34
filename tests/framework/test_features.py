"""Feature gates: the registry against kube-scheduler v1.36's, and ``--feature-gates``'s
syntax, checks and words, against the real binary's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from kubesched.config import default_configuration, effective_configuration, load_config
from kubesched.errors import UserInputError
from kubesched.features import KNOWN_FEATURES, FeatureGates, Stage, parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.notices import collecting_notices
from kubesched.testing import make_framework
from kubesched.testing.envtest import assets_dir
from kubesched_builtin.nodename import NodeName

RECORDING = Path(__file__).parents[1] / "fixtures" / "featuregates" / "kube-scheduler-gates.json"
NDF_OFF = (
    "NodeDeclaredFeatures=false,ExtendWebSocketsToKubelet=false,"
    "InPlacePodLevelResourcesVerticalScaling=false,InPlacePodVerticalScalingInitContainers=false,"
    "RestartAllContainersOnContainerExits=false"
)


def test_registry_is_the_recording() -> None:
    recorded = json.loads(RECORDING.read_text())
    needs = recorded["dependencies"]
    expected = {
        g["name"]: (
            Stage(g["stage"]),
            g["default"],
            g["lockToDefault"],
            tuple(needs.get(g["name"], ())),
        )
        for g in recorded["gates"]
    }
    got = {n: (s.stage, s.default, s.locked, s.needs) for n, s in KNOWN_FEATURES.items()}
    assert got == expected


@pytest.mark.parametrize(
    ("gates", "name", "expected"),
    [
        ([], "NodeDeclaredFeatures", True),
        ([], "TaintTolerationComparisonOperators", False),
        ([], "SchedulerQueueingHints", True),
        (["TaintTolerationComparisonOperators=true"], "TaintTolerationComparisonOperators", True),
        (
            ["kube:TaintTolerationComparisonOperators=True"],
            "TaintTolerationComparisonOperators",
            True,
        ),
        ([" TaintTolerationComparisonOperators = t "], "TaintTolerationComparisonOperators", True),
        (
            [
                "PodLevelResources=1",
                "PodLevelResources=0,InPlacePodLevelResourcesVerticalScaling=F",
            ],
            "PodLevelResources",
            False,
        ),
        (["AllAlpha=true"], "TaintTolerationComparisonOperators", True),
        (
            ["AllAlpha=true,TaintTolerationComparisonOperators=false"],
            "TaintTolerationComparisonOperators",
            False,
        ),
        (["AllAlpha=true"], "SchedulerAsyncAPICalls", False),
        (["AllBeta=true"], "SchedulerAsyncAPICalls", True),
        ([NDF_OFF], "NodeDeclaredFeatures", False),
        (["SchedulerQueueingHints=true"], "SchedulerQueueingHints", True),
        (["A=true,,"], "NodeDeclaredFeatures", True),
    ],
    ids=[
        "beta-default-on",
        "alpha-default-off",
        "ga-default-on",
        "set-on",
        "kube-component-go-bool",
        "spaces",
        "repeated-option-last-wins",
        "all-alpha",
        "all-alpha-but-one",
        "all-alpha-leaves-beta",
        "all-beta",
        "off-with-its-dependents",
        "ga-to-its-default",
        "empty-items-and-unknown-gate",
    ],
)
def test_enabled(gates, name, expected) -> None:
    with collecting_notices():
        assert parse_feature_gates(gates).enabled(name) is expected


REFUSALS = [
    ("unknown-component", "wardle:A=true", "component not registered: wardle"),
    ("missing-value", "NodeDeclaredFeatures", "missing bool value for NodeDeclaredFeatures"),
    (
        "not-a-bool",
        "NodeDeclaredFeatures=maybe",
        'invalid value of NodeDeclaredFeatures=maybe, err: strconv.ParseBool: parsing "maybe": '
        "invalid syntax",
    ),
    (
        "unknown-gate-bad-value",
        "Nope=yes",
        'invalid value of Nope=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
    ),
    (
        "locked-ga-gate",
        "SchedulerQueueingHints=false",
        "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
    ),
    (
        "locked-ga-dra-gate",
        "DRAAdminAccess=false",
        "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
    ),
    (
        "dependency-off",
        "PodLevelResources=false",
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are "
        "disabled: [PodLevelResources]",
    ),
    (
        "two-dependencies-off",
        NDF_OFF.replace("InPlacePodLevelResourcesVerticalScaling=false", "PodLevelResources=false"),
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are "
        "disabled: [NodeDeclaredFeatures PodLevelResources]",
    ),
]


@pytest.mark.parametrize(
    ("value", "message"), [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_refusals(value, message) -> None:
    with pytest.raises(UserInputError) as excinfo:
        parse_feature_gates([value])
    assert excinfo.value.message == message
    assert str(excinfo.value) == f"--feature-gates: {message}"


def test_several_dependents_off_are_one_error_as_go_aggregates_them() -> None:
    with pytest.raises(UserInputError) as excinfo:
        parse_feature_gates(["NodeDeclaredFeatures=false"])
    message = excinfo.value.message
    assert message.startswith("[") and message.endswith("]")
    dependents = [n for n, s in KNOWN_FEATURES.items() if "NodeDeclaredFeatures" in s.needs]
    enabled_dependents = [n for n in dependents if KNOWN_FEATURES[n].default]
    assert message.count("depends on features that are disabled") == len(enabled_dependents) == 4


@pytest.mark.parametrize(
    ("value", "notice"),
    [
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("kube:=true", "unrecognized feature gate: "),
        (
            "SchedulerQueueingHints=true",
            "setting GA feature gate SchedulerQueueingHints=true. It will be removed in a future "
            "release.",
        ),
    ],
    ids=["unknown-gate", "empty-name", "ga-gate"],
)
def test_passed_over_with_a_notice(value, notice) -> None:
    with collecting_notices() as notices:
        gates = parse_feature_gates([value])
    assert [str(n) for n in notices] == [f"--feature-gates: {notice}"]
    assert gates.changed() == {}


def test_a_ga_gate_not_locked_may_be_turned_off() -> None:
    # kube-scheduler and kube-apiserver v1.36.2 both warn and start with it off.
    with collecting_notices() as notices:
        gates = parse_feature_gates(["DRAPrioritizedList=false"])
    assert [n.message for n in notices] == [
        "setting GA feature gate DRAPrioritizedList=false. It will be removed in a future release."
    ]
    assert gates.changed() == {"DRAPrioritizedList": False}


def test_unknown_name_asked_by_a_plugin_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="NodeDeclaredFeature"):
        FeatureGates().enabled("NodeDeclaredFeature")


def test_to_option_round_trips() -> None:
    gates = parse_feature_gates([NDF_OFF, "TaintTolerationComparisonOperators=true"])
    again = parse_feature_gates([gates.to_option()])
    assert again.changed() == gates.changed()
    assert gates.changed()["TaintTolerationComparisonOperators"] is True
    assert FeatureGates().to_option() == ""


@pytest.mark.parametrize(
    ("gates", "has_plugin"), [("", True), (NDF_OFF, False)], ids=["default", "gate-off"]
)
def test_default_profile_follows_the_gate(gates, has_plugin) -> None:
    registry = default_registry()
    parsed = parse_feature_gates([gates])
    config = default_configuration(registry, parsed)
    multi = [p.name for p in config.profiles[0].plugins.multi_point.enabled]
    assert ("NodeDeclaredFeatures" in multi) is has_plugin
    assert multi[-1] == ("NodeDeclaredFeatures" if has_plugin else "DefaultBinder")
    effective = effective_configuration(config, registry, gates=parsed)
    assert ("NodeDeclaredFeatures" in effective.profiles[0].plugin_names("Filter")) is has_plugin
    assert effective.feature_gates is parsed


def test_a_profile_may_still_enable_the_plugin_with_its_gate_off(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {"plugins": {"multiPoint": {"enabled": [{"name": "NodeDeclaredFeatures"}]}}}
                ],
            }
        )
    )
    registry = default_registry()
    gates = parse_feature_gates([NDF_OFF])
    effective = effective_configuration(load_config(path, registry, gates), registry, gates=gates)
    assert "NodeDeclaredFeatures" in effective.profiles[0].plugin_names("Filter")


def test_the_handle_answers_from_the_gates() -> None:
    on = make_framework(NodeName, feature_gates=parse_feature_gates(["AllAlpha=true"]))
    assert on.feature_enabled("TaintTolerationComparisonOperators") is True
    assert make_framework(NodeName).feature_enabled("TaintTolerationComparisonOperators") is False


@pytest.mark.envtest
@pytest.mark.parametrize(
    ("value", "message"), [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_the_refusals_are_what_kube_scheduler_says(tmp_path: Path, value, message) -> None:
    assets = assets_dir()
    binary = assets / "kube-scheduler" if assets is not None else None
    if binary is None or not binary.is_file():
        pytest.skip("no kube-scheduler in KUBEBUILDER_ASSETS")
    done = subprocess.run(
        [str(binary), f"--feature-gates={value}", f"--kubeconfig={tmp_path / 'none'}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    # klog quotes the error as a Go string.
    assert f'err="{message}"' in done.stderr.replace('\\"', '"'), done.stderr
