"""NodeResourceTopologyMatch and SySched under ``kubesched run``: their CRD kinds
(NodeResourceTopology, cluster-scoped; SeccompProfile, namespaced) are watched from the
CRDs' collections on a real kube-apiserver, NUMA alignment decides the node, and NUMA-aware
preemption the victim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.testing import make_node, make_pod
from tests.contrib.helpers import nrt_manifest as nrt

from .conftest import Api, wait_for

pytestmark = pytest.mark.envtest


def crd(group: str, version: str, kind: str, plural: str, scope: str) -> dict[str, Any]:
    """A CustomResourceDefinition whose fields are not checked."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            # A *.k8s.io group needs it, as the NRT API's own CRD has.
            "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"
            },
        },
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


NRT_API = "topology.node.k8s.io/v1alpha2"
SPO_API = "security-profiles-operator.x-k8s.io/v1beta1"
CRDS = [
    crd(
        "topology.node.k8s.io",
        "v1alpha2",
        "NodeResourceTopology",
        "noderesourcetopologies",
        "Cluster",
    ),
    crd(
        "security-profiles-operator.x-k8s.io",
        "v1beta1",
        "SeccompProfile",
        "seccompprofiles",
        "Namespaced",
    ),
]


@pytest.fixture
def crds(api: Api):
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    existing = {c["metadata"]["name"] for c in api.client.request("GET", crd_path)["items"]}
    for c in CRDS:
        # CRDs stay for the session, as the bench's PodGroup one does.
        if c["metadata"]["name"] not in existing:
            api.create(c)
    for path in (f"/apis/{NRT_API}/noderesourcetopologies", f"/apis/{SPO_API}/seccompprofiles"):
        wait_for(lambda p=path: api.client.request("GET", p), 30, f"{path} to be served")
    yield
    api.delete(f"/apis/{NRT_API}/noderesourcetopologies")
    api.delete(f"/apis/{SPO_API}/namespaces/default/seccompprofiles")


def test_numa_alignment_and_crd_kinds_on_a_cluster(api: Api, crds, in_process) -> None:
    for name in ("split", "wide"):
        api.create(make_node(name).capacity(cpu="16", memory="32Gi", pods=110).manifest())
    # Both nodes have 8 cpus free; on "split" they are 4 + 4 over its NUMA zones.
    nrts = f"/apis/{NRT_API}/noderesourcetopologies"
    api.client.request("POST", nrts, body=nrt("split", ("4", "4")))
    api.client.request("POST", nrts, body=nrt("wide", ("8", "0")))
    api.client.request(
        "POST",
        f"/apis/{SPO_API}/namespaces/default/seccompprofiles",
        body={
            "apiVersion": SPO_API,
            "kind": "SeccompProfile",
            "metadata": {"name": "all-syscalls", "namespace": "default"},
            "spec": {
                "defaultAction": "SCMP_ACT_ERRNO",
                "syscalls": [{"action": "SCMP_ACT_ALLOW", "names": ["read"]}],
            },
        },
    )
    runner = in_process(
        {
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "NodeResourceTopologyMatch"}, {"name": "SySched"}]
                        }
                    },
                }
            ]
        }
    )
    assert {"NodeResourceTopology", "SeccompProfile"} <= runner.cluster.watchable_kinds
    access = runner.cluster.required_access()
    assert ("watch", "topology.node.k8s.io", "noderesourcetopologies", "", "") in access
    assert ("list", "security-profiles-operator.x-k8s.io", "seccompprofiles", "", "") in access
    lister = runner.cluster.lister
    wait_for(
        lambda: lister.get_object("NodeResourceTopology", None, "split") is not None,
        30,
        "the NRT objects in the lister",
    )
    assert lister.get_object("SeccompProfile", "default", "all-syscalls") is not None
    gu = {"cpu": "6", "memory": "1Gi"}
    api.create(make_pod("numa").container(gu, gu).manifest())
    placed = wait_for(lambda: api.node_of("numa"), 30, "the pod to be bound")
    assert placed == "wide"
    # A second one fits no NUMA zone of either node (passthrough: the objects as written).
    api.create(make_pod("numa2").container(gu, gu).manifest())
    api.create(make_pod("numa3").container(gu, gu).manifest())
    cond = api.unschedulable("numa3")
    assert "cannot align pod" in cond["message"]
    # The agent reports a freed zone on "split": the NRT update moves the pending pod
    # at once (the plugin registers NodeResourceTopology Add|Update, as upstream's), long
    # before the periodic retry of unschedulable pods.
    freed = nrt("split", ("8", "4"))
    api.client.request(
        "PATCH",
        f"{nrts}/split",
        body={"zones": freed["zones"]},
        content_type="application/merge-patch+json",
    )
    assert wait_for(lambda: api.node_of("numa3"), 30, "the pod to be bound") == "split"


NUMA_PREEMPTION = Path(__file__).resolve().parents[2] / "examples" / "numa-topology" / "preemption"


def test_numa_aware_preemption_on_a_cluster(api: Api, crds, in_process) -> None:
    """The NUMA-aware preemption example through a real kube-apiserver: the placement
    attributes come back from the CRD's collection, and the pod evicted is the one pinned
    to the NUMA zone the preemptor needs (plain preemption would evict ``batch``)."""
    nrts = f"/apis/{NRT_API}/noderesourcetopologies"
    for doc in yaml.safe_load_all((NUMA_PREEMPTION / "cluster.yaml").read_text()):
        if doc["kind"] == "NodeResourceTopology":
            api.client.request("POST", nrts, body=doc)
        else:
            api.create(doc)
    runner = in_process(
        {
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                    "pluginConfig": [
                        {"name": "NodeResourceTopologyMatch", "args": {"preemptionMode": "Enabled"}}
                    ],
                }
            ]
        }
    )
    lister = runner.cluster.lister
    wait_for(
        lambda: lister.get_object("NodeResourceTopology", None, "worker-b") is not None,
        30,
        "the NRT objects in the lister",
    )
    (inference,) = yaml.safe_load_all((NUMA_PREEMPTION / "workload.yaml").read_text())
    api.create(inference)
    nominated = wait_for(
        lambda: ((api.pod("inference") or {}).get("status") or {}).get("nominatedNodeName"),
        30,
        "the preemptor to be nominated",
    )
    assert nominated == "worker-b"
    # No kubelet confirms the deletion: the victim stays terminating.
    wait_for(
        lambda: (api.pod("etl") or {}).get("metadata", {}).get("deletionTimestamp"),
        30,
        "etl to be preempted",
    )
    assert "deletionTimestamp" not in api.pod("batch")["metadata"]
    assert "deletionTimestamp" not in api.pod("analytics")["metadata"]
