"""kubesched's side of ``kubesched compare``: each pod scheduled in the embedded cluster
with the earlier pods bound where the real scheduler put them, and the verdicts."""

from __future__ import annotations

import re

from kubesched.api import Pod, parse_object
from kubesched.compare.real import RealDecision, RealRun, iter_bound
from kubesched.compare.report import NodeScore, PodComparison
from kubesched.config import EffectiveConfiguration
from kubesched.framework.registry import PluginRegistry
from kubesched.scheduler.records import RESULT_SCHEDULED, AttemptRecord
from kubesched.simulate.driver import Simulation

_AVAILABLE = re.compile(r"^(\d+/\d+ nodes are available): (.*)$", re.DOTALL)
DRA_POST_FILTER = "no new claims to deallocate"
"""What upstream's DynamicResources PostFilter says for a pod without ResourceClaims. DRA
is on by default since v1.34, and kubesched does not model it (no such plugin): the
phrase is dropped from the real message before the two are compared."""
_DRA = re.compile(rf"\s*{DRA_POST_FILTER}(?:, |\.?$)")


def normalise_message(message: str) -> list[str]:
    """A FailedScheduling message in a form two schedulers' messages compare in: one
    entry per sentence (the filters', then preemption's), each ``N/M nodes are
    available:`` with its reasons sorted; whitespace, the final period and
    :data:`DRA_POST_FILTER` ignored."""
    text = _DRA.sub(" ", " ".join(message.split())).strip()
    text = text.removesuffix(".")  # one period: a doubled one is a difference
    out = []
    for part in text.split(". preemption: "):
        match = _AVAILABLE.match(part.strip())
        if match is None:
            out.append(part.strip())
            continue
        reasons = sorted(r.strip() for r in match.group(2).split(", "))
        out.append(f"{match.group(1)}: {', '.join(reasons)}")
    return out


class Replay:
    """The embedded cluster of the comparison: the objects as the API server stored them,
    the workload controllers held (the pods come from the plan, not from them)."""

    def __init__(self, run: RealRun, config: EffectiveConfiguration,
                 registry: PluginRegistry, prefix: str, seed: int = 0) -> None:  # fmt: skip
        self.prefix = prefix
        self.sim = Simulation([], config=config, registry=registry, seed=seed)
        self.cluster = self.sim.cluster
        # Held for the cluster's whole life, never resumed: a ReplicaSet missing the pods
        # not yet replayed must not make them. (Kept on self: a collected context would
        # release the hold.)
        self._held = self.cluster.paused_controllers()
        self._held.__enter__()
        # The foreign nodes' pods are fixed: only those bound matter (and only those
        # would stay out of the embedded scheduler's queue).
        foreign = [o for o in run.foreign if not isinstance(o, Pod) or o.spec.node_name]
        self.cluster.apply([*foreign, *(parse_object(o) for o in run.objects)])
        self.pods = {d.key: d.created for d in run.decisions}

    def close(self) -> None:
        """Release the embedded cluster."""
        self.sim.close()

    def _compared(self) -> dict[str, Pod]:
        return {
            p.key: p for p in self.cluster.iter_objects("Pod")
            if (p.metadata.namespace or "").startswith(self.prefix)
        }  # fmt: skip

    def _sync(self, bound: dict[str, str]) -> None:
        """Make the compared pods exactly those ``bound`` (key → node), where they are."""
        for key, pod in self._compared().items():
            if bound.get(key) != pod.spec.node_name:
                self.cluster.delete_pod(pod, 0)
        present = self._compared()
        for key, node in bound.items():
            if key not in present:
                doc = {**self.pods[key], "status": {}}
                doc["spec"] = {**doc["spec"], "nodeName": node}
                self.cluster.create(parse_object(doc))

    def compare(self, decision: RealDecision, bound: dict[str, str]) -> PodComparison:
        """Schedule ``decision``'s pod with ``bound`` in place and judge both outcomes."""
        self._sync(bound)
        before = set(self._compared())
        pod = self.cluster.create(parse_object({**decision.created, "status": {}}))
        self.sim.run()
        records = self.sim.attempts.get(pod.metadata.uid or "", [])
        placed = self._compared().get(pod.key)
        node = placed.spec.node_name if placed is not None else None
        victims = sorted(before - set(self._compared()))
        result = PodComparison(
            pod=self._original(decision.key),
            real_node=decision.node,
            kubesched_node=node,
            real_victims=[self._original(k) for k in decision.gone],
            kubesched_victims=[self._original(k) for k in victims],
            real_seconds=round(decision.seconds, 3),
        )
        if not records:
            result.verdict = "undecided"
            result.note = f"no kubesched profile serves schedulerName {pod.spec.scheduler_name!r}"
            return result
        last = records[-1]
        if not decision.node and not decision.unschedulable:
            result.verdict = "undecided"
            result.note = "the real scheduler neither bound it nor reported it unschedulable"
            return result
        if decision.unschedulable and not decision.node:
            return self._messages(result, decision, node, last)
        deciding = next((r for r in reversed(records) if r.result == RESULT_SCHEDULED), last)
        self._placements(result, decision.node or "", node, deciding)
        if result.verdict != "differ" and result.real_victims != result.kubesched_victims:
            result.verdict = "differ"
            result.note = "different preemption victims"
        return result

    def _messages(self, result: PodComparison, decision: RealDecision, node: str | None,
                  last: AttemptRecord) -> PodComparison:  # fmt: skip
        result.real_message = decision.message
        if node:
            result.verdict = "differ"
            result.note = "kubesched placed a pod the real scheduler could not"
            return result
        result.kubesched_message = last.message
        same = normalise_message(decision.message) == normalise_message(last.message)
        result.verdict = "agree" if same else "differ"
        if not same:
            result.note = "different FailedScheduling messages"
        return result

    def _placements(self, result: PodComparison, real: str, node: str | None,
                    record: AttemptRecord) -> None:  # fmt: skip
        if node == real:
            result.verdict = "agree"
            return
        scores = _node_scores(record)
        top = max((s.total for s in scores.values()), default=None)
        result.tied_nodes = sorted(n for n, s in scores.items() if s.total == top)
        if node is not None and real in result.tied_nodes and node in result.tied_nodes:
            result.verdict = "tie"
            return
        result.verdict = "differ"
        result.scores = [scores[n] for n in (node, real) if n in scores]
        if node is None:
            result.kubesched_message = record.message
            result.note = "the real scheduler placed a pod kubesched could not"
        elif real not in scores:
            status = record.diagnosis.node_to_status.get(real) if record.diagnosis else None
            result.note = (
                f"kubesched filtered {real} out: {status.message()}"
                if status is not None
                else f"kubesched did not score {real}"
            )
        else:
            result.note = f"kubesched scored {node} higher than {real}"

    def _original(self, key: str) -> str:
        return key[len(self.prefix) :] if key.startswith(self.prefix) else key


def _node_scores(record: AttemptRecord) -> dict[str, NodeScore]:
    sr = record.scores
    if sr is None:
        return {}
    out = {}
    for i, name in enumerate(sr.names):
        plugins = {p.plugin: int(p.normalized[i]) * p.weight for p in sr.plugins}
        out[name] = NodeScore(node=name, total=int(sr.totals[i]), plugins=plugins)
    return out


def replay(run: RealRun, config: EffectiveConfiguration, registry: PluginRegistry,
           prefix: str) -> list[PodComparison]:  # fmt: skip
    """Every pod of ``run`` judged in creation order."""
    r = Replay(run, config, registry, prefix)
    try:
        return [r.compare(d, bound) for d, bound in iter_bound(run.decisions)]
    finally:
        r.close()
