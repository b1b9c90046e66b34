"""The embedded cluster's controllers answer as kube-controller-manager v1.36 does: the
same manifests on a real control plane (etcd, kube-apiserver, kube-controller-manager)
and on the embedded cluster give the same adoptions, Job conditions, claim events and
CronJob verdicts."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.api.cron import ScheduleError, parse_schedule
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.kubelet import EXIT_CODE_ANNOTATION, RUN_SECONDS_ANNOTATION
from kubesched.clock import FakeClock
from kubesched.testing.envtest import (
    ADMIN_TOKEN,
    ControlPlane,
    EnvtestError,
    _insecure_context,
    assets_dir,
)
from tests.api.test_cron import REFUSED

from .conftest import wait_for

pytestmark = pytest.mark.envtest

NS = "/api/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"


@pytest.fixture(scope="module")
def kcm() -> Iterator[ControlPlane]:
    """A control plane of its own with the controllers running (the session's one may
    have a kube-controller-manager of other controllers)."""
    if assets_dir() is None:
        pytest.skip("KUBEBUILDER_ASSETS does not name the control plane's binaries")
    with ControlPlane() as cp:
        try:
            cp.start_controller_manager(
                ("*", "-serviceaccount-token-controller", "-node-lifecycle-controller")
            )
        except EnvtestError as err:
            pytest.skip(str(err))
        yield cp


def call(cp: ControlPlane, method: str, path: str, body: Any = None) -> dict[str, Any]:
    request = urllib.request.Request(
        cp.url + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=_insecure_context(), timeout=30) as resp:
        return json.loads(resp.read())


def bare_pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }


def template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def embedded(*manifests: dict[str, Any]) -> MemoryCluster:
    cluster = MemoryCluster(FakeClock())
    for m in manifests:
        cluster.create(parse_object(m))
    return cluster


def real_owners(cp: ControlPlane, prefix: str) -> dict[str, str | None]:
    out = {}
    for p in call(cp, "GET", f"{NS}/pods")["items"]:
        if p["metadata"]["name"].startswith(prefix):
            refs = [r for r in p["metadata"].get("ownerReferences", []) if r.get("controller")]
            out[p["metadata"]["name"]] = refs[0]["kind"] if refs else None
    return out


def owned(cp: ControlPlane, prefix: str, adopted: str, count: int) -> dict | None:
    """The pods' owners once there are ``count`` pods and ``adopted`` has an owner."""
    found = real_owners(cp, prefix)
    return found if len(found) == count and found.get(adopted) else None


def test_a_replication_controller_adopts_a_matching_bare_pod(kcm: ControlPlane):
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"app": "rc"}, "template": template({"app": "rc"})},
    }
    orphan = bare_pod("rc-orphan", {"app": "rc"})
    call(kcm, "POST", f"{NS}/pods", orphan)
    call(kcm, "POST", f"{NS}/replicationcontrollers", rc)
    real = wait_for(lambda: owned(kcm, "rc-", "rc-orphan", 2), 30, "the controller's pods")
    time.sleep(2)  # a surplus pod would be made (and seen) by now
    assert real_owners(kcm, "rc-") == real
    ours = {p.name: p.metadata.controller_ref.kind for p in embedded(orphan, rc).pods()}
    assert real["rc-orphan"] == ours["rc-orphan"] == "ReplicationController"
    assert len(real) == len(ours) == 2


def test_a_stateful_set_adopts_only_pods_named_by_its_ordinals(kcm: ControlPlane):
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "podManagementPolicy": "Parallel",
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": template({"app": "db"}),
        },
    }
    first = [bare_pod("db-1", {"app": "db"}), bare_pod("db-x", {"app": "db"})]
    for p in first:
        call(kcm, "POST", f"{NS}/pods", p)
    call(kcm, "POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    real = wait_for(lambda: owned(kcm, "db-", "db-1", 4), 30, "the stateful set's pods")
    cluster = embedded(*first, sts)
    ours = {
        p.name: (p.metadata.controller_ref.kind if p.metadata.controller_ref else None)
        for p in cluster.pods()
    }
    assert ours == real
    real_labels = call(kcm, "GET", f"{NS}/pods/db-1")["metadata"]["labels"]
    ours_labels = cluster.get("Pod", "default", "db-1").metadata.labels
    assert ours_labels == real_labels


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**spec, "template": template({}, restartPolicy="Never")},
    }


def finish(cp: ControlPlane, pod: dict[str, Any], phase: str) -> None:
    """What a kubelet would write when the pod's container ends."""
    code = 0 if phase == "Succeeded" else 1
    pod["status"] = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "c",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "startedAt": "2026-01-01T00:00:00Z",
                        "finishedAt": "2026-01-01T00:00:01Z",
                    }
                },
            }
        ],
    }
    call(cp, "PUT", f"{NS}/pods/{pod['metadata']['name']}/status", pod)


def real_conditions(cp: ControlPlane, name: str, final: str) -> list[tuple[str, str, str]]:
    def done() -> list[tuple[str, str, str]] | None:
        status = call(cp, "GET", f"{BATCH}/jobs/{name}").get("status", {})
        conds = [(c["type"], c["reason"], c["message"]) for c in status.get("conditions", [])]
        return conds if any(c[0] == final for c in conds) else None

    return wait_for(done, 60, f"job {name} to be {final}")


def embedded_conditions(manifest: dict[str, Any], run: str, code: str) -> list[tuple]:
    ann = manifest["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})
    ann.update({RUN_SECONDS_ANNOTATION: run, EXIT_CODE_ANNOTATION: code})
    cluster = embedded({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}, manifest)
    while (when := cluster.next_event_time()) is not None:
        for p in cluster.pods():
            if not p.spec.node_name and p.metadata.deletion_timestamp is None:
                cluster.bind(p, "n1")
        cluster.clock.set(max(when, cluster.now()))
        cluster.advance()
        for p in cluster.pods():
            if not p.spec.node_name and p.metadata.deletion_timestamp is None:
                cluster.bind(p, "n1")
    j = cluster.get("Job", "default", manifest["metadata"]["name"])
    return [(c.type, c.reason, c.message) for c in j.status.conditions]


@pytest.mark.parametrize(
    ("name", "spec", "phase", "final"),
    [
        ("done", {"completions": 2, "parallelism": 1}, "Succeeded", "Complete"),
        ("failed", {"backoffLimit": 0}, "Failed", "Failed"),
    ],
    ids=["completions", "backoff-limit"],
)
def test_job_conditions(kcm: ControlPlane, name: str, spec: dict, phase: str, final: str):
    manifest = job(name, **spec)
    call(kcm, "POST", f"{BATCH}/jobs", manifest)
    finished: set[str] = set()

    def run_pods() -> bool:
        for p in call(kcm, "GET", f"{NS}/pods")["items"]:
            pod_name = p["metadata"]["name"]
            if pod_name.startswith(f"{name}-") and pod_name not in finished:
                finished.add(pod_name)
                finish(kcm, p, phase)
        status = call(kcm, "GET", f"{BATCH}/jobs/{name}").get("status", {})
        return any(c["type"] == final for c in status.get("conditions", []))

    wait_for(run_pods, 60, f"job {name} to be {final}", every=0.5)
    real = real_conditions(kcm, name, final)
    ours = embedded_conditions(job(name, **spec), "1", "0" if phase == "Succeeded" else "1")
    assert ours == real


def test_job_deadline(kcm: ControlPlane):
    call(kcm, "POST", f"{BATCH}/jobs", job("late", activeDeadlineSeconds=2))
    real = real_conditions(kcm, "late", "Failed")
    ours = embedded_conditions(job("late", activeDeadlineSeconds=2), "3600", "0")
    assert ours == real


def test_a_claim_without_a_provisioner_waits_with_the_same_event(kcm: ControlPlane):
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "hostpath"},
        "provisioner": "k8s.io/minikube-hostpath",
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "storageClassName": "hostpath",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    call(kcm, "POST", "/apis/storage.k8s.io/v1/storageclasses", sc)
    call(kcm, "POST", f"{NS}/persistentvolumeclaims", pvc)

    def waiting() -> list[tuple[str, str, str]] | None:
        found = [
            (e["type"], e["reason"], e["message"])
            for e in call(kcm, "GET", f"{NS}/events")["items"]
            if e["involvedObject"]["name"] == "data"
        ]
        return found or None

    real = wait_for(waiting, 30, "the claim's event")
    assert call(kcm, "GET", f"{NS}/persistentvolumeclaims/data")["status"]["phase"] == "Pending"
    cluster = embedded(sc, pvc)
    assert cluster.get("PersistentVolumeClaim", "default", "data").status.phase == "Pending"
    assert [(e.type, e.reason, e.message) for e in cluster.events] == real


@pytest.mark.parametrize(("schedule", "message"), REFUSED, ids=[s for s, _ in REFUSED])
def test_refused_schedules(kcm: ControlPlane, schedule: str, message: str):
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"spec": {"template": template({}, restartPolicy="Never")}},
        },
    }
    real, causes = kcm.verdict(manifest)
    assert causes == [f'spec.schedule: Invalid value: "{schedule}": {message}']
    with pytest.raises(ScheduleError, match=None) as err:
        parse_schedule(schedule)
    assert str(err.value) == message
    assert real is not None
