"""The versioned capacity reports (pydantic models → JSON Schema) of ``kubesched capacity``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "kubesched.io/capacity/v1"
"""The ``schemaVersion`` of the reports this package writes. Removing or renaming a field,
or changing a field's meaning or unit, needs a new version; adding an optional field does
not."""

NO_ZONE = ""
"""The zone of a node without the ``topology.kubernetes.io/zone`` label."""


class _Model(BaseModel):
    # Output models: camelCase on the wire, and a misspelt field in a consumer's hand-made
    # report is an error rather than silently dropped.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self, **kw: Any) -> str:
        """The report as JSON (camelCase field names)."""
        return self.model_dump_json(by_alias=True, **kw)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (camelCase field names), for YAML."""
        return self.model_dump(mode="json", by_alias=True)


class NodeCount(_Model):
    """How many pods of the question went to one node."""

    node: str
    zone: str = Field(description='The node\'s zone label ("" when it has none).')
    count: int


class ZoneCount(_Model):
    """How many pods of the question went to one zone."""

    zone: str = Field(description='The zone label value ("" for nodes without one).')
    count: int


class ReasonCount(_Model):
    """One reason of the FailedScheduling diagnosis and how many nodes gave it."""

    reason: str = Field(description="As the plugin wrote it, e.g. 'Insufficient cpu'.")
    plugin: str | None = Field(description="The Filter (or PreFilter) plugin that gave it.")
    nodes: int = Field(description="Nodes rejected for this reason.")


class StopReport(_Model):
    """Why ``capacity fit`` stopped adding copies."""

    reason: Literal["unschedulable", "max"] = Field(
        description="unschedulable: the next copy could not be placed; max: --max reached."
    )
    message: str = Field(
        "", description="The FailedScheduling message of the copy that could not be placed."
    )
    reasons: list[ReasonCount] = Field(
        default_factory=list,
        description="The diagnosis of that copy: each node's rejection, grouped by reason.",
    )


class VictimReport(_Model):
    """A pod that preemption removed to make room (``--allow-preemption``)."""

    pod: str = Field(description="namespace/name")
    node: str = Field(description="The node it ran on.")
    priority: int


class CapacityFitReport(_Model):
    """The answer of ``kubesched capacity fit``: how many more copies of a pod fit."""

    schema_version: Literal["kubesched.io/capacity/v1"] = Field(
        SCHEMA_VERSION, alias="schemaVersion"
    )
    kind: Literal["CapacityFit"] = "CapacityFit"
    template: str = Field(
        description="The pod template the copies were made of, e.g. "
        "'Deployment shop/web' or 'Pod default/probe'."
    )
    profile: str = Field(description="The schedulerName of the profile that placed them.")
    preemption: bool = Field(description="Whether the copies could preempt other pods.")
    count: int = Field(description="How many copies were placed before the first failure.")
    stop: StopReport
    nodes: list[NodeCount] = Field(
        description="Copies per node (nodes with at least one), most first."
    )
    zones: list[ZoneCount] = Field(description="Copies per zone, most first.")
    victims: list[VictimReport] = Field(
        default_factory=list, description="Pods preempted to place the copies."
    )
    cluster_nodes: int = Field(alias="clusterNodes", description="Nodes in the cluster.")
    cluster_pending: int = Field(
        alias="clusterPending",
        description="Pods of the cluster itself still pending before the first copy.",
    )
    wall_time: float = Field(alias="wallTime", description="Seconds the answer took.")


class NodeShapeReport(_Model):
    """One node template (a shape of new node) of ``capacity nodes``."""

    name: str = Field(description="The template Node's name; new nodes are NAME-1, NAME-2...")
    cost: float = Field(description="The cost of one such node (annotation kubesched.io/cost).")
    allocatable: dict[str, str] = Field(description="What one node of this shape offers.")


class PlanReport(_Model):
    """A set of new nodes and what the workload does on it."""

    nodes: dict[str, int] = Field(description="New nodes per template name.")
    total_nodes: int = Field(alias="totalNodes")
    cost: float
    pending: int = Field(description="Workload pods still pending with these nodes added.")
    placements: dict[str, str] = Field(
        default_factory=dict,
        description="namespace/name of each workload pod → the node it was placed on.",
    )
    pods_per_new_node: dict[str, int] = Field(
        default_factory=dict,
        alias="podsPerNewNode",
        description="Workload pods on each new node.",
    )


class PendingPodReport(_Model):
    """A workload pod that no plan could place, and the scheduler's last word on it."""

    pod: str = Field(description="namespace/name")
    message: str


class CapacityNodesReport(_Model):
    """The answer of ``kubesched capacity nodes``: the new nodes a workload needs."""

    schema_version: Literal["kubesched.io/capacity/v1"] = Field(
        SCHEMA_VERSION, alias="schemaVersion"
    )
    kind: Literal["CapacityNodes"] = "CapacityNodes"
    workload_pods: int = Field(alias="workloadPods", description="Pods the workload makes.")
    pending_without_new_nodes: int = Field(
        alias="pendingWithoutNewNodes",
        description="Workload pods that stay pending on the cluster as it is.",
    )
    shapes: list[NodeShapeReport]
    feasible: bool = Field(description="Whether some plan places every workload pod.")
    plan: PlanReport | None = Field(
        None, description="The cheapest plan found (fewest nodes among equal costs)."
    )
    alternatives: list[PlanReport] = Field(
        default_factory=list, description="The best plan of each single shape, for comparison."
    )
    lower_bound_nodes: int = Field(
        alias="lowerBoundNodes",
        description="No plan has fewer new nodes: the resource-sum bound (requests of the "
        "workload minus what the cluster has free, over the largest shape).",
    )
    lower_bound_cost: float = Field(
        alias="lowerBoundCost", description="No plan costs less (the same bound, priced)."
    )
    optimal: bool = Field(
        description="True when the plan meets the lower bound, so no plan can be cheaper; "
        "false means the plan may not be optimal (the bound ignores constraints)."
    )
    unplaceable: list[PendingPodReport] = Field(
        default_factory=list,
        description="Workload pods no plan placed (when not feasible).",
    )
    simulations: int = Field(description="Simulations the search ran.")
    wall_time: float = Field(alias="wallTime", description="Seconds the answer took.")


class RemovedNodeReport(_Model):
    """A node ``capacity remove`` found removable, and where its pods went."""

    name: str
    zone: str = Field(description='The node\'s zone label ("" when it has none).')
    utilization: float = Field(
        description="Its utilisation before removal: requests over allocatable of "
        "utilizationResource (0 to 1)."
    )
    utilization_resource: str = Field(
        alias="utilizationResource",
        description="cpu or memory, whichever is higher; nvidia.com/gpu on a GPU node.",
    )
    empty: bool = Field(
        description="Whether no pod had to move (only DaemonSet, mirror or "
        "finished pods ran on it)."
    )
    moved: dict[str, str] = Field(
        description="namespace/name of each pod moved off it → the node the profile placed it on."
    )
    dropped_pods: int = Field(
        alias="droppedPods",
        description="Pods that went with the node: DaemonSet and mirror pods, finished pods.",
    )


class KeptNodeReport(_Model):
    """A node ``capacity remove`` keeps, and why (cluster-autoscaler's reason names)."""

    name: str
    zone: str = Field(description='The node\'s zone label ("" when it has none).')
    utilization: float | None = Field(
        description="Its utilisation (None when it cannot be computed)."
    )
    utilization_resource: str | None = Field(alias="utilizationResource")
    reason: Literal[
        "NotUnderutilized",
        "ScaleDownDisabledAnnotation",
        "BlockedByPod",
        "NoPlaceToMovePods",
        "MaxRemovalsReached",
        "UnexpectedError",
    ] = Field(description="Why it stays, as cluster-autoscaler's UnremovableReason names it.")
    message: str = Field(
        description="The detail: the utilisation against the threshold, the blocking pod's "
        "rule (NotReplicated, NotEnoughPdb, ...), or the FailedScheduling message of a pod "
        "that found no other node."
    )
    blocking_pod: str | None = Field(
        None, alias="blockingPod", description="namespace/name of the pod that keeps it."
    )


class CapacityRemoveReport(_Model):
    """The answer of ``kubesched capacity remove``: the nodes that can be removed."""

    schema_version: Literal["kubesched.io/capacity/v1"] = Field(
        SCHEMA_VERSION, alias="schemaVersion"
    )
    kind: Literal["CapacityRemove"] = "CapacityRemove"
    profiles: list[str] = Field(
        description="The schedulerNames of the profiles that re-placed the pods."
    )
    utilization_threshold: float = Field(alias="utilizationThreshold")
    gpu_utilization_threshold: float = Field(alias="gpuUtilizationThreshold")
    nodes: int = Field(description="Nodes in the cluster.")
    removable: list[RemovedNodeReport] = Field(
        description="The nodes that can be removed together, in the order they were tried."
    )
    kept: list[KeptNodeReport] = Field(description="Every other node and why it stays, by name.")
    cost: float = Field(
        description="The cost of every node (annotation kubesched.io/cost, default 1)."
    )
    cost_saved: float = Field(alias="costSaved", description="The cost of the removable nodes.")
    pods_moved: int = Field(alias="podsMoved", description="Pods the removals re-place.")
    simulations: int = Field(description="Drains simulated (empty nodes need none).")
    wall_time: float = Field(alias="wallTime", description="Seconds the answer took.")


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each report, by file name under docs/schema/."""
    return {
        "capacity-fit.schema.json": CapacityFitReport.model_json_schema(by_alias=True),
        "capacity-nodes.schema.json": CapacityNodesReport.model_json_schema(by_alias=True),
        "capacity-remove.schema.json": CapacityRemoveReport.model_json_schema(by_alias=True),
    }
