"""List and watch decode cost of Kubernetes client libraries against a real kube-apiserver.

Starts etcd + kube-apiserver (``KUBEBUILDER_ASSETS``), creates NODES Nodes and PODS Pods,
then times, for the node list, the pod list and a watch from resourceVersion 0 (one ADDED
event per pod): the HTTP transfer alone, and the decode into each library's objects.

    KUBEBUILDER_ASSETS="$(../shared/k8s/assets.sh)" \\
        .venv/bin/python benchmarks/bench_kube_decode.py --nodes 5000 --pods 10000

lightkube is measured when installed (``pip install lightkube``); it is not a dependency.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import orjson

from kubesched.api import Node, Pod
from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, create_objects


def _pod(i: int, nodes: int) -> dict[str, Any]:
    # A realistic pod: labels, two containers with requests, an affinity term.
    m = (
        make_pod(f"p{i}")
        .labels(app=f"app{i % 50}", tier="web")
        .req(cpu="100m", memory="128Mi")
        .container({"cpu": "10m", "memory": "16Mi"})
        .preferred_node_affinity(1, "zone", ["z1"])
        .manifest()
    )
    m["spec"]["nodeName"] = f"n{i % nodes}"
    return m


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def _watch_bytes(client: KubeClient, path: str, count: int) -> list[bytes]:
    resp = client._pool.request(
        "GET",
        client.url(path, {"watch": "true", "resourceVersion": "0"}),
        headers=client._headers(None),
        preload_content=False,
    )
    lines, buffer = [], b""
    for chunk in resp.stream(64 * 1024):
        buffer += chunk
        *done, buffer = buffer.split(b"\n")
        lines += [d for d in done if d]
        if len(lines) >= count:
            break
    resp.release_conn()
    return lines[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ControlPlane() as cp:
        client = KubeClient(
            load_configuration(str(cp.kubeconfig)),
            ClientConnectionConfiguration(qps=100000, burst=100000),
        )
        started = time.perf_counter()
        create_objects(
            client,
            [
                make_node(f"n{i}").capacity(cpu="8", memory="32Gi", pods=110).zone("z1").manifest()
                for i in range(args.nodes)
            ],
            16,
        )
        create_objects(
            client,
            [_pod(i, args.nodes) for i in range(args.pods)],
            16,
        )
        print(
            f"created {args.nodes} nodes, {args.pods} pods in {time.perf_counter() - started:.0f}s"
        )

        from kubernetes.client import ApiClient

        typed = ApiClient()
        try:
            from lightkube.models.core_v1 import NodeList as LkNodeList
            from lightkube.models.core_v1 import PodList as LkPodList
        except ImportError:
            LkNodeList = LkPodList = None

        results: dict[str, dict[str, float]] = {}
        for label, path, model, k8s_type, lk_type in (
            ("nodes", "/api/v1/nodes", Node, "V1NodeList", LkNodeList),
            ("pods", "/api/v1/pods", Pod, "V1PodList", LkPodList),
        ):
            raw = client._pool.request("GET", client.url(path), headers=client._headers(None)).data
            row = {
                "http_s": _best(
                    lambda p=path: (
                        client._pool.request(
                            "GET", client.url(p), headers=client._headers(None)
                        ).data
                    ),
                    args.repeat,
                ),
                "kubesched_orjson_pydantic_s": _best(
                    lambda r=raw, m=model: [m.model_validate(i) for i in orjson.loads(r)["items"]],
                    args.repeat,
                ),
                "orjson_only_s": _best(lambda r=raw: orjson.loads(r), args.repeat),
                "kubernetes_typed_s": _best(
                    lambda r=raw, t=k8s_type: typed.deserialize(r.decode(), t, "application/json"),
                    args.repeat,
                ),
            }
            if lk_type is not None:
                row["lightkube_s"] = _best(
                    lambda r=raw, t=lk_type: t.from_dict(json.loads(r)), args.repeat
                )
            results[label] = row
        lines = _watch_bytes(client, "/api/v1/pods", args.pods)
        row = {
            "events": len(lines),
            "kubesched_orjson_pydantic_s": _best(
                lambda: [Pod.model_validate(orjson.loads(x)["object"]) for x in lines], args.repeat
            ),
            "kubernetes_typed_s": _best(
                lambda: [
                    typed.deserialize(
                        json.dumps(json.loads(x)["object"]), "V1Pod", "application/json"
                    )
                    for x in lines
                ],
                args.repeat,
            ),
        }
        if LkPodList is not None:
            from lightkube.models.core_v1 import Pod as LkPod

            row["lightkube_s"] = _best(
                lambda: [LkPod.from_dict(json.loads(x)["object"]) for x in lines], args.repeat
            )
        results["pod_watch_events"] = row
        print(json.dumps(results, indent=2))
        client.close()


if __name__ == "__main__":
    main()
