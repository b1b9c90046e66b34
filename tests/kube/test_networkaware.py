"""NetworkOverhead and TopologicalSort under ``kubesched run`` on a real kube-apiserver: the
AppGroup and NetworkTopology CRDs are watched (``networktopologies``, not the plural a
kind name would give) and the dependency pods are placed within their network cost."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from kubesched.backend.kube.cluster import resource_for
from kubesched.backend.protocol import ConflictError
from kubesched.bench.kube import crd
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import collection_path, create_objects

from .conftest import Api, wait_for

pytestmark = pytest.mark.envtest

LABEL = "appgroup.diktyo.x-k8s.io"


CRDS = [
    crd("appgroup.diktyo.x-k8s.io", "appgroups", "AppGroup"),
    crd("networktopology.diktyo.x-k8s.io", "networktopologies", "NetworkTopology"),
]


def install(api: Api) -> None:
    for manifest in CRDS:
        with contextlib.suppress(ConflictError):
            create_objects(api.client, [manifest])
        path = f"{collection_path(manifest)}/{manifest['metadata']['name']}"

        def established(path: str = path) -> bool:
            status = api.client.request("GET", path).get("status") or {}
            return any(
                c["type"] == "Established" and c["status"] == "True"
                for c in status.get("conditions") or ()
            )

        wait_for(established, 60, f"{path} to be established")


def create_custom(api: Api, manifest: dict[str, Any]) -> None:
    """POST a custom object to the collection ``kubesched run`` watches for its kind."""
    api.client.request("POST", namespaced(manifest["kind"]), body=manifest)


def namespaced(kind: str) -> str:
    """The ``default`` namespace's collection of ``kind``."""
    group_version, plural = resource_for(kind).path.rsplit("/", 1)
    return f"{group_version}/namespaces/default/{plural}"


def test_resource_paths_use_the_crd_plurals() -> None:
    assert resource_for("NetworkTopology").path == (
        "/apis/networktopology.diktyo.x-k8s.io/v1alpha1/networktopologies"
    )
    assert resource_for("AppGroup").path == "/apis/appgroup.diktyo.x-k8s.io/v1alpha1/appgroups"


def test_carts_are_placed_within_their_cost_of_the_database(api: Api, in_process) -> None:
    install(api)
    zones = {"w1": ("us-west-1", "Z1"), "w2": ("us-west-1", "Z2"), "e1": ("us-east-1", "Z3")}
    # w2, the database's node, has room for two carts only; the others must choose
    # between w1 (same region) and e1 (cost 20 from the database: filtered).
    cpus = {"w1": "8", "w2": "2", "e1": "8"}
    api.create_many(
        [
            make_node(name)
            .zone(zone, region)
            .capacity(cpu=cpus[name], memory="16Gi", pods=110)
            .manifest()
            for name, (region, zone) in zones.items()
        ]
    )
    create_custom(
        api,
        {
            "apiVersion": "networktopology.diktyo.x-k8s.io/v1alpha1",
            "kind": "NetworkTopology",
            "metadata": {"name": "nt-default", "namespace": "default"},
            "spec": {
                "weights": [
                    {
                        "name": "UserDefined",
                        "topologyList": [
                            {
                                "topologyKey": "topology.kubernetes.io/region",
                                # Costs are looked up from the candidate node's region.
                                "originList": [
                                    {
                                        "origin": origin,
                                        "costList": [{"destination": dest, "networkCost": 20}],
                                    }
                                    for origin, dest in (
                                        ("us-west-1", "us-east-1"),
                                        ("us-east-1", "us-west-1"),
                                    )
                                ],
                            }
                        ],
                    }
                ]
            },
        },
    )
    workload = {"kind": "Deployment", "apiVersion": "apps/v1"}
    create_custom(
        api,
        {
            "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1",
            "kind": "AppGroup",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {
                "numMembers": 2,
                "workloads": [
                    {
                        "workload": {**workload, "name": "cart", "selector": "cart"},
                        "dependencies": [
                            {
                                "workload": {**workload, "name": "db", "selector": "db"},
                                "maxNetworkCost": 5,
                            }
                        ],
                    },
                    {"workload": {**workload, "name": "db", "selector": "db"}},
                ],
            },
        },
    )

    def member(name: str, workload_name: str):
        return make_pod(name).labels({LABEL: "shop", f"{LABEL}.workload": workload_name})

    api.create(member("db-0", "db").req(cpu="1").node("w2").manifest())
    try:
        in_process(
            {
                "profiles": [
                    {
                        "schedulerName": "default-scheduler",
                        "plugins": {
                            "queueSort": {
                                "enabled": [{"name": "TopologicalSort"}],
                                "disabled": [{"name": "*"}],
                            },
                            "multiPoint": {"enabled": [{"name": "NetworkOverhead", "weight": 5}]},
                        },
                    }
                ]
            }
        )
        api.create_many([member(f"cart-{i}", "cart").req(cpu="500m").manifest() for i in range(4)])
        wait_for(lambda: all(api.node_of(f"cart-{i}") for i in range(4)), 60, "the carts to bind")
        # The database's node costs 0 (two fit there); us-east-1 costs 20 > 5 from the
        # database: filtered, so the other two go to w1. Without the AppGroup or the
        # NetworkTopology read from the cluster, e1 would be as good as w1.
        placed = sorted(api.node_of(f"cart-{i}") for i in range(4))
        assert placed == ["w1", "w1", "w2", "w2"]
    finally:
        for kind in ("AppGroup", "NetworkTopology"):
            api.delete(namespaced(kind))
