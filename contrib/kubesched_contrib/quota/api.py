"""ElasticQuota (``scheduling.x-k8s.io/v1alpha1``): a namespace's guaranteed and maximal resources.

Registered as an object kind through the ``kubesched.kinds`` entry point, so manifests
with ``kind: ElasticQuota`` load into the embedded cluster like any built-in kind, a
real cluster's ElasticQuotas are watched, and CapacityScheduling reads them with
``handle.lister.list_objects("ElasticQuota")``.
"""

from __future__ import annotations

from pydantic import Field

from kubesched.api import KubeModel, KubeObject, NullableDict, Quantity

__all__ = [
    "ELASTIC_QUOTA_KIND",
    "ElasticQuota",
    "ElasticQuotaSpec",
    "ElasticQuotaStatus",
]

ELASTIC_QUOTA_KIND = "ElasticQuota"


class ElasticQuotaSpec(KubeModel):
    """``ElasticQuotaSpec``: what the namespace is guaranteed and what it may use at most."""

    min: NullableDict[str, Quantity] | None = Field(
        default=None,
        description=(
            "The guaranteed resources: the namespace may always use this much, and pods of "
            "namespaces that borrowed it may be preempted to give it back. Unset: nothing "
            "guaranteed; a resource left out of a set min is guaranteed 0."
        ),
    )
    max: NullableDict[str, Quantity] | None = Field(
        default=None,
        description=(
            "The most the namespace may use, borrowing beyond min from other quotas' unused "
            "min. Unset: no limit. In a set max, cpu, memory and ephemeral-storage left out "
            "are limited to 0 (as upstream), other resources left out are not limited."
        ),
    )


class ElasticQuotaStatus(KubeModel):
    """``ElasticQuotaStatus`` (kept by upstream's ElasticQuota controller; informational)."""

    used: NullableDict[str, Quantity] | None = None


class ElasticQuota(KubeObject):
    """``scheduling.x-k8s.io/v1alpha1.ElasticQuota``: the quota of the pods of its namespace
    (one per namespace is used; with several, the first by name)."""

    api_version: str | None = "scheduling.x-k8s.io/v1alpha1"
    kind: str | None = ELASTIC_QUOTA_KIND
    spec: ElasticQuotaSpec = Field(default_factory=ElasticQuotaSpec)
    status: ElasticQuotaStatus = Field(default_factory=ElasticQuotaStatus)
