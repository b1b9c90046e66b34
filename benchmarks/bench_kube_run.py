"""``kubesched run`` beside the real kube-scheduler on the same objects, through kube-apiserver.

Starts a scratch etcd + kube-apiserver (``KUBEBUILDER_ASSETS``), then for each workload of
``kubesched bench`` runs it through the API server twice (``kubesched.bench.kube``, what
``kubesched bench --kubeconfig`` does): scheduled by ``kubesched run``, then by the real
``kube-scheduler`` of the same folder, each started once every pod is pending, both with
QPS/burst 5000 and no leader election. One JSON line per run.

    KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)" \\
        .venv/bin/python benchmarks/bench_kube_run.py --nodes 500 --pods 1000 --workloads basic
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from kubesched.bench import WORKLOADS
from kubesched.bench.kube import run_on_api_server
from kubesched.testing.envtest import ControlPlane


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument(
        "--workloads", default="basic", help=f"comma-separated: {', '.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--schedulers",
        default="kubesched,external",
        help="comma-separated, in this order: kubesched, external (the real kube-scheduler)",
    )
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    with ControlPlane() as cp, tempfile.TemporaryDirectory() as tmp:
        kube_scheduler = cp.kube_scheduler_command(Path(tmp))
        for name in args.workloads.split(","):
            for scheduler in args.schedulers.split(","):
                command = kube_scheduler if scheduler == "external" else None
                result = run_on_api_server(
                    name,
                    args.nodes,
                    args.pods,
                    kubeconfig=str(cp.kubeconfig),
                    scheduler=scheduler,
                    external_command=command,
                    timeout=args.timeout,
                )
                print(json.dumps(result.to_dict()), flush=True)


if __name__ == "__main__":
    main()
