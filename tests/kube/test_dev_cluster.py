"""``kubesched dev-cluster`` as a process: its kubeconfig, nodes and manifests, the real
scheduler beside it, the commands it prints, kubectl, and a clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.compare.real import CONTROLLER_MANAGER_LEASE
from kubesched.testing.envtest import ASSETS_ENV, assets_dir, create_object

from .conftest import FAST, kubesched_process, pod_manifest, wait_for, write_config

KUBECTL = shutil.which("kubectl")
START_SECONDS = 180.0
"""How long a start may take on a busy machine (the API server alone takes 5-30 s)."""
STOP_SECONDS = 60.0

MANIFESTS = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "api", "namespace": "team-a"},
        "spec": {
            "priorityClassName": "high",
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}
            ],
        },
    },
]
"""Loaded with -f: the pod (in a namespace no manifest declares) comes before its
PriorityClass in the file; the dev cluster creates them in the order that works."""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"""


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kubesched.cli.main", *args]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (2nd field) may hold spaces: the parent follows its ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class DevCluster:
    """A ``kubesched dev-cluster`` process and the kubeconfig it writes."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.kubeconfig = workdir / "dev.kubeconfig"
        self.log = workdir / "dev-cluster.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                _command("dev-cluster", "--kubeconfig", str(self.kubeconfig), *args),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )
        deadline = time.monotonic() + START_SECONDS
        while not self.kubeconfig.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"dev-cluster did not start:\n{self.log.read_text()}")
            time.sleep(0.2)
        wait_for(lambda: "Ctrl-C" in self.output(), 30, "the usage to be printed")

    def output(self) -> str:
        """What it printed so far."""
        return self.log.read_text()

    def client(self) -> KubeClient:
        """An admin client through the kubeconfig it wrote."""
        return KubeClient(load_configuration(str(self.kubeconfig)), FAST)

    def stop(self, sig: signal.Signals = signal.SIGINT) -> int:
        """Send ``sig``; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(STOP_SECONDS)


@pytest.fixture(scope="module")
def dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """One dev cluster with 3 nodes, MANIFESTS and the real kube-scheduler."""
    if assets_dir() is None:
        pytest.skip(f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver")
    workdir = tmp_path_factory.mktemp("dev-cluster")
    manifests = workdir / "manifests.yaml"
    manifests.write_text(yaml.safe_dump_all(list(reversed(MANIFESTS))))
    cluster = DevCluster(workdir, "--nodes", "3", "-f", str(manifests), "--with-scheduler")
    yield cluster
    cluster.stop()


@pytest.mark.envtest
def test_nodes_and_manifests_are_created(dev_cluster: DevCluster) -> None:
    client = dev_cluster.client()
    try:
        nodes = client.request("GET", "/api/v1/nodes")["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["node-0", "node-1", "node-2"]
        zones = {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes}
        assert zones == {"zone-a", "zone-b", "zone-c"}
        pod = client.request("GET", "/api/v1/namespaces/team-a/pods/api")
        assert pod["spec"]["priority"] == 1000  # its PriorityClass existed at its creation

        # The real kube-scheduler runs beside it and binds the pod.
        def node_of_api() -> str | None:
            got = client.request("GET", "/api/v1/namespaces/team-a/pods/api")
            return got["spec"].get("nodeName")

        assert wait_for(node_of_api, 60, "kube-scheduler to bind team-a/api") in {
            "node-0",
            "node-1",
            "node-2",
        }
    finally:
        client.close()


@pytest.mark.envtest
def test_prints_the_commands_that_use_it(dev_cluster: DevCluster) -> None:
    out = dev_cluster.output()
    kc = str(dev_cluster.kubeconfig)
    for command in (
        f"kubectl --kubeconfig {kc} get nodes",
        f"kubesched run --kubeconfig {kc}",
        f"kubesched simulate --from-cluster --kubeconfig {kc}",
        f"kubesched compare --kubeconfig {kc} --allow-foreign-nodes PATH...",
    ):
        assert command in out


@pytest.mark.envtest
def test_simulate_from_cluster_reads_it(dev_cluster: DevCluster) -> None:
    done = subprocess.run(
        _command(
            "simulate", "--from-cluster", "--kubeconfig", str(dev_cluster.kubeconfig), "-o", "json"
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(n["name"] for n in report["nodes"]) == ["node-0", "node-1", "node-2"]
    (api,) = [p for p in report["pods"] if (p["namespace"], p["name"]) == ("team-a", "api")]
    assert api["priority"] == 1000


@pytest.mark.envtest
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    ("manifest", "refusal"),
    [
        (DEPLOYMENT, None),
        (
            DEPLOYMENT.replace("name: web", "name: typo").replace("replicas: 2", "replica: 2"),
            'strict decoding error: unknown field "spec.replica"',
        ),
    ],
    ids=["deployment", "typo-refused-by-strict-validation"],
)
def test_kubectl_apply_validates(
    dev_cluster: DevCluster, tmp_path: Path, manifest: str, refusal: str | None
) -> None:
    path = tmp_path / "deployment.yaml"
    path.write_text(manifest)
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(dev_cluster.kubeconfig), "apply", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if refusal is None:
        assert done.returncode == 0, done.stderr
        assert "deployment.apps/web created" in done.stdout
    else:
        assert done.returncode != 0
        assert refusal in done.stderr
        assert "failed to download openapi" not in done.stderr


@pytest.mark.envtest
def test_kubesched_run_schedules_through_it(dev_cluster: DevCluster, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"profiles": [{"schedulerName": "kubesched"}]})
    proc, _ = kubesched_process(dev_cluster.kubeconfig, config)
    client = dev_cluster.client()
    try:
        create_object(client, pod_manifest("by-kubesched", scheduler_name="kubesched"))

        def node() -> str | None:
            got = client.request("GET", "/api/v1/namespaces/default/pods/by-kubesched")
            return got["spec"].get("nodeName")

        # Its informers watch through the dev cluster's address: the pod's arrival is seen.
        assert wait_for(node, 90, "kubesched run to bind the pod").startswith("node-")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        client.close()


@pytest.mark.envtest
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_stops_every_process_and_removes_the_data(
    tmp_path: Path, sig: signal.Signals
) -> None:
    if assets_dir() is None:
        pytest.skip(f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver")
    cluster = DevCluster(tmp_path, "--with-controller-manager")
    children = _children(cluster.proc.pid)
    names = sorted(Path(f"/proc/{pid}/exe").resolve().name for pid in children)
    assert names == ["etcd", "kube-apiserver", "kube-controller-manager"]
    data = Path(json.loads(cluster.kubeconfig.read_text())["clusters"][0]["cluster"][
        "certificate-authority"
    ]).parents[1]  # fmt: skip
    assert data.is_dir()
    # The controller manager holds its Lease: compare sees it and refuses this cluster.
    client = cluster.client()
    try:
        wait_for(lambda: client.request("GET", CONTROLLER_MANAGER_LEASE), 60, "the Lease")
    finally:
        client.close()
    assert cluster.stop(sig) == 0
    assert [pid for pid in children if _alive(pid)] == []
    assert not data.exists()
    assert not cluster.kubeconfig.exists()
    assert "stopping the dev cluster" in cluster.output()


@pytest.mark.parametrize(
    ("args", "setup", "message"),
    [
        (
            ["--nodes", "-1"],
            None,
            "--nodes: must be 0 or more, not -1",
        ),
        (
            [],
            '{"current-context": "mine"}',
            "was not written by a dev cluster; choose another --kubeconfig",
        ),
        (
            ["-f", "missing.yaml"],
            None,
            "missing.yaml",
        ),
        (
            [],
            "no binaries",
            f"set {ASSETS_ENV} to the folder holding them",
        ),
    ],
    ids=["negative-nodes", "foreign-kubeconfig", "missing-manifest", "no-binaries"],
)
def test_bad_input_is_one_line_and_starts_nothing(
    tmp_path: Path, args: list[str], setup: str | None, message: str
) -> None:
    kubeconfig = tmp_path / "config"
    env = dict(os.environ)
    if setup == "no binaries":
        env[ASSETS_ENV] = str(tmp_path)  # a folder without etcd and kube-apiserver
    elif setup is not None:
        kubeconfig.write_text(setup)
    done = subprocess.run(
        _command("dev-cluster", "--kubeconfig", str(kubeconfig), *args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    if setup not in (None, "no binaries"):
        assert kubeconfig.read_text() == setup  # left as it was


@pytest.mark.envtest
def test_a_manifest_the_api_server_refuses_stops_the_start(tmp_path: Path) -> None:
    if assets_dir() is None:
        pytest.skip(f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver")
    pod = dict(MANIFESTS[1], spec={**MANIFESTS[1]["spec"], "priorityClassName": "nowhere"})
    manifests = tmp_path / "pod.yaml"
    manifests.write_text(yaml.safe_dump(pod))
    kubeconfig = tmp_path / "dev.kubeconfig"
    done = subprocess.run(
        _command("dev-cluster", "--kubeconfig", str(kubeconfig), "-f", str(manifests)),
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
    )
    assert done.returncode == 1
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "Pod team-a/api" in error
    assert "no PriorityClass with name nowhere was found" in error
    assert "Traceback" not in done.stderr
    assert not kubeconfig.exists()


@pytest.mark.envtest
def test_a_process_that_dies_stops_the_others(tmp_path: Path) -> None:
    if assets_dir() is None:
        pytest.skip(f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver")
    cluster = DevCluster(tmp_path)
    children = {Path(f"/proc/{pid}/exe").resolve().name: pid for pid in _children(cluster.proc.pid)}
    os.kill(children["etcd"], signal.SIGKILL)
    assert cluster.proc.wait(STOP_SECONDS) == 1
    assert "error: etcd exited: " in cluster.output()
    assert not _alive(children["kube-apiserver"])
    assert not cluster.kubeconfig.exists()
