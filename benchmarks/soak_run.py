"""Soak ``kubesched run``: pods created and deleted at a steady rate, its RSS sampled over time.

    KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)" \\
        python benchmarks/soak_run.py --minutes 60 --rate 20 [--nodes 20] [--log FILE]

Starts a real etcd and kube-apiserver, ``kubesched run`` (leader election on, the
default profile) as a child process, and creates ``--rate`` pods a second, deleting
each once it is bound (or after 30 s), for ``--minutes``. Every ``--every`` seconds it
prints one JSON line: the minute, kubesched's resident set size (``VmRSS`` of
/proc/PID/status) in MiB, pods created, bound and deleted so far. At the end one JSON
line sums up: the RSS after the first 10 minutes, at the end and its maximum, and how
far (in %) the RSS after minute 10 strayed from its value at minute 10. A scheduler
whose caches forget what they should stays within a few percent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.backend.protocol import BackendError
from kubesched.testing.builders import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, create_objects, free_port

WARM_UP_MINUTES = 10.0
"""The RSS after this many minutes is the reference the rest of the run is compared to."""


def rss_mib(pid: int) -> float:
    """The resident set size of process ``pid`` in MiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Churn:
    """Creates pods at a steady rate and deletes each once it is bound (or too old)."""

    def __init__(self, client: KubeClient, rate: float) -> None:
        self.client = client
        self.rate = rate
        self.created = self.bound = self.deleted = self.errors = 0
        self._born: dict[str, float] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(8)

    def run(self, until: float, stop: threading.Event) -> None:
        """Create ``rate`` pods a second (in one batch per second) and reap bound ones
        until the monotonic time ``until``."""
        n = 0
        tick = time.monotonic()
        while time.monotonic() < until and not stop.is_set():
            batch = []
            for _ in range(int(self.rate)):
                name = f"soak-{n}"
                n += 1
                pod = make_pod(name).req(cpu="10m", memory="16Mi").manifest()
                pod["spec"]["terminationGracePeriodSeconds"] = 0
                batch.append(pod)
            list(self._pool.map(self._create, batch))
            self._reap()
            tick += 1.0
            stop.wait(max(0.0, tick - time.monotonic()))

    def _create(self, pod: dict[str, Any]) -> None:
        try:
            self.client.request("POST", "/api/v1/namespaces/default/pods", body=pod)
        except BackendError:
            with self._lock:
                self.errors += 1
            return
        with self._lock:
            self.created += 1
            self._born[pod["metadata"]["name"]] = time.monotonic()

    def _reap(self) -> None:
        pods = self.client.request("GET", "/api/v1/namespaces/default/pods")["items"]
        now = time.monotonic()
        gone = []
        for pod in pods:
            name = pod["metadata"]["name"]
            born = self._born.get(name)
            if born is None:
                continue
            if pod["spec"].get("nodeName"):
                self.bound += 1
            elif now - born < 30:
                continue
            gone.append(name)
        list(self._pool.map(self._delete, gone))

    def _delete(self, name: str) -> None:
        try:
            self.client.request(
                "DELETE", f"/api/v1/namespaces/default/pods/{name}", query={"gracePeriodSeconds": 0}
            )
        except BackendError:
            with self._lock:
                self.errors += 1
        with self._lock:
            self._born.pop(name, None)
            self.deleted += 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=20.0, help="pods created a second")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--log", type=Path, help="where kubesched run's log goes")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kubesched-soak-"))
    log_path = args.log or workdir / "kubesched.log"
    with ControlPlane() as cp:
        client = KubeClient(load_configuration(str(cp.kubeconfig)))
        create_objects(
            client,
            [
                make_node(f"n{i}").capacity(cpu="64", memory="256Gi", pods=500).manifest()
                for i in range(args.nodes)
            ],
        )
        config = workdir / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": True, "resourceNamespace": "default"},
                }
            )
        )
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kubesched.cli.main",
                    "run",
                    "--config",
                    str(config),
                    "--kubeconfig",
                    str(cp.kubeconfig),
                    "--bind-address",
                    "127.0.0.1",
                    "--secure-port",
                    str(free_port()),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ),
            )
        churn = Churn(client, args.rate)
        stop = threading.Event()
        started = time.monotonic()
        until = started + args.minutes * 60
        worker = threading.Thread(target=churn.run, args=(until, stop), daemon=True)
        worker.start()
        samples: list[tuple[float, float]] = []
        try:
            while time.monotonic() < until and proc.poll() is None:
                time.sleep(min(args.every, max(0.0, until - time.monotonic())))
                minute = (time.monotonic() - started) / 60
                rss = rss_mib(proc.pid)
                samples.append((minute, rss))
                print(
                    json.dumps(
                        {
                            "minute": round(minute, 2),
                            "rss_mib": round(rss, 1),
                            "created": churn.created,
                            "bound": churn.bound,
                            "deleted": churn.deleted,
                            "errors": churn.errors,
                        }
                    ),
                    flush=True,
                )
        finally:
            stop.set()
            worker.join(timeout=30)
            exited = proc.poll()
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        print(json.dumps(summary(samples, exited, churn, str(log_path))), flush=True)
    return 0 if exited is None else 1


def summary(
    samples: list[tuple[float, float]], exited: int | None, churn: Churn, log: str
) -> dict[str, Any]:
    """The figures of a run: RSS at the end of the warm-up, at the end, maximum, and the
    largest departure from the warm-up value afterwards (percent)."""
    after = [rss for minute, rss in samples if minute >= WARM_UP_MINUTES]
    at_warm_up = after[0] if after else None
    return {
        "minutes": round(samples[-1][0], 2) if samples else 0,
        "rss_mib_at_10_min": at_warm_up,
        "rss_mib_at_end": samples[-1][1] if samples else None,
        "rss_mib_max": max((rss for _, rss in samples), default=None),
        "rss_mib_max_after_10_min": max(after, default=None),
        "max_change_after_10_min_percent": (
            round(max(abs(r - at_warm_up) for r in after) / at_warm_up * 100, 1)
            if at_warm_up
            else None
        ),
        "created": churn.created,
        "bound": churn.bound,
        "errors": churn.errors,
        "kubesched_exited": exited,
        "kubesched_log": log,
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
