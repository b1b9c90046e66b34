"""Upstream's network-aware test fixtures: the "basic" AppGroup, its NetworkTopology, nodes."""

from __future__ import annotations

from kubesched.api import parse_manifests
from kubesched.testing import make_node, make_pod
from kubesched_contrib.networkaware.api import (
    APP_GROUP_LABEL,
    APP_GROUP_SELECTOR_LABEL,
    NETPERF_COSTS,
    WeightInfo,
)

BASIC = """
apiVersion: appgroup.diktyo.x-k8s.io/v1alpha1
kind: AppGroup
metadata: {name: basic, namespace: default}
spec:
  numMembers: 3
  topologySortingAlgorithm: KahnSort
  workloads:
  - workload: {kind: Deployment, name: p1-deployment, selector: p1}
    dependencies:
    - workload: {kind: Deployment, name: p2-deployment, selector: p2}
  - workload: {kind: Deployment, name: p2-deployment, selector: p2}
    dependencies:
    - workload: {kind: Deployment, name: p3-deployment, selector: p3}
  - workload: {kind: Deployment, name: p3-deployment, selector: p3}
status:
  runningWorkloads: 3
  topologyOrder:
  - {workload: {kind: Deployment, name: p1-deployment, selector: p1}, index: 1}
  - {workload: {kind: Deployment, name: p2-deployment, selector: p2}, index: 2}
  - {workload: {kind: Deployment, name: p3-deployment, selector: p3}, index: 3}
---
apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1
kind: NetworkTopology
metadata: {name: nt-test, namespace: default}
spec:
  weights:
  - name: UserDefined
    topologyList:
    - topologyKey: topology.kubernetes.io/region
      originList:
      - {origin: us-west-1, costList: [{destination: us-east-1, networkCost: 20}]}
      - {origin: us-east-1, costList: [{destination: us-west-1, networkCost: 20}]}
    - topologyKey: topology.kubernetes.io/zone
      originList:
      - {origin: Z1, costList: [{destination: Z2, networkCost: 5}]}
      - {origin: Z2, costList: [{destination: Z1, networkCost: 5}]}
      - {origin: Z3, costList: [{destination: Z4, networkCost: 10}]}
      - {origin: Z4, costList: [{destination: Z3, networkCost: 10}]}
"""


def basic_objects():
    """The basic AppGroup and the nt-test NetworkTopology."""
    return parse_manifests(BASIC)


def nodes():
    """n-1..n-8: us-west-1 Z1, Z1, Z2, Z2; us-east-1 Z3, Z3, Z4, Z4 (8 cpu, 16Gi)."""
    zones = [("us-west-1", "Z1"), ("us-west-1", "Z2"), ("us-east-1", "Z3"), ("us-east-1", "Z4")]
    return [
        make_node(f"n-{i + 1}")
        .zone(zones[i // 2][1], zones[i // 2][0])
        .capacity(cpu="8", memory="16Gi", pods=110)
        for i in range(8)
    ]


def app_pod(
    name: str,
    group: str = "basic",
    node: str | None = None,
    priority: int = 0,
    namespace: str = "default",
):
    """upstream makePod / makePodAllocated: a pod of workload ``name`` in AppGroup ``group``."""
    labels = {APP_GROUP_SELECTOR_LABEL: name}
    if group:
        labels[APP_GROUP_LABEL] = group
    b = make_pod(name).namespace(namespace).labels(labels).priority(priority)
    if node is not None:
        b = b.node(node)
    return b.obj()


def netperf_field(weights: list[WeightInfo], field: str = "network_cost") -> dict:
    """``field`` of every cost of the NetperfCosts weights, by (origin, destination),
    regions' and zones' together."""
    (netperf,) = [w for w in weights if w.name == NETPERF_COSTS]
    return {
        (o.origin, c.destination): getattr(c, field)
        for t in netperf.topology_list
        for o in t.origin_list
        for c in o.cost_list
    }
