"""End to end: the three what-if examples (examples/whatif/) give the outcome their
READMEs and docs/whatif.md describe, through the Python API and the CLI."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from kubesched.api import load_manifests
from kubesched.cli.main import main
from kubesched.simulate import build_report
from kubesched.simulate.driver import Simulation
from kubesched.simulate.timeline import TimelineRunner, load_timeline

WHATIF = Path(__file__).resolve().parents[2] / "examples" / "whatif"


def run_example(name: str):
    folder = WHATIF / name
    runner = TimelineRunner(*load_timeline(folder / "timeline.yaml"))
    objects = load_manifests([folder / "cluster.yaml", folder / "workload.yaml"])
    run = Simulation(objects, timeline=runner, seed=0).run()
    return build_report(run)


def test_zone_outage() -> None:
    report = run_example("zone-outage")
    assert report.stop_reason == "settled"
    evictions = report.evictions
    assert {e.by for e in evictions} == {"taint-manager"}
    assert all(e.node.startswith("node-a") for e in evictions)
    # The node lifecycle controller marks zone-a Unknown 50 s after the cut (t=110) and
    # taints its nodes one every 10 s (0.1 node/s in a fully disrupted zone).
    assert sorted(e.details["scheduledAt"] for e in evictions) == [110.0, 120.0, 130.0]
    for e in evictions:
        seconds = 30 if e.pod.startswith("default/cache-") else 300
        assert e.details["tolerationSeconds"] == seconds
        assert e.time == e.details["scheduledAt"] + seconds
    # The DaemonSet's pods tolerate unreachable forever; the PDB does not stop the taint
    # manager (it is not API-initiated eviction).
    assert not any(e.pod.startswith("default/node-agent") for e in evictions)
    web = [e for e in evictions if e.pod.startswith("default/web-")]
    assert len(web) == 2 and all(e.replacement_node[:6] in ("node-b", "node-c") for e in web)
    (cache,) = [e for e in evictions if e.pod.startswith("default/cache-")]
    # Zone spreading keeps the cache's replacement pending until zone-a is back.
    assert cache.replaced_at == 900 and cache.replacement_node.startswith("node-a")
    outage, restore = report.timeline.steps
    assert outage.pending == [cache.replacement] and restore.pending == []
    assert outage.evicted_by == {"taint-manager": 3} and len(outage.rescheduled) == 2
    assert restore.rescheduled == [cache.replacement]


def test_memory_pressure() -> None:
    report = run_example("memory-pressure")
    evictions = report.evictions
    assert [(e.by, e.pod.split("-")[0], e.time) for e in evictions] == [
        ("kubelet", "default/batch", 120.0),
        ("kubelet", "default/reports", 140.0),
    ]
    batch, reports = evictions
    assert batch.message == (
        "The node was low on resource: memory. Threshold quantity: 2Gi, available: 592Mi. "
        "Container worker was using 3Gi, request is 0, has larger consumption of memory. "
    )
    # The Kubernetes docs' order: usage above requests, then priority, then usage above requests.
    ranking = [r["pod"].split("/")[1].split("-")[0] for r in batch.details["ranking"]]
    assert ranking == ["batch", "reports", "api", "db", "node"]
    assert batch.grace_period_seconds == 20 and reports.grace_period_seconds == 20
    assert "not yet reclaimed" in reports.reason  # evictionMinimumReclaim
    evicted = [p for p in report.pods if p.result == "evicted"]
    assert len(evicted) == 2 and all(p.node == "node-1" for p in evicted)
    assert {e.replacement_node for e in evictions} == {"node-2"}
    assert report.pod("default/db").result == "scheduled"


def test_rolling_drain() -> None:
    report = run_example("rolling-drain")
    drains = [s for s in report.timeline.steps if s.action == "drain"]
    assert [len(s.evicted) for s in drains] == [1, 2, 2]
    blocked = [b for s in drains for b in s.blocked_evictions if b.pdb == "singleton"]
    assert len(blocked) == 1 and not blocked[0].evicted and blocked[0].attempts == 25
    assert any("drain timed out" in err for s in drains for err in s.errors)
    # web's PDB (maxUnavailable 1) delays but never stops the drain.
    web_blocks = [b for s in drains for b in s.blocked_evictions if b.pdb == "web"]
    assert web_blocks and all(b.evicted for b in web_blocks)
    assert all(p.result in ("scheduled", "evicted") for p in report.pods)


@pytest.mark.parametrize("name", ["zone-outage", "memory-pressure", "rolling-drain"])
def test_cli_json_and_explain(name: str) -> None:
    folder = WHATIF / name
    args = [
        "simulate",
        str(folder / "cluster.yaml"),
        str(folder / "workload.yaml"),
        "--timeline",
        str(folder / "timeline.yaml"),
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "-o", "json"]) == 0
    data = json.loads(out.getvalue())
    assert data["timeline"]["name"] == name and data["evictions"]
    evicted = data["evictions"][0]["pod"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "--explain", evicted]) == 0
    text = out.getvalue()
    assert "Evicted at" in text and "Then: " in text
