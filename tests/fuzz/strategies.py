"""Hypothesis strategies for Kubernetes manifests and KubeSchedulerConfiguration documents.

Each strategy mixes valid and invalid values (names that break DNS rules, negative or
malformed quantities, unknown operators, wrong types) so that both acceptance and every
kind of refusal are exercised.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

SCALE = int(os.environ.get("KUBESCHED_FUZZ_SCALE", "1"))
"""Multiplier of every fuzz test's example count (``--fuzz-exhaustive``: 20)."""

_valid_names = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
_nasty = st.sampled_from(
    ["", "bad name!", "Upper", "-lead", "a" * 300, "a.b", "{{bad}}", "ünï", "a/b/c", "\n", "0"]
)
names = st.one_of(_valid_names, _nasty, st.text(max_size=12))
keys = st.one_of(
    _valid_names,
    st.builds(lambda p, n: f"{p}.io/{n}", _valid_names, _valid_names),
    _nasty,
    st.text(max_size=10),
)
values = st.one_of(_valid_names, _nasty, st.text(max_size=10))
labels = st.dictionaries(keys, values, max_size=3)
quantities = st.one_of(
    st.sampled_from(["100m", "1", "2Gi", "-1", "1.5", "0", "1e3", "500Mi", "lots", "1Qi", ""]),
    st.integers(-5, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
resources = st.sampled_from(
    ["cpu", "memory", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi", "pods", "bad name"]
)
resource_map = st.dictionaries(resources, quantities, max_size=3)
operators = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus", ""])
requirement = st.fixed_dictionaries(
    {"key": keys, "operator": operators},
    optional={"values": st.lists(values, max_size=3)},
)
label_selector = st.fixed_dictionaries(
    {},
    optional={"matchLabels": labels, "matchExpressions": st.lists(requirement, max_size=2)},
)
anything = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
"""Any JSON-like value: for fields given the wrong type."""


def maybe_wrong(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``strategy``, sometimes a value of any type."""
    return st.one_of(strategy, strategy, strategy, anything)


container = st.fixed_dictionaries(
    {"name": names},
    optional={
        "image": maybe_wrong(st.sampled_from(["busybox", ""])),
        "resources": st.fixed_dictionaries(
            {}, optional={"requests": resource_map, "limits": resource_map}
        ),
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": maybe_wrong(st.integers(-1, 70000))},
                optional={
                    "hostPort": st.integers(0, 70000),
                    "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "XTP"]),
                    "name": names,
                },
            ),
            max_size=2,
        ),
        "restartPolicy": st.sampled_from(["Always", "Never"]),
    },
)
toleration = st.fixed_dictionaries(
    {},
    optional={
        "key": keys,
        "operator": st.sampled_from(["Equal", "Exists", "Foo", ""]),
        "value": values,
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", "Bogus", ""]),
        "tolerationSeconds": maybe_wrong(st.integers(-10, 1000)),
    },
)
pod_term = st.fixed_dictionaries(
    {},
    optional={
        "labelSelector": label_selector,
        "topologyKey": keys,
        "namespaces": st.lists(names, max_size=2),
        "matchLabelKeys": st.lists(keys, max_size=2),
        "mismatchLabelKeys": st.lists(keys, max_size=2),
    },
)
affinity = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
                    {
                        "nodeSelectorTerms": st.lists(
                            st.fixed_dictionaries(
                                {},
                                optional={
                                    "matchExpressions": st.lists(requirement, max_size=2),
                                    "matchFields": st.lists(requirement, max_size=1),
                                },
                            ),
                            max_size=2,
                        )
                    }
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries(
                        {"weight": st.integers(-1, 101), "preference": st.just({})}
                    ),
                    max_size=1,
                ),
            },
        ),
        "podAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.lists(pod_term, max_size=2)
            },
        ),
        "podAntiAffinity": st.fixed_dictionaries(
            {},
            optional={
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries(
                        {"weight": st.integers(-1, 101), "podAffinityTerm": pod_term}
                    ),
                    max_size=1,
                )
            },
        ),
    },
)
spread = st.fixed_dictionaries(
    {
        "maxSkew": maybe_wrong(st.integers(-1, 3)),
        "topologyKey": keys,
        "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Maybe"]),
    },
    optional={
        "labelSelector": label_selector,
        "minDomains": st.integers(-1, 3),
        "matchLabelKeys": st.lists(keys, max_size=2),
        "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore", "X"]),
    },
)
pod_spec = st.fixed_dictionaries(
    {"containers": st.lists(container, max_size=2)},
    optional={
        "initContainers": st.lists(container, max_size=1),
        "tolerations": st.lists(toleration, max_size=2),
        "affinity": affinity,
        "topologySpreadConstraints": st.lists(spread, max_size=2),
        "nodeSelector": labels,
        "priorityClassName": names,
        "priority": maybe_wrong(st.integers(-10, 10)),
        "schedulerName": names,
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never", "Sometimes"]),
        "schedulingGates": st.lists(st.fixed_dictionaries({"name": keys}), max_size=2),
        "overhead": resource_map,
        "nodeName": names,
        "hostNetwork": st.booleans(),
    },
)
metadata = st.fixed_dictionaries(
    {"name": maybe_wrong(names)},
    optional={
        "namespace": names,
        "generateName": names,
        "labels": maybe_wrong(labels),
        "annotations": st.dictionaries(keys, st.text(max_size=20), max_size=2),
    },
)
pods = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod"), "metadata": metadata, "spec": pod_spec}
)
nodes = st.fixed_dictionaries(
    {
        "apiVersion": st.just("v1"),
        "kind": st.just("Node"),
        "metadata": metadata,
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "taints": st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "key": keys,
                            "value": values,
                            "effect": st.sampled_from(["NoSchedule", "NoExecute", "X", ""]),
                        },
                    ),
                    max_size=2,
                ),
                "unschedulable": maybe_wrong(st.booleans()),
            },
        ),
        "status": st.fixed_dictionaries(
            {}, optional={"capacity": resource_map, "allocatable": resource_map}
        ),
    }
)
template = st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({}, optional={"labels": labels}), "spec": pod_spec}
)
workloads = st.one_of(
    *(
        st.fixed_dictionaries(
            {
                "apiVersion": st.just(api),
                "kind": st.just(kind),
                "metadata": metadata,
                "spec": st.fixed_dictionaries(
                    {"template": template},
                    optional={
                        "replicas": maybe_wrong(st.integers(-2, 5)),
                        "selector": label_selector,
                    },
                ),
            }
        )
        for api, kind in (
            ("apps/v1", "Deployment"),
            ("apps/v1", "ReplicaSet"),
            ("apps/v1", "StatefulSet"),
            ("apps/v1", "DaemonSet"),
            ("batch/v1", "Job"),
        )
    )
)
cluster_objects = st.one_of(
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("policy/v1"),
            "kind": st.just("PodDisruptionBudget"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "minAvailable": st.one_of(
                        st.integers(-2, 5), st.sampled_from(["50%", "x", "150%"])
                    ),
                    "maxUnavailable": st.one_of(st.integers(-2, 5), st.sampled_from(["10%", "%"])),
                    "selector": label_selector,
                },
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("scheduling.k8s.io/v1"),
            "kind": st.just("PriorityClass"),
            "metadata": metadata,
            "value": maybe_wrong(st.integers(-(2**31), 2**31)),
        },
        optional={"preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority", "X"])},
    ),
    st.fixed_dictionaries(
        {"apiVersion": st.just("v1"), "kind": st.just("Namespace"), "metadata": metadata}
    ),
)
access_modes = st.lists(
    st.sampled_from(["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod", "X"]),
    max_size=3,
)
node_selector = st.fixed_dictionaries(
    {
        "nodeSelectorTerms": st.lists(
            st.fixed_dictionaries(
                {}, optional={"matchExpressions": st.lists(requirement, max_size=2)}
            ),
            max_size=2,
        )
    }
)
volume_source = st.one_of(
    st.fixed_dictionaries({"hostPath": st.fixed_dictionaries({}, optional={"path": names})}),
    st.fixed_dictionaries({"local": st.fixed_dictionaries({}, optional={"path": names})}),
    st.fixed_dictionaries(
        {"csi": st.fixed_dictionaries({}, optional={"driver": names, "volumeHandle": names})}
    ),
    st.fixed_dictionaries(
        {
            "gcePersistentDisk": st.fixed_dictionaries(
                {}, optional={"pdName": names, "partition": maybe_wrong(st.integers(-2, 300))}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "iscsi": st.fixed_dictionaries(
                {},
                optional={
                    "targetPortal": names,
                    "iqn": st.sampled_from(
                        ["iqn.2001-04.com.example:d", "eui.0123456789ABCDEF", "x"]
                    ),
                    "lun": st.integers(-1, 300),
                },
            )
        }
    ),
    st.fixed_dictionaries(
        {"nfs": st.fixed_dictionaries({}, optional={"server": names, "path": names})}
    ),
    st.just({}),
)
storage_objects = st.one_of(
    st.builds(
        lambda meta, spec, source: {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": meta,
            "spec": {**spec, **source},
        },
        metadata,
        st.fixed_dictionaries(
            {},
            optional={
                "capacity": resource_map,
                "accessModes": maybe_wrong(access_modes),
                "persistentVolumeReclaimPolicy": st.sampled_from(["Retain", "Delete", "Throw"]),
                "volumeMode": st.sampled_from(["Filesystem", "Block", "Weird"]),
                "storageClassName": names,
                "nodeAffinity": st.fixed_dictionaries({}, optional={"required": node_selector}),
            },
        ),
        volume_source,
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("PersistentVolumeClaim"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "accessModes": access_modes,
                    "resources": st.fixed_dictionaries(
                        {}, optional={"requests": resource_map, "limits": resource_map}
                    ),
                    "storageClassName": names,
                    "volumeMode": st.sampled_from(["Filesystem", "Block", "Weird"]),
                    "selector": label_selector,
                },
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("storage.k8s.io/v1"),
            "kind": st.just("StorageClass"),
            "metadata": metadata,
        },
        optional={
            "provisioner": names,
            "parameters": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
            "reclaimPolicy": st.sampled_from(["Delete", "Retain", "Recycle", ""]),
            "volumeBindingMode": st.sampled_from(["Immediate", "WaitForFirstConsumer", "Later"]),
            "allowedTopologies": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "matchLabelExpressions": st.lists(
                            st.fixed_dictionaries(
                                {"key": keys}, optional={"values": st.lists(values, max_size=2)}
                            ),
                            max_size=2,
                        )
                    },
                ),
                max_size=2,
            ),
        },
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("storage.k8s.io/v1"),
            "kind": st.just("CSINode"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {
                    "drivers": st.lists(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "name": names,
                                "nodeID": names,
                                "topologyKeys": st.lists(keys, max_size=2),
                                "allocatable": st.fixed_dictionaries(
                                    {}, optional={"count": maybe_wrong(st.integers(-2, 40))}
                                ),
                            },
                        ),
                        max_size=2,
                    )
                }
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("storage.k8s.io/v1"),
            "kind": st.just("CSIDriver"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "attachRequired": maybe_wrong(st.booleans()),
                    "volumeLifecycleModes": st.lists(
                        st.sampled_from(["Persistent", "Ephemeral", "X"]), max_size=2
                    ),
                    "fsGroupPolicy": st.sampled_from(["File", "None", "X"]),
                },
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("storage.k8s.io/v1"),
            "kind": st.just("CSIStorageCapacity"),
            "metadata": metadata,
        },
        optional={
            "storageClassName": names,
            "capacity": quantities,
            "maximumVolumeSize": quantities,
            "nodeTopology": label_selector,
        },
    ),
)
"""The storage kinds, valid or not."""

cel_expressions = st.sampled_from(
    ['device.driver == "gpu.example.com"', "", "device.attributes[", "1 +", "true"]
)
selectors = st.lists(
    st.one_of(
        st.just({}),
        st.fixed_dictionaries({"cel": st.fixed_dictionaries({"expression": cel_expressions})}),
    ),
    max_size=2,
)
request_body = st.fixed_dictionaries(
    {},
    optional={
        "deviceClassName": names,
        "allocationMode": st.sampled_from(["ExactCount", "All", "Some", ""]),
        "count": maybe_wrong(st.integers(-2, 4)),
        "selectors": selectors,
    },
)
device_claim = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.lists(
            st.fixed_dictionaries(
                {"name": names},
                optional={
                    "exactly": request_body,
                    "firstAvailable": st.lists(
                        st.builds(lambda n, b: {"name": n, **b}, names, request_body), max_size=2
                    ),
                },
            ),
            max_size=3,
        ),
        "constraints": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "requests": st.lists(names, max_size=2),
                    "matchAttribute": st.sampled_from(["example.com/model", "model", "a/b-c"]),
                },
            ),
            max_size=2,
        ),
    },
)
attribute = st.one_of(
    st.fixed_dictionaries({}, optional={"int": st.integers(), "string": values}),
    st.fixed_dictionaries({"version": st.sampled_from(["1.2.3", "x"])}),
    st.fixed_dictionaries({"bool": maybe_wrong(st.booleans())}),
)
dra_objects = st.one_of(
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("resource.k8s.io/v1"),
            "kind": st.just("DeviceClass"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "selectors": selectors,
                    "extendedResourceName": st.sampled_from(["example.com/gpu", "gpu", "bad name"]),
                },
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("resource.k8s.io/v1"),
            "kind": st.just("ResourceClaim"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries({"devices": device_claim}),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("resource.k8s.io/v1"),
            "kind": st.just("ResourceClaimTemplate"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {"spec": st.fixed_dictionaries({"devices": device_claim})},
                optional={"metadata": st.fixed_dictionaries({}, optional={"labels": labels})},
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("resource.k8s.io/v1"),
            "kind": st.just("ResourceSlice"),
            "metadata": metadata,
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "driver": names,
                    "pool": st.fixed_dictionaries(
                        {},
                        optional={
                            "name": names,
                            "generation": st.integers(-1, 3),
                            "resourceSliceCount": maybe_wrong(st.integers(-1, 3)),
                        },
                    ),
                    "nodeName": names,
                    "allNodes": st.booleans(),
                    "nodeSelector": node_selector,
                    "devices": st.lists(
                        st.fixed_dictionaries(
                            {"name": names},
                            optional={
                                "attributes": st.dictionaries(keys, attribute, max_size=2),
                                "capacity": st.dictionaries(
                                    keys, st.fixed_dictionaries({"value": quantities}), max_size=2
                                ),
                            },
                        ),
                        max_size=3,
                    ),
                },
            ),
        }
    ),
)
"""The Dynamic Resource Allocation kinds, valid or not."""

objects = st.one_of(pods, pods, nodes, workloads, cluster_objects, storage_objects, dra_objects)
"""Any manifest document kubesched reads, valid or not."""

plugin_names = st.sampled_from(
    ["NodeResourcesFit", "TaintToleration", "InterPodAffinity", "NoSuchPlugin", "*", ""]
)
plugin_set = st.fixed_dictionaries(
    {},
    optional={
        "enabled": st.lists(
            st.fixed_dictionaries(
                {"name": plugin_names}, optional={"weight": maybe_wrong(st.integers(-1, 200))}
            ),
            max_size=2,
        ),
        "disabled": st.lists(st.fixed_dictionaries({"name": plugin_names}), max_size=2),
    },
)
configurations = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["kubescheduler.config.k8s.io/v1", "v1", ""]),
        "kind": st.sampled_from(["KubeSchedulerConfiguration", "Pod"]),
    },
    optional={
        "parallelism": maybe_wrong(st.integers(-1, 64)),
        "percentageOfNodesToScore": maybe_wrong(st.integers(-1, 101)),
        "podInitialBackoffSeconds": maybe_wrong(st.integers(-1, 20)),
        "podMaxBackoffSeconds": maybe_wrong(st.integers(-1, 20)),
        "profiles": st.lists(
            st.fixed_dictionaries(
                {"schedulerName": names},
                optional={
                    "plugins": st.fixed_dictionaries(
                        {},
                        optional={
                            "multiPoint": plugin_set,
                            "score": plugin_set,
                            "filter": plugin_set,
                        },
                    ),
                    "pluginConfig": st.lists(
                        st.fixed_dictionaries(
                            {"name": plugin_names},
                            optional={
                                "args": st.dictionaries(st.text(max_size=8), anything, max_size=2)
                            },
                        ),
                        max_size=2,
                    ),
                    "percentageOfNodesToScore": st.integers(-1, 101),
                },
            ),
            max_size=2,
        ),
    },
)
"""KubeSchedulerConfiguration documents, valid or not."""
