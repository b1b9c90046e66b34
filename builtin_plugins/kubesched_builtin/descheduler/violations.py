"""Deschedule strategies that evict pods breaking a rule: node taints, node affinity,
inter-pod anti-affinity, pod lifetime and failed pods."""

from __future__ import annotations

from pydantic import Field, field_validator

from kubesched.api import (
    ContainerStatus,
    LabelSelector,
    Node,
    Pod,
    PreferredSchedulingTermsScorer,
    RequiredNodeAffinity,
    compile_label_selector,
    toleration_tolerates_taint,
)
from kubesched.deschedule import DeschedulerHandle

from .common import Namespaces, StrategyArgs, selects


class _Selecting(StrategyArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None


class TaintsArgs(_Selecting):
    """RemovePodsViolatingNodeTaints' args."""

    include_prefer_no_schedule: bool = Field(
        False, description="also evict pods not tolerating PreferNoSchedule taints"
    )
    excluded_taints: list[str] = Field(
        default_factory=list, description="taints (key or key=value) to ignore"
    )
    included_taints: list[str] = Field(
        default_factory=list, description="only these taints (key or key=value) count"
    )

    @field_validator("included_taints")
    @classmethod
    def _not_both(cls, v: list[str], info: object) -> list[str]:
        data = getattr(info, "data", {})
        if v and data.get("excluded_taints"):
            raise ValueError("either includedTaints or excludedTaints can be set, but not both")
        return v


def _taint_listed(key: str, value: str, listed: list[str]) -> bool:
    return any(t == key or t == f"{key}={value}" for t in listed)


class RemovePodsViolatingNodeTaints:
    """Evicts pods from nodes whose NoSchedule (optionally PreferNoSchedule) taints they do
    not tolerate: taints added after they were scheduled."""

    name = "RemovePodsViolatingNodeTaints"
    Args = TaintsArgs

    def __init__(self, args: TaintsArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def _violated(self, pod: Pod, node: Node) -> str | None:
        a = self.args
        effects = {"NoSchedule", *(("PreferNoSchedule",) if a.include_prefer_no_schedule else ())}
        for t in node.spec.taints:
            if t.effect not in effects:
                continue
            if _taint_listed(t.key, t.value or "", a.excluded_taints):
                continue
            if a.included_taints and not _taint_listed(t.key, t.value or "", a.included_taints):
                continue
            if not any(toleration_tolerates_taint(tol, t) for tol in pod.spec.tolerations):
                return f"does not tolerate taint {t.key}={t.value or ''}:{t.effect}"
        return None

    def deschedule(self, nodes: list[Node]) -> None:
        """Evict every selected, evictable pod violating its node's taints."""
        for node in nodes:
            for pod in self.handle.evictable_pods_on_node(node.name):
                if not selects(pod, self.args.namespaces, self.args.label_selector):
                    continue
                why = self._violated(pod, node)
                if why is not None:
                    self.handle.evict(pod, f"{why} on node {node.name}")


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class AffinityArgs(_Selecting):
    """RemovePodsViolatingNodeAffinity's args."""

    node_affinity_type: list[str] = Field(
        min_length=1,
        description="requiredDuringSchedulingIgnoredDuringExecution and/or "
        "preferredDuringSchedulingIgnoredDuringExecution",
    )

    @field_validator("node_affinity_type")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for t in v:
            if t not in (REQUIRED, PREFERRED):
                raise ValueError(f'invalid nodeAffinityType "{t}"')
        return v


class RemovePodsViolatingNodeAffinity:
    """Evicts pods whose required node affinity (or node selector) their node no longer
    meets, when another node does; with ``preferredDuringSchedulingIgnoredDuringExecution``,
    also pods whose preferred node affinity some node satisfies better (a higher sum of
    the matching terms' weights) than theirs, when they fit some node."""

    name = "RemovePodsViolatingNodeAffinity"
    Args = AffinityArgs

    def __init__(self, args: AffinityArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def deschedule(self, nodes: list[Node]) -> None:
        """Evict, for each affinity type in turn, the pods it says are misplaced."""
        for kind in self.args.node_affinity_type:
            for node in nodes:
                for pod in self.handle.evictable_pods_on_node(node.name):
                    if not selects(pod, self.args.namespaces, self.args.label_selector):
                        continue
                    why = (
                        self._required(pod, node, nodes)
                        if kind == REQUIRED
                        else self._preferred(pod, node, nodes)
                    )
                    if why is not None:
                        self.handle.evict(pod, why)

    def _required(self, pod: Pod, node: Node, nodes: list[Node]) -> str | None:
        if RequiredNodeAffinity(pod).matches(node) or not self.handle.fits_other_node(pod, nodes):
            return None
        return f"node {node.name} no longer matches its required node affinity"

    def _preferred(self, pod: Pod, node: Node, nodes: list[Node]) -> str | None:
        aff = pod.spec.affinity
        na = aff.node_affinity if aff is not None else None
        scorer = PreferredSchedulingTermsScorer(
            na.preferred_during_scheduling_ignored_during_execution if na is not None else None
        )
        if not scorer:
            return None
        here = scorer.score_node(node)
        best = max(scorer.score_node(n) for n in nodes)
        # As the descheduler: the best weight is over all nodes, and the pod must fit
        # some node (its own included).
        if best <= here or not any(self.handle.pod_fits_node(pod, n) is None for n in nodes):
            return None
        return (
            f"its preferred node affinity weighs {here} on node {node.name}, "
            f"{best} on the best node"
        )


class RemovePodsViolatingInterPodAntiAffinity:
    """Evicts pods whose required pod anti-affinity is broken by a pod in the same
    topology domain (one pod per conflict, the first found, as the descheduler does)."""

    name = "RemovePodsViolatingInterPodAntiAffinity"
    Args = _Selecting

    def __init__(self, args: _Selecting, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def deschedule(self, nodes: list[Node]) -> None:
        """Evict, node by node, each pod in conflict with a pod that remains."""
        labels = {n.name: n.metadata.labels for n in nodes}
        placed = {n.name: list(self.handle.pods_on_node(n.name)) for n in nodes}
        for node in nodes:
            for pod in list(placed[node.name]):
                if not selects(pod, self.args.namespaces, self.args.label_selector):
                    continue
                if self.handle.not_evictable(pod) is not None:
                    continue
                other = self._conflict(pod, node.name, placed, labels)
                if other is not None and self.handle.evict(
                    pod, f"its required anti-affinity is violated by {other.key}"
                ):
                    placed[node.name].remove(pod)

    @staticmethod
    def _conflict(
        pod: Pod, node: str, placed: dict[str, list[Pod]], labels: dict[str, dict[str, str]]
    ) -> Pod | None:
        aff = pod.spec.affinity
        anti = aff.pod_anti_affinity if aff is not None else None
        terms = anti.required_during_scheduling_ignored_during_execution if anti else []
        for term in terms:
            selector = compile_label_selector(term.label_selector)
            namespaces = set(term.namespaces or [pod.namespace or ""])
            key = term.topology_key
            if key not in labels.get(node, {}):
                continue
            domain = labels[node][key]
            for other_node, pods in placed.items():
                if labels[other_node].get(key) != domain:
                    continue
                for other in pods:
                    if other.metadata.uid == pod.metadata.uid:
                        continue
                    if (other.namespace or "") in namespaces and selector.matches(
                        other.metadata.labels
                    ):
                        return other
        return None


LIFETIME_STATES = (
    # pod phases
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    # pod status reasons
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    # container waiting reasons
    "PodInitializing",
    "ContainerCreating",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "ImagePullBackOff",
    "CreateContainerError",
    "InvalidImageName",
)
"""The ``states`` PodLifeTime accepts (the descheduler's list)."""


class LifeTimeArgs(_Selecting):
    """PodLifeTime's args."""

    max_pod_life_time_seconds: int = Field(ge=0, description="evict pods older than this")
    states: list[str] = Field(
        default_factory=list,
        description="only pods in these phases, with these status reasons, or with a "
        "container waiting for one of these reasons",
    )
    including_init_containers: bool = Field(
        False, description="states also match the init containers' waiting reasons"
    )

    @field_validator("states")
    @classmethod
    def _known_states(cls, v: list[str]) -> list[str]:
        unknown = [s for s in v if s not in LIFETIME_STATES]
        if unknown:
            raise ValueError(f"states must be one of [{' '.join(sorted(LIFETIME_STATES))}]")
        return v


class PodLifeTime:
    """Evicts pods older than ``maxPodLifeTimeSeconds``, oldest first."""

    name = "PodLifeTime"
    Args = LifeTimeArgs

    def __init__(self, args: LifeTimeArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def _in_state(self, pod: Pod) -> bool:
        status = pod.status
        if status.phase in self.args.states or status.reason in self.args.states:
            return True
        inits = status.init_container_statuses if self.args.including_init_containers else []
        return any(
            cs.state.waiting is not None and cs.state.waiting.reason in self.args.states
            for cs in [*inits, *status.container_statuses]
        )

    def deschedule(self, nodes: list[Node]) -> None:
        """Evict every selected pod past its lifetime, the oldest first."""
        a = self.args
        old = [
            p
            for n in nodes
            for p in self.handle.evictable_pods_on_node(n.name)
            if selects(p, a.namespaces, a.label_selector)
            and self.handle.pod_age(p) > a.max_pod_life_time_seconds
            and (not a.states or self._in_state(p))
        ]
        old.sort(key=lambda p: -self.handle.pod_age(p))
        for pod in old:
            self.handle.evict(
                pod,
                f"older than {a.max_pod_life_time_seconds}s ({self.handle.pod_age(pod):g}s)",
            )


class FailedArgs(_Selecting):
    """RemoveFailedPods' args (the descheduler's ``RemoveFailedPodsArgs``)."""

    reasons: list[str] = Field(
        default_factory=list,
        description="only pods whose status reason or a container's waiting/terminated "
        "reason is one of these",
    )
    exit_codes: list[int] = Field(
        default_factory=list, description="only pods with a container terminated with one of these"
    )
    including_init_containers: bool = Field(
        False, description="reasons and exitCodes also look at the init containers"
    )
    exclude_owner_kinds: list[str] = Field(
        default_factory=list, description="keep pods with an owner of one of these kinds"
    )
    min_pod_lifetime_seconds: int | None = Field(
        None, ge=0, description="keep pods younger than this (seconds since creation)"
    )


def _container_reasons(statuses: list[ContainerStatus]) -> set[str]:
    return {
        r
        for cs in statuses
        for r in (
            cs.state.waiting.reason if cs.state.waiting else None,
            cs.state.terminated.reason if cs.state.terminated else None,
        )
        if r
    }


def _exit_codes(statuses: list[ContainerStatus]) -> set[int]:
    return {cs.state.terminated.exit_code for cs in statuses if cs.state.terminated is not None}


class RemoveFailedPods:
    """Evicts pods in phase Failed; ``reasons``, ``exitCodes``, ``excludeOwnerKinds`` and
    ``minPodLifetimeSeconds`` narrow which, as the descheduler's ``validateCanEvict``."""

    name = "RemoveFailedPods"
    Args = FailedArgs

    def __init__(self, args: FailedArgs, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle

    def kept(self, pod: Pod) -> str | None:
        """Why the args keep this Failed pod (None: it goes)."""
        a = self.args
        status = pod.status
        if (
            a.min_pod_lifetime_seconds is not None
            and self.handle.pod_age(pod) < a.min_pod_lifetime_seconds
        ):
            return f"pod does not exceed the min age seconds of {a.min_pod_lifetime_seconds}"
        for ref in pod.metadata.owner_references:
            if ref.kind in a.exclude_owner_kinds:
                return f"pod's owner kind of {ref.kind} is excluded"
        inits = status.init_container_statuses if a.including_init_containers else []
        if a.reasons:
            reasons = _container_reasons([*status.container_statuses, *inits])
            if status.reason:
                reasons.add(status.reason)
            if not reasons & set(a.reasons):
                return "pod does not match any of the reasons"
        if a.exit_codes and not _exit_codes([*status.container_statuses, *inits]) & set(
            a.exit_codes
        ):
            return "pod does not match any of the exitCodes"
        return None

    def deschedule(self, nodes: list[Node]) -> None:
        """Evict every selected Failed pod the args do not keep."""
        for node in nodes:
            for pod in self.handle.evictable_pods_on_node(node.name):
                if pod.status.phase != "Failed":
                    continue
                if not selects(pod, self.args.namespaces, self.args.label_selector):
                    continue
                if self.kept(pod) is None:
                    self.handle.evict(pod, f"failed ({self._why(pod)})")

    @staticmethod
    def _why(pod: Pod) -> str:
        status = pod.status
        codes = sorted(_exit_codes([*status.container_statuses, *status.init_container_statuses]))
        parts = [status.reason or "no reason"]
        if codes:
            parts.append("exit code " + ", ".join(str(c) for c in codes))
        return "; ".join(parts)
