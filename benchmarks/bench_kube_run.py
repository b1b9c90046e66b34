"""``kubesched run`` beside the real kube-scheduler on the same objects, through kube-apiserver.

Starts a scratch etcd + kube-apiserver (``KUBEBUILDER_ASSETS``), then for each workload of
``kubesched bench`` runs it through the API server twice (``kubesched.bench.kube``, what
``kubesched bench --kubeconfig`` does): scheduled by ``kubesched run``, then by the real
``kube-scheduler`` of the same folder, each started once every pod is pending, both with
QPS/burst 5000 and no leader election. One JSON line per run.

    KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)" \\
        .venv/bin/python benchmarks/bench_kube_run.py --nodes 500 --pods 1000 --workloads basic
    KUBEBUILDER_ASSETS=... .venv/bin/python benchmarks/bench_kube_run.py --nodes 100 \\
        --pods 400 --workloads dra --controllers resourceclaim-controller
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
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument(
        "--controllers",
        default="",
        help="comma-separated kube-controller-manager controllers to run beside them "
        "(resourceclaim-controller for dra: it makes the pods' claims from the templates)",
    )
    args = parser.parse_args()
    with ControlPlane() as cp, tempfile.TemporaryDirectory() as tmp:
        if args.controllers:
            cp.start_controller_manager(tuple(args.controllers.split(",")))
        kube_scheduler = cp.kube_scheduler_command(Path(tmp))
        for name in args.workloads.split(","):
            for scheduler, command in (("kubesched", None), ("external", kube_scheduler)):
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
