"""A plugin that raises: the pod's message names the plugin and the extension point in
upstream's words, the run goes on, and ``--debug`` logs the plugin's traceback."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched import hookimpl
from kubesched.cli import simulate_cmd
from kubesched.cli.main import main
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.framework.runtime import framework as runtime_framework

MESSAGE = "boom from my plugin"


def _raise(*_args: Any) -> Any:
    raise RuntimeError(MESSAGE)


def _plugin(name: str, hook: str, *, scores: bool = False) -> type:
    """A plugin class named ``name`` whose ``hook`` raises (a Score plugin scoring 0
    too with ``scores``, so that its NormalizeScore runs)."""

    def raising(self: Any, pod: Any) -> Any:
        return _raise()

    methods: dict[str, Any] = {
        "name": name,
        "__init__": lambda self, args, handle: None,
        hook: hookimpl(raising),
    }
    if scores:
        methods["score"] = hookimpl(lambda self, pod: 0)
    raising.__name__ = hook
    return type(name, (), methods)


POINTS = [
    # extension point, hook, the pod's message (upstream framework.go's wrapping)
    ("preFilter", "pre_filter", 'running PreFilter plugin "Boom": ' + MESSAGE),
    ("filter", "filter", 'running "Boom" filter plugin: ' + MESSAGE),
    ("preScore", "pre_score", 'running PreScore plugin "Boom": ' + MESSAGE),
    ("score", "score", 'running Score plugins: plugin "Boom" failed with: ' + MESSAGE),
    (
        "score",
        "normalize_score",
        'running Normalize on Score plugins: plugin "Boom" failed with: ' + MESSAGE,
    ),
    ("reserve", "reserve", 'running Reserve plugin "Boom": ' + MESSAGE),
    ("permit", "permit", 'running Permit plugin "Boom": ' + MESSAGE),
    ("preBind", "pre_bind", 'running PreBind plugin "Boom": ' + MESSAGE),
    ("bind", "bind", 'running Bind plugin "Boom": ' + MESSAGE),
]


def _inputs(tmp_path: Path, point: str) -> tuple[str, str]:
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
        for i in (1, 2)
    ]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    manifests = tmp_path / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all([*nodes, pod]))
    plugins: dict[str, Any] = {point: {"enabled": [{"name": "Boom"}]}}
    if point == "bind":
        # The first Bind plugin that does not skip binds: the default one must go.
        plugins[point]["disabled"] = [{"name": "DefaultBinder"}]
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}],
            }
        )
    )
    return str(manifests), str(config)


def _with(monkeypatch: pytest.MonkeyPatch, plugin: type) -> None:
    def registry() -> PluginRegistry:
        # A copy: the installed plugins' registry is shared by the whole process.
        reg = PluginRegistry(default_registry())
        reg.add_class(plugin)
        return reg

    monkeypatch.setattr(simulate_cmd, "_registry", registry)


@pytest.mark.parametrize(
    ("point", "hook", "expected"), POINTS, ids=[f"{p[0]}-{p[1]}" for p in POINTS]
)
def test_the_pods_message_names_the_plugin_and_the_extension_point(
    point: str, hook: str, expected: str, tmp_path: Path, monkeypatch, capsys, caplog
) -> None:
    monkeypatch.delenv("KUBESCHED_DEBUG", raising=False)
    _with(monkeypatch, _plugin("Boom", hook, scores=hook == "normalize_score"))
    manifests, config = _inputs(tmp_path, point)
    args = ["simulate", manifests, "--config", config, "-o", "json", "--explain", "default/p"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    (pod,) = report["pods"]
    assert (pod["result"], pod["node"]) == ("pending", None)
    assert pod["message"] == expected
    assert {h["result"] for h in pod["history"]} == {"error"}
    # Without --debug, the message is all: no traceback logged.
    assert not [r for r in caplog.records if r.exc_info]


def test_explain_shows_the_message(tmp_path: Path, monkeypatch, capsys) -> None:
    _with(monkeypatch, _plugin("Boom", "score"))
    manifests, config = _inputs(tmp_path, "score")
    assert main(["simulate", manifests, "--config", config, "--explain", "default/p"]) == 0
    out = capsys.readouterr().out
    assert 'running Score plugins: plugin "Boom" failed with: ' + MESSAGE in out


@pytest.mark.parametrize(
    ("before", "environment"),
    [(["--debug"], {}), ([], {"KUBESCHED_DEBUG": "1"})],
    ids=["flag", "environment"],
)
def test_debug_logs_the_plugins_traceback_once(
    before: list[str], environment: dict[str, str], tmp_path: Path, monkeypatch, capsys, caplog
) -> None:
    monkeypatch.delenv("KUBESCHED_DEBUG", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    # Each case starts as a fresh process would, with no traceback logged yet.
    monkeypatch.setattr(runtime_framework, "_LOGGED_RAISES", set())
    _with(monkeypatch, _plugin("Boom", "reserve"))
    manifests, config = _inputs(tmp_path, "reserve")
    args = [*before, "simulate", manifests, "--config", config, "-o", "json"]
    with caplog.at_level(logging.ERROR, logger="kubesched.framework.runtime.framework"):
        assert main(args) == 0
    logged = [r for r in caplog.records if r.exc_info]
    # Retried with backoff many times, logged once: same plugin, point and error.
    (record,) = [r for r in logged if MESSAGE in str(r.exc_info[1])]
    assert record.getMessage() == 'Reserve plugin "Boom" raised for pod default/p'
    assert record.exc_info[0] is RuntimeError
    # The traceback reaches the plugin's own line.
    assert "in _raise" in logging.Formatter().formatException(record.exc_info)
    report = json.loads(capsys.readouterr().out)
    assert report["pods"][0]["message"] == 'running Reserve plugin "Boom": ' + MESSAGE
