"""What both capacity questions share: the profile without preemption, the pod template, zones."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from kubesched.api import KINDS, KubeObject, Node, Pod
from kubesched.api.workloads import (
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.capacity.report import NO_ZONE, ReasonCount
from kubesched.config import (
    EffectiveConfiguration,
    KubeSchedulerConfiguration,
    default_configuration,
    effective_configuration,
)
from kubesched.config.types import DEFAULT_SCHEDULER_NAME
from kubesched.errors import UserInputError
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.registry import PluginRegistry
from kubesched.simulate.driver import Simulation
from kubesched.simulate.report import ZONE_LABEL

WORKLOAD_KINDS = (Deployment, ReplicaSet, StatefulSet, Job, ReplicationController)
"""The workload kinds whose pod template ``capacity fit`` copies (besides a bare Pod)."""


@dataclass(frozen=True)
class PodTemplate:
    """The pod that ``capacity fit`` copies, and where it came from (for the report)."""

    pod: Pod
    description: str
    """e.g. ``Deployment shop/web``."""


def capacity_configuration(
    config: KubeSchedulerConfiguration | EffectiveConfiguration | None,
    registry: PluginRegistry,
    *,
    allow_preemption: bool,
) -> EffectiveConfiguration:
    """The configuration the capacity questions schedule with: ``config`` as it is, or,
    when preemption is not allowed, with no PostFilter plugin in any profile (a pod that
    fits nowhere then simply fails, as it would with preemption disabled), nor at
    PreEnqueue (where DefaultPreemption holds back a pod whose preemption is in flight)."""
    if isinstance(config, EffectiveConfiguration):
        effective = config
    else:
        effective = effective_configuration(config or default_configuration(registry), registry)
    if allow_preemption:
        return effective
    profiles = []
    for p in effective.profiles:
        preempting = {e.name for e in p.plugins.get("PostFilter", ())}
        pre_enqueue = tuple(e for e in p.plugins.get("PreEnqueue", ()) if e.name not in preempting)
        plugins = {**p.plugins, "PostFilter": (), "PreEnqueue": pre_enqueue}
        profiles.append(dataclasses.replace(p, plugins=plugins))
    return dataclasses.replace(effective, profiles=tuple(profiles))


def check_profile(effective: EffectiveConfiguration, pod: Pod, source: str) -> str:
    """The schedulerName serving ``pod``; a ``UserInputError`` when no profile does."""
    name = pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME
    if effective.profile(name) is None:
        served = ", ".join(p.scheduler_name for p in effective.profiles)
        raise UserInputError(
            f'no profile serves schedulerName "{name}" (the profiles serve: {served})',
            source=source,
            obj=f"Pod {pod.key}",
        )
    return name


def pod_template(
    objects: Iterable[KubeObject], source: str
) -> tuple[PodTemplate, list[KubeObject]]:
    """The one Pod or workload of ``objects`` whose pod ``capacity fit`` copies, and the
    other objects (Namespaces, PriorityClasses, ... that the pod needs), which join the
    cluster. A ``UserInputError`` unless there is exactly one such object."""
    templates: list[KubeObject] = []
    others: list[KubeObject] = []
    for obj in objects:
        if isinstance(obj, DaemonSet):
            raise UserInputError(
                "a DaemonSet runs one pod per eligible node; its capacity is not a count "
                "of copies (give a Pod or a Deployment, ReplicaSet, StatefulSet, Job or "
                "ReplicationController)",
                source=source,
                obj=f"DaemonSet {obj.key}",
            )
        (templates if isinstance(obj, (Pod, *WORKLOAD_KINDS)) else others).append(obj)
    if len(templates) != 1:
        found = ", ".join(f"{o.kind} {o.key}" for o in templates) or "none"
        raise UserInputError(
            "expected exactly one Pod or workload (Deployment, ReplicaSet, StatefulSet, Job, "
            f"ReplicationController) to copy; found {found}",
            source=source,
        )
    obj = templates[0]
    description = f"{obj.kind} {obj.key}"
    if isinstance(obj, Pod):
        if obj.spec.node_name:
            raise UserInputError(
                "the pod to copy names a node (spec.nodeName): the scheduler would not place it",
                source=source,
                obj=description,
            )
        return PodTemplate(obj, description), others
    template = obj.spec.template  # type: ignore[attr-defined]
    if template is None:
        raise UserInputError(
            "the workload has no pod template", source=source, obj=f"{description}: spec.template"
        )
    pod = Pod(
        metadata={  # type: ignore[arg-type]
            "name": obj.name,
            "namespace": obj.namespace or "default",
            "labels": dict(template.metadata.labels),
            "annotations": dict(template.metadata.annotations),
        },
        spec=template.spec.model_copy(deep=True),
    )
    return PodTemplate(pod, description), others


def node_zone(node: Node | None) -> str:
    """The node's ``topology.kubernetes.io/zone`` label (``""`` when absent)."""
    if node is None:
        return NO_ZONE
    return node.metadata.labels.get(ZONE_LABEL, NO_ZONE)


def reason_counts(
    diagnosis: Diagnosis | None, node_names: list[str], feasible: set[str]
) -> list[ReasonCount]:
    """The rejections of one attempt grouped by (plugin, reason), most nodes first: the
    nodes a filter rejected, and (after a PreFilter rejection or narrowing) every other
    node that was not feasible."""
    if diagnosis is None:
        return []
    counts: Counter[tuple[str | None, str]] = Counter()
    for status in diagnosis.node_to_status.values():
        for reason in status.reasons or [status.code.display]:
            counts[(status.plugin, reason)] += 1
    absent = diagnosis.absent_nodes_status
    if absent is not None:
        rest = sum(1 for n in node_names if n not in diagnosis.node_to_status and n not in feasible)
        for reason in absent.reasons or [absent.code.display]:
            counts[(absent.plugin, reason)] += rest
    return [
        ReasonCount(reason=reason, plugin=plugin, nodes=n)
        for (plugin, reason), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][1]))
        if n
    ]


def frozen_objects(sim: Simulation) -> list[KubeObject]:
    """Every object of ``sim``'s cluster as it is now, to start other simulations from:
    bound pods stay bound; pods being deleted and Leases are left out."""
    return [
        obj
        for kind in KINDS
        if kind != "Lease"
        for obj in sim.cluster.objects(kind)
        if not (isinstance(obj, Pod) and obj.metadata.deletion_timestamp is not None)
    ]
