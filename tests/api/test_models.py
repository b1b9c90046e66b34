"""The pydantic models read real manifests: camelCase, defaults, unknown fields, nulls."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kubesched.api import (
    Container,
    DaemonSet,
    Deployment,
    Job,
    KubeObject,
    Lease,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    PriorityClass,
    Quantity,
    ReplicaSet,
    ReplicationController,
    RuntimeClass,
    Service,
    StatefulSet,
)

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0",
        "namespace": "shop",
        "labels": {"app": "web"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "web",
                "uid": "u1",
                "controller": True,
                "blockOwnerDeletion": True,
            },
        ],
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "resourceVersion": "42",
        "managedFields": [{"manager": "kubectl"}],
    },
    "spec": {
        "nodeSelector": {"disktype": "ssd"},
        "priorityClassName": "high",
        "priority": 1000,
        "schedulingGates": [{"name": "wait"}],
        "tolerations": [
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 2,
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
        "containers": [
            {
                "name": "app",
                "image": "nginx",
                "stdin": True,
                "tty": True,
                "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}],
                "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": 1, "memory": "1Gi"}},
            }
        ],
        "initContainers": [{"name": "sidecar", "restartPolicy": "Always"}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
            {"name": "disk", "gcePersistentDisk": {"pdName": "d1"}},
        ],
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "n1",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    },
}


def test_pod_parses_camel_case_and_ignores_unknown_fields() -> None:
    pod = Pod.model_validate(POD)
    assert pod.key == "shop/web-0"
    assert pod.name == "web-0" and pod.namespace == "shop"
    assert pod.metadata.owner_references[0].block_owner_deletion is True
    assert pod.metadata.controller_ref is not None
    assert pod.metadata.controller_ref.kind == "StatefulSet"
    assert pod.metadata.creation_timestamp is not None
    assert pod.metadata.resource_version == "42"
    spec = pod.spec
    assert spec.node_selector == {"disktype": "ssd"}
    assert spec.scheduling_gates[0].name == "wait"
    assert spec.tolerations[0].toleration_seconds == 30
    tsc = spec.topology_spread_constraints[0]
    assert (tsc.max_skew, tsc.min_domains, tsc.match_label_keys) == (1, 2, ["pod-template-hash"])
    assert tsc.node_affinity_policy is None
    port = spec.containers[0].ports[0]
    assert (port.container_port, port.host_port, port.host_ip, port.protocol) == (
        80,
        8080,
        "10.0.0.1",
        "TCP",
    )
    assert spec.init_containers[0].restart_policy == "Always"
    assert spec.volumes[0].persistent_volume_claim.claim_name == "data-web-0"
    assert spec.volumes[1].gce_persistent_disk.pd_name == "d1"
    assert pod.status.nominated_node_name == "n1"
    assert pod.status.conditions[0].reason == "Unschedulable"


def test_pod_defaults() -> None:
    pod = Pod.model_validate({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    assert pod.metadata.namespace == "default"
    assert pod.key == "default/p"
    assert pod.api_version == "v1" and pod.kind == "Pod"
    assert pod.spec.scheduler_name == "default-scheduler"
    assert pod.spec.termination_grace_period_seconds == 30
    assert pod.spec.restart_policy == "Always"
    assert pod.spec.priority is None
    assert pod.spec.overhead is None
    assert pod.metadata.labels == {} and pod.spec.tolerations == []


def test_pod_requests_default_to_limits_per_resource() -> None:
    pod = Pod.model_validate(POD)
    res = pod.spec.containers[0].resources
    assert res.requests == {"cpu": Quantity("250m"), "memory": Quantity("1Gi")}


def test_pod_template_requests_are_not_defaulted() -> None:
    d = Deployment.model_validate(
        {
            "metadata": {"name": "d"},
            "spec": {
                "template": {"spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]}}
            },
        }
    )
    assert d.spec.template.spec.containers[0].resources.requests == {}


def test_host_network_defaults_host_ports() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "p"},
            "spec": {
                "hostNetwork": True,
                "containers": [{"ports": [{"containerPort": 53, "protocol": "UDP"}]}],
            },
        }
    )
    assert pod.spec.containers[0].ports[0].host_port == 53


def test_nulls_read_as_empty() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "p", "labels": None, "creationTimestamp": None},
            "spec": {
                "containers": [{"resources": {"requests": None}}],
                "tolerations": None,
                "nodeSelector": None,
            },
        }
    )
    assert pod.metadata.labels == {}
    assert pod.spec.tolerations == [] and pod.spec.node_selector == {}
    assert pod.spec.containers[0].resources.requests == {}


def test_build_in_python_with_snake_case() -> None:
    pod = Pod(spec=PodSpec(node_name="n1", containers=[Container(name="c")]))
    assert pod.spec.node_name == "n1"
    assert pod.metadata.namespace == "default"


def test_to_dict_round_trips_camel_case() -> None:
    pod = Pod.model_validate(POD)
    d = pod.to_dict()
    assert d["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"
    assert d["spec"]["containers"][0]["ports"][0]["hostIP"] == "10.0.0.1"
    assert d["metadata"]["ownerReferences"][0]["apiVersion"] == "apps/v1"
    assert Pod.model_validate(d) == pod


def test_node() -> None:
    node = Node.model_validate(
        {
            "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {
                "unschedulable": True,
                "podCIDR": "10.0.0.0/24",
                "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
            },
            "status": {
                "capacity": {"cpu": "4"},
                "allocatable": {"cpu": "3800m", "pods": 110},
                "images": [{"names": ["nginx:1"], "sizeBytes": 1000}],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    assert node.key == "n1" and node.namespace == ""
    assert node.spec.pod_cidr == "10.0.0.0/24"
    assert node.spec.taints[0].effect == "NoSchedule"
    assert node.status.allocatable["cpu"].milli_value() == 3800
    assert node.status.images[0].size_bytes == 1000
    assert Node().spec.unschedulable is False


@pytest.mark.parametrize(
    ("cls", "doc", "check"),
    [
        (
            Namespace,
            {"metadata": {"name": "shop", "labels": {"team": "a"}}},
            lambda o: o.key == "shop" and o.metadata.namespace is None,
        ),
        (
            Service,
            {"metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}, "clusterIP": "None"}},
            lambda o: o.spec.selector == {"app": "web"} and o.spec.cluster_ip == "None",
        ),
        (
            ReplicaSet,
            {"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}},
            lambda o: o.spec.replicas == 1 and o.spec.selector.match_labels == {"a": "b"},
        ),
        (
            Deployment,
            {"metadata": {"name": "d"}, "spec": {"replicas": 0}},
            lambda o: o.spec.replicas == 0,
        ),
        (
            StatefulSet,
            {"metadata": {"name": "s"}, "spec": {"serviceName": "web"}},
            lambda o: (
                o.spec.service_name == "web"
                and o.spec.pod_management_policy == "OrderedReady"
                and o.spec.replicas == 1
            ),
        ),
        (
            DaemonSet,
            {"metadata": {"name": "ds"}, "spec": {"template": {"spec": {"containers": []}}}},
            lambda o: o.spec.template.spec.scheduler_name == "default-scheduler",
        ),
        (
            Job,
            {"metadata": {"name": "j"}},
            lambda o: (o.spec.parallelism, o.spec.completions) == (1, 1),
        ),
        (
            Job,
            {"metadata": {"name": "j"}, "spec": {"parallelism": 3}},
            lambda o: (o.spec.parallelism, o.spec.completions) == (3, None),
        ),
        (
            Job,
            {"metadata": {"name": "j"}, "spec": {"completions": 5}},
            lambda o: (o.spec.parallelism, o.spec.completions) == (1, 5),
        ),
        (
            ReplicationController,
            {"metadata": {"name": "rc"}, "spec": {"selector": {"app": "x"}}},
            lambda o: o.spec.selector == {"app": "x"} and o.spec.replicas == 1,
        ),
        (
            PriorityClass,
            {"metadata": {"name": "high"}, "value": 1000000, "globalDefault": True},
            lambda o: (
                o.value == 1000000
                and o.global_default
                and o.preemption_policy == "PreemptLowerPriority"
                and o.key == "high"
            ),
        ),
        (
            PodDisruptionBudget,
            {
                "metadata": {"name": "pdb"},
                "spec": {"minAvailable": "50%"},
                "status": {"disruptionsAllowed": 1, "expectedPods": 3},
            },
            lambda o: o.spec.min_available == "50%" and o.status.disruptions_allowed == 1,
        ),
        (
            PodDisruptionBudget,
            {"metadata": {"name": "pdb"}, "spec": {"maxUnavailable": 1}},
            lambda o: o.spec.max_unavailable == 1 and o.spec.min_available is None,
        ),
        (
            RuntimeClass,
            {
                "metadata": {"name": "kata"},
                "handler": "kata",
                "overhead": {"podFixed": {"cpu": "250m"}},
                "scheduling": {
                    "nodeSelector": {"rt": "kata"},
                    "tolerations": [{"operator": "Exists"}],
                },
            },
            lambda o: (
                o.overhead.pod_fixed["cpu"].milli_value() == 250
                and o.scheduling.node_selector == {"rt": "kata"}
                and o.key == "kata"
            ),
        ),
        (
            Lease,
            {
                "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
                "spec": {
                    "holderIdentity": "a",
                    "leaseDurationSeconds": 15,
                    "renewTime": "2024-05-01T10:00:00.123456Z",
                    "leaseTransitions": 2,
                },
            },
            lambda o: (
                o.spec.lease_duration_seconds == 15
                and o.spec.renew_time.microsecond == 123456
                and o.key == "kube-system/kube-scheduler"
            ),
        ),
    ],
    ids=[
        "namespace",
        "service",
        "replicaset",
        "deployment-zero-replicas",
        "statefulset",
        "daemonset",
        "job-defaults",
        "job-parallelism-only",
        "job-completions-only",
        "replicationcontroller",
        "priorityclass",
        "pdb-percent",
        "pdb-int",
        "runtimeclass",
        "lease",
    ],
)
def test_other_kinds(cls: type[KubeObject], doc: dict, check) -> None:
    assert check(cls.model_validate(doc))


@pytest.mark.parametrize("bad", [True, 1.5, [1], {"a": 1}], ids=str)
def test_int_or_string_rejects_other_types(bad) -> None:
    with pytest.raises(ValidationError) as exc:
        PodDisruptionBudget.model_validate(
            {"metadata": {"name": "p"}, "spec": {"minAvailable": bad}}
        )
    (err,) = exc.value.errors()
    assert err["loc"] == ("spec", "minAvailable")
