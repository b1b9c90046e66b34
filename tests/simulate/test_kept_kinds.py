"""Every built-in kind is accepted: unmodelled ones validated, kept and listed as not
simulated; custom resources skipped with a notice; none of them aborts a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.api import KINDS, parse_manifests, resolve_kind
from kubesched.api.manifests import KeptObject, kept_kinds
from kubesched.api.schema import served_kinds
from kubesched.backend.memory.store import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.errors import UserInputError
from kubesched.notices import collecting_notices
from kubesched.simulate import build_report_data, simulate

from .test_cli import run_cli

HELM_OUTPUT = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {LOG_LEVEL: debug}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret}
type: Opaque
data: {password: cGFzcw==}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: web}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web}
subjects: [{kind: ServiceAccount, name: web}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules:
  - host: web.example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec: {podSelector: {}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
spec: {endpoints: [{port: http}]}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed}
- apiVersion: example.com/v1
  kind: Widget
  metadata: {name: w}
"""


def test_every_served_kind_is_read() -> None:
    for served in served_kinds():
        cls = resolve_kind(served.kind)
        assert cls is not None, served.kind
        assert cls.namespaced == served.namespaced, served.kind


def test_modelled_kinds_keep_their_models_and_others_are_kept() -> None:
    with collecting_notices() as notices:
        objs = parse_manifests(HELM_OUTPUT, source="chart.yaml")
    kinds = [o.kind for o in objs]
    assert kinds == [
        "ServiceAccount",
        "ConfigMap",
        "Secret",
        "Role",
        "RoleBinding",
        "Ingress",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "CronJob",
        "ConfigMap",
    ]
    assert all(isinstance(o, KeptObject) for o in objs if o.kind not in KINDS)
    cm = objs[1]
    assert cm.key == "default/web-config" and cm.to_dict()["data"] == {"LOG_LEVEL": "debug"}
    assert [(n.obj, n.message) for n in notices] == [
        (
            "document 10 (ServiceMonitor web)",
            "custom resource monitoring.coreos.com/v1 ServiceMonitor is not a kind kubesched "
            "reads (no plugin registers it); skipped",
        ),
        (
            "document 11 items[1] (Widget w)",
            "custom resource example.com/v1 Widget is not a kind kubesched reads (no plugin "
            "registers it); skipped",
        ),
    ]


def test_kept_objects_are_validated() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\ndata: {a: b}\n"
    with pytest.raises(UserInputError) as exc:
        parse_manifests(text, source="c.yaml")
    assert exc.value.message == 'ConfigMap "Bad_Name" is invalid'
    assert exc.value.path == "metadata.name"
    with pytest.raises(UserInputError, match='unknown field "rule"'):
        parse_manifests(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrule: []\n"
        )


def test_a_built_in_kind_name_in_a_foreign_group_is_a_custom_resource() -> None:
    with collecting_notices() as notices:
        objs = parse_manifests("apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert objs == [] and len(notices) == 1


def test_the_store_keeps_them_and_the_report_lists_them(example_objects) -> None:
    kept = parse_manifests(HELM_OUTPUT)
    run = simulate([*example_objects, *kept], seed=1)
    data = build_report_data(run)
    assert data["notSimulated"] == [
        {"kind": "ConfigMap", "count": 2},
        {"kind": "Ingress", "count": 1},
        {"kind": "NetworkPolicy", "count": 1},
        {"kind": "Role", "count": 1},
        {"kind": "RoleBinding", "count": 1},
        {"kind": "Secret", "count": 1},
        {"kind": "ServiceAccount", "count": 1},
    ]
    assert not any("ConfigMap" in r.source_object_key for r in run.rejections)
    assert {"ConfigMap", "Role"} <= set(kept_kinds())


def test_the_store_accepts_a_kept_kind_and_updates_it() -> None:
    (cm,) = parse_manifests("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n")
    cluster = MemoryCluster(FakeClock())
    cluster.apply([cm])
    assert [o.name for o in cluster.objects("ConfigMap")] == ["c"]
    cluster.apply([cm])
    assert cluster.get("ConfigMap", "default", "c").to_dict()["data"] == {"a": "b"}


def test_helm_output_is_simulated(example_dir: Path, capsys) -> None:
    (example_dir / "chart.yaml").write_text(HELM_OUTPUT)
    code, out, err = run_cli(capsys, "simulate", str(example_dir), "-o", "json")
    assert code == 0, err
    not_simulated = {k["kind"] for k in json.loads(out)["notSimulated"]}
    # CronJob and HorizontalPodAutoscaler have controllers here: simulated, not merely kept.
    assert "ConfigMap" in not_simulated
    assert not_simulated.isdisjoint({"CronJob", "HorizontalPodAutoscaler"})
    notices = [line for line in err.splitlines() if line.startswith("notice:")]
    assert sum("custom resource" in line for line in notices) == 2  # one per custom resource
    code, out, err = run_cli(capsys, "simulate", str(example_dir))
    assert code == 0, err
    assert "Kept, not simulated: ConfigMap 2, Ingress 1" in out
