"""``kubesched run``'s HTTPS server against a real API server: tokens reviewed by TokenReview,
paths authorized by SubjectAccessReview (deploy/prometheus-rbac.yaml's ClusterRole), the
always-allowed health paths, /configz, profiling, and /readyz naming leader and standby."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.testing.envtest import ControlPlane
from tests.server.certs import ca_and_client

from .conftest import Api, kubesched_process, wait_for, write_config

pytestmark = pytest.mark.envtest

PROMETHEUS_RBAC = Path(__file__).resolve().parents[2] / "deploy" / "prometheus-rbac.yaml"
UNVERIFIED = ssl._create_unverified_context()

LEADER_ELECTION = {
    "leaderElect": True,
    "leaseDuration": "4s",
    "renewDeadline": "3s",
    "retryPeriod": "1s",
    "resourceNamespace": "kube-system",
    "resourceName": "kubesched-serving",
}


def _get(port: int, path: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60, context=UNVERIFIED) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:  # not listening yet
        return 0, ""


def _message(answer: tuple[int, str]) -> tuple[int, str]:
    return answer[0], json.loads(answer[1])["message"]


def _stop(proc: subprocess.Popen) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err


def _bind_scraper(api: Api) -> None:
    """deploy/'s metrics-reader ClusterRole, bound to the user ``scraper`` (afresh)."""
    role, binding = yaml.safe_load_all(PROMETHEUS_RBAC.read_text())
    binding["subjects"] = [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "scraper"}
    ]
    for obj, collection in ((role, "clusterroles"), (binding, "clusterrolebindings")):
        api.delete(f"/apis/rbac.authorization.k8s.io/v1/{collection}/{obj['metadata']['name']}")
        api.create(obj)


def _unbind_scraper(api: Api) -> None:
    api.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubesched-metrics-reader")


@pytest.fixture(scope="module")
def tokens(control_plane: ControlPlane) -> Iterator[dict[str, str]]:
    """Token users ``scraper`` (bound to the metrics-reader ClusterRole) and ``nobody``
    (no rights), and ``admin``: their tokens by name."""
    control_plane.add_user("scraper")
    control_plane.add_user("nobody")
    api = Api(control_plane)
    _bind_scraper(api)
    yield {u: control_plane.token(u) for u in ("scraper", "nobody", "admin")}
    _unbind_scraper(api)
    api.delete("/apis/rbac.authorization.k8s.io/v1/clusterroles/kubesched-metrics-reader")
    api.client.close()


@pytest.fixture(scope="module")
def serving(
    control_plane: ControlPlane, tokens: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[int]:
    """``kubesched run`` with the admin kubeconfig (its reviews go through it); its port."""
    config = write_config(tmp_path_factory.mktemp("serving"))
    proc, port = kubesched_process(control_plane.kubeconfig, config)
    try:
        wait_for(lambda: _ready(port), 60, "/readyz ok")
        yield port
    finally:
        code, err = _stop(proc)
    assert code == 0, err


def _ready(port: int) -> bool:
    return _get(port, "/readyz")[0] == 200


@pytest.mark.parametrize(
    ("path", "user", "code", "answer"),
    [
        ("/healthz", None, 200, "ok"),
        ("/livez", None, 200, "ok"),
        ("/readyz", None, 200, "ok"),
        ("/metrics", None, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"'),
        ("/metrics", "nobody", 403, 'forbidden: User "nobody" cannot get path "/metrics"'),
        ("/metrics", "garbage", 401, "Unauthorized"),
        ("/metrics", "scraper", 200, "scheduler_schedule_attempts_total"),
        ("/configz", "scraper", 403, 'forbidden: User "scraper" cannot get path "/configz"'),
        ("/configz", "admin", 200, '{"componentconfig": {'),
        ("/debug/pprof/goroutine", "nobody", 403, 'forbidden: User "nobody" cannot get path'),
        ("/debug/pprof/goroutine", "admin", 200, "thread "),
        ("/nothing", None, 403, 'forbidden: User "system:anonymous" cannot get path "/nothing"'),
        ("/nothing", "admin", 404, "404 page not found"),
    ],
    ids=[
        "healthz-anonymous",
        "livez-anonymous",
        "readyz-anonymous",
        "metrics-anonymous",
        "metrics-no-rights",
        "metrics-bad-token",
        "metrics-scraper",
        "configz-scraper",
        "configz-admin",
        "pprof-no-rights",
        "pprof-admin",
        "unknown-path-anonymous",
        "unknown-path-admin",
    ],
)
def test_who_may_get_what(
    serving: int, tokens: dict[str, str], path: str, user: str | None, code: int, answer: str
) -> None:
    token = tokens.get(user, user) if user else None
    got_code, body = _get(serving, path, token)
    assert got_code == code
    if code in (401, 403):
        # A metav1.Status, as the Kubernetes components answer.
        status = json.loads(body)
        assert (status["kind"], status["code"]) == ("Status", code)
        body = status["message"]
    assert answer in body, body


def test_configz_is_the_effective_configuration(serving: int, tokens: dict[str, str]) -> None:
    code, body = _get(serving, "/configz", tokens["admin"])
    config: dict[str, Any] = json.loads(body)["componentconfig"]
    assert code == 200
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["leaderElection"]["leaderElect"] is False
    assert config["clientConnection"]["qps"] == 5000
    assert config["enableProfiling"] is True
    assert [p["schedulerName"] for p in config["profiles"]] == ["default-scheduler"]


def test_answers_are_cached_for_the_ttl(serving: int, tokens: dict[str, str], api: Api) -> None:
    """An allowed answer is kept 10 s (upstream's default): removing the binding does not
    take the right away at once."""
    _bind_scraper(api)
    assert _get(serving, "/metrics", tokens["scraper"])[0] == 200
    _unbind_scraper(api)
    try:
        assert _get(serving, "/metrics", tokens["scraper"])[0] == 200
    finally:
        _bind_scraper(api)


def test_without_cache_a_removed_binding_forbids_at_once(
    control_plane: ControlPlane, api: Api, tokens: dict[str, str], tmp_path: Path
) -> None:
    _bind_scraper(api)
    proc, port = kubesched_process(
        control_plane.kubeconfig,
        write_config(tmp_path),
        "--authorization-webhook-cache-authorized-ttl=0s",
        "--authorization-always-allow-paths=/healthz,/debug/*",
    )
    try:
        wait_for(lambda: _get(port, "/healthz")[0] == 200, 60, "/healthz ok")
        assert _get(port, "/debug/pprof/")[0] == 200, "a prefix allowed to anyone"
        assert _get(port, "/configz")[0] == 403
        assert _get(port, "/metrics", tokens["scraper"])[0] == 200
        _unbind_scraper(api)
        wait_for(
            lambda: _get(port, "/metrics", tokens["scraper"])[0] == 403,
            10,
            "the API server's RBAC to drop the binding",
        )
    finally:
        _bind_scraper(api)
        code, err = _stop(proc)
    assert code == 0, err


def test_readyz_verbose_says_leader_and_standby(
    control_plane: ControlPlane, api: Api, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"leaderElection": LEADER_ELECTION})
    first, first_port = kubesched_process(control_plane.kubeconfig, config, "--identity", "first")
    second = None
    try:
        wait_for(
            lambda: "[+]leaderElection ok leader\n" in _get(first_port, "/readyz?verbose")[1],
            60,
            "first to lead",
        )
        second, second_port = kubesched_process(
            control_plane.kubeconfig, config, "--identity", "second"
        )
        wait_for(lambda: _ready(second_port), 60, "second ready")
        assert (
            "[+]leaderElection ok standby (leader: first)\n"
            in _get(second_port, "/readyz?verbose")[1]
        )
    finally:
        for proc in (first, second):
            if proc is not None:
                code, err = _stop(proc)
                assert code == 0, err


AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


@pytest.mark.parametrize("source", ["configmap", "flag"])
def test_client_certificates_of_the_client_ca(
    control_plane: ControlPlane, api: Api, tmp_path: Path, source: str
) -> None:
    """A client certificate signed by the client CA — looked up in kube-system's
    extension-apiserver-authentication as upstream, or given by --client-ca-file — is
    its CommonName with its Organizations as groups; the API server authorizes that
    user (here in system:masters) by SubjectAccessReview."""
    ca, crt, key = ca_and_client(tmp_path, "cert-admin", ["system:masters"])
    extra: tuple[str, ...] = ()
    if source == "configmap":
        api.delete(AUTH_CONFIGMAP)
        api.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "extension-apiserver-authentication",
                    "namespace": "kube-system",
                },
                "data": {"client-ca-file": ca},
            }
        )
    else:
        (tmp_path / "ca.crt").write_text(ca)
        extra = (f"--client-ca-file={tmp_path / 'ca.crt'}",)
    proc, port = kubesched_process(control_plane.kubeconfig, write_config(tmp_path), *extra)
    try:
        wait_for(lambda: _ready(port), 60, "/readyz ok")
        context = ssl._create_unverified_context()
        context.load_cert_chain(str(crt), str(key))
        request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            assert resp.status == 200
        assert _get(port, "/metrics")[0] == 403, "no certificate: anonymous"
    finally:
        api.delete(AUTH_CONFIGMAP)
        code, err = _stop(proc)
    assert code == 0, err
