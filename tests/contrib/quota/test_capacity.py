"""``kubesched capacity fit`` with CapacityScheduling in the profile: quotas limit what fits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "elastic-quota"

PROBE = """\
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: team-a}
spec:
  containers:
  - name: work
    image: registry.k8s.io/pause:3.10
    resources: {requests: {cpu: 500m, memory: 512Mi}}
"""


@pytest.mark.parametrize(
    ("flags", "count", "message"),
    [
        pytest.param(
            ["--config", EXAMPLE / "config.yaml"],
            4,
            "0/2 nodes are available: Pod team-a/probe-capacity-4 is rejected in PreFilter "
            "because total ElasticQuota used is more than min.",
            id="quota: the sum of the mins",
        ),
        pytest.param(
            ["--config", EXAMPLE / "config.yaml", "--allow-preemption"],
            8,
            None,
            id="quota with preemption: team-a's whole min, taken back from team-b",
        ),
        pytest.param(
            [],
            4,
            "0/2 nodes are available: 2 Insufficient cpu.",
            id="default profile: the free cpu",
        ),
    ],
)
def test_fit(capsys, tmp_path, flags, count, message):
    probe = tmp_path / "probe.yaml"
    probe.write_text(PROBE)
    argv = ["capacity", "fit", probe, EXAMPLE / "cluster.yaml", *flags, "-o", "json"]
    assert main([str(a) for a in argv]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["count"] == count
    if message is not None:
        assert report["stop"]["message"] == message
