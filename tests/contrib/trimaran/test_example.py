"""examples/load-aware: each Trimaran profile's pod lands where the README says."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import load_manifests
from kubesched.config import load_config
from kubesched.simulate.driver import simulate

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "load-aware"
EXPECTED = {
    "packed": "idle",
    "risk-balanced": "steady",
    "overcommitted": "jumpy",
    "frugal": "steady",
    "reserved-batch": "idle",
}


@pytest.mark.parametrize("config", ["scheduler-config.yaml", "scheduler-config-metrics-file.yaml"])
def test_outcome(config, monkeypatch):
    monkeypatch.chdir(ROOT)  # metricsFile is relative to where kubesched runs
    run = simulate(
        load_manifests([EXAMPLE / "manifests"]), config=load_config(EXAMPLE / config), seed=0
    )
    assert {p.metadata.name: p.spec.node_name for p in run.cluster.pods()} == EXPECTED
