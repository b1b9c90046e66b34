"""A kubeconfig with ``insecure-skip-tls-verify``: one line says TLS verification is off,
instead of urllib3's warning at every request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubesched.testing import make_pod
from kubesched.testing.envtest import ControlPlane

from .conftest import Api

pytestmark = pytest.mark.envtest


def _insecure_kubeconfig(control_plane: ControlPlane, path: Path) -> Path:
    """The admin kubeconfig, trusting any certificate instead of the server's CA."""
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"].pop("certificate-authority", None)
        entry["cluster"].pop("certificate-authority-data", None)
        entry["cluster"]["insecure-skip-tls-verify"] = True
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "--from-cluster", "-o", "json", "--no-progress"],
        ["capacity", "fit", "PROBE", "--from-cluster", "-o", "json", "--no-progress"],
    ],
    ids=["simulate", "capacity"],
)
def test_one_line_per_process_says_tls_verification_is_off(
    command: list[str], api: Api, control_plane: ControlPlane, tmp_path: Path
) -> None:
    # Several kinds are listed, so a warning per request would show many times.
    api.nodes(3)
    kubeconfig = _insecure_kubeconfig(control_plane, tmp_path / "insecure.kubeconfig")
    probe = tmp_path / "probe.yaml"
    manifest = make_pod("probe").req(cpu="1").manifest()
    manifest["metadata"].pop("uid")
    probe.write_text(yaml.safe_dump(manifest))
    args = [str(probe) if a == "PROBE" else a for a in command]
    proc = subprocess.run(
        [sys.executable, "-m", "kubesched.cli.main", *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": ""},
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    said = (
        f"TLS verification is off for the API server {control_plane.url} "
        "(insecure-skip-tls-verify): its certificate is not checked"
    )
    # simulate shows it as its notices ("notice: ..."); elsewhere it is a warning logged.
    lines = [line for line in proc.stderr.splitlines() if "TLS verification" in line]
    assert len(lines) == 1 and lines[0].endswith(said), proc.stderr
    assert "InsecureRequestWarning" not in proc.stderr
