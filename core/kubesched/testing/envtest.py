"""A real etcd + kube-apiserver on free 127.0.0.1 ports, for tests that talk to Kubernetes.

Follows controller-runtime's envtest convention: the binaries are found through
``KUBEBUILDER_ASSETS`` (a folder holding ``etcd`` and ``kube-apiserver``; get them with
``setup-envtest use 1.36.x`` or from a Kubernetes release), or, when it is unset, through
``../shared/k8s/assets.sh`` beside a source checkout. Everything lives in a temporary
directory; ``stop()`` ends the processes it started, by PID. ``kubesched dev-cluster``
runs one until Ctrl-C.

    with ControlPlane() as cp:
        kubeconfig = cp.kubeconfig            # admin (system:masters), static token
        cp.add_user("limited")                # a token user without RBAC rights
        cp.restart_apiserver()                # drop every watch, keep etcd's data
        cp.stop_apiserver(); cp.start_apiserver()  # the same, for as long as needed
        cp.start_controller_manager(("persistentvolume-binder-controller",))
        cp.start_scheduler()                  # the real kube-scheduler beside them

    with ControlPlane(openapi_front=True) as cp:  # kubectl apply validates against it
        ...

``create_objects(client, manifests)`` fills it quickly (nodes and pods for a test).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kubesched.api.schema import served_kind
from kubesched.errors import KubeschedError
from kubesched.testing.openapi_front import OpenAPIFront

ASSETS_ENV = "KUBEBUILDER_ASSETS"
"""The environment variable naming the folder of ``etcd`` and ``kube-apiserver``."""

ADMIN_TOKEN = "kubesched-envtest-admin"

WORKLOAD_GATES = (
    "--feature-gates=GenericWorkload=true,GangScheduling=true,"
    "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
)
"""The workload family of alpha gates of v1.36 (the Workload API, gang scheduling,
topology-aware placement, workload-aware preemption), for kube-apiserver and
kube-scheduler alike."""
WORKLOAD_APISERVER_ARGS = (WORKLOAD_GATES, "--runtime-config=scheduling.k8s.io/v1alpha2=true")
"""What kube-apiserver needs to serve the Workload API with every field of those gates."""
DEVICE_TAINT_RULE_GATES = "--feature-gates=DRADeviceTaintRules=true"
"""DRADeviceTaintRules (beta, off by default in v1.36), for kube-apiserver,
kube-controller-manager and kube-scheduler alike."""
DEVICE_TAINT_RULE_APISERVER_ARGS = (
    DEVICE_TAINT_RULE_GATES,
    "--runtime-config=resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true",
)
"""What kube-apiserver needs to serve DeviceTaintRules (at ``resource.k8s.io/v1beta2`` and
``v1alpha3``)."""


class EnvtestError(KubeschedError):
    """The control plane could not start (missing binaries, a process that died)."""


ASSETS_SCRIPT = Path(__file__).resolve().parents[3].parent / "shared" / "k8s" / "assets.sh"
"""Where a source checkout finds the binaries when ``KUBEBUILDER_ASSETS`` is unset: the
script beside it (``../shared/k8s/assets.sh``, as the Makefile uses) that unpacks them and
prints their folder."""


def assets_dir() -> Path | None:
    """The folder of the control-plane binaries: ``KUBEBUILDER_ASSETS``, or when it is unset
    the folder :data:`ASSETS_SCRIPT` prints (if that script exists). None when neither
    gives a folder holding ``etcd`` and ``kube-apiserver``."""
    value = os.environ.get(ASSETS_ENV)
    if not value and os.access(ASSETS_SCRIPT, os.X_OK):
        try:
            done = subprocess.run(
                [str(ASSETS_SCRIPT)], capture_output=True, text=True, check=True, timeout=300
            )
        except (OSError, subprocess.SubprocessError):
            return None
        value = done.stdout.strip()
    if not value:
        return None
    folder = Path(value)
    if all((folder / b).is_file() for b in ("etcd", "kube-apiserver")):
        return folder
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControlPlane:
    """etcd and kube-apiserver of ``KUBEBUILDER_ASSETS`` in a temporary directory.

    ``users`` maps extra token users to their groups (tokens are the user names
    prefixed by ``token-``); the admin user is in ``system:masters``. ``apiserver_args``
    are added to kube-apiserver's command line. ``openapi_front``: clients reach the API
    server through an :class:`~kubesched.testing.openapi_front.OpenAPIFront` in this
    process, so that ``kubectl apply`` can read its OpenAPI documents and validate.
    """

    def __init__(
        self,
        assets: Path | str | None = None,
        *,
        apiserver_args: tuple[str, ...] = (),
        startup_timeout: float = 90.0,
        openapi_front: bool = False,
    ) -> None:
        folder = Path(assets) if assets is not None else assets_dir()
        if folder is None:
            raise EnvtestError(
                f"{ASSETS_ENV} is not set to a folder holding etcd and kube-apiserver "
                "(get them with 'setup-envtest use 1.36.x' and export the folder it prints)"
            )
        self.assets = folder
        self.apiserver_args = apiserver_args
        self.startup_timeout = startup_timeout
        self.openapi_front = openapi_front
        self._front: OpenAPIFront | None = None
        self.dir: Path | None = None
        self.etcd_port = 0
        self.port = 0
        self._etcd: subprocess.Popen | None = None
        self._apiserver: subprocess.Popen | None = None
        self._controller_manager: subprocess.Popen | None = None
        self._scheduler: subprocess.Popen | None = None
        self._users: dict[str, tuple[str, ...]] = {"admin": ("system:masters",)}
        self._token_webhook: TokenWebhook | None = None

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> ControlPlane:
        """Start etcd, then kube-apiserver; return once ``/readyz`` answers ok."""
        self.dir = Path(tempfile.mkdtemp(prefix="kubesched-envtest-"))
        try:
            self._write_keys()
            self._write_tokens()
            self._token_webhook = TokenWebhook().start()
            self._token_webhook.write_config(self.dir / "token-webhook.kubeconfig")
            self.etcd_port = free_port()
            self._start_etcd()
            self.port = free_port()
            self._start_apiserver()
            if self.openapi_front:
                certs = self.dir / "certs"
                self._front = OpenAPIFront(
                    self.port, certs / "apiserver.crt", certs / "apiserver.key"
                ).start()
            self.write_kubeconfig(self.kubeconfig, ADMIN_TOKEN)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop kube-scheduler and kube-controller-manager (if started), kube-apiserver and
        etcd (by PID) and remove the temporary directory."""
        if self._front is not None:
            self._front.stop()
            self._front = None
        for proc in (self._scheduler, self._controller_manager, self._apiserver, self._etcd):
            _terminate(proc)
        self._scheduler = self._controller_manager = self._apiserver = self._etcd = None
        if self._token_webhook is not None:
            self._token_webhook.stop()
            self._token_webhook = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def restart_apiserver(self, down_for: float = 0.0) -> None:
        """Stop kube-apiserver (every watch drops), wait ``down_for`` seconds, start it
        again on the same port over the same etcd."""
        self.stop_apiserver()
        time.sleep(down_for)
        self.start_apiserver()

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (every watch drops; etcd keeps the data) until
        :meth:`start_apiserver`: an outage that lasts until the caller saw what it waits
        for."""
        _terminate(self._apiserver)

    def start_apiserver(self) -> None:
        """Start kube-apiserver again after :meth:`stop_apiserver`, on the same port over
        the same etcd; return once ``/readyz`` answers ok."""
        self._start_apiserver()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what clients need --------------------------------------------------------------
    @property
    def url(self) -> str:
        """The API server's address (its front's, with ``openapi_front``)."""
        return f"https://127.0.0.1:{self._front.port if self._front else self.port}"

    @property
    def kubeconfig(self) -> Path:
        """The admin user's kubeconfig file."""
        assert self.dir is not None, "the control plane is not started"
        return self.dir / "admin.kubeconfig"

    def token(self, user: str) -> str:
        """The bearer token of ``user``."""
        return ADMIN_TOKEN if user == "admin" else f"token-{user}"

    def get(self, path: str) -> Any:
        """GET ``path`` (``/openapi/v3``, ``/version``...) as the admin: the JSON answer."""
        request = urllib.request.Request(
            f"{self.url}{path}", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        with urllib.request.urlopen(request, context=_insecure_context(), timeout=60) as resp:
            return json.loads(resp.read())

    def dry_run_create(
        self, manifest: dict[str, Any], *, yaml_text: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """POST ``manifest`` with ``dryRun=All`` and ``fieldValidation=Strict`` (as
        ``kubectl apply`` does) as the admin: the HTTP status and the answer (the object as
        it would be stored, or the ``Status`` of a refusal, whose ``details.causes`` list
        every field error). Nothing is stored. ``yaml_text``: send this YAML (the same
        object, written with what JSON cannot say, such as repeated keys) instead."""
        body, content_type = (
            (yaml_text.encode(), "application/yaml")
            if yaml_text is not None
            else (json.dumps(manifest).encode(), "application/json")
        )
        request = urllib.request.Request(
            f"{self.url}{collection_path(manifest)}?dryRun=All&fieldValidation=Strict",
            data=body,
            method="POST",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": content_type},
        )
        try:
            with urllib.request.urlopen(request, context=_insecure_context(), timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def verdict(self, manifest: dict[str, Any]) -> tuple[str | None, list[str]]:
        """What the API server says of creating ``manifest`` (a dry run): its refusal's
        message (None when it would accept the object) and the causes as
        ``field: message``, one per field error (none when it cannot decode the object:
        400 BadRequest). Raises ``EnvtestError`` on any other answer."""
        code, answer = self.dry_run_create(manifest)
        if code < 300:
            return None, []
        if code == 400:
            return answer["message"], []
        if code != 422:
            raise EnvtestError(f"HTTP {code} for a {manifest.get('kind')}: {answer.get('message')}")
        causes = [
            f"{c['field']}: {c['message']}" if c.get("field") else c["message"]
            for c in answer.get("details", {}).get("causes", [])
        ]
        return answer["message"], causes

    def kube_scheduler_command(
        self,
        workdir: Path,
        settings: dict[str, Any] | None = None,
        args: tuple[str, ...] = (),
    ) -> list[str]:
        """The command line of the real kube-scheduler of ``KUBEBUILDER_ASSETS`` for this
        control plane: default profile, QPS/burst 5000, no leader election, ``/metrics``
        open to anonymous requests, its configuration and serving certificate written
        under ``workdir``. ``settings``
        adds top-level KubeSchedulerConfiguration fields (e.g. ``percentageOfNodesToScore``),
        ``args`` command-line flags (e.g. ``--feature-gates=...``).
        Raises ``EnvtestError`` when the assets have no kube-scheduler."""
        binary = self.assets / "kube-scheduler"
        if not binary.is_file():
            raise EnvtestError(f"no kube-scheduler in {self.assets}")
        config = workdir / "kube-scheduler.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {
                        "kubeconfig": str(self.kubeconfig),
                        "qps": 5000,
                        "burst": 5000,
                    },
                    "leaderElection": {"leaderElect": False},
                    **(settings or {}),
                }
            )
        )
        return [
            str(binary),
            f"--config={config}",
            f"--secure-port={free_port()}",
            "--bind-address=127.0.0.1",
            f"--cert-dir={workdir / 'kube-scheduler-certs'}",
            # Its /metrics without credentials, as /healthz: the bench reads its attempt
            # latency there.
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            *args,
        ]

    def start_controller_manager(
        self,
        controllers: tuple[str, ...],
        *,
        leader_elect: bool = False,
        args: tuple[str, ...] = (),
    ) -> None:
        """Start the assets' kube-controller-manager running only ``controllers`` (such as
        ``persistentvolume-binder-controller``, or ``*`` and ``-name`` as its
        ``--controllers`` flag takes them) as the admin; it stops with the control plane.
        ``leader_elect``: hold its Lease in kube-system, so that tools which look for a
        running controller manager (``kubesched compare``) see it. ``args``: more flags
        (``--feature-gates=...``). Raises ``EnvtestError`` when the assets have no
        kube-controller-manager or it is started already."""
        binary = self.assets / "kube-controller-manager"
        if not binary.is_file():
            raise EnvtestError(f"no kube-controller-manager in {self.assets}")
        if self._controller_manager is not None:
            raise EnvtestError("kube-controller-manager is started already")
        d = self._require_dir()
        self._controller_manager = self._spawn(
            "kube-controller-manager",
            [
                str(binary),
                f"--kubeconfig={self.kubeconfig}",
                f"--leader-elect={str(leader_elect).lower()}",
                f"--controllers={','.join(controllers)}",
                f"--service-account-private-key-file={d / 'sa.key'}",
                "--use-service-account-credentials=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                *args,
            ],
        )

    def start_scheduler(
        self, settings: dict[str, Any] | None = None, args: tuple[str, ...] = ()
    ) -> None:
        """Start the assets' kube-scheduler (see :meth:`kube_scheduler_command` for
        ``settings`` and ``args``); it stops with the control plane. Raises
        ``EnvtestError`` when the assets have no kube-scheduler or it is started already."""
        if self._scheduler is not None:
            raise EnvtestError("kube-scheduler is started already")
        d = self._require_dir()
        self._scheduler = self._spawn(
            "kube-scheduler", self.kube_scheduler_command(d, settings, args)
        )

    def add_user(self, user: str, groups: tuple[str, ...] = ()) -> Path:
        """Add a token user in ``groups`` and return a kubeconfig for that user. The API
        server asks this process's token webhook about the tokens it does not know, so
        that no restart is needed (a restart drops every watch and costs seconds)."""
        if self._token_webhook is None:
            raise EnvtestError("the control plane is not started")
        self._token_webhook.users[self.token(user)] = (user, groups)
        path = self._require_dir() / f"{user}.kubeconfig"
        self.write_kubeconfig(path, self.token(user))
        return path

    def write_kubeconfig(self, path: Path, token: str, name: str = "envtest") -> Path:
        """A kubeconfig for the server with ``token``, trusting its self-signed cert;
        ``name`` names its cluster, user (with ``-user``) and current context."""
        ca = self._require_dir() / "certs" / "apiserver.crt"
        user = f"{name}-user"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {"server": self.url, "certificate-authority": str(ca)},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
            "current-context": name,
        }
        path.write_text(json.dumps(config, indent=2))
        return path

    def exited(self) -> str | None:
        """The name of a started process that has ended (``kube-apiserver``, ...), or None
        while they all run."""
        for name, proc in self._processes():
            if proc.poll() is not None:
                return name
        return None

    def pids(self) -> list[int]:
        """The process IDs of every process started and not yet stopped."""
        return [proc.pid for _, proc in self._processes()]

    # -- internals ----------------------------------------------------------------------
    def _processes(self) -> list[tuple[str, subprocess.Popen]]:
        named = (
            ("etcd", self._etcd),
            ("kube-apiserver", self._apiserver),
            ("kube-controller-manager", self._controller_manager),
            ("kube-scheduler", self._scheduler),
        )
        return [(name, proc) for name, proc in named if proc is not None]

    def _require_dir(self) -> Path:
        if self.dir is None:
            raise EnvtestError("the control plane is not started")
        return self.dir

    def _write_keys(self) -> None:
        d = self._require_dir()
        key, pub = d / "sa.key", d / "sa.pub"
        for cmd in (
            ["openssl", "genrsa", "-out", str(key), "2048"],
            ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(pub)],
        ):
            try:
                subprocess.run(cmd, check=True, capture_output=True)
            except (OSError, subprocess.CalledProcessError) as err:
                raise EnvtestError(f"could not make the service-account key: {err}") from err

    def _write_tokens(self) -> None:
        lines = [
            f'{self.token(user)},{user},{user},"{",".join(groups)}"'
            if groups
            else f"{self.token(user)},{user},{user}"
            for user, groups in self._users.items()
        ]
        (self._require_dir() / "tokens.csv").write_text("\n".join(lines) + "\n")

    def _start_etcd(self) -> None:
        d = self._require_dir()
        peer = free_port()
        self._etcd = self._spawn(
            "etcd",
            [
                str(self.assets / "etcd"),
                "--data-dir",
                str(d / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "error",
            ],
        )

    def _start_apiserver(self) -> None:
        d = self._require_dir()
        self._apiserver = self._spawn(
            "kube-apiserver",
            [
                str(self.assets / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={d / 'certs'}",
                f"--token-auth-file={d / 'tokens.csv'}",
                f"--authentication-token-webhook-config-file={d / 'token-webhook.kubeconfig'}",
                "--authentication-token-webhook-version=v1",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={d / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                *self.apiserver_args,
            ],
        )
        self._wait_ready()

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self._require_dir() / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        try:
            # A session of its own: a Ctrl-C in the terminal reaches only the program that
            # started it, which then stops its processes in order (the API server first).
            return subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        except OSError as err:
            raise EnvtestError(f"could not start {name}: {err}") from err
        finally:
            log.close()

    def _wait_ready(self) -> None:
        ctx = _insecure_context()
        request = urllib.request.Request(
            f"{self.url}/readyz", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            for name, proc in (("etcd", self._etcd), ("kube-apiserver", self._apiserver)):
                if proc is not None and proc.poll() is not None:
                    raise EnvtestError(
                        f"{name} exited with {proc.returncode}; see {self.dir}/{name}.log"
                    )
            try:
                with urllib.request.urlopen(request, context=ctx, timeout=2) as resp:
                    if resp.read().strip() == b"ok":
                        return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise EnvtestError(f"kube-apiserver not ready after {self.startup_timeout:.0f}s")


class TokenWebhook:
    """kube-apiserver's token webhook (``TokenReview``, authentication.k8s.io/v1) on a free
    127.0.0.1 port in this process: ``users`` maps a bearer token to its user name and
    groups, and may grow while the API server runs (its static token file may not)."""

    def __init__(self) -> None:
        self.users: dict[str, tuple[str, tuple[str, ...]]] = {}
        users = self.users

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                found = users.get(review.get("spec", {}).get("token", ""))
                status: dict[str, Any] = {"authenticated": found is not None}
                if found is not None:
                    name, groups = found
                    status["user"] = {"username": name, "uid": name, "groups": list(groups)}
                body = json.dumps({**review, "status": status}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # one line per review on stderr would drown the tests' output

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    def start(self) -> TokenWebhook:
        """Serve on a thread of this process."""
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the port."""
        self._server.shutdown()
        self._server.server_close()

    def write_config(self, path: Path) -> Path:
        """The kubeconfig that kube-apiserver's ``--authentication-token-webhook-config-file``
        takes, pointing at this webhook."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "tokens",
                    "cluster": {"server": f"http://127.0.0.1:{self._server.server_address[1]}"},
                }
            ],
            "users": [{"name": "apiserver", "user": {}}],
            "contexts": [{"name": "tokens", "context": {"cluster": "tokens", "user": "apiserver"}}],
            "current-context": "tokens",
        }
        path.write_text(json.dumps(config))
        return path


def _insecure_context() -> ssl.SSLContext:
    # The serving certificate is self-signed in a temporary directory, on 127.0.0.1.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


_COLLECTIONS = {
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Node": "/api/v1/nodes",
    "Namespace": "/api/v1/namespaces",
    "Service": "/api/v1/namespaces/{ns}/services",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs",
    "ReplicationController": "/api/v1/namespaces/{ns}/replicationcontrollers",
    "RuntimeClass": "/apis/node.k8s.io/v1/runtimeclasses",
    "Lease": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "LimitRange": "/api/v1/namespaces/{ns}/limitranges",
    "ResourceQuota": "/api/v1/namespaces/{ns}/resourcequotas",
}


_VERSIONED_COLLECTIONS = {
    # The same kind in two groups: kube-scheduler's gang scheduling (v1.36, alpha) and
    # scheduler-plugins' Coscheduling CRD.
    ("scheduling.k8s.io/v1alpha2", "PodGroup"): (
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups"
    ),
    ("scheduling.k8s.io/v1alpha2", "Workload"): (
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/workloads"
    ),
    (
        "resource.k8s.io/v1beta2",
        "DeviceTaintRule",
    ): "/apis/resource.k8s.io/v1beta2/devicetaintrules",
    ("resource.k8s.io/v1alpha3", "DeviceTaintRule"): (
        "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
    ),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): (
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"
    ),
    # scheduler-plugins' network-aware CRDs (not in the recorded schema).
    ("appgroup.diktyo.x-k8s.io/v1alpha1", "AppGroup"): (
        "/apis/appgroup.diktyo.x-k8s.io/v1alpha1/namespaces/{ns}/appgroups"
    ),
    ("networktopology.diktyo.x-k8s.io/v1alpha1", "NetworkTopology"): (
        "/apis/networktopology.diktyo.x-k8s.io/v1alpha1/namespaces/{ns}/networktopologies"
    ),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    ),
}
"""Collections of kinds whose name alone does not say where they go."""


def collection_path(manifest: dict[str, Any]) -> str:
    """The API path a ``manifest`` is POSTed to: of a kind the tests create, or of any
    kind the recorded API schema serves at the manifest's apiVersion."""
    namespace = (manifest.get("metadata") or {}).get("namespace") or "default"
    versioned = _VERSIONED_COLLECTIONS.get((manifest.get("apiVersion"), manifest["kind"]))
    path = versioned or _COLLECTIONS.get(manifest["kind"])
    if path is None:
        served = served_kind(manifest.get("apiVersion") or "", manifest["kind"])
        if served is None:
            raise KeyError(f"no collection for {manifest.get('apiVersion')} {manifest['kind']}")
        root = f"/apis/{served.api_version}" if served.group else "/api/v1"
        scope = "/namespaces/{ns}" if served.namespaced else ""
        path = f"{root}{scope}/{served.resource}"
    return path.format(ns=namespace)


def create_object(client: Any, manifest: dict[str, Any]) -> dict[str, Any]:
    """POST ``manifest`` (a dict; a builder's ``uid`` is dropped, the server assigns one)
    to its collection with ``client`` (a ``KubeClient``); the created object."""
    meta = {k: v for k, v in (manifest.get("metadata") or {}).items() if k != "uid"}
    return client.request("POST", collection_path(manifest), body={**manifest, "metadata": meta})


def create_objects(client: Any, manifests: list[dict[str, Any]], workers: int = 16) -> None:
    """Create many objects from ``workers`` threads (thousands take seconds, not minutes);
    the first error is raised once all threads are done."""
    errors: list[BaseException] = []

    def work(chunk: list[dict[str, Any]]) -> None:
        try:
            for manifest in chunk:
                create_object(client, manifest)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work, args=(manifests[i::workers],)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _terminate(proc: subprocess.Popen | None, timeout: float = 15.0) -> None:
    """End one child process: SIGTERM, then SIGKILL if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
