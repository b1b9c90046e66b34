"""Loading files: YAML and JSON, syntax errors with lines, bad files (apiVersion and kind:
test_refusals.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kubesched.config import load_config
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry


def test_none_gives_defaults(registry: PluginRegistry) -> None:
    config = load_config(None, registry)
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]


def test_json(registry: PluginRegistry, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "parallelism": 4,
                "leaderElection": {"leaseDuration": "1m30s"},
            }
        )
    )
    config = load_config(path, registry)
    assert config.parallelism == 4
    assert config.leader_election.lease_duration == 90.0


ERRORS = [
    (
        "yaml syntax",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - schedulerName: a\n   bad: indent\n",
        "invalid YAML at line 5, column 4",
    ),
    (
        "duplicate key",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "parallelism: 1\nparallelism: 2\n",
        'found duplicate key "parallelism"',
    ),
    ("empty", "", "empty file"),
    ("not a mapping", "- a\n- b\n", "expected a mapping"),
    (
        "two documents",
        "apiVersion: kubescheduler.config.k8s.io/v1\n---\nkind: x\n",
        "2 YAML documents",
    ),
    (
        "wrong type",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "parallelism: many\n",
        'parallelism: Invalid value: "many": must be an integer',
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_file_errors(
    registry: PluginRegistry,
    write_config: Callable[..., Path],
    text: str,
    message: str,
) -> None:
    path = write_config(text, header=False)
    with pytest.raises(UserInputError) as excinfo:
        load_config(path, registry)
    assert str(excinfo.value).startswith(f"{path}: ")
    assert message in str(excinfo.value)


def test_missing_file(registry: PluginRegistry, tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match=r"nope\.yaml: no such file"):
        load_config(tmp_path / "nope.yaml", registry)


def test_directory(registry: PluginRegistry, tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="is a directory"):
        load_config(tmp_path, registry)
