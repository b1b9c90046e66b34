"""``kubesched run`` as a process: health and metrics, SIGTERM, leader failover, bad input."""

from __future__ import annotations

import itertools
import re
import signal
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from kubesched.backend.protocol import ConflictError
from kubesched.config.validation import JITTER_FACTOR
from kubesched.testing.envtest import ADMIN_TOKEN, ControlPlane

from .conftest import Api, all_bound, bound, kubesched_process, pod_manifest, wait_for, write_config

pytestmark = pytest.mark.envtest

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "docs" / "run-rbac.yaml"
DOCS = ROOT / "docs" / "run.md"

UNVERIFIED = ssl._create_unverified_context()
"""The scheduler's certificate is self-signed, made at its start."""

LEASE, RETRY = 4.0, 1.0
LEADER_ELECTION = {
    "leaderElect": True,
    "leaseDuration": f"{LEASE:g}s",
    "renewDeadline": "3s",
    "retryPeriod": f"{RETRY:g}s",
    "resourceNamespace": "kube-system",
    "resourceName": "kubesched-test",
}


def _get(port: int, path: str) -> tuple[int, str]:
    """GET ``path`` of the scheduler's HTTPS server: the health paths anonymously (open to
    all), the others as the admin (allowed everything)."""
    health = path.split("?")[0] in ("/healthz", "/livez", "/readyz")
    headers = {} if health else {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5, context=UNVERIFIED) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


def _lease(api: Api) -> dict:
    return api.client.request(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched-test"
    )


def _steal_lease(api: Api, holder: str) -> None:
    """Write ``holder`` into the lease, re-reading it whenever the leader's own renewal
    got in between (a 409 Conflict on the stale resourceVersion)."""
    for _ in range(20):
        lease = _lease(api)
        lease["spec"]["holderIdentity"] = holder
        try:
            api.client.request(
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched-test",
                body=lease,
            )
            return
        except ConflictError:
            continue
    raise AssertionError("the leader renewed before every one of 20 writes of the lease")


def _renewal_intervals(api: Api, holder: str, seconds: float) -> list[float]:
    """The seconds between ``holder``'s renewals of the lease seen in ``seconds`` (at least
    two renewals: waits on past ``seconds`` until there are)."""
    renewals: set[str] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or len(renewals) < 3:
        spec = _lease(api)["spec"]
        if spec.get("holderIdentity") == holder:
            renewals.add(spec["renewTime"])
        assert time.monotonic() < deadline + 30, f"{holder} stopped renewing: {renewals}"
        time.sleep(0.05)
    times = sorted(_micro_time(r) for r in renewals)
    return [(b - a).total_seconds() for a, b in itertools.pairwise(times)]


def _micro_time(text: str) -> datetime:
    """A Lease's MicroTime (RFC 3339 with microseconds)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> tuple[int, str]:
    """Send ``sig`` (0: none, wait) and return the exit status and stderr."""
    if sig and proc.poll() is None:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err


def test_serves_health_and_metrics_and_stops_on_sigterm(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    api.nodes(3)
    config = write_config(tmp_path, {"leaderElection": LEADER_ELECTION})
    proc, port = kubesched_process(control_plane.kubeconfig, config, "--identity", "only")
    try:
        wait_for(lambda: _get(port, "/readyz")[0] == 200, 60, "/readyz ok")
        assert _get(port, "/healthz") == (200, "ok")
        assert _get(port, "/livez") == (200, "ok")
        _status, body = _get(port, "/readyz?verbose")
        assert "[+]informer-sync ok" in body and "[+]leaderElection ok" in body
        wait_for(
            lambda: (
                'leader_election_master_status{name="kubesched-test"} 1.0'
                in _get(port, "/metrics")[1]
            ),
            30,
            "leadership",
        )
        api.create_many([pod_manifest(f"p{i}") for i in range(20)])
        wait_for(lambda: all_bound(api, 20), 60, "20 pods bound")
        # Counted once the binding cycle returns, a moment after the API shows the bind.
        metrics = wait_for(
            lambda: (
                (text := _get(port, "/metrics")[1])
                and 'scheduler_schedule_attempts_total{profile="default-scheduler",'
                'result="scheduled"} 20.0'
                in text
                and text
            ),
            10,
            "20 scheduled attempts counted",
        )
        assert "rest_client_requests_total" in metrics
        # As kube-scheduler's: no `*_created` series beside the counters and histograms.
        assert re.findall(r"^\w+_created[{ ]", metrics, re.MULTILINE) == []
        assert _lease(api)["spec"]["holderIdentity"] == "only"
    finally:
        code, err = _stop(proc)
    assert code == 0, err
    assert "Traceback" not in err
    # Released on a clean shutdown: a successor need not wait for the lease to expire.
    assert not _lease(api)["spec"].get("holderIdentity")


@pytest.fixture
def reaped() -> Iterator[list[subprocess.Popen]]:
    """Processes a test started, killed at its end if still running: a failed test's
    leader would hold the lease the next test's replica waits for."""
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
def test_leader_killed_standby_takes_over_and_never_both_bind(
    control_plane: ControlPlane, api: Api, tmp_path: Path, reaped: list[subprocess.Popen]
) -> None:
    api.nodes(10)
    config = write_config(tmp_path, {"leaderElection": LEADER_ELECTION})
    a, _ = kubesched_process(control_plane.kubeconfig, config, "--identity", "replica-a")
    reaped.append(a)
    wait_for(lambda: _lease(api)["spec"].get("holderIdentity") == "replica-a", 60, "a leads")
    b, b_port = kubesched_process(control_plane.kubeconfig, config, "--identity", "replica-b")
    reaped.append(b)
    stop_creating = threading.Event()
    created: list[int] = []

    def create_pods() -> None:
        i = 0
        while not stop_creating.is_set():
            api.create(pod_manifest(f"p{i}", cpu="10m"))
            created.append(i)
            i += 1
            time.sleep(0.05)

    creator = threading.Thread(target=create_pods)
    creator.start()
    try:
        wait_for(lambda: len(bound(api.pods())) >= 20, 60, "a binds")
        # b is a running standby (its start-up may take seconds on a loaded machine).
        wait_for(
            lambda: "[+]leaderElection ok standby" in _get(b_port, "/readyz?verbose")[1],
            60,
            "b on standby",
        )
        a.kill()  # SIGKILL: no release, the lease must expire
        a.wait()
        last_renewal = _lease(api)["spec"]["renewTime"]  # a's last: a is gone
        taken = wait_for(
            lambda: (spec := _lease(api)["spec"]).get("holderIdentity") == "replica-b" and spec,
            30,
            "b takes over",
            every=0.05,
        )
        # Timed from the lease itself (a's last renewal to b's acquisition), so that the
        # test's own polling on a loaded machine does not count.
        failover = (_micro_time(taken["acquireTime"]) - _micro_time(last_renewal)).total_seconds()
        # b renews every retryPeriod: how much later than that its loop turns under this
        # machine's load now (and meanwhile b binds the pods still being created).
        overhead = max(_renewal_intervals(api, "replica-b", 3.0)) - RETRY
    finally:
        stop_creating.set()
        creator.join()
    wait_for(lambda: all_bound(api, len(created)), 60, "every pod bound")
    code, err = _stop(b)
    assert code == 0, err
    # b saw a's last renewal at its next try (within a jittered retryPeriod and a loop's
    # overhead), counted leaseDuration from then, took the lease at its first try after
    # (as long again), and wrote it (one more overhead); 0.5 s for a slower request. Not
    # before the lease expired: b's look at a's last renewal may have begun before it.
    limit = LEASE + 2 * (RETRY * JITTER_FACTOR + overhead) + overhead + 0.5
    print(f"failover after the leader's last renewal: {failover:.2f}s (limit {limit:.2f}s)")
    assert LEASE - RETRY <= failover <= limit
    # From the API's history: every Scheduled event of a precedes every one of b.
    events = [e for e in api.events() if e["reason"] == "Scheduled"]
    by = {
        name: sorted(e["eventTime"] for e in events if e["reportingInstance"].endswith(name))
        for name in ("replica-a", "replica-b")
    }
    assert by["replica-a"] and by["replica-b"]
    assert by["replica-a"][-1] < by["replica-b"][0]
    # Nobody bound a pod twice: one Scheduled event per pod.
    scheduled = [e["regarding"]["name"] for e in events]
    assert len(scheduled) == len(set(scheduled))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"leaderElection": {**LEADER_ELECTION, "renewDeadline": "5s"}},
            "leaderElection.leaseDuration",
        ),
        ({"clientConnection": {"burst": -1}}, "clientConnection.burst"),
    ],
    ids=["lease-not-longer-than-renew", "negative-burst"],
)
def test_bad_configuration_is_a_clear_error(
    control_plane: ControlPlane, tmp_path: Path, extra: dict, message: str
) -> None:
    proc, _ = kubesched_process(control_plane.kubeconfig, write_config(tmp_path, extra))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert message in err and "Traceback" not in err


def test_leader_that_loses_its_lease_exits_1(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    """Another holder writes the lease: the replica's renewals fail, and once they failed
    for renewDeadline it stops and exits 1, as kube-scheduler ("leaderelection lost")."""
    api.nodes(2)
    config = write_config(tmp_path, {"leaderElection": LEADER_ELECTION})
    proc, _ = kubesched_process(control_plane.kubeconfig, config, "--identity", "victim")
    try:
        wait_for(lambda: _lease(api)["spec"].get("holderIdentity") == "victim", 60, "leading")
        _steal_lease(api, "thief")
        stolen = time.monotonic()
        proc.wait(30)
        gave_up = time.monotonic() - stolen
        code, err = _stop(proc, sig=0)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 1
    assert "leaderelection lost" in err and "Traceback" not in err
    # It gave up after renewDeadline (3 s), within one more retry and the shutdown.
    assert 2.0 <= gave_up < 3 + 1 * 1.2 + 2
    assert _lease(api)["spec"]["holderIdentity"] == "thief"  # a lost lease is not released


def test_the_documented_upstream_roles_are_enough(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    """A user bound only to the API server's own system:kube-scheduler and
    system:volume-scheduler roles (docs/run-rbac.yaml, shown in docs/run.md) runs
    kubesched, leader election on a Lease named kube-scheduler included, and binds a pod."""
    objects = list(yaml.safe_load_all(RBAC.read_text()))
    documented = DOCS.read_text().split("```yaml\n# docs/run-rbac.yaml\n")[1].split("```")[0]
    assert list(yaml.safe_load_all(documented)) == objects
    kubeconfig = control_plane.add_user("kubesched")
    for obj in objects:
        api.delete(
            f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{obj['metadata']['name']}"
        )
        api.create(obj)
    api.nodes(1)
    config = write_config(
        tmp_path, {"leaderElection": {**LEADER_ELECTION, "resourceName": "kube-scheduler"}}
    )
    proc, port = kubesched_process(kubeconfig, config)
    try:
        api.create(pod_manifest("p"))
        wait_for(lambda: bound(api.pods()).get("p") == "n0", 60, "p bound")
        wait_for(lambda: _get(port, "/readyz")[0] == 200, 30, "ready")
    finally:
        code, err = _stop(proc)
    assert code == 0, err
    assert "cannot start" not in err
