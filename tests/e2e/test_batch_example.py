"""End to end: examples/batch/ (Jobs and a CronJob within a timeline's hour) gives the
outcome its README describes, through the Python API and ``kubesched simulate``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from kubesched.api import load_manifests
from kubesched.cli.main import main
from kubesched.notices import collecting_notices
from kubesched.simulate.driver import Simulation
from kubesched.simulate.timeline import TimelineRunner, load_timeline

BATCH = Path(__file__).resolve().parents[2] / "examples" / "batch"
FILES = [BATCH / "cluster.yaml", BATCH / "workload.yaml"]


def started(cluster, prefix: str) -> list[float]:
    """When each pod whose name starts with ``prefix`` started, in virtual seconds."""
    epoch = cluster.get("Namespace", None, "default").metadata.creation_timestamp
    return sorted(
        (p.status.start_time - epoch).total_seconds()
        for p in cluster.pods()
        if p.name.startswith(prefix)
    )


def conditions(cluster, name: str) -> list[tuple[str, str]]:
    job = cluster.get("Job", "default", name)
    return [(c.type, c.reason) for c in job.status.conditions]


def test_jobs_and_the_cron_job_in_the_timeline_window() -> None:
    runner = TimelineRunner(*load_timeline(BATCH / "timeline.yaml"))
    sim = Simulation(load_manifests(FILES), timeline=runner, seed=0)
    run = sim.run()
    cluster = run.cluster
    # render: three pods one after another, two minutes each.
    assert started(cluster, "render-") == [0, 120, 240]
    assert conditions(cluster, "render")[-1] == ("Complete", "CompletionsReached")
    # migrate: fails, waits the 10 s pod failure backoff, fails again: backoffLimit 1.
    assert started(cluster, "migrate-") == [0, 40]
    assert conditions(cluster, "migrate")[-1] == ("Failed", "BackoffLimitExceeded")
    # report: every 15 minutes of the hour; the last one's pod still runs at its end.
    assert started(cluster, "report-") == [900, 1800, 2700, 3600]
    assert run.stop_reason == "horizon" and run.virtual_time == 3600
    # After the cordon at 30 minutes the reports land on node-1 only.
    late = {
        p.spec.node_name
        for p in cluster.pods()
        if p.name.startswith("report-") and started(cluster, p.name) > [1800]
    }
    assert late == {"node-1"}


def test_without_a_timeline_the_cron_job_does_not_run() -> None:
    with collecting_notices() as notices:
        run = Simulation(load_manifests(FILES), seed=0).run()
    assert not [p for p in run.cluster.pods() if p.name.startswith("report-")]
    assert run.stop_reason == "settled"
    assert [n.obj for n in notices] == ["CronJob default/report"]


def test_the_cli_runs_it() -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            [
                "simulate",
                *map(str, FILES),
                "--timeline",
                str(BATCH / "timeline.yaml"),
                "--output",
                "json",
            ]
        )
    assert code == 0, err.getvalue()
    report = json.loads(out.getvalue())
    assert report["stopReason"] == "horizon"
    assert len(report["pods"]) == 9
