"""The self-contained HTML report of a simulation: the report's data, trimmed and compressed,
inlined into one offline page with its scripts and styles (``simulate --report``)."""

from __future__ import annotations

import base64
import gzip
import heapq
import html
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import pydantic_core

from kubesched.api import KubeObject
from kubesched.errors import UserInputError
from kubesched.scheduler.records import AttemptRecord
from kubesched.simulate.driver import DETAIL_FULL, DETAIL_SUMMARY, Simulation, SimulationRun
from kubesched.simulate.report import (
    PodReport,
    SimulationReport,
    build_report,
    parse_pod_key,
)
from kubesched.simulate.report import _history as _attempt_history

HTML_DATA_VERSION = 1
"""Version of the data the page's script reads (not the JSON report's schema)."""

MAX_EXPLAINED_PODS = 5000
"""Pods whose filter verdicts and scores the page keeps. Above this many pods it keeps
the pods named with ``explain``, then pending, preemption-related and rejected pods, then
scheduled pods spread evenly over the pod list; the others show their outcome and
message only."""
MAX_SCORE_ROWS = 10
"""Best-scored candidate nodes kept per explained pod (plus the chosen node)."""
MAX_NODES_PER_GROUP = 50
"""Node names kept per filter verdict group ("+N more" beyond)."""
MAX_CANDIDATES = 20
"""Preemption candidate nodes kept per preemptor."""
MAX_TIMELINE_EVENTS = 5000
"""Preemption and eviction events kept for the timeline (the first, by time)."""
TIMELINE_REASONS = frozenset(
    {"Preempted", "Evicted", "TaintManagerEviction", "DeviceTaintManagerEviction", "Killing"}
)
"""Event reasons the timeline shows."""

_ASSETS = "report_assets"
_CORE_RESOURCES = ("cpu", "memory", "ephemeralStorage", "pods")

# "0/12 nodes are available: 1 node(s) were unschedulable, 9 Insufficient cpu. preemption: ..."
_AVAILABLE = re.compile(r"^\d+/\d+ nodes are available: (?P<reasons>.*?)\.(?: preemption: .*)?$")
_REASON = re.compile(r"^(?P<count>\d+) (?P<reason>.+)$")


def pending_reasons(messages: Iterable[str]) -> list[dict[str, Any]]:
    """The FailedScheduling messages of pending pods as a histogram of their reasons.

    Each reason of upstream's ``0/N nodes are available: 3 Insufficient cpu, 1 node(s)
    ...`` counts once per pod (``pods``) and by the nodes it names (``nodes``); a
    message of another shape counts whole. Most pods first.
    """
    pods: Counter[str] = Counter()
    nodes: Counter[str] = Counter()
    for message in messages:
        m = _AVAILABLE.match(message)
        if m is None:
            pods[message or "(no message)"] += 1
            continue
        # Reasons are joined by ", " and each starts with its node count.
        for item in re.split(r", (?=\d+ )", m["reasons"]):
            r = _REASON.match(item)
            reason, count = (r["reason"], int(r["count"])) if r else (item, 0)
            pods[reason] += 1
            nodes[reason] += count
    return [
        {"reason": reason, "pods": n, "nodes": nodes.get(reason, 0)}
        for reason, n in sorted(pods.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


class _Interner:
    """Repeated strings (zones, profiles, messages) as indexes into one list."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int:
        if text is None:
            return -1
        i = self._index.get(text)
        if i is None:
            i = self._index[text] = len(self.strings)
            self.strings.append(text)
        return i


def _filter_groups(
    record: AttemptRecord, node_names: Callable[[], list[str]]
) -> list[dict[str, Any]]:
    """The attempt's rejected nodes grouped by plugin, code and reasons, biggest first."""
    d = record.diagnosis
    if d is None:
        return []
    groups: dict[tuple[str | None, str, tuple[str, ...]], list[str]] = {}
    for node, st in d.node_to_status.items():
        groups.setdefault((st.plugin, st.code.display, tuple(st.reasons)), []).append(node)
    if d.absent_nodes_status is not None:
        # A PreFilter rejection (or node-name narrowing) applies to every node not listed.
        st = d.absent_nodes_status
        feasible = set(record.feasible)
        absent = [n for n in node_names() if n not in d.node_to_status and n not in feasible]
        if absent:
            groups.setdefault((st.plugin, st.code.display, tuple(st.reasons)), []).extend(absent)
    out = [
        {
            "plugin": plugin,
            "code": code,
            "reasons": list(reasons),
            "count": len(nodes),
            "nodes": heapq.nsmallest(MAX_NODES_PER_GROUP, nodes),
        }
        for (plugin, code, reasons), nodes in groups.items()
    ]
    out.sort(key=lambda g: (-g["count"], g["plugin"] or "", g["reasons"]))
    return out


def _score_table(record: AttemptRecord) -> dict[str, Any] | None:
    """The best ``MAX_SCORE_ROWS`` candidates and the chosen node, each plugin's raw and
    normalised score, ranked as the JSON report orders them (total, then name)."""
    sr = record.scores
    if sr is None or not sr.names:
        return None
    totals = sr.totals.tolist()
    names = sr.names
    top = heapq.nsmallest(MAX_SCORE_ROWS, range(len(names)), key=lambda i: (-totals[i], names[i]))
    chosen = record.node_name
    if chosen is not None and chosen not in {names[i] for i in top} and chosen in names:
        top.append(names.index(chosen))
    return {
        "plugins": [{"plugin": ps.plugin, "weight": int(ps.weight)} for ps in sr.plugins],
        "feasible": len(names),
        "rows": [
            {
                "node": names[i],
                "total": int(totals[i]),
                # Ties share the better rank: one more than the nodes strictly ahead.
                "rank": 1 + sum(1 for t in totals if t > totals[i]),
                "raw": [int(ps.raw[i]) for ps in sr.plugins],
                "normalized": [int(ps.normalized[i]) for ps in sr.plugins],
            }
            for i in top
        ],
    }


def condense_attempt(
    record: AttemptRecord, node_names: Callable[[], list[str]]
) -> dict[str, Any] | None:
    """One attempt's filter verdicts grouped by reason, its feasible nodes and best scores:
    what a pod's story shows of its last attempt. None when the attempt kept no details.
    ``node_names`` gives every node's name (called only for a PreFilter rejection)."""
    if record.diagnosis is None and record.scores is None and not record.feasible:
        return None
    evaluated = record.evaluated_nodes or (record.num_all_nodes if not record.feasible else 0)
    out: dict[str, Any] = {
        "filters": _filter_groups(record, node_names),
        "feasible": {
            "count": len(record.feasible),
            "nodes": heapq.nsmallest(MAX_NODES_PER_GROUP, record.feasible),
        },
        "notEvaluated": max(0, record.num_all_nodes - evaluated),
    }
    scores = _score_table(record)
    if scores is not None:
        out["scores"] = scores
    return out


class StoryCollector:
    """Condenses each pod's last attempt as it finishes (:func:`condense_attempt`), so
    that the HTML report explains the pods of a run that keeps no details
    (``detail="summary"``): a few kilobytes per pod instead of, for every attempt, a
    status per rejected node and a score per feasible node and plugin.

    Create it on a :class:`Simulation` before running it; pass it to
    :func:`write_html_report` as ``stories``.
    """

    def __init__(self, simulation: Simulation) -> None:
        self._cluster = simulation.cluster
        self.last: dict[str, dict[str, Any]] = {}
        """Pod uid → its last attempt, condensed."""
        self.feasible: dict[str, list[int]] = {}
        """Pod uid → the number of feasible nodes of each attempt (the records forget it)."""
        # The scheduler must fill the details in; the simulation's own observer (called
        # after this one) drops them from its records when its detail level is summary.
        simulation.scheduler.record_details = True
        simulation.scheduler.observers.insert(0, self)

    def _node_names(self) -> list[str]:
        return sorted(n.name for n in self._cluster.objects("Node"))

    def __call__(self, record: AttemptRecord) -> None:
        self.feasible.setdefault(record.pod_uid, []).append(len(record.feasible))
        story = condense_attempt(record, self._node_names)
        if story is None:
            self.last.pop(record.pod_uid, None)
        else:
            self.last[record.pod_uid] = story


def _preemption(pod: PodReport) -> dict[str, Any] | None:
    p = pod.preemption
    if p is None:
        return None
    return {
        "victims": [f"{v.namespace}/{v.name} on {v.node}" for v in p.victims],
        "candidates": [
            {"node": c.node, "victims": c.victims, "pdbViolations": c.num_pdb_violations}
            for c in p.candidates[:MAX_CANDIDATES]
        ],
        "moreCandidates": max(0, len(p.candidates) - MAX_CANDIDATES),
        "chosen": p.chosen,
        "decidedBy": p.decided_by,
        "message": p.message,
    }


def _explained(pods: list[PodReport], wanted: set[str], limit: int) -> set[int]:
    """Indexes of the pods whose stories keep verdicts and scores (see MAX_EXPLAINED_PODS)."""
    tried = [i for i, p in enumerate(pods) if p.attempts]  # the others have nothing to explain
    if len(tried) <= limit:
        return set(tried)
    first = [i for i in tried if pods[i].key in wanted]
    first += [
        i
        for i in tried
        if pods[i].key not in wanted
        and (pods[i].result != "scheduled" or pods[i].preemption is not None)
    ]
    picked = set(first[:limit])
    rest = [i for i in tried if i not in picked]
    room = min(limit - len(picked), len(rest))
    if room > 0:
        step = len(rest) / room
        picked.update(rest[int(k * step)] for k in range(room))
    return picked


def _resource_names(report: SimulationReport) -> list[str]:
    scalar = sorted(
        {name for n in report.nodes for name in (*n.allocatable.scalar, *n.requested.scalar)}
    )
    return [*_CORE_RESOURCES, *scalar]


def _node_columns(report: SimulationReport, strings: _Interner) -> dict[str, Any]:
    """The nodes as columns (one list per field): compact, and quick for the page to scan."""
    names = _resource_names(report)
    alloc: dict[str, list[int]] = {r: [] for r in names}
    req: dict[str, list[int]] = {r: [] for r in names}
    for n in report.nodes:
        a, q = n.allocatable, n.requested
        for r in names:
            if r in _CORE_RESOURCES:
                alloc[r].append(getattr(a, _SNAKE[r]))
                req[r].append(getattr(q, _SNAKE[r]))
            else:
                alloc[r].append(a.scalar.get(r, 0))
                req[r].append(q.scalar.get(r, 0))
    return {
        "resources": names,
        "name": [n.name for n in report.nodes],
        "zone": [strings(n.zone) for n in report.nodes],
        "unschedulable": [int(n.unschedulable) for n in report.nodes],
        "taints": [n.taints for n in report.nodes],
        "labels": [n.labels for n in report.nodes],
        "allocatable": alloc,
        "requested": req,
    }


_SNAKE = {
    "cpu": "cpu",
    "memory": "memory",
    "ephemeralStorage": "ephemeral_storage",
    "pods": "pods",
}


def _timeline(run: SimulationRun) -> list[dict[str, Any]]:
    out = []
    for e in run.cluster.events:
        if e.reason not in TIMELINE_REASONS:
            continue
        ns = f"{e.involved_namespace}/" if e.involved_namespace else ""
        out.append(
            {
                "time": e.timestamp,
                "reason": e.reason,
                "object": f"{e.involved_kind} {ns}{e.involved_name}",
                "message": e.message,
                "related": e.related,
            }
        )
    out.sort(key=lambda e: e["time"])
    return out


def _bindings(run: SimulationRun) -> list[float]:
    """Virtual times at which pods were scheduled (the Scheduled events)."""
    return sorted(e.timestamp for e in run.cluster.events if e.reason == "Scheduled")


def _timeline_steps(report: SimulationReport) -> Any:
    # A report that describes the run as timed steps (a later schema revision) carries
    # them as ``timeline``; the page lists them as they come.
    steps = getattr(report, "timeline", None)
    return None if steps is None else pydantic_core.to_jsonable_python(steps, by_alias=True)


def html_report_data(
    run: SimulationRun,
    *,
    objects: Iterable[KubeObject] | None = None,
    explain: Iterable[str] | None = None,
    stories: StoryCollector | None = None,
    max_explained: int = MAX_EXPLAINED_PODS,
    report: SimulationReport | None = None,
) -> dict[str, Any]:
    """What the HTML page shows, as JSON-ready data: the summary, nodes and pods as columns,
    and per pod its story (attempts; for the pods explained, the last attempt's filter
    verdicts grouped by reason and best scores; preemption).

    The verdicts and scores come from ``stories`` when given, else from the run's attempt
    records (a run with ``detail="full"``). ``explain`` names pods to explain whatever
    ``max_explained`` says. ``report`` (from :func:`build_report` on the same run) saves
    building it again.
    """
    wanted = {parse_pod_key(k) for k in explain or ()}
    if report is None:
        report = build_report(run, detail=DETAIL_SUMMARY, objects=objects)
    missing = sorted(wanted - {p.key for p in report.pods})
    if missing:
        raise UserInputError(f"no pod {', '.join(missing)} in the simulation", obj="--explain")
    strings = _Interner()
    nodes = _node_columns(report, strings)
    node_names = nodes["name"]
    node_index = {name: i for i, name in enumerate(node_names)}
    pods = report.pods
    explained = _explained(pods, wanted, max_explained)
    story_of: dict[str, Any] = {}
    kept = 0
    for i, pod in enumerate(pods):
        records = run.attempts.get(pod.uid, []) if pod.uid else []
        story: dict[str, Any] = {}
        if records:
            story["history"] = _attempt_history(records)
            counts = stories.feasible.get(pod.uid or "", ()) if stories is not None else ()
            # The collector saw every attempt the records hold (a pod's attempts keep coming
            # after it is attached, never before).
            for attempt, n in zip(story["history"][-len(counts) :], counts, strict=False):
                attempt["feasibleNodes"] = n
        if i in explained and records:
            last = (
                stories.last.get(pod.uid or "")
                if stories is not None
                else condense_attempt(records[-1], lambda: node_names)
            )
            if last is not None:
                story.update(last)
                kept += 1
        preemption = _preemption(pod)
        if preemption is not None:
            story["preemption"] = preemption
        if story:
            story_of[str(i)] = story
    pending = [p.message for p in pods if p.result == "pending"]
    binds = _bindings(run)
    return {
        "version": HTML_DATA_VERSION,
        "schemaVersion": report.schema_version,
        "meta": {
            "seed": report.seed,
            "detail": DETAIL_FULL if stories is not None or _kept_details(run) else DETAIL_SUMMARY,
            "virtualTimeSeconds": report.virtual_time_seconds,
            "wallTimeSeconds": report.wall_time_seconds,
            "cycles": report.cycles,
            "stopReason": report.stop_reason,
            "profiles": report.profiles,
            "explainedPods": kept,
            "maxExplained": max_explained,
        },
        "summary": [s.model_dump(mode="json", by_alias=True) for s in report.summary],
        "nodes": nodes,
        "pods": {
            "namespace": [strings(p.namespace) for p in pods],
            "name": [p.name for p in pods],
            "profile": [strings(p.profile) for p in pods],
            "result": [strings(p.result) for p in pods],
            "node": [node_index.get(p.node, -1) if p.node else -1 for p in pods],
            "priority": [p.priority for p in pods],
            "attempts": [p.attempts for p in pods],
            "message": [strings(p.message) for p in pods],
            "nominated": [strings(p.nominated_node) for p in pods],
            "preemptedBy": [strings(p.preempted_by) for p in pods],
        },
        "strings": strings.strings,
        "stories": story_of,
        "pendingReasons": pending_reasons(pending),
        "rejections": [r.model_dump(mode="json") for r in report.rejections],
        "timeline": _timeline(run)[:MAX_TIMELINE_EVENTS],
        "bindings": binds,
        "timelineSteps": _timeline_steps(report),
    }


def _kept_details(run: SimulationRun) -> bool:
    """Whether the run's records hold verdicts and scores (a ``detail="full"`` run)."""
    return any(
        r.diagnosis is not None or r.scores is not None
        for records in run.attempts.values()
        for r in records
    )


def _asset(name: str) -> str:
    return resources.files("kubesched.simulate").joinpath(_ASSETS, name).read_text("utf-8")


def render_html(data: dict[str, Any], *, title: str = "kubesched simulation report") -> str:
    """The page: the template with its stylesheet, script and ``data`` (gzip, base64) inline."""
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    # mtime=0: the same data gives the same bytes.
    packed = base64.b64encode(gzip.compress(payload, compresslevel=6, mtime=0)).decode("ascii")
    page = _asset("report.html")
    # Each slot once, in order; the script must not contain "</script" (ours does not, and
    # the data is base64). The title fills two slots (<title> and <h1>).
    for key, value in (
        ("TITLE", html.escape(title)),
        ("STYLE", _asset("report.css")),
        ("SCRIPT", _asset("report.js")),
        ("DATA", packed),
    ):
        page = page.replace(f"<!--{key}-->", value, 2 if key == "TITLE" else 1)
    return page


def write_html_report(
    run: SimulationRun,
    path: str | Path,
    *,
    objects: Iterable[KubeObject] | None = None,
    explain: Iterable[str] | None = None,
    stories: StoryCollector | None = None,
    max_explained: int = MAX_EXPLAINED_PODS,
    report: SimulationReport | None = None,
    title: str | None = None,
) -> Path:
    """Write the self-contained HTML report of ``run`` to ``path`` (Python API of
    ``simulate --report``); return the path. ``UserInputError`` when it cannot be written."""
    data = html_report_data(
        run,
        objects=objects,
        explain=explain,
        stories=stories,
        max_explained=max_explained,
        report=report,
    )
    nodes, pods = len(data["nodes"]["name"]), len(data["pods"]["name"])
    page = render_html(data, title=title or f"kubesched simulation: {pods} pods on {nodes} nodes")
    out = Path(path)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as err:
        raise UserInputError(f"cannot write the report: {err.strerror}", source=str(out)) from None
    return out
