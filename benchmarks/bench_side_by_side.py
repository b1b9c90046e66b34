"""kubesched beside the real kube-scheduler on the same objects: the side-by-side table's harness.

For each workload of ``kubesched bench``, one after the other so that they share the
machine's load, it measures up to three schedulers on the same generated objects:

- ``embedded``: ``kubesched bench`` on the embedded cluster (``run_workload``, a forked
  process; pods/s over the whole scheduling run);
- ``kubesched``: ``kubesched run`` through a scratch kube-apiserver
  (``kubesched.bench.kube``, what ``kubesched bench --kubeconfig`` does);
- ``external``: the real ``kube-scheduler`` of ``KUBEBUILDER_ASSETS`` on the same API server.

Through the API server every pod is pending before the scheduler starts, both schedulers
have QPS/burst 5000 and no leader election, and pods/s run from the first binding to the
last (preemption: from the scheduler's start). ``--percentage-of-nodes-to-score`` is set
in every scheduler's profile. One JSON line per run, then a table of the ratios.

Per workload: ``churn``'s later rounds are applied through the API server once the
previous one is bound (its deletions, then its pods); ``gang`` runs Coscheduling under
``kubesched`` (scheduler-plugins' PodGroup CRD, installed) and kube-scheduler's own gang
scheduling under ``external`` (alpha: the control plane then serves
``scheduling.k8s.io/v1alpha2`` and kube-scheduler gets the feature gates); ``stateful``'s
claims are provisioned by the bench (``kubesched.bench.provisioner``) and bound by
kube-controller-manager's PV controller, and ``dra``'s claims are made by its
resourceclaim controller, both started here when those workloads run.

    KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)" .venv/bin/python \\
        benchmarks/bench_side_by_side.py --nodes 500 --pods 1000 --workloads basic \\
        --schedulers embedded,external
    KUBEBUILDER_ASSETS=... .venv/bin/python benchmarks/bench_side_by_side.py --nodes 100 \\
        --pods 400 --workloads churn,gang,stateful,dra
    KUBEBUILDER_ASSETS=... .venv/bin/python benchmarks/bench_side_by_side.py \\
        --workloads basic --schedulers kubesched,external,kubesched,external

A scheduler named more than once is measured that many times, in the order given, and
the table shows the median of its runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import yaml

from kubesched.bench import WORKLOADS, run_workload
from kubesched.bench.kube import (
    CONTROLLERS,
    GANG_APISERVER_ARGS,
    GANG_SCHEDULER_ARGS,
    run_on_api_server,
)
from kubesched.testing.envtest import ControlPlane

SCHEDULERS = ("embedded", "kubesched", "external")


def _profile(tmp: Path, pct: int | None) -> Path | None:
    """A KubeSchedulerConfiguration file carrying ``percentageOfNodesToScore``, if set."""
    if pct is None:
        return None
    path = tmp / "profile.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "percentageOfNodesToScore": pct,
            }
        )
    )
    return path


def _measure(
    scheduler: str, name: str, args: argparse.Namespace, cp: ControlPlane, tmp: Path
) -> float | None:
    """Run ``name`` under ``scheduler``, print its JSON line and return its pods/s."""
    pct = args.percentage_of_nodes_to_score
    if scheduler == "embedded":
        result = run_workload(name, args.nodes, args.pods, percentage_of_nodes_to_score=pct)
        line = {
            "workload": name,
            "scheduler": "embedded",
            "nodes": args.nodes,
            "pods": args.pods,
            "bound": result.scheduled,
            "pods_per_second": result.pods_per_second,
            "seconds": result.schedule_s,
        }
    else:
        external = None
        if scheduler == "external":
            extra = {} if pct is None else {"percentageOfNodesToScore": pct}
            gang = name == "gang"
            # Its command opens /metrics to this local reader, for the attempt latency.
            flags = GANG_SCHEDULER_ARGS if gang else ()
            external = cp.kube_scheduler_command(tmp, extra, flags)
        line = run_on_api_server(
            name,
            args.nodes,
            args.pods,
            kubeconfig=str(cp.kubeconfig),
            scheduler=scheduler,
            config=_profile(tmp, pct) if scheduler == "kubesched" else None,
            external_command=external,
            timeout=args.timeout,
        ).to_dict()
    print(json.dumps({**line, "percentage_of_nodes_to_score": pct}), flush=True)
    return line["pods_per_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument(
        "--workloads", default="basic", help=f"comma-separated: {', '.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--schedulers",
        default="embedded,kubesched,external",
        help=f"comma-separated, measured in this order: {', '.join(SCHEDULERS)}",
    )
    parser.add_argument("--percentage-of-nodes-to-score", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument(
        "--controllers",
        default="",
        help="comma-separated kube-controller-manager controllers to run beside the API "
        "server, besides those the workloads need (dra, stateful: started anyway)",
    )
    args = parser.parse_args()
    schedulers = args.schedulers.split(",")
    unknown = [s for s in schedulers if s not in SCHEDULERS]
    if unknown:
        parser.error(f"unknown scheduler {unknown[0]!r} (known: {', '.join(SCHEDULERS)})")
    rows = []
    names = args.workloads.split(",")
    # Alpha API for kube-scheduler's own gang scheduling; only when gang runs.
    apiserver_args = GANG_APISERVER_ARGS if "gang" in names else ()
    with ControlPlane(apiserver_args=apiserver_args) as cp, tempfile.TemporaryDirectory() as tmp:
        controllers = {c for c in args.controllers.split(",") if c}
        controllers.update(c for name in names for c in CONTROLLERS.get(name, ()))
        if controllers:
            cp.start_controller_manager(tuple(sorted(controllers)))
        for name in names:
            # A scheduler named twice is measured twice, in the order given (interleaved
            # runs share the machine's load alike); the table has each one's median.
            runs: dict[str, list[float]] = {s: [] for s in schedulers}
            for s in schedulers:
                figure = _measure(s, name, args, cp, Path(tmp))
                if figure:
                    runs[s].append(figure)
            rows.append((name, {s: statistics.median(v) if v else None for s, v in runs.items()}))
    columns = list(dict.fromkeys(schedulers))
    print(f"\n{'workload':<28}" + "".join(f"{s:>12}" for s in columns) + "   ratios")
    for name, figures in rows:
        real = figures.get("external")
        ratios = ", ".join(
            f"{s} {figures[s] / real:.2f}×"
            for s in columns
            if s != "external" and real and figures[s]
        )
        cells = "".join(f"{figures[s] or 0:>12.1f}" for s in columns)
        print(f"{name:<28}{cells}   {ratios}")


if __name__ == "__main__":
    main()
