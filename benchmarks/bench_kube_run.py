"""``kubesched run`` beside the real kube-scheduler on the same objects, against kube-apiserver.

For each scheduler: a fresh etcd + kube-apiserver (``KUBEBUILDER_ASSETS``), NODES Nodes
and PODS pending Pods created first, then the scheduler started as a process; throughput
is measured from the first to the last bind a watch sees, latency from the scheduler's own
``scheduler_scheduling_attempt_duration_seconds`` histogram (p50/p99, interpolated in the
buckets as Prometheus' ``histogram_quantile``; both use upstream's buckets).

    KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)" \\
        .venv/bin/python benchmarks/bench_kube_run.py --nodes 500 --pods 1000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, create_objects, free_port

METRIC = "scheduler_scheduling_attempt_duration_seconds"


def _bind_times(client: KubeClient, count: int, timeout: float) -> list[float]:
    """Watch pods from now on; the local time at which each pod is first seen bound."""
    listed = client.request("GET", "/api/v1/pods")
    seen: dict[str, float] = {}
    for p in listed["items"]:
        if p["spec"].get("nodeName"):
            seen[p["metadata"]["name"]] = time.monotonic()
    rv = listed["metadata"]["resourceVersion"]
    deadline = time.monotonic() + timeout
    while len(seen) < count and time.monotonic() < deadline:
        resp, events = client.stream(
            "/api/v1/pods", {"watch": "true", "resourceVersion": rv, "timeoutSeconds": 60}, 90
        )
        for ev in events:
            obj = ev["object"]
            rv = obj["metadata"].get("resourceVersion", rv)
            if obj["spec"].get("nodeName"):
                seen.setdefault(obj["metadata"]["name"], time.monotonic())
            if len(seen) >= count or time.monotonic() > deadline:
                break
        resp.release_conn()
    return sorted(seen.values())


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """``histogram_quantile`` over cumulative (upper bound, count) buckets."""
    total = buckets[-1][1]
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return prev_bound
            width = count - prev_count
            return prev_bound + (bound - prev_bound) * ((rank - prev_count) / width if width else 0)
        prev_bound, prev_count = bound, count
    return prev_bound


def _latency(metrics_text: str) -> dict[str, float]:
    buckets: dict[float, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith(f"{METRIC}_bucket") and 'result="scheduled"' in line:
            le = re.search(r'[{,]le="([^"]+)"', line).group(1)
            bound = float("inf") if le == "+Inf" else float(le)
            buckets[bound] = buckets.get(bound, 0.0) + float(line.rsplit(" ", 1)[1])
    ordered = sorted(buckets.items())
    if not ordered or ordered[-1][1] == 0:
        return {}
    return {"p50_s": _quantile(0.5, ordered), "p99_s": _quantile(0.99, ordered)}


def _fetch(url: str) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
        return resp.read().decode()


def _start(which: str, cp: ControlPlane, workdir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(cp.kubeconfig), "qps": 5000, "burst": 5000},
    }
    path = workdir / f"{which}.yaml"
    path.write_text(yaml.safe_dump(config))
    log = open(workdir / f"{which}.log", "w")  # noqa: SIM115 - the child's
    if which == "kubesched":
        cmd = [sys.executable, "-m", "kubesched.cli.main", "run", "--config", str(path)]
        cmd += ["--port", str(port), "--log-level", "warning"]
        url = f"http://127.0.0.1:{port}/metrics"
    else:
        kc = str(cp.kubeconfig)
        cmd = [
            str(cp.assets / "kube-scheduler"),
            f"--config={path}",
            f"--secure-port={port}",
            "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--authorization-always-allow-paths=/metrics,/healthz,/readyz,/livez",
            f"--cert-dir={workdir / 'kube-scheduler-certs'}",
        ]
        url = f"https://127.0.0.1:{port}/metrics"
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ)), url


def run_one(which: str, nodes: int, pods: int, timeout: float) -> dict[str, Any]:
    """Schedule ``pods`` on ``nodes`` with ``which`` (kubesched or kube-scheduler)."""
    with ControlPlane() as cp, tempfile.TemporaryDirectory() as tmp:
        client = KubeClient(
            load_configuration(str(cp.kubeconfig)),
            ClientConnectionConfiguration(qps=100000, burst=100000),
        )
        create_objects(
            client,
            [
                make_node(f"n{i}")
                .capacity(cpu="32", memory="128Gi", pods=110)
                .zone(f"z{i % 3}")
                .manifest()
                for i in range(nodes)
            ],
        )
        create_objects(
            client,
            [
                make_pod(f"p{i}")
                .req(cpu="100m", memory="256Mi")
                .labels(app=f"a{i % 20}")
                .manifest()
                for i in range(pods)
            ],
        )
        started = time.monotonic()
        proc, url = _start(which, cp, Path(tmp))
        try:
            times = _bind_times(client, pods, timeout)
            metrics = _fetch(url)
        finally:
            proc.terminate()
            proc.wait(30)
        client.close()
    span = times[-1] - times[0] if len(times) > 1 else float("nan")
    return {
        "scheduler": which,
        "nodes": nodes,
        "pods": pods,
        "bound": len(times),
        "pods_per_s": round((len(times) - 1) / span, 1) if span == span and span else None,
        "first_bind_after_start_s": round(times[0] - started, 2) if times else None,
        **{k: round(v, 4) for k, v in _latency(metrics).items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--schedulers", default="kubesched,kube-scheduler", help="comma-separated, in order"
    )
    args = parser.parse_args()
    for which in args.schedulers.split(","):
        print(json.dumps(run_one(which, args.nodes, args.pods, args.timeout)), flush=True)


if __name__ == "__main__":
    main()
