"""What-if over time: the run's evictions with what became of each pod, and the timeline's
steps with their windows, as report data (validated by the report's models)."""

from __future__ import annotations

from typing import Any

from kubesched.api import Pod
from kubesched.backend.memory.evictions import BY_PREEMPTION
from kubesched.backend.memory.naming import EPOCH

__all__ = ["build_evictions", "build_timeline"]


def _seconds(dt: Any) -> float | None:
    return None if dt is None else (dt - EPOCH).total_seconds()


def _bound(run: Any, uid: str) -> tuple[str, float] | None:
    """(node, time) of the pod's successful scheduling attempt, if any."""
    for r in run.attempts.get(uid, ()):
        if r.result == "scheduled" and r.node_name:
            return r.node_name, r.finished_at if r.finished_at is not None else r.started_at
    return None


def _preemptions(run: Any, pods_by_key: dict[str, list[Pod]]) -> list[dict[str, Any]]:
    out = []
    for ev in run.cluster.events:
        if ev.reason != "Preempted" or ev.involved_kind != "Pod":
            continue
        key = f"{ev.involved_namespace}/{ev.involved_name}"
        pod = next(
            (p for p in reversed(pods_by_key.get(key, [])) if p.metadata.deletion_timestamp),
            None,
        ) or next(iter(reversed(pods_by_key.get(key, []))), None)
        ref = pod.metadata.controller_ref if pod is not None else None
        out.append(
            {
                "time": ev.timestamp,
                "pod": key,
                "uid": pod.metadata.uid if pod is not None else None,
                "node": (pod.spec.node_name if pod is not None else None)
                or ev.message.rsplit(" on node ", 1)[-1],
                "by": BY_PREEMPTION,
                "reason": f"preempted by {ev.related}" if ev.related else ev.message,
                "message": ev.message,
                "gracePeriodSeconds": None,
                "ownerUid": ref.uid if ref is not None else None,
                "details": {"preemptor": ev.related},
            }
        )
    return out


def build_evictions(run: Any, deleted: dict[str, Pod]) -> list[dict[str, Any]]:
    """Every eviction of ``run`` (the cluster's records and the scheduler's preemptions),
    in time order, each with its outcome: the replacement its controller created (the
    first pod of the same controller created at or after the eviction), where and when
    that was bound, or why it is pending."""
    live: list[Pod] = run.cluster.pods()
    every = [*live, *deleted.values()]
    pods_by_key: dict[str, list[Pod]] = {}
    for p in every:
        pods_by_key.setdefault(p.key, []).append(p)
    records = [
        {
            "time": r.time,
            "pod": r.pod,
            "uid": r.uid or None,
            "node": r.node,
            "by": r.by,
            "reason": r.reason,
            "message": r.message,
            "gracePeriodSeconds": r.grace_period_seconds,
            "ownerUid": r.owner_uid,
            "details": r.details,
        }
        for r in run.cluster.evictions
    ]
    records += _preemptions(run, pods_by_key)
    records.sort(key=lambda r: (r["time"], r["pod"]))
    by_owner: dict[str, list[Pod]] = {}
    for p in every:
        ref = p.metadata.controller_ref
        if ref is not None:
            by_owner.setdefault(ref.uid, []).append(p)
    for pods in by_owner.values():
        pods.sort(key=lambda p: (_seconds(p.metadata.creation_timestamp) or 0.0, p.name))
    taken: set[str] = set()
    live_uids = {p.metadata.uid for p in live}
    for rec in records:
        owner = rec.pop("ownerUid")
        if owner is None:
            rec["outcome"] = "not replaced: no controller manages it"
            continue
        replacement = next(
            (
                p
                for p in by_owner.get(owner, [])
                if p.metadata.uid != rec["uid"]
                and p.metadata.uid not in taken
                and (_seconds(p.metadata.creation_timestamp) or 0.0) >= rec["time"]
            ),
            None,
        )
        if replacement is None:
            rec["outcome"] = "not replaced: its controller created no pod in its place"
            continue
        uid = replacement.metadata.uid or ""
        taken.add(uid)
        rec["replacement"] = replacement.key
        bound = _bound(run, uid)
        if bound is not None:
            rec["replacementNode"], rec["replacedAt"] = bound
            rec["outcome"] = (
                f"replaced by {replacement.key}, scheduled on {bound[0]} at {bound[1]:g}s"
            )
        elif uid in live_uids and not replacement.spec.node_name:
            records_ = run.attempts.get(uid, [])
            why = records_[-1].message if records_ else "not scheduled yet"
            rec["outcome"] = f"replacement {replacement.key} pending: {why}"
        else:
            rec["outcome"] = f"replaced by {replacement.key}"
    return records


def build_timeline(run: Any, evictions: list[Any]) -> dict[str, Any] | None:
    """The timeline's steps, each with its window until the next step: evictions (per
    evictor), replacements bound, all pods bound, pods pending at its end, and the
    drain evictions PodDisruptionBudgets refused."""
    runner = getattr(run, "timeline", None)
    if runner is None:
        return None
    binds = sorted(
        r.finished_at if r.finished_at is not None else r.started_at
        for records in run.attempts.values()
        for r in records
        if r.result == "scheduled"
    )
    steps = []
    outcomes = runner.outcomes
    for i, o in enumerate(outcomes):
        until = o.finished_at if o.finished_at is not None else run.virtual_time
        last = i == len(outcomes) - 1

        def inside(t: float | None, o: Any = o, until: float = until, last: bool = last) -> bool:
            return t is not None and o.at <= t and (t < until or (last and t <= until))

        window = [e for e in evictions if inside(e.time)]
        by: dict[str, int] = {}
        for e in window:
            by[e.by] = by.get(e.by, 0) + 1
        steps.append(
            {
                "index": o.index,
                "at": o.at,
                "until": until,
                "action": o.action,
                "description": o.description,
                "note": o.note,
                "targets": o.targets,
                "errors": o.errors,
                "evicted": [e.pod for e in window],
                "evictedBy": by,
                "rescheduled": [
                    e.replacement for e in evictions if e.replacement and inside(e.replaced_at)
                ],
                "scheduled": sum(1 for t in binds if inside(t)),
                "pending": o.pending_after,
                "blockedEvictions": [
                    {
                        "pod": b.pod,
                        "pdb": b.pdb,
                        "attempts": b.attempts,
                        "message": b.message,
                        "evicted": b.evicted,
                    }
                    for b in o.blocked.values()
                ],
            }
        )
    return {"name": runner.timeline.metadata.name, "steps": steps}
