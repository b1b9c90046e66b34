"""Pod resource requests and node allocatable in the scheduler's integer units."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from .core import Node, Pod
from .quantity import Quantity

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "is_scalar_resource_name",
    "node_allocatable",
    "pod_level_requests",
    "pod_non_zero_requests",
    "pod_requests",
    "pod_scoring_requests",
    "resource_value",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
"""Milli-CPU assumed for a container without a CPU request when scoring (0.1 core)."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""Bytes assumed for a container without a memory request when scoring (200 MiB)."""

_NON_ZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}

_NANO = 10**9
_MILLI_NANOS = 10**6
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


def _int64(value: int) -> int:
    # The scheduler counts in int64, as upstream. apimachinery's AsScaledInt64 saturates
    # an amount that does not fit (v1.36's MilliValue still wraps or gives 0, which lets
    # a pod of "10P" cpu look like one requesting nothing, and its node like an empty
    # one): an amount too large to count is held at the int64 maximum.
    return _INT64_MAX if value > _INT64_MAX else _INT64_MIN if value < _INT64_MIN else value


def _ceil_div(n: int, d: int) -> int:
    q, r = divmod(abs(n), d)
    if r:
        q += 1
    return q if n >= 0 else -q


def _to_units(name: str, nanos: int) -> int:
    # Rounded once on the total, as upstream sums Quantities and then calls
    # MilliValue()/Value() (so 3 x 0.5m of CPU is 2m, not 3m).
    return _int64(_ceil_div(nanos, _MILLI_NANOS if name == CPU else _NANO))


def _to_nanos(name: str, units: int) -> int:
    return units * (_MILLI_NANOS if name == CPU else _NANO)


def resource_value(name: str, q: Quantity) -> int:
    """``q`` in the scheduler's unit for ``name``: milli-cores for cpu, ``Value()`` otherwise,
    held within int64 (``INT64_MAX`` for an amount beyond it)."""
    return _int64(q.milli_value() if name == CPU else q.value())


def _add(acc: dict[str, int], reqs: Mapping[str, Quantity]) -> None:
    for name, q in reqs.items():
        acc[name] = acc.get(name, 0) + q.nanos


def _with_defaults(
    reqs: Mapping[str, Quantity], defaults_nanos: Mapping[str, int]
) -> dict[str, int]:
    out = {name: q.nanos for name, q in reqs.items()}
    for name, nanos in defaults_nanos.items():
        if name not in out:
            out[name] = nanos
    return out


def _add_nanos(acc: dict[str, int], reqs: Mapping[str, int]) -> None:
    for name, n in reqs.items():
        acc[name] = acc.get(name, 0) + n


def _max_into(acc: dict[str, int], reqs: Mapping[str, int]) -> None:
    for name, n in reqs.items():
        cur = acc.get(name)
        if cur is None or n > cur:
            acc[name] = n


def pod_requests(
    pod: Pod, *, non_missing_defaults: Mapping[str, int] | None = None, pod_level: bool = True
) -> dict[str, int]:
    """What the pod requests, per resource, as ``resourcehelper.PodRequests`` computes it.

    The sum over containers; then init containers, which run one at a time: a regular
    init container needs its own request plus every restartable (sidecar, i.e.
    ``restartPolicy: Always``) init container started before it, and the pod needs at
    least the largest such figure; sidecars keep running, so they are also added to the
    containers' sum. Pod-level requests (``spec.resources``) of the resources that can be
    set at pod level (cpu, memory, hugepages) replace that sum, unless ``pod_level`` is
    false (upstream's ``SkipPodLevelResources``, when the PodLevelResources gate is off).
    Then ``spec.overhead`` is added.

    Units: milli-cores for cpu, ``Quantity.value()`` for everything else, each held
    within int64 (an amount beyond it counts as the int64 maximum). With
    ``non_missing_defaults`` (in those units, e.g. ``{"cpu": 100, "memory": 200Mi}``),
    a container or init container that does not request one of those resources at all
    counts as requesting the default (an explicit 0 stays 0), as the
    ``NonMissingContainerRequests`` option does.
    """
    defaults = (
        {name: _to_nanos(name, v) for name, v in non_missing_defaults.items()}
        if non_missing_defaults
        else None
    )
    spec = pod.spec
    total: dict[str, int] = {}
    for c in spec.containers:
        if defaults is None:
            _add(total, c.resources.requests)
        else:
            _add_nanos(total, _with_defaults(c.resources.requests, defaults))

    if spec.init_containers:
        sidecars: dict[str, int] = {}
        init_max: dict[str, int] = {}
        for c in spec.init_containers:
            if defaults is None:
                reqs = {name: q.nanos for name, q in c.resources.requests.items()}
            else:
                reqs = _with_defaults(c.resources.requests, defaults)
            if c.restart_policy == "Always":
                _add_nanos(total, reqs)
                _add_nanos(sidecars, reqs)
                use = sidecars
            else:
                use = dict(reqs)
                _add_nanos(use, sidecars)
            _max_into(init_max, use)
        _max_into(total, init_max)

    if pod_level:
        for name, q in pod_level_requests(pod).items():
            total[name] = q.nanos

    if spec.overhead:
        _add(total, spec.overhead)
    return {name: _to_units(name, n) for name, n in total.items()}


def pod_level_requests(pod: Pod) -> dict[str, Quantity]:
    """The pod-level requests that override the containers' (upstream
    ``IsSupportedPodLevelResource``: cpu, memory, hugepages-*)."""
    res = pod.spec.resources
    if res is None or not res.requests:
        return {}
    return {
        name: q
        for name, q in res.requests.items()
        if name in (CPU, MEMORY) or name.startswith("hugepages-")
    }


def pod_scoring_requests(pod: Pod, *, pod_level: bool = True) -> dict[str, int]:
    """What the scoring strategies count the pod as requesting (upstream
    ``calculatePodResourceRequest`` without ``useRequested``): :func:`pod_requests` with a
    container or init container that requests no cpu (memory) counted as 100m (200 MiB).

    Pod-level requests still replace the containers' sum, so with them a container's
    default counts only for a resource the pod does not set; this differs from
    :func:`pod_non_zero_requests` (the node's side) when some containers request a
    resource and others do not.
    """
    return pod_requests(pod, non_missing_defaults=_NON_ZERO_DEFAULTS, pod_level=pod_level)


def pod_non_zero_requests(pod: Pod) -> tuple[int, int]:
    """``(milli_cpu, memory_bytes)`` with the scheduler's defaults for missing requests.

    A container without a CPU (memory) request counts as 100m (200 MiB); this is the
    request the scoring plugins and ``NodeInfo.NonZeroRequested`` use. With pod-level
    requests, a default applies only when neither the pod nor any container requests
    that resource (upstream ``getNonMissingContainerRequests``).
    """
    if not pod_level_requests(pod):
        reqs = pod_requests(pod, non_missing_defaults=_NON_ZERO_DEFAULTS)
        return reqs.get(CPU, 0), reqs.get(MEMORY, 0)
    reqs = pod_requests(pod)
    missing = {k: v for k, v in _NON_ZERO_DEFAULTS.items() if k not in reqs}
    if missing:
        reqs = pod_requests(pod, non_missing_defaults=missing)
    return reqs.get(CPU, 0), reqs.get(MEMORY, 0)


def node_allocatable(node: Node) -> dict[str, int]:
    """``status.allocatable`` in the scheduler's units (no fallback to capacity, as upstream)."""
    return {name: resource_value(name, q) for name, q in node.status.allocatable.items()}


# k8s.io/apimachinery validation.IsQualifiedName / IsDNS1123Subdomain.
_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)


def _is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME_RE.fullmatch(name) is not None


def _is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_extended_resource_name(name: str) -> bool:
    """Whether ``name`` is an extended resource (``v1helper.IsExtendedResourceName``):
    domain-prefixed, not ``kubernetes.io/``, e.g. ``nvidia.com/gpu``."""
    # Native resources have no "/" or are kubernetes.io-prefixed.
    if "/" not in name or _is_prefixed_native(name) or name.startswith("requests."):
        return False
    # The quota form "requests.<name>" must be a qualified name.
    return _is_qualified_name("requests." + name)


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """Whether ``name`` is a scalar resource (``schedutil.IsScalarResourceName``).

    Extended resources (domain-prefixed, not ``kubernetes.io/``, e.g. ``nvidia.com/gpu``),
    ``hugepages-*``, ``attachable-volumes-*`` and kubernetes.io-prefixed native resources.
    """
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or _is_prefixed_native(name)
        or name.startswith("attachable-volumes-")
    )
