"""Plugin validation and entry-point discovery, including a real third-party distribution."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched import PluginArgs, Status, __sdk_version__, hookimpl
from kubesched.cli import plugins_cmd
from kubesched.cli.main import main
from kubesched.framework.registry import (
    PluginRegistry,
    PluginValidationFailure,
    validate_plugin_class,
)
from kubesched.framework.sdk import sdk_incompatibility

FIXTURE = Path(__file__).parent.parent / "fixtures" / "thirdparty_plugin"


class GoodArgs(PluginArgs):
    threshold: int = 3


class Good:
    name = "Good"
    Args = GoodArgs

    def __init__(self, args, handle):
        self.args = args

    @hookimpl
    def pre_filter(self, state, pod):
        return None

    @hookimpl
    def filter(self, pod, node_info):
        return None

    @hookimpl
    def score(self, node_info):
        return 1

    @hookimpl
    def normalize_score(self, scores):
        return None


def _cls(name, body):
    return type(name, (), body)


def test_valid_plugin_is_described():
    entry = validate_plugin_class(Good)
    assert entry.name == "Good"
    assert entry.args_model is GoodArgs
    assert entry.extension_points == ("PreFilter", "Filter", "Score")
    assert set(entry.hooks) == {"pre_filter", "filter", "score", "normalize_score"}


@pytest.mark.parametrize(
    ("plugin_class", "message"),
    [
        ("not a class", "is not a class"),
        (_cls("NoName", {"__init__": lambda self, a, h: None}), "has no 'name'"),
        (
            _cls("BadArgs", {"name": "BadArgs", "Args": dict, "__init__": lambda self, a, h: None}),
            "'Args' must be a pydantic model",
        ),
        (
            _cls(
                "BadInit",
                {
                    "name": "BadInit",
                    "__init__": lambda self: None,
                    "filter": hookimpl(lambda self, pod: None),
                },
            ),
            r"constructor must accept \(args, handle\)",
        ),
        (
            _cls("NoHooks", {"name": "NoHooks", "__init__": lambda self, a, h: None}),
            "implements no extension point",
        ),
        (
            _cls(
                "Typo",
                {
                    "name": "Typo",
                    "__init__": lambda self, a, h: None,
                    "filterr": hookimpl(lambda self, pod: None),
                },
            ),
            "unknown hook 'filterr'",
        ),
        (
            _cls(
                "BadParam",
                {
                    "name": "BadParam",
                    "__init__": lambda self, a, h: None,
                    "filter": hookimpl(lambda self, nodeinfo: None),
                },
            ),
            "nodeinfo",
        ),
    ],
    ids=["not-class", "no-name", "bad-args", "bad-init", "no-hooks", "unknown-hook", "bad-param"],
)
def test_invalid_plugins_are_refused_with_the_reason(plugin_class, message):
    with pytest.raises(PluginValidationFailure, match=message):
        validate_plugin_class(plugin_class)


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (hookimpl(lambda self, nodeinfo: None), "nodeinfo"),
        (hookimpl(lambda self, filterr: None), "filterr"),
    ],
    ids=["bad-param", "another-bad-param"],
)
def test_a_class_whose_hook_is_replaced_is_checked_again(monkeypatch, hook, message):
    # The check of a class's hooks is cached: replacing a hook must not reuse its verdict.
    plugin = _cls(
        "Replaced",
        {"name": "Replaced", "__init__": lambda self, a, h: None, "filter": Good.filter},
    )
    assert validate_plugin_class(plugin).hooks == ("filter",)
    monkeypatch.setattr(plugin, "filter", hook)
    with pytest.raises(PluginValidationFailure, match=message):
        validate_plugin_class(plugin)
    monkeypatch.undo()
    assert validate_plugin_class(plugin).hooks == ("filter",)


def test_entry_point_name_must_match_class_name():
    with pytest.raises(PluginValidationFailure, match="entry point is named 'Other'"):
        validate_plugin_class(Good, "Other")


def test_registry_refuses_a_second_plugin_of_the_same_name():
    registry = PluginRegistry()
    registry.add_class(Good)
    registry.add_class(Good)
    assert registry.names() == ["Good"]
    assert "already registered" in registry.errors[0].reason


def test_discovered_registry_contains_no_load_errors_for_our_own_distribution():
    registry = PluginRegistry.discover()
    ours = [e for e in registry.errors if e.distribution == "kubesched"]
    assert ours == []


@pytest.mark.slow
def test_third_party_distribution_is_discovered_like_a_builtin(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(FIXTURE),
        ],
        check=True,
        capture_output=True,
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from kubesched.cli.main import main; sys.exit(main(['plugins', '-o', 'json']))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True)
    data = json.loads(proc.stdout)
    # A broken plugin in the distribution makes the command fail, but not the others.
    assert proc.returncode == 1
    by_name = {p["name"]: p for p in data["plugins"]}
    gate = by_name["NodeLabelGate"]
    assert gate["distribution"] == "kubesched-example-plugin"
    assert gate["version"] == "1.2.3"
    assert gate["extensionPoints"] == ["Filter"]
    assert gate["args"] == "NodeLabelGateArgs"
    errors = {e["name"]: e for e in data["errors"]}
    assert set(errors) == {"BrokenImport", "BadHook"}
    assert errors["BrokenImport"]["distribution"] == "kubesched-example-plugin"
    assert (
        "cannot import kubesched_example_plugin.missing:Plugin" in errors["BrokenImport"]["reason"]
    )
    assert "unknown hook 'filterr'" in errors["BadHook"]["reason"]


def test_plugin_status_helpers_are_importable_from_the_top_level():
    assert Status.unresolvable("x").code.display == "UnschedulableAndUnresolvable"


@pytest.mark.parametrize(
    ("declared", "current", "problem"),
    [
        (None, "1.0", None),
        ("1.0", "1.0", None),
        ("1.0", "1.3", None),
        ("1.2", "1.3", None),
        ("1.4", "1.3", "built for plugin SDK 1.4, but this kubesched provides SDK 1.3"),
        ("2.0", "1.3", "built for plugin SDK 2.0, but this kubesched provides SDK 1.3"),
        ("0.9", "1.3", "built for plugin SDK 0.9, but this kubesched provides SDK 1.3"),
        ("1", "1.3", "sdk_version '1' is not MAJOR.MINOR (e.g. '1.3')"),
        (1.0, "1.3", "sdk_version 1.0 is not MAJOR.MINOR (e.g. '1.3')"),
    ],
    ids=[
        "undeclared",
        "same",
        "older-minor",
        "older-minor-2",
        "newer-minor",
        "newer-major",
        "older-major",
        "malformed",
        "not-a-string",
    ],
)
def test_sdk_compatibility(declared, current, problem):
    got = sdk_incompatibility(declared, current)
    assert (got if got is None else got.split(" (compatible")[0]) == problem


def test_plugins_command_warns_about_a_plugin_built_for_an_incompatible_sdk(monkeypatch, capsys):
    future = type("Future", (Good,), {"name": "Future", "sdk_version": "9.0"})
    current = type("Current", (Good,), {"name": "Current", "sdk_version": __sdk_version__})
    registry = PluginRegistry()
    for cls in (future, current):
        registry.add_class(cls)
    monkeypatch.setattr(plugins_cmd, "default_registry", lambda: registry)
    assert main(["plugins", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == (
        f"warning: plugin 'Future': built for plugin SDK 9.0, but this kubesched provides "
        f"SDK {__sdk_version__} (compatible: 1.0 to {__sdk_version__})\n"
    )
    by_name = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert by_name["Current"]["sdkWarning"] is None
    assert by_name["Future"]["sdkVersion"] == "9.0"


def test_our_own_plugins_declare_the_current_sdk():
    registry = PluginRegistry.discover()
    ours = [e for e in registry if e.distribution == "kubesched" and e.sdk_version is not None]
    assert ours, "the contrib plugins declare their SDK version"
    assert all(e.sdk_warning is None for e in registry if e.distribution == "kubesched")
