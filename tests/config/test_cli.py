"""``kubesched config``: validate, defaults, effective; exit codes and no tracebacks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import kubesched.cli.config_cmd as config_cmd
from kubesched.cli.main import main
from kubesched.framework.registry import PluginRegistry

from .toy_plugins import toy_registry


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> PluginRegistry:
    """Make the CLI see the toy plugins as the installed ones."""
    registry = toy_registry()
    monkeypatch.setattr(config_cmd, "_registry", lambda: registry)
    return registry


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch) -> PluginRegistry:
    registry = PluginRegistry()
    monkeypatch.setattr(config_cmd, "_registry", lambda: registry)
    return registry


def test_validate_ok(installed, write_config: Callable[..., Path], capsys) -> None:
    path = write_config("profiles:\n- schedulerName: a\n- schedulerName: b\n")
    assert main(["config", "validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: valid (2 profiles)\n"


CLI_ERRORS = [
    ("range", "percentageOfNodesToScore: 101\n", "not in valid range [0-100]"),
    (
        "does not extend",
        "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n",
        'plugin "ImageLocality" does not extend Filter plugin',
    ),
    ("yaml", "profiles: [\n", "invalid YAML at line"),
]


@pytest.mark.parametrize(
    ("body", "message"), [c[1:] for c in CLI_ERRORS], ids=[c[0] for c in CLI_ERRORS]
)
def test_validate_errors(
    installed, write_config: Callable[..., Path], capsys, body: str, message: str
) -> None:
    path = write_config(body)
    assert main(["config", "validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: {path}: ")
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_validate_missing_file(installed, capsys) -> None:
    assert main(["config", "validate", "/nonexistent/kubesched.yaml"]) == 1
    assert capsys.readouterr().err == "error: /nonexistent/kubesched.yaml: no such file\n"


def test_validate_without_plugins_says_so(
    nothing_installed, write_config: Callable[..., Path], capsys
) -> None:
    assert main(["config", "validate", str(write_config(""))]) == 1
    assert "installed plugins: none" in capsys.readouterr().err


def test_defaults_without_plugins(nothing_installed, capsys) -> None:
    assert main(["config", "defaults"]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    assert data["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert data["leaderElection"]["leaseDuration"] == "15s"
    (profile,) = data["profiles"]
    assert profile["plugins"]["multiPoint"]["enabled"][4] == {
        "name": "TaintToleration",
        "weight": 3,
    }
    assert "pluginConfig" not in profile or profile["pluginConfig"] == []


def test_defaults_with_plugins_include_args(installed, capsys, tmp_path: Path) -> None:
    assert main(["config", "defaults"]) == 0
    out = capsys.readouterr().out
    data = yaml.safe_load(out)
    names = [pc["name"] for pc in data["profiles"][0]["pluginConfig"]]
    assert "NodeResourcesFit" in names
    # what `defaults` prints validates
    path = tmp_path / "defaults.yaml"
    path.write_text(out)
    assert main(["config", "validate", str(path)]) == 0


def test_effective_text(installed, capsys) -> None:
    assert main(["config", "effective"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('Profile "default-scheduler" (percentageOfNodesToScore: adaptive)\n')
    lines = out.splitlines()
    score = next(line for line in lines if line.strip().startswith("Score"))
    assert score.split() == ["Score", "TaintToleration", "3"]
    assert "    NodeResourcesFit:" in lines
    assert "Traceback" not in out


@pytest.mark.parametrize("fmt", ["yaml", "json"], ids=["yaml", "json"])
def test_effective_structured(installed, write_config, capsys, fmt: str) -> None:
    path = write_config(
        "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: 40\n- schedulerName: b\n"
    )
    assert main(["config", "effective", str(path), "--output", fmt]) == 0
    out = capsys.readouterr().out
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert [p["schedulerName"] for p in data["profiles"]] == ["a", "b"]
    assert data["profiles"][0]["percentageOfNodesToScore"] == 40
    assert data["profiles"][1]["plugins"]["Score"][0] == {"name": "TaintToleration", "weight": 3}
    assert data["profiles"][1]["plugins"]["Bind"] == [{"name": "DefaultBinder"}]
    assert data["profiles"][1]["pluginArgs"]["ImageLocality"] is None


def test_effective_without_plugins(nothing_installed, capsys) -> None:
    assert main(["config", "effective"]) == 1
    err = capsys.readouterr().err
    assert err.startswith('error: <defaults>: profiles[0]: invalid profile "default-scheduler"')
    assert "installed plugins: none" in err


NDF_OFF = (
    "NodeDeclaredFeatures=false,ExtendWebSocketsToKubelet=false,"
    "InPlacePodLevelResourcesVerticalScaling=false,InPlacePodVerticalScalingInitContainers=false,"
    "RestartAllContainersOnContainerExits=false"
)


@pytest.mark.parametrize(
    ("gates", "listed"), [((), True), (("--feature-gates", NDF_OFF), False)], ids=["default", "off"]
)
def test_defaults_follow_the_feature_gates(installed, capsys, gates, listed) -> None:
    assert main(["config", "defaults", *gates]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    enabled = [p["name"] for p in data["profiles"][0]["plugins"]["multiPoint"]["enabled"]]
    assert ("NodeDeclaredFeatures" in enabled) is listed


QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"


@pytest.mark.parametrize(
    "command",
    [
        ["config", "defaults"],
        ["config", "effective"],
        ["simulate", str(QUICKSTART)],
        ["capacity", "fit", str(QUICKSTART)],
        ["bench", "basic"],
        ["run", "--kubeconfig", "KUBECONFIG"],
        ["compare", str(QUICKSTART), "--kubeconfig", "KUBECONFIG"],
    ],
    ids=lambda c: " ".join(c[:2]) if c[0] == "config" else c[0],
)
def test_every_command_refuses_a_bad_gate_as_kube_scheduler(command, capsys, tmp_path) -> None:
    # A kubeconfig that is never read: the gates are refused before any connection.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    command = [str(kubeconfig) if a == "KUBECONFIG" else a for a in command]
    assert main([*command, "--feature-gates", "SchedulerQueueingHints=false"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "error: --feature-gates: cannot set feature gate SchedulerQueueingHints to false, "
        "feature is locked to true"
    )
    assert "Traceback" not in err
