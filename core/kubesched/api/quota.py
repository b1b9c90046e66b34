"""Namespace policy objects admission enforces on pods: LimitRange and ResourceQuota."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from .meta import KubeModel, KubeObject, NullableDict, NullableList
from .quantity import Quantity

__all__ = [
    "LimitRange",
    "LimitRangeItem",
    "LimitRangeSpec",
    "ResourceQuota",
    "ResourceQuotaSpec",
    "ResourceQuotaStatus",
    "ScopeSelector",
    "ScopedResourceSelectorRequirement",
]


class LimitRangeItem(KubeModel):
    """``v1.LimitRangeItem``: bounds and defaults of one ``type`` (Container, Pod,
    PersistentVolumeClaim) for each resource."""

    type: str = ""
    max: NullableDict[str, Quantity] = Field(default_factory=dict)
    min: NullableDict[str, Quantity] = Field(default_factory=dict)
    default: NullableDict[str, Quantity] = Field(default_factory=dict)
    default_request: NullableDict[str, Quantity] = Field(default_factory=dict)
    max_limit_request_ratio: NullableDict[str, Quantity] = Field(default_factory=dict)


class LimitRangeSpec(KubeModel):
    """``v1.LimitRangeSpec``."""

    limits: NullableList[LimitRangeItem] = Field(default_factory=list)


class LimitRange(KubeObject):
    """``v1.LimitRange``: the LimitRanger admission plugin gives the containers of new pods
    in its namespace their default requests and limits, then refuses pods outside its
    bounds.

    As the API server's defaulting (``SetDefaults_LimitRangeItem``), a Container item's
    ``default`` is completed from ``max`` and its ``defaultRequest`` from ``default``,
    then from ``min``.
    """

    namespaced: ClassVar[bool] = True

    api_version: str | None = "v1"
    kind: str | None = "LimitRange"
    spec: LimitRangeSpec = Field(default_factory=LimitRangeSpec)

    @model_validator(mode="after")
    def _default_container_items(self) -> LimitRange:
        for item in self.spec.limits:
            if item.type == "Container":
                item.default = {**item.max, **item.default}
                item.default_request = {**item.min, **item.default, **item.default_request}
        return self


class ScopedResourceSelectorRequirement(KubeModel):
    """``v1.ScopedResourceSelectorRequirement``: a scope (e.g. PriorityClass) and an
    operator (In, NotIn, Exists, DoesNotExist) with values."""

    scope_name: str = ""
    operator: str = ""
    values: NullableList[str] = Field(default_factory=list)


class ScopeSelector(KubeModel):
    """``v1.ScopeSelector``: every requirement must match (AND)."""

    match_expressions: NullableList[ScopedResourceSelectorRequirement] = Field(default_factory=list)


class ResourceQuotaSpec(KubeModel):
    """``v1.ResourceQuotaSpec``: ``hard`` limits, for the objects the scopes match."""

    hard: NullableDict[str, Quantity] = Field(default_factory=dict)
    scopes: NullableList[str] = Field(default_factory=list)
    scope_selector: ScopeSelector | None = None


class ResourceQuotaStatus(KubeModel):
    """``v1.ResourceQuotaStatus``: what the quota controller last observed."""

    hard: NullableDict[str, Quantity] = Field(default_factory=dict)
    used: NullableDict[str, Quantity] = Field(default_factory=dict)


class ResourceQuota(KubeObject):
    """``v1.ResourceQuota``: limits on what the objects of its namespace may consume in
    total (``pods``, ``requests.cpu``, ``count/services``...)."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "v1"
    kind: str | None = "ResourceQuota"
    spec: ResourceQuotaSpec = Field(default_factory=ResourceQuotaSpec)
    status: ResourceQuotaStatus = Field(default_factory=ResourceQuotaStatus)
