"""A tiny cluster and workload, as manifests on disk and as parsed objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import load_manifests

CLUSTER = """\
apiVersion: v1
kind: Node
metadata:
  name: node-a1
  labels: {topology.kubernetes.io/zone: zone-a}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-a2
  labels: {topology.kubernetes.io/zone: zone-a}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-b1
  labels: {topology.kubernetes.io/zone: zone-b}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-b2
  labels: {topology.kubernetes.io/zone: zone-b}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110", nvidia.com/gpu: "2"}
"""

WORKLOAD = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: 500m, memory: 512Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: default, labels: {app: batch}}
spec:
  priorityClassName: high
  containers:
  - name: main
    image: busybox
    resources: {requests: {cpu: "3", memory: 2Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: default}
spec:
  containers:
  - name: main
    image: busybox
    resources: {requests: {cpu: "6"}}
---
apiVersion: v1
kind: Pod
metadata: {name: typo, namespace: default, labels: {app: typo}}
spec:
  priorityClassName: hihg
  containers: [{name: main, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: default}
spec:
  schedulerName: other-scheduler
  containers: [{name: main, image: busybox}]
"""

# Two low-priority pods already running on node-b1 and a high-priority pod that needs
# their room: preemption.
PREEMPTION = """\
apiVersion: v1
kind: Node
metadata: {name: solo, labels: {topology.kubernetes.io/zone: z}}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Pod
metadata: {name: low-1, namespace: default}
spec:
  nodeName: solo
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: low-2, namespace: default}
spec:
  nodeName: solo
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: default}
spec:
  priorityClassName: high
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}}}]
"""


@pytest.fixture
def example_dir(tmp_path: Path) -> Path:
    """A directory with cluster.yaml and workload.yaml."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "workload.yaml").write_text(WORKLOAD)
    return tmp_path


@pytest.fixture
def example_objects(example_dir: Path) -> list:
    return load_manifests([example_dir])


@pytest.fixture
def preemption_objects(tmp_path: Path) -> list:
    path = tmp_path / "preemption.yaml"
    path.write_text(PREEMPTION)
    return load_manifests([path])


def without_notices(err: str) -> str:
    """Standard error without the ``notice:`` lines (the example's nodes lack the labels
    every kubelet sets, which a run says)."""
    return "".join(
        line for line in err.splitlines(keepends=True) if not line.startswith("notice: ")
    )
