"""``kubesched resilience --from-cluster`` against a real kube-apiserver: read-only, and each
node's failure is played on the copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.testing.envtest import ControlPlane

from .conftest import Api
from .test_deschedule_live import _busy_small_node
from .test_snapshot import READ_ONLY_RULES, _grant, _state

pytestmark = pytest.mark.envtest

USER = "resilience-reader"


@pytest.fixture(scope="module")
def reader(control_plane: ControlPlane) -> Path:
    """A kubeconfig of a user with no permission at all (the test grants what it needs)."""
    return control_plane.add_user(USER)


def test_resilience_from_cluster_replaces_what_fits_elsewhere(
    api: Api, reader: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _busy_small_node(api)
    _grant(api, USER, READ_ONLY_RULES)
    before = _state(api)
    code = main(
        [
            "resilience",
            "--from-cluster",
            "--kubeconfig",
            str(reader),
            "--workers",
            "1",
            "-o",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    outcomes = {f["failure"]: f for f in report["failures"]}
    # web-1's replacement fits "big" (8 cpu); web-0's does not fit "small" (2 cpu, 1.5 used).
    small = outcomes["node small"]
    (web,) = small["workloads"]
    assert (web["name"], web["kept"], web["replaced"]) == ("default/web", True, 1), out
    big = outcomes["node big"]
    (web,) = big["workloads"]
    assert (web["kept"], web["pending"]) == (False, 1), out
    assert "Insufficient cpu" in web["pendingReason"]
    assert [f["failure"] for f in report["failures"]] == ["node big", "node small"]
    assert _state(api) == before  # nothing was written to the cluster
