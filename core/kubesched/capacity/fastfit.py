"""``capacity fit`` without a scheduling cycle per copy, when every filter is node-local.

Why it is exact. Suppose that whether a copy passes the Filter plugins on node N
depends only on N and the pods bound to it (node-local), and that a copy bound to N
changes nothing but N. Then node N takes some number c(N) of copies whatever happens
on the other nodes, a copy fails only when every node holds its c(N), and the copies
scheduled one by one — wherever the scores send each — end with exactly c(N) on every
node: the count is the sum of c(N), and the per-node counts are c(N), in any order of
placement. So c(N) is found in rounds with the profile's own PreFilter and Filter
plugins, over every node at once: round r adds an r-th copy (assumed in the
scheduler's cache, as a scheduling cycle does) to each node that passed round r - 1.
The copy that stops the question is then attempted by the scheduling algorithm itself
on that final state, for its FailedScheduling message and diagnosis.

This holds for the built-in filters given a copy without required pod (anti-)affinity,
DoNotSchedule spread constraints, volumes bound through claims or resource claims, and
a cluster whose pending pods cannot be helped by a copy (no pod affinity or spread of
theirs, no nomination), without NoExecute taints or node-pressure eviction.
:func:`blocker` says which of these fails, and ``capacity fit`` then schedules the
copies one by one.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kubesched.api import Pod
from kubesched.framework.diagnosis import Diagnosis, FitError
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status, not_none_mask
from kubesched.framework.types import NodeBatch, PodInfo
from kubesched.scheduler.algorithm import SchedulingError
from kubesched.simulate.driver import Simulation

NODE_LOCAL_FILTERS = frozenset(
    {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "NodeVolumeLimits",
        "VolumeRestrictions",
        "VolumeZone",
        "VolumeBinding",
        "DynamicResources",
        "NodeDeclaredFeatures",
        # Constant for a copy with no required terms: only other pods' anti-affinity
        # matters, and copies add none.
        "InterPodAffinity",
    }
)
"""Built-in Filter plugins whose verdict on a node depends on that node and its pods only,
for a copy meeting :func:`blocker`'s conditions."""
MUST_SKIP_FILTERS = frozenset({"PodTopologySpread"})
"""Built-in Filter plugins that count pods over many nodes: the copy's PreFilter must skip
them (no DoNotSchedule constraint, the defaults included)."""
HARMLESS_PLUGINS = frozenset(
    {
        "SchedulingGates",
        "PrioritySort",
        "DefaultBinder",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        *NODE_LOCAL_FILTERS,
        *MUST_SKIP_FILTERS,
    }
)
"""Every built-in plugin the fast count accepts in the profile, at any extension point:
scores only choose among feasible nodes, and the Reserve and PreBind of the volume and
DRA plugins do nothing for a copy without claims."""


def blocker(sim: Simulation, fwk: Framework, copy: Pod) -> str | None:
    """Why the copies of ``copy`` (as admitted) cannot be counted node by node on
    ``sim``'s cluster, or None when they can."""
    foreign = foreign_plugin(fwk)
    if foreign is not None:
        return foreign
    spec = copy.spec
    if spec.scheduling_gates:
        return "scheduling gates"
    if spec.resource_claims:
        return "resource claims"
    if any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in spec.volumes):
        return "volume claims"
    info = PodInfo(copy)
    if info.required_affinity_terms or info.required_anti_affinity_terms:
        return "required pod (anti-)affinity"
    if fwk.nominator is not None and len(fwk.nominator):
        return "nominated pods"
    if sim.cluster.kubelet is not None:
        return "node-pressure eviction"  # the kubelets may evict copies as time passes
    for node in sim.cluster.objects("Node"):
        # A tolerated NoExecute taint may evict a copy later, in virtual time.
        if any(t.effect == "NoExecute" for t in node.spec.taints):  # type: ignore[attr-defined]
            return "NoExecute taints"
    for pod in sim.cluster.pods():
        if pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
            continue
        # A pending pod that a copy could help (by affinity or spread) would be retried.
        affinity = pod.spec.affinity
        if pod.spec.topology_spread_constraints or (
            affinity is not None and affinity.pod_affinity is not None
        ):
            return f"pending pod {pod.key} with pod affinity or spread"
    return None


def failed_attempt(
    sim: Simulation, fwk: Framework, pod_info: PodInfo
) -> tuple[str, Diagnosis] | None:
    """What the scheduling algorithm says of ``pod_info`` on ``sim``'s cluster now, as a
    scheduling cycle would (FailedScheduling message and diagnosis); None when it finds
    a node, or a plugin fails with an error."""
    s = sim.scheduler
    algorithm = s.algorithm
    # A look, not a scheduling cycle: the round-robin start and the tie-breaking random
    # numbers stay as they were for the cycles that follow.
    start, rng_state = algorithm.next_start_node_index, algorithm.rng.getstate()
    s.cache.update_snapshot(s.snapshot)
    try:
        algorithm.schedule_pod(fwk, fwk.new_cycle_state(), pod_info, s.snapshot)
    except FitError as fit:
        return Status(Code.UNSCHEDULABLE, str(fit)).message(), fit.diagnosis
    except SchedulingError:
        return None
    finally:
        algorithm.next_start_node_index = start
        algorithm.rng.setstate(rng_state)
    return None


def foreign_plugin(fwk: Framework) -> str | None:
    """The first plugin of ``fwk``'s profile that is not one of :data:`HARMLESS_PLUGINS`
    (as ``plugin NAME at POINT``), or None."""
    for point in EXTENSION_POINTS:
        for name in fwk.plugins_at(point.name):
            if name not in HARMLESS_PLUGINS:
                return f"plugin {name} at {point.name}"
    return None


class NodeLocalCount:
    """The copies of one template counted node by node on a simulation's scheduler cache
    (see the module's docstring). The copies are assumed pods: :meth:`undo` forgets them."""

    def __init__(self, sim: Simulation, fwk: Framework, copy: Pod) -> None:
        self.sim = sim
        self.fwk = fwk
        self.copy = copy
        self.per_node: Counter[str] = Counter()
        self.assumed: list[PodInfo] = []

    def _copy_info(self, index: int, node: str | None) -> PodInfo:
        meta = self.copy.metadata.model_copy(
            update={"name": f"{self.copy.name}-fast-{index}", "uid": f"capacity-fast-{index}"}
        )
        spec = self.copy.spec.model_copy(update={"node_name": node})
        return PodInfo(self.copy.model_copy(update={"metadata": meta, "spec": spec}))

    def count(self, limit: int | None) -> bool:
        """Add copies in rounds until every node is full, or more than ``limit`` are
        added; False when a plugin failed or a PreFilter wanted a spread skipped
        counted (then nothing can be concluded)."""
        s = self.sim.scheduler
        probe = self._copy_info(-1, None)
        open_nodes: list[str] | None = None
        while open_nodes is None or open_nodes:
            s.cache.update_snapshot(s.snapshot)
            state = self.fwk.new_cycle_state()
            nodes = s.snapshot.list()
            pre_result, status, _ = self.fwk.run_pre_filter_plugins(state, probe, nodes)
            if not status.is_success():
                return status.is_rejected()
            if MUST_SKIP_FILTERS & (set(self.fwk.plugins_at("Filter")) - state.skip_filter_plugins):
                return False
            table = s.snapshot.table
            names = [n.name for n in nodes] if open_nodes is None else open_nodes
            if pre_result is not None and not pre_result.all_nodes():
                names = [n for n in names if n in pre_result.node_names]
            rows = np.array([table.index[n] for n in names], dtype=np.intp)
            verdicts, error = self.fwk.run_filter_batch(state, probe, NodeBatch(table, rows))
            if error is not None:
                return False
            open_nodes = [
                n for n, bad in zip(names, not_none_mask(verdicts), strict=True) if not bad
            ]
            for node in open_nodes:
                info = self._copy_info(len(self.assumed), node)
                s.cache.assume_pod(info)
                self.assumed.append(info)
                self.per_node[node] += 1
            if limit is not None and len(self.assumed) > limit:
                return True
        return True

    def explain(self, index: int) -> tuple[str, Diagnosis] | None:
        """The message and diagnosis of the next copy's attempt by the scheduling
        algorithm on the final state; None if, against the reasoning, it fits."""
        return failed_attempt(self.sim, self.fwk, self._copy_info(index, None))

    def undo(self) -> None:
        """Forget every assumed copy (the cache is as before :meth:`count`)."""
        for info in self.assumed:
            self.sim.scheduler.cache.forget_pod(info)
        self.assumed.clear()
        self.per_node.clear()
