"""Time a zone-outage timeline: N nodes over three zones, M pods, zone-a unreachable.

Writes the manifests and the timeline to a folder (``--out``) so the same run can be
repeated with ``kubesched simulate``, then plays it through the Python API and prints wall
time and the evictions and reschedulings per virtual second.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from kubesched.api import load_manifests
from kubesched.simulate import build_report
from kubesched.simulate.driver import DETAIL_SUMMARY, Simulation
from kubesched.simulate.timeline import TimelineRunner, load_timeline

ZONES = ("zone-a", "zone-b", "zone-c")


def write_scenario(out: Path, nodes: int, pods: int, replicas: int, outage: float) -> None:
    """cluster.yaml, workload.yaml (Deployments of ``replicas`` pods, a PDB on every
    fourth) and timeline.yaml (zone-a unreachable at 60 s, back ``outage`` s later)."""
    out.mkdir(parents=True, exist_ok=True)
    docs = []
    for i in range(nodes):
        zone = ZONES[i % len(ZONES)]
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"node-{i}",
                    "labels": {
                        "kubernetes.io/hostname": f"node-{i}",
                        "topology.kubernetes.io/zone": zone,
                    },
                },
                "status": {
                    "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                    "allocatable": {"cpu": "31", "memory": "120Gi", "pods": "110"},
                },
            }
        )
    (out / "cluster.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    docs = []
    for d in range(pods // replicas):
        name = f"app-{d}"
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "app:1",
                                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                                }
                            ]
                        },
                    },
                },
            }
        )
        if d % 4 == 0:
            docs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": name},
                    "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": {"app": name}}},
                }
            )
    (out / "workload.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    timeline = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Timeline",
        "metadata": {"name": "zone-a-outage"},
        "spec": {
            "steps": [
                {
                    "at": 60,
                    "action": "unreachable",
                    "nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
                },
                {
                    "at": 60 + outage,
                    "action": "restore",
                    "nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
                },
            ]
        },
    }
    (out / "timeline.yaml").write_text(yaml.safe_dump(timeline, sort_keys=False))


def main() -> None:
    """Write the scenario, play it, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--replicas", type=int, default=50, help="pods per Deployment")
    parser.add_argument("--outage", type=float, default=4200.0, help="seconds zone-a is out")
    parser.add_argument("--out", type=Path, default=Path("/tmp/kubesched-zone-outage"))
    args = parser.parse_args()
    write_scenario(args.out, args.nodes, args.pods, args.replicas, args.outage)
    objects = load_manifests([args.out / "cluster.yaml", args.out / "workload.yaml"])
    runner = TimelineRunner(*load_timeline(args.out / "timeline.yaml"))
    started = time.perf_counter()
    run = Simulation(objects, timeline=runner, detail=DETAIL_SUMMARY).run()
    played = time.perf_counter() - started
    report = build_report(run, detail=DETAIL_SUMMARY)
    total = time.perf_counter() - started
    evicted = len(report.evictions)
    rescheduled = sum(1 for e in report.evictions if e.replaced_at is not None)
    first = min((e.time for e in report.evictions), default=0.0)
    last = max((e.replaced_at or e.time for e in report.evictions), default=0.0)
    span = max(last - first, 1e-9)
    print(
        f"nodes {args.nodes}, pods {args.pods}, virtual time {run.virtual_time:g} s, "
        f"stop {run.stop_reason}"
    )
    print(f"wall time: run {played:.1f} s, report {total - played:.1f} s, total {total:.1f} s")
    print(
        f"evicted {evicted}, rescheduled {rescheduled} over {span:g} virtual s "
        f"({first:g}..{last:g}): {evicted / span:.3f} evicted/s, "
        f"{rescheduled / span:.3f} rescheduled/s"
    )
    for step in report.timeline.steps:
        print(
            f"  {step.at:g}..{step.until:g} {step.description}: evicted {len(step.evicted)} "
            f"{step.evicted_by}, rescheduled {len(step.rescheduled)}, pending {len(step.pending)}"
        )


if __name__ == "__main__":
    main()
