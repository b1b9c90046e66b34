"""``kubesched run`` in operation: fenced writes, waiting at start, upstream's roles, safe logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubesched.backend.kube import (
    EventBroadcaster,
    KubeClient,
    UnreachableError,
    load_configuration,
)
from kubesched.backend.protocol import BackendError, NotFoundError, RecordedEvent
from kubesched.testing.envtest import ControlPlane, free_port

from .conftest import FAST, Api, all_bound, bound, pod_manifest, wait_for, write_config

pytestmark = pytest.mark.envtest

LEADER_ELECTION = {
    "leaderElect": True,
    "leaseDuration": "4s",
    "renewDeadline": "3s",
    "retryPeriod": "1s",
    "resourceNamespace": "kube-system",
    "resourceName": "kubesched-ops",
}
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched-ops"

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: [pods/binding]}]
  - level: None
"""
"""Audit every binding (who sent it, when it arrived), nothing else."""


class Replica:
    """``kubesched run`` as a child process logging to a file (a pipe nobody reads
    would fill up and stop it)."""

    def __init__(self, kubeconfig: Path, config: Path, log: Path, *extra: str) -> None:
        self.log = log
        self.port = free_port()
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kubesched.cli.main",
                    "run",
                    "--config",
                    str(config),
                    "--kubeconfig",
                    str(kubeconfig),
                    "--bind-address",
                    "127.0.0.1",
                    "--secure-port",
                    str(self.port),
                    *extra,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(os.environ),
            )

    def ready(self) -> tuple[int, str]:
        """``/readyz?verbose``: status and body (0 when it does not answer)."""
        import ssl
        import urllib.error
        import urllib.request

        # The HTTPS server's certificate is self-signed, made at start.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            url = f"https://127.0.0.1:{self.port}/readyz?verbose"
            with urllib.request.urlopen(url, timeout=5, context=context) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def output(self) -> str:
        """What it logged so far."""
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 30) -> int:
        """SIGCONT (in case), SIGTERM, wait; the exit status (killed if it hangs)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def _holder(api: Api) -> str:
    try:
        return api.client.request("GET", LEASE)["spec"].get("holderIdentity") or ""
    except NotFoundError:
        return ""


def _bindings(audit_log: Path) -> list[tuple[str, float, str]]:
    """(user, arrival as Unix seconds, pod) of every binding the API server received."""
    out = []
    for line in audit_log.read_text().splitlines():
        entry = json.loads(line)
        ref = entry.get("objectRef") or {}
        if ref.get("subresource") == "binding" and entry.get("verb") == "create":
            arrived = datetime.fromisoformat(
                entry["requestReceivedTimestamp"].replace("Z", "+00:00")
            )
            out.append((entry["user"]["username"], arrived.timestamp(), ref.get("name", "")))
    return out


@pytest.mark.slow
def test_a_leader_stopped_past_its_lease_sends_no_binding_after_it_resumes(
    tmp_path: Path,
) -> None:
    """The leader binds slowly (qps 1: binds wait in its rate limiter); SIGSTOP it until
    the standby took the lease and bound every pod, then SIGCONT: the API server's audit
    log shows not one binding from the old leader after it resumed, and it exits 1."""
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit_log = tmp_path / "audit.log"
    with ControlPlane(
        apiserver_args=(f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}")
    ) as cp:
        api = Api(cp)
        standby_kubeconfig = cp.add_user("standby", ("system:masters",))
        api.nodes(2)
        slow = write_config(
            tmp_path,
            {"leaderElection": LEADER_ELECTION, "clientConnection": {"qps": 1, "burst": 1}},
        )
        old = Replica(cp.kubeconfig, slow, tmp_path / "old.log", "--identity", "old")
        new = None
        try:
            wait_for(lambda: _holder(api) == "old", 60, "the first replica leads")
            fast = tmp_path / "fast"
            fast.mkdir()
            new = Replica(
                standby_kubeconfig,
                write_config(fast, {"leaderElection": LEADER_ELECTION}),
                tmp_path / "new.log",
                "--identity",
                "new",
            )
            wait_for(lambda: new.ready()[0] == 200, 60, "the standby is ready")
            api.create_many([pod_manifest(f"p{i}") for i in range(30)])
            wait_for(
                lambda: [b for b in _bindings(audit_log) if b[0] == "admin"], 60, "a first bind"
            )
            old.proc.send_signal(signal.SIGSTOP)
            wait_for(lambda: _holder(api) == "new", 60, "the standby takes over")
            wait_for(lambda: all_bound(api, 30), 120, "every pod bound")
            resumed = time.time()
            old.proc.send_signal(signal.SIGCONT)
            code = old.proc.wait(90)
            time.sleep(1)  # anything it sent has arrived
        finally:
            old.stop()
            if new is not None:
                new.stop()
        by_old = [b for b in _bindings(audit_log) if b[0] == "admin"]
        assert by_old, "the old leader bound nothing before it was stopped"
        late = [pod for _user, arrived, pod in by_old if arrived >= resumed]
        assert late == [], f"the old leader bound {late} after it lost its lease"
        assert code == 1
        assert "leaderelection lost" in old.output()
        assert "Traceback" not in old.output()


def test_waits_for_an_api_server_started_after_it(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    """kubesched starts while the API server is down: not ready and one log line per
    attempt (naming the request, the server and the credentials' kubeconfig), then it
    schedules once the API server is back."""
    # Down until kubesched was seen retrying, however long a slow machine takes to start it.
    control_plane.stop_apiserver()
    replica = None
    try:
        assert not _answers(control_plane)
        kubeconfig = control_plane.kubeconfig
        replica = Replica(kubeconfig, write_config(tmp_path), tmp_path / "run.log")
        wait_for(lambda: replica.output().count("cannot start (attempt") >= 2, 60, "retries")
        status, body = replica.ready()
        assert status == 500 and "[-]api-server failed: waiting for the API server" in body
        assert replica.proc.poll() is None
        first = next(
            line for line in replica.output().splitlines() if "cannot start (attempt 1)" in line
        )
        assert (
            f"POST {control_plane.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews: "
            f"cannot reach the API server at {control_plane.url}" in first
        )
        assert f'credentials: kubeconfig {kubeconfig}, user "envtest-user" (bearer token)' in first
        assert "retrying in" in first
        control_plane.start_apiserver()
        api.nodes(1, prefix="late-node-")
        api.create(pod_manifest("late"))
        wait_for(lambda: bound(api.pods()).get("late") == "late-node-0", 90, "scheduled")
        wait_for(lambda: replica.ready()[0] == 200, 30, "ready")
        assert "the API server at" in replica.output()
    finally:
        if control_plane.exited() == "kube-apiserver":  # a failure above: up for the next test
            control_plane.start_apiserver()
        if replica is not None:
            assert replica.stop() == 0


def _answers(control_plane: ControlPlane) -> bool:
    """Whether the API server takes connections (a shutting-down one answers /readyz
    with an error for a while, and still serves other requests)."""
    try:
        Api(control_plane).client.request("GET", "/readyz", timeout=2)
    except UnreachableError:
        return False
    except BackendError:
        pass  # an error answer is an answer
    return True


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("token", "selfsubjectaccessreviews: Unauthorized"),
        ("ca", "selfsubjectaccessreviews: cannot reach the API server at"),
        (
            "rbac",
            "the user may not list nodes (missing RBAC permission; "
            "bind system:kube-scheduler and system:volume-scheduler, see docs/run.md)",
        ),
    ],
    ids=["wrong-token", "wrong-ca", "no-rbac-rights"],
)
def test_bad_credentials_or_rights_are_retried_and_said(
    control_plane: ControlPlane, tmp_path: Path, breakage: str, expected: str
) -> None:
    """A wrong token, a CA that does not sign the server's certificate, a user without
    RBAC rights (bindings may come after the Deployment): retried, not ready meanwhile,
    each attempt one log line naming the request or permission and the credentials."""
    if breakage == "rbac":
        kubeconfig = control_plane.add_user("nobody")
    else:
        kubeconfig = control_plane.write_kubeconfig(
            tmp_path / "bad.kubeconfig",
            "wrong-token" if breakage == "token" else control_plane.token("admin"),
        )
    if breakage == "ca":
        other = tmp_path / "other-ca.crt"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=someone-else",
                "-keyout",
                str(tmp_path / "k"),
                "-out",
                str(other),
            ],
            check=True,
            capture_output=True,
        )
        text = json.loads(kubeconfig.read_text())
        text["clusters"][0]["cluster"]["certificate-authority"] = str(other)
        kubeconfig.write_text(json.dumps(text))
    replica = Replica(kubeconfig, write_config(tmp_path), tmp_path / "run.log")
    try:
        wait_for(lambda: replica.output().count("cannot start (attempt") >= 2, 30, "retries")
        assert replica.proc.poll() is None
        assert replica.ready()[0] == 500
        line = next(
            line for line in replica.output().splitlines() if "cannot start (attempt 2)" in line
        )
        assert expected in line
        if breakage == "ca":
            assert "certificate verify failed" in line
        assert f'credentials: kubeconfig {kubeconfig}, user "envtest-user" (bearer token)' in line
    finally:
        assert replica.stop() == 0


def test_a_hostile_lease_holder_is_logged_escaped_and_bounded(api: Api, tmp_path: Path) -> None:
    """Another holder's identity with ESC, NUL, a newline forging a log line and 64 KiB:
    the standby logs it on one short line, escaped."""
    holder = (
        "\x1b[2J\x1b]0;pwned\x07evil\x00\n2026-01-01 00:00:00,000 I kubesched.runner] forged"
        + ("x" * 65536)
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    api.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kubesched-ops", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
            },
        }
    )
    replica = Replica(
        api.cp.kubeconfig,
        write_config(tmp_path, {"leaderElection": LEADER_ELECTION}),
        tmp_path / "run.log",
    )
    try:
        wait_for(lambda: "new leader of" in replica.output(), 60, "the holder logged")
        wait_for(lambda: replica.ready()[0] == 200, 60, "a ready standby")
    finally:
        assert replica.stop() == 0
    raw = replica.log.read_bytes()
    assert b"\x1b" not in raw and b"\x00" not in raw and b"\x07" not in raw
    lines = raw.decode().splitlines()
    assert not [line for line in lines if "forged" in line and "new leader of" not in line]
    (line,) = [line for line in lines if "new leader of" in line]
    assert "evil\\x00\\n2026-01-01 00:00:00,000 I kubesched.runner] forged" in line
    assert line.endswith("more characters]") and len(line) < 1000


def _seconds(micro_time: str) -> float:
    return datetime.fromisoformat(micro_time.replace("Z", "+00:00")).timestamp()


def test_events_carry_wall_clock_times_and_outlive_an_api_server_outage(
    control_plane: ControlPlane, api: Api
) -> None:
    """eventTime and series.lastObservedTime as the API server stores them are now; an
    event recorded while the API server is down is written once it is back."""
    client = KubeClient(load_configuration(str(control_plane.kubeconfig)), FAST)
    # 12 tries 5 s apart: a minute of retries outlasts the outage and the restart.
    events = EventBroadcaster(client, retry_sleep=5.0)
    failed = RecordedEvent(
        "Pod", "default", "p", "Warning", "FailedScheduling", "no nodes", action="Scheduling"
    )
    try:
        before = time.time()
        events.record(failed)
        events.record(failed)
        events.flush()
        (stored,) = wait_for(
            lambda: [e for e in api.events() if e.get("series")], 10, "the series written"
        )
        after = time.time()
        assert before - 1 <= _seconds(stored["eventTime"]) <= after + 1
        assert before - 1 <= _seconds(stored["series"]["lastObservedTime"]) <= after + 1
        # Down until the write failed and waits to be retried.
        control_plane.stop_apiserver()
        assert not _answers(control_plane)
        events.record(
            RecordedEvent("Pod", "default", "q", "Normal", "Scheduled", "on n0", action="Binding")
        )
        wait_for(lambda: events.pending_retries(), 30, "a write waiting to be retried")
        control_plane.start_apiserver()
        wait_for(
            lambda: [e for e in api.events() if e["regarding"]["name"] == "q"],
            60,
            "the event written after the outage",
        )
        assert (events.written, events.given_up, events.pending_retries()) == (3, 0, 0)
    finally:
        if control_plane.exited() == "kube-apiserver":  # a failure above: up for the next test
            control_plane.start_apiserver()
        events.close()
        client.close()


def test_events_queued_at_sigterm_are_written_before_the_lease_is_released(
    api: Api, in_process
) -> None:
    # 10 requests a second: the events are still queued when the runner is told to stop.
    run = in_process(
        {"leaderElection": LEADER_ELECTION, "clientConnection": {"qps": 10, "burst": 1}}
    )
    wait_for(run.runner.elector.is_leader, 30, "leading")
    for i in range(20):
        run.cluster.record_event(
            RecordedEvent(
                "Pod", "default", f"p{i}", "Normal", "Scheduled", "on n0", action="Binding"
            )
        )
    assert run.stop() == 0
    assert not _holder(api)  # released
    assert sorted(e["regarding"]["name"] for e in api.events()) == sorted(
        f"p{i}" for i in range(20)
    )
