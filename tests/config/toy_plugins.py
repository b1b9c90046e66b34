"""Toy plugins named and shaped like upstream's defaults, for configuration tests.

Each implements the extension points its upstream namesake implements and declares
the args fields the seed's configuration examples use; the hooks do nothing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kubesched.framework.args import PluginArgs
from kubesched.framework.plugin import hookimpl
from kubesched.framework.registry import PluginRegistry


class _Toy:
    name = "Toy"

    def __init__(self, args: Any, handle: Any) -> None:
        self.args = args
        self.handle = handle


class _Sub(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


# --- args models -------------------------------------------------------------------


class ResourceSpec(_Sub):
    name: str
    weight: int = Field(default=1, ge=1, le=100)


class UtilizationShapePoint(_Sub):
    utilization: int = Field(ge=0, le=100)
    score: int = Field(ge=0, le=10)


class RequestedToCapacityRatioParam(_Sub):
    shape: tuple[UtilizationShapePoint, ...] = ()


def _default_resources() -> tuple[ResourceSpec, ...]:
    return (ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1))


class ScoringStrategy(_Sub):
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: tuple[ResourceSpec, ...] = Field(default_factory=_default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


class NodeResourcesFitArgs(PluginArgs):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)


class NodeAffinityArgs(PluginArgs):
    added_affinity: dict[str, Any] | None = None


class TopologySpreadConstraint(_Sub):
    max_skew: int = Field(ge=1)
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]


class PodTopologySpreadArgs(PluginArgs):
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: Literal["System", "List"] = "System"


class InterPodAffinityArgs(PluginArgs):
    hard_pod_affinity_weight: int = Field(default=1, ge=0, le=100)
    ignore_preferred_terms_of_existing_pods: bool = False


class DefaultPreemptionArgs(PluginArgs):
    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    resources: tuple[ResourceSpec, ...] = Field(default_factory=_default_resources)


class VolumeBindingArgs(PluginArgs):
    bind_timeout_seconds: int = Field(default=600, ge=0)


class PrioritySortArgs(PluginArgs):
    """A toy: upstream's PrioritySort has no args; used to test shared queueSort args."""

    reverse: bool = False


class NeedsArgsArgs(PluginArgs):
    required_thing: str


# --- plugins -------------------------------------------------------------------------


class SchedulingGates(_Toy):
    name = "SchedulingGates"

    @hookimpl
    def pre_enqueue(self, pod):
        return None


class PrioritySort(_Toy):
    name = "PrioritySort"

    @hookimpl
    def less(self, pod_info1, pod_info2):
        return False


class PrioritySortWithArgs(PrioritySort):
    """The toy PrioritySort with an Args model (registered instead of PrioritySort)."""

    Args = PrioritySortArgs


class NodeUnschedulable(_Toy):
    name = "NodeUnschedulable"

    @hookimpl
    def filter(self, node_info):
        return None


class NodeName(_Toy):
    name = "NodeName"

    @hookimpl
    def filter(self, node_info):
        return None


class TaintToleration(_Toy):
    name = "TaintToleration"

    @hookimpl
    def filter(self, node_info):
        return None

    @hookimpl
    def pre_score(self, nodes):
        return None

    @hookimpl
    def score(self, node_info):
        return 0


class _FilterAndScore(_Toy):
    @hookimpl
    def pre_filter(self, nodes):
        return None

    @hookimpl
    def filter(self, node_info):
        return None

    @hookimpl
    def pre_score(self, nodes):
        return None

    @hookimpl
    def score(self, node_info):
        return 0


class NodeAffinity(_FilterAndScore):
    name = "NodeAffinity"
    Args = NodeAffinityArgs


class NodePorts(_Toy):
    name = "NodePorts"

    @hookimpl
    def pre_filter(self, nodes):
        return None

    @hookimpl
    def filter(self, node_info):
        return None


class NodeResourcesFit(_FilterAndScore):
    name = "NodeResourcesFit"
    Args = NodeResourcesFitArgs


class PodTopologySpread(_FilterAndScore):
    name = "PodTopologySpread"
    Args = PodTopologySpreadArgs


class InterPodAffinity(_FilterAndScore):
    name = "InterPodAffinity"
    Args = InterPodAffinityArgs


class DynamicResourcesArgs(PluginArgs):
    filter_timeout: str = "10s"
    binding_timeout: str = "10m0s"


class DynamicResources(_Toy):
    name = "DynamicResources"
    Args = DynamicResourcesArgs

    @hookimpl
    def pre_enqueue(self, pod):
        return None

    @hookimpl
    def pre_filter(self, nodes):
        return None

    @hookimpl
    def filter(self, node_info):
        return None

    @hookimpl
    def post_filter(self, filtered_node_status_map):
        return None

    @hookimpl
    def score(self, node_info):
        return 0

    @hookimpl
    def reserve(self, node_name):
        return None

    @hookimpl
    def unreserve(self, node_name):
        return None

    @hookimpl
    def pre_bind(self, node_name):
        return None


class DefaultPreemption(_Toy):
    name = "DefaultPreemption"
    Args = DefaultPreemptionArgs

    @hookimpl
    def post_filter(self, filtered_node_status_map):
        return None


class NodeResourcesBalancedAllocation(_Toy):
    name = "NodeResourcesBalancedAllocation"
    Args = NodeResourcesBalancedAllocationArgs

    @hookimpl
    def pre_score(self, nodes):
        return None

    @hookimpl
    def score(self, node_info):
        return 0


class ImageLocality(_Toy):
    name = "ImageLocality"

    @hookimpl
    def score(self, node_info):
        return 0


class DefaultBinder(_Toy):
    name = "DefaultBinder"

    @hookimpl
    def bind(self, node_name):
        return None


class VolumeRestrictions(_Toy):
    name = "VolumeRestrictions"

    @hookimpl
    def pre_filter(self, nodes):
        return None

    @hookimpl
    def filter(self, node_info):
        return None


class NodeVolumeLimits(VolumeRestrictions):
    name = "NodeVolumeLimits"


class VolumeZone(VolumeRestrictions):
    name = "VolumeZone"


class NodeDeclaredFeatures(VolumeRestrictions):
    name = "NodeDeclaredFeatures"


class VolumeBinding(_FilterAndScore):
    name = "VolumeBinding"
    Args = VolumeBindingArgs

    @hookimpl
    def reserve(self, node_name):
        return None

    @hookimpl
    def unreserve(self, node_name):
        return None

    @hookimpl
    def pre_bind(self, node_name):
        return None


UPSTREAM_TOYS: tuple[type, ...] = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
    NodeDeclaredFeatures,
)
"""A toy for every plugin of kubesched's default profile."""


# --- custom plugins for merge tests ----------------------------------------------------


class CustomFilter(_Toy):
    name = "CustomFilter"

    @hookimpl
    def filter(self, node_info):
        return None


class CustomScore(_Toy):
    name = "CustomScore"

    @hookimpl
    def score(self, node_info):
        return 0


class CustomFilterScore(_Toy):
    name = "CustomFilterScore"

    @hookimpl
    def filter(self, node_info):
        return None

    @hookimpl
    def score(self, node_info):
        return 0


class CustomQueueSort(_Toy):
    name = "CustomQueueSort"

    @hookimpl
    def less(self, pod_info1, pod_info2):
        return True


class CustomBinder(_Toy):
    name = "CustomBinder"

    @hookimpl
    def bind(self, node_name):
        return None


class NeedsArgs(_Toy):
    name = "NeedsArgs"
    Args = NeedsArgsArgs

    @hookimpl
    def filter(self, node_info):
        return None


CUSTOM_TOYS: tuple[type, ...] = (
    CustomFilter,
    CustomScore,
    CustomFilterScore,
    CustomQueueSort,
    CustomBinder,
    NeedsArgs,
)


def toy_registry(*classes: type, upstream: bool = True, custom: bool = True) -> PluginRegistry:
    """A registry of the upstream-named toys, the custom toys, and ``classes``.

    A class in ``classes`` replaces a toy of the same name.
    """
    chosen: dict[str, type] = {}
    for cls in (*(UPSTREAM_TOYS if upstream else ()), *(CUSTOM_TOYS if custom else ()), *classes):
        chosen[cls.name] = cls
    registry = PluginRegistry()
    for cls in chosen.values():
        registry.add_class(cls)
    return registry
