"""Helpers of the quota family tests: ElasticQuotas, pods by memory, CapacityScheduling profiles."""

from __future__ import annotations

from typing import Any

from kubesched import Resource
from kubesched.testing import (
    Nominator,
    RecordingClient,
    StaticLister,
    make_node,
    make_pod,
    profile_framework,
)
from kubesched_contrib.quota import ElasticQuota
from kubesched_contrib.quota.elasticquota import ElasticQuotaInfo

MID, HIGH = 100, 1000
"""upstream's midPriority and highPriority."""

CAPACITY_CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
            },
        }
    ],
}


POST_FILTER_ONLY_CONFIG: dict[str, Any] = {
    **CAPACITY_CONFIG,
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "postFilter": {
                    "enabled": [{"name": "CapacityScheduling"}],
                    "disabled": [{"name": "DefaultPreemption"}],
                },
            },
        }
    ],
}
"""CapacityScheduling at PostFilter only, as upstream's preemption tests build their
framework: its PreFilter extensions do not run, so the quotas a test gives stay as given."""


def mem_pod(name: str, ns: str, memory: int, priority: int = 0, node: str | None = None):
    """upstream's ``makePod``: a pod of ``namespace`` requesting ``memory`` bytes, uid = name."""
    b = make_pod(name).namespace(ns).uid(name).priority(priority)
    if memory:
        b = b.req(memory=str(memory))
    if node:
        b = b.node(node)
    return b.obj()


def mem_node(name: str = "node-a", memory: str = "150"):
    """A node with ``memory`` bytes (and room for pods)."""
    return make_node(name).capacity(memory=memory, cpu="10", pods=110).obj()


def quota(
    ns: str, *, min: dict[str, str] | None = None, max: dict[str, str] | None = None
) -> ElasticQuota:
    """An ElasticQuota of ``ns``."""
    spec: dict[str, Any] = {}
    if min is not None:
        spec["min"] = min
    if max is not None:
        spec["max"] = max
    return ElasticQuota.model_validate(
        {"metadata": {"name": f"{ns}-eq", "namespace": ns}, "spec": spec}
    )


def info(ns: str, *, min: int | None, max: int | None, used: int = 0) -> ElasticQuotaInfo:
    """upstream's table entry: memory-only min / max / used (None: unset)."""
    return ElasticQuotaInfo(
        ns,
        Resource(memory=min) if min is not None else None,
        Resource(memory=max) if max is not None else None,
        Resource(memory=used),
    )


def capacity_framework(objects=(), *, config: dict[str, Any] = CAPACITY_CONFIG, **handle: Any):
    """The default profile with CapacityScheduling instead of DefaultPreemption, over a
    lister of ``objects`` (ElasticQuotas, PriorityClasses)."""
    return profile_framework(
        config,
        lister=StaticLister(list(objects)),
        nominator=handle.pop("nominator", Nominator()),
        client=handle.pop("client", RecordingClient()),
        **handle,
    )
