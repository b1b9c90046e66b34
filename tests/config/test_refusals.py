"""What kube-scheduler v1.36 refuses, kubesched refuses in the same words.

Each row is a configuration and the words of kube-scheduler v1.36.2's refusal (None:
it accepts the file). The unit test checks kubesched against the table; the
``envtest`` test checks the table against the real binary of ``KUBEBUILDER_ASSETS``,
so the words cannot drift from it.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from kubesched.config import effective_configuration, load_config
from kubesched.errors import UserInputError
from kubesched.framework.registry import default_registry
from kubesched.testing.envtest import assets_dir

V1 = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
OVERFLOW = "total score of Score plugins could overflow"


def v1(body: str) -> str:
    """A v1 configuration with ``body`` (indented in the table) after the header."""
    return V1 + textwrap.dedent(body)


CASES = [
    (
        "v1beta3",
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
        'no kind "KubeSchedulerConfiguration" is registered for version '
        '"kubescheduler.config.k8s.io/v1beta3"',
    ),
    (
        "v1beta2",
        "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n",
        'no kind "KubeSchedulerConfiguration" is registered for version '
        '"kubescheduler.config.k8s.io/v1beta2"',
    ),
    (
        "v1alpha1",
        "apiVersion: kubescheduler.config.k8s.io/v1alpha1\nkind: KubeSchedulerConfiguration\n",
        'no kind "KubeSchedulerConfiguration" is registered for version '
        '"kubescheduler.config.k8s.io/v1alpha1"',
    ),
    (
        "v2",
        "apiVersion: kubescheduler.config.k8s.io/v2\nkind: KubeSchedulerConfiguration\n",
        'no kind "KubeSchedulerConfiguration" is registered for version '
        '"kubescheduler.config.k8s.io/v2"',
    ),
    (
        "other-group",
        "apiVersion: example.com/v1\nkind: KubeSchedulerConfiguration\n",
        'no kind "KubeSchedulerConfiguration" is registered for version "example.com/v1"',
    ),
    (
        "other-kind",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
        'no kind "Pod" is registered for version "kubescheduler.config.k8s.io/v1"',
    ),
    (
        "no-apiversion",
        "kind: KubeSchedulerConfiguration\n",
        "Object 'apiVersion' is missing",
    ),
    ("no-kind", "apiVersion: kubescheduler.config.k8s.io/v1\n", "Object 'Kind' is missing"),
    (
        "negative-weight-before-the-defaults",
        v1(
            """
        profiles:
        - plugins:
            score:
              enabled:
              - {name: NodeResourcesFit, weight: -1}
        """
        ),
        OVERFLOW,
    ),
    (
        "negative-weight-last-of-the-score-list",
        v1(
            """
        profiles:
        - plugins:
            score:
              disabled: [{name: "*"}]
              enabled:
              - {name: NodeResourcesFit, weight: 1}
              - {name: ImageLocality, weight: -5}
        """
        ),
        OVERFLOW,
    ),
    (
        "negative-weight-alone",
        # No Score plugin after it: Go's int64 check does not wrap, kube-scheduler runs.
        v1(
            """
        profiles:
        - plugins:
            multiPoint:
              disabled: [{name: "*"}]
              enabled:
              - {name: PrioritySort}
              - {name: DefaultBinder}
              - {name: NodeResourcesFit, weight: -3}
        """
        ),
        None,
    ),
    (
        "zero-weight",
        v1(
            """
        profiles:
        - plugins:
            score:
              enabled:
              - {name: NodeResourcesFit, weight: 0}
        """
        ),
        None,
    ),
    (
        "int32-max-weight",
        v1(
            """
        profiles:
        - plugins:
            multiPoint:
              enabled:
              - {name: NodeResourcesFit, weight: 2147483647}
        """
        ),
        None,
    ),
]
IDS = [c[0] for c in CASES]


def _write(tmp_path: Path, text: str, extra: dict | None = None) -> Path:
    data = yaml.safe_load(text)
    data.update(extra or {})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("text", "refusal"), [c[1:] for c in CASES], ids=IDS)
def test_kubesched_refuses_what_kube_scheduler_refuses(
    tmp_path: Path, text: str, refusal: str | None
) -> None:
    registry = default_registry()
    path = _write(tmp_path, text)
    if refusal is None:
        assert effective_configuration(load_config(path, registry), registry).profiles
        return
    with pytest.raises(UserInputError) as excinfo:
        effective_configuration(load_config(path, registry), registry, source=str(path))
    message = str(excinfo.value)
    assert message.startswith(f"{path}: ")
    assert refusal in message


@pytest.mark.envtest
@pytest.mark.parametrize(("text", "refusal"), [c[1:] for c in CASES], ids=IDS)
def test_the_table_is_what_kube_scheduler_says(
    tmp_path: Path, text: str, refusal: str | None
) -> None:
    assets = assets_dir()
    binary = assets / "kube-scheduler" if assets is not None else None
    if binary is None or not binary.is_file():
        pytest.skip("no kube-scheduler in KUBEBUILDER_ASSETS")
    # An API server that is never there: kube-scheduler decodes and validates the file
    # and builds its profiles before it first connects.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "x"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    data = yaml.safe_load(text)
    if data.get("kind") == "KubeSchedulerConfiguration" and "apiVersion" in data:
        data["clientConnection"] = {"kubeconfig": str(kubeconfig)}
        data["leaderElection"] = {"leaderElect": False}
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(yaml.safe_dump(data))
    command = [str(binary), f"--config={config}", "--secure-port=0"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=5)
        output = done.stderr
    except subprocess.TimeoutExpired as running:
        # Still running: it accepted the file and waits for its API server.
        output = running.stderr.decode() if isinstance(running.stderr, bytes) else ""
        done = None
    # klog quotes the error as a Go string.
    output = output.replace('\\"', '"')
    if refusal is None:
        assert done is None or "command failed" not in output, output
        assert "initializing profiles" not in output
    else:
        assert done is not None and done.returncode != 0
        assert refusal in output, output
