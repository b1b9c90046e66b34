"""Extended resources backed by DRA (DRAExtendedResource): the claim the scheduler makes.

A container may ask for an extended resource (``example.com/gpu: 1``) that a DeviceClass
backs (its ``extendedResourceName``, or ``deviceclass.resource.kubernetes.io/<class>``).
On a node that does not offer the resource itself, DynamicResources allocates devices of
that class in a claim of its own: one request per container (and per resource), named
``container-<i>-request-<j>`` (``i`` the container's index among init containers then
containers, ``j`` the resource's index among the container's sorted requests), asking for
as many devices as the container wants. Init containers that run to completion reuse the
devices of the containers after them, and share one request, the largest. The claim is
created in PreBind, owned by the pod, named ``<pod>-extended-resources-<random>``, and the
pod's ``status.extendedResourceClaimStatus`` maps each container to its request.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kubesched.api import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    Pod,
    ResourceClaim,
    is_dra_extended_resource_name,
    pod_requests,
)

__all__ = [
    "SPECIAL_CLAIM_NAME",
    "extended_requests",
    "find_extended_resource_claim",
    "requests_and_mappings",
    "requests_extended_resources",
    "special_claim",
]

SPECIAL_CLAIM_NAME = "<extended-resources>"
"""The name of the claim while it exists only in the scheduler (not a valid name, so it
cannot collide with a real claim); the API server names it when PreBind creates it."""


def requests_extended_resources(pod: Pod) -> bool:
    """Whether a container of the pod asks for an extended resource (most do not: the
    DeviceClasses need not be looked at for them)."""
    return any(
        is_dra_extended_resource_name(name)
        for c in (*pod.spec.init_containers, *pod.spec.containers)
        for name in c.resources.requests
    )


def extended_requests(pod: Pod, backed: Mapping[str, str]) -> dict[str, int]:
    """The pod's non-zero requests of extended resources that a DeviceClass backs
    (``backed``: resource name -> class name)."""
    return {
        name: amount
        for name, amount in pod_requests(pod).items()
        if amount and name in backed and is_dra_extended_resource_name(name)
    }


def find_extended_resource_claim(pod: Pod, claims: list[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: the claim made for the pod in an earlier attempt."""
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in claim.metadata.owner_references:
            if ref.controller and ref.uid == pod.metadata.uid and ref.name == pod.name:
                return claim
    return None


def special_claim(pod: Pod) -> ResourceClaim:
    """The claim for the pod's extended resources as it lives in the scheduler until
    PreBind creates it: no requests yet (each node gets its own), a temporary uid."""
    return ResourceClaim.model_validate(
        {
            "metadata": {
                "namespace": pod.namespace or "default",
                "name": SPECIAL_CLAIM_NAME,
                "uid": str(uuid.uuid4()),
                "generateName": f"{pod.name}-extended-resources-",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod.name,
                        "uid": pod.metadata.uid or "",
                        "controller": True,
                    }
                ],
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            }
        }
    )


def _container_request(
    index: int,
    container: Any,
    resource: str,
    class_name: str,
    reusable: list[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """``createResourceRequestAndMappings``: the container's request for ``resource``
    (None when the devices of ``reusable`` requests suffice) and its mappings."""
    wanted = container.resources.requests.get(resource)
    if wanted is None or wanted.nanos % 10**9 or wanted.value() == 0:
        return None, []
    count = wanted.value()
    mappings = []
    have = 0
    for request in reusable:
        if request is None:
            continue
        have += request["exactly"]["count"]
        mappings.append(
            {
                "containerName": container.name,
                "resourceName": resource,
                "requestName": request["name"],
            }
        )
        if have >= count:
            return None, mappings
    position = sorted(container.resources.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": count - have,
        },
    }
    mappings.append(
        {"containerName": container.name, "resourceName": resource, "requestName": name}
    )
    return request, mappings


def requests_and_mappings(
    pod: Pod, resources: Mapping[str, int], backed: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """``createRequestsAndMappings``: the claim's requests for ``resources`` (the extended
    resources the node must serve through DRA), sorted by name, and the containers'
    mappings to them."""
    inits = len(pod.spec.init_containers)
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    long_lived = [
        i
        for i, c in enumerate(containers)
        if i >= inits or c.restart_policy == "Always"  # containers and sidecars
    ]
    short_lived = [i for i in range(inits) if i not in long_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        class_name = backed[resource]
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings += found
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            request, found = _container_request(
                i, containers[i], resource, class_name, long_requests[i:]
            )
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings += found
        if largest is not None and len(short_names) > 1:
            # Init containers run one after the other: they share the largest request.
            short_names.discard(largest["name"])
            for m in short_mappings:
                if m["requestName"] in short_names:
                    m["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: r["name"])
    return requests, mappings
