"""Human views of a simulation report: the summary and one pod's explanation (rich tables)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubesched.backend.memory.kubelet import format_binary
from kubesched.simulate.report import (
    AttemptReport,
    ClaimReport,
    EvictionReport,
    ExtenderCallReport,
    NodeReport,
    PodReport,
    PreemptionReport,
    SimulationReport,
    TimelineReport,
)

MAX_NODE_ROWS = 100
"""Above this many nodes the summary shows one row per zone instead of one per node."""
MAX_PENDING_ROWS = 50
"""Distinct pending diagnoses listed; the rest are counted (the JSON output has them all)."""
MAX_PODS_PER_DIAGNOSIS = 5
"""Pod names listed for a diagnosis several pending pods share."""
MAX_SCORE_NODES = 20
"""Feasible nodes whose scores ``--explain`` shows (best first)."""
MAX_NODES_PER_REASON = 12
"""Node names listed per filter reason before "(+N more)"."""
MAX_EVICTION_ROWS = 30
"""Evictions the summary lists one by one (the JSON output has them all)."""
MAX_POD_ROWS = 50
"""Pods the summary's pod list shows before a count of the rest per result."""
WELL_KNOWN_TOPOLOGY = "topology.kubernetes.io/"
"""The prefix of the well-known topology labels, left out of the claims table's
topology (``zone in (a)``)."""

SORT_KEYS = ("namespace", "name", "node", "result")
"""What the summary's pod list can be sorted by (``--sort-by``); the first is the default,
``kubectl get pods --all-namespaces``' order."""

_RESULT_WORDS = {
    "scheduled": "Scheduled",
    "nodeMissing": "NodeMissing",
    "rejected": "Rejected",
    "preempted": "Preempted",
    "deleted": "Deleted",
    "evicted": "Evicted",
}

_RESULT_STYLES = {
    "Scheduled": "green",
    "Preempted": "magenta",
    "Evicted": "magenta",
    "Deleted": "dim",
}

_EVICTORS = {
    "taint-manager": "the taint manager",
    "device-taint-manager": "the device taint manager (a NoExecute taint of a DRA device)",
    "kubelet": "the kubelet (node-pressure eviction)",
    "drain": "a drain (Eviction API)",
    "pod-gc": "the pod garbage collector",
    "preemption": "preemption",
}

_GIB = 1024**3


def _pct(used: int, total: int) -> str:
    if total <= 0:
        return "-" if used == 0 else "∞"
    return f"{100 * used / total:.0f}%"


def _cores(milli: int) -> str:
    return f"{milli / 1000:g}"


def _gib(n: int) -> str:
    return f"{n / _GIB:.1f}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cut(text: str | Text, style: str = "") -> Text:
    """A cell that stays on one line and ends in "…" when its column is too narrow (the
    JSON output has the whole value)."""
    cell = Text(text, style=style) if isinstance(text, str) else text
    cell.no_wrap = True
    cell.overflow = "ellipsis"
    return cell


_SHRINKS_FIRST = frozenset({"cut", "text"})
"""The kinds of :func:`_table` columns that give their width first."""


def _table(title: str, columns: Iterable[tuple[str, str]]) -> Table:
    """A titled table whose columns are ``(header, kind)``, so that it fits the console
    without breaking a name over several lines. ``"number"`` (right-aligned) and
    ``"word"`` columns keep their width; so do ``"name"`` columns (identifiers) unless
    nothing else can give, and then they end in "…". ``"cut"`` columns (long
    identifiers, prose printed whole elsewhere) and ``"text"`` columns (prose) give
    their width first: ``"cut"`` cells end in "…", ``"text"`` cells wrap at spaces.
    Cells of ``"name"`` and ``"cut"`` columns go through :func:`_cut`."""
    table = Table(title=title, title_justify="left", title_style="bold")
    for header, kind in columns:
        table.add_column(
            header,
            justify="right" if kind == "number" else "left",
            # rich narrows the wrappable columns first, then every column evenly.
            no_wrap=kind not in _SHRINKS_FIRST,
            # A word longer than a text column (a label selector) goes on over the next
            # line rather than lose its end.
            overflow="fold" if kind == "text" else "ellipsis",
        )
    return table


def result_word(pod: PodReport) -> str:
    """The pod's result as ``kubectl get pods`` and upstream's conditions word it: a
    pending pod's PodScheduled reason (Unschedulable, SchedulerError, SchedulingGated;
    Pending when it has none), else Scheduled, Preempted, Evicted, ..."""
    if pod.result == "pending":
        return pod.pod_scheduled_reason or "Pending"
    return _RESULT_WORDS[pod.result]


def pod_reason(pod: PodReport) -> str:
    """One line on why the pod does not (or no longer) run: the gates of a gated pod,
    else the report's message (the diagnosis, the admission error, the eviction); empty
    for a scheduled pod."""
    if pod.result == "scheduled":
        return ""
    if pod.pod_scheduled_reason == "SchedulingGated" and pod.scheduling_gates:
        return f"gates: {', '.join(pod.scheduling_gates)}"
    return pod.message


def _usage_style(used: int, total: int) -> str:
    if total <= 0:
        return ""
    ratio = used / total
    return "red" if ratio >= 0.9 else "yellow" if ratio >= 0.7 else "green"


# -- the summary ----------------------------------------------------------------------------


def render_summary(
    report: SimulationReport,
    console: Console,
    *,
    max_node_rows: int = MAX_NODE_ROWS,
    max_pending_rows: int = MAX_PENDING_ROWS,
    max_pod_rows: int | None = MAX_POD_ROWS,
    sort_by: str = SORT_KEYS[0],
) -> None:
    """The run's outcome: counts per profile, nodes' allocation by zone, the pods (sorted
    by ``sort_by``, the first ``max_pod_rows`` of them, None for all), pending pods with
    their diagnosis, admission rejections."""
    pods_total = len(report.pods)
    console.print(
        Text.assemble(
            ("Simulation", "bold"),
            f": {_plural(pods_total, 'pod')} on {_plural(len(report.nodes), 'node')}, "
            f"seed {report.seed}, {report.virtual_time_seconds:g} s virtual time, "
            f"{report.wall_time_seconds:.2f} s wall time, {_plural(report.cycles, 'cycle')}",
        )
    )
    if report.stop_reason == "stalled":
        console.print(
            Text(
                "Stopped: pods kept retrying with no progress for 30 minutes of virtual "
                "time (the pending pods below would retry forever on a real cluster).",
                style="bold yellow",
            )
        )
    if report.stop_reason == "horizon":
        console.print(
            Text(
                "Stopped at the timeline's horizon (spec.runFor, or an hour after its last "
                "step) while pods were still running, being evicted or replaced.",
                style="bold yellow",
            )
        )
    console.print()
    _profiles_table(report, console)
    console.print()
    _nodes_table(report.nodes, console, max_node_rows)
    if any(p.claims for p in report.pods):
        console.print()
        _claims_table(report.pods, console, max_node_rows)
    console.print()
    _pods_table(report, console, max_pod_rows, sort_by)
    pending = [p for p in report.pods if p.result == "pending"]
    if pending:
        console.print()
        console.print(Text(f"Pending pods ({len(pending)})", style="bold"))
        _pending_groups(pending, console, max_pending_rows)
    missing = [p for p in report.pods if p.result == "nodeMissing"]
    if missing:
        _pod_list(
            console,
            "Bound to missing nodes",
            missing,
            max_pending_rows,
            (
                "red",
                lambda p: (
                    f": node {p.node} does not exist; the pod stays Pending until pod GC deletes it"
                ),
            ),
        )
    preempted = [p for p in report.pods if p.result == "preempted"]
    if preempted:
        _pod_list(
            console,
            "Preempted pods",
            preempted,
            max_pending_rows,
            ("magenta", lambda p: f" on {p.node}, by {p.preempted_by}"),
        )
    if report.timeline is not None:
        console.print()
        _timeline_table(report.timeline, console)
    if report.evictions:
        console.print()
        _evictions_list(report.evictions, console, max_pending_rows)
    if report.not_simulated:
        console.print()
        kept = ", ".join(f"{k.kind} {k.count}" for k in report.not_simulated)
        console.print(Text.assemble(("Kept, not simulated", "bold"), f": {kept}"), soft_wrap=True)
    if report.rejections:
        console.print()
        console.print(Text(f"Rejected by admission ({len(report.rejections)})", style="bold"))
        for rej in report.rejections:
            console.print(
                Text.assemble("  ", (rej.object, "red"), f": {rej.message}"), soft_wrap=True
            )


def _pod_list(
    console: Console,
    title: str,
    pods: list[PodReport],
    max_rows: int,
    line: tuple[str, Callable[[PodReport], str]],
) -> None:
    """A titled list of pods, one line each: the key in ``line``'s style, then its text."""
    style, text = line
    console.print()
    console.print(Text(f"{title} ({len(pods)})", style="bold"))
    for pod in pods[:max_rows]:
        console.print(Text.assemble("  ", (pod.key, style), text(pod)))
    if len(pods) > max_rows:
        console.print(f"  ... and {len(pods) - max_rows} more")


def _sort_key(sort_by: str) -> Callable[[PodReport], tuple[object, ...]]:
    """The pod list's order for ``--sort-by``; namespace and name break ties."""
    if sort_by == "namespace":
        return lambda p: (p.namespace, p.name)
    if sort_by == "name":
        return lambda p: (p.name, p.namespace)
    if sort_by == "node":
        # Pods on no node last, as kubectl sorts an empty field.
        return lambda p: (p.node is None, p.node or "", p.namespace, p.name)
    if sort_by == "result":
        return lambda p: (result_word(p), p.namespace, p.name)
    raise ValueError(f"unknown sort key {sort_by!r}: use one of {', '.join(SORT_KEYS)}")


def _pods_table(
    report: SimulationReport, console: Console, max_rows: int | None, sort_by: str
) -> None:
    """Every pod as ``kubectl get pods -o wide`` lists it, with the node's zone and, for a
    pod not running where it was scheduled, why; past ``max_rows`` pods, a count of the
    rest per result."""
    zone_of = {n.name: n.zone for n in report.nodes}
    pods = sorted(report.pods, key=_sort_key(sort_by))
    shown = pods if max_rows is None else pods[:max_rows]
    table = _table(
        f"Pods ({len(pods)}, by {sort_by})",
        [
            ("NAMESPACE", "name"),
            ("NAME", "name"),
            ("NODE", "name"),
            ("ZONE", "name"),
            ("RESULT", "word"),
            ("REASON", "cut"),
        ],
    )
    for pod in shown:
        word = result_word(pod)
        zone = zone_of.get(pod.node or "") or "<none>"
        table.add_row(
            _cut(pod.namespace),
            _cut(pod.name),
            _cut(pod.node or "<none>"),
            _cut(zone),
            Text(word, style=_RESULT_STYLES.get(word, "yellow")),
            _cut(pod_reason(pod)),
        )
    console.print(table)
    rest = pods[len(shown) :]
    if rest:
        counts: dict[str, int] = defaultdict(int)
        for pod in rest:
            counts[result_word(pod)] += 1
        per_result = ", ".join(f"{n} {word}" for word, n in sorted(counts.items()))
        console.print(
            f"  ... and {_plural(len(rest), 'more pod')}: {per_result} "
            "(--pod-rows all lists every pod)",
            soft_wrap=True,
        )


def claim_outcome(claim: ClaimReport) -> str:
    """How the claim was served: provisioned / bound to a static PV / still waiting."""
    if claim.phase is None:
        return "claim not found"
    if claim.volume is None:
        return "waiting" if claim.phase == "Pending" else claim.phase.lower()
    how = "provisioned" if claim.provisioned else "bound to static PV"
    if claim.provisioned and claim.selected_node:
        how += f" for {claim.selected_node}"
    return how


def _claims_table(pods: list[PodReport], console: Console, max_rows: int) -> None:
    table = _table(
        "Volume claims",
        [
            ("POD", "name"),
            ("CLAIM", "name"),
            ("CLASS", "name"),
            ("SIZE", "word"),
            ("PHASE", "word"),
            ("VOLUME", "cut"),
            ("HOW", "text"),
            ("TOPOLOGY", "text"),
        ],
    )
    rows = [(p, c) for p in pods for c in p.claims]
    for pod, claim in rows[:max_rows]:
        table.add_row(
            _cut(pod.key),
            _cut(claim.name),
            _cut(claim.storage_class or ""),
            claim.request or "",
            claim.phase or "-",
            _cut(claim.volume or "-"),
            claim_outcome(claim),
            # The well-known prefix says nothing a reader needs (-o json keeps it).
            "; ".join(t.removeprefix(WELL_KNOWN_TOPOLOGY) for t in claim.topology),
        )
    console.print(table)
    if len(rows) > max_rows:
        console.print(f"  ... and {len(rows) - max_rows} more claims (--output json has all)")


def _profiles_table(report: SimulationReport, console: Console) -> None:
    table = Table(title="Pods per profile", title_justify="left", title_style="bold")
    table.add_column("PROFILE")
    evicted = any(row.evicted for row in report.summary)
    # Rare columns appear only when they count something.
    node_missing = any(row.node_missing for row in report.summary)
    columns = ["SCHEDULED", "PENDING", "REJECTED", "PREEMPTED", "ATTEMPTS"]
    if evicted:
        columns.insert(4, "EVICTED")
    if node_missing:
        columns.insert(2, "NODE MISSING")
    for name in columns:
        table.add_column(name, justify="right")
    for row in report.summary:
        name = row.profile if row.served else f"{row.profile} (no such profile)"
        cells = [
            name,
            Text(str(row.scheduled), style="green" if row.scheduled else ""),
            Text(str(row.pending), style="yellow" if row.pending else ""),
            Text(str(row.rejected), style="red" if row.rejected else ""),
            Text(str(row.preempted), style="magenta" if row.preempted else ""),
            str(row.attempts),
        ]
        if evicted:
            cells.insert(5, Text(str(row.evicted), style="magenta" if row.evicted else ""))
        if node_missing:
            cells.insert(3, Text(str(row.node_missing), style="red" if row.node_missing else ""))
        table.add_row(*cells)
    console.print(table)


def _timeline_table(timeline: TimelineReport, console: Console) -> None:
    """One row per step: the window it opens and what happened in it."""
    table = _table(
        f"Timeline {timeline.name}: per step, until the next",
        [
            ("AT (s)", "number"),
            ("UNTIL (s)", "number"),
            ("STEP", "text"),
            ("EVICTED", "word"),
            ("RESCHEDULED", "number"),
            ("SCHEDULED", "number"),
            ("PENDING", "number"),
            ("BLOCKED BY PDB", "text"),
        ],
    )
    for step in timeline.steps:
        by = ", ".join(f"{n} {who}" for who, n in sorted(step.evicted_by.items()))
        blocked = sorted({b.pdb for b in step.blocked_evictions})
        description = Text(step.description)
        for err in step.errors:
            description.append(f"\n  {err}", style="red")
        table.add_row(
            f"{step.at:g}",
            f"{step.until:g}",
            description,
            Text(
                f"{len(step.evicted)}" + (f" ({by})" if by else ""),
                style="magenta" if step.evicted else "",
            ),
            str(len(step.rescheduled)),
            str(step.scheduled),
            Text(str(len(step.pending)), style="yellow" if step.pending else ""),
            ", ".join(
                f"{pdb} ({sum(b.attempts for b in step.blocked_evictions if b.pdb == pdb)}x)"
                for pdb in blocked
            )
            or "-",
        )
    console.print(table)


def _evictions_list(evictions: list[EvictionReport], console: Console, max_rows: int) -> None:
    console.print(Text(f"Evictions ({len(evictions)})", style="bold"))
    for e in evictions[:max_rows]:
        console.print(
            Text.assemble(
                f"  {e.time:g}s ",
                (e.pod, "magenta"),
                f" from {e.node} by {e.by}: {e.reason}",
                (f" → {e.outcome}" if e.outcome else "", "dim"),
            ),
            soft_wrap=True,
        )
    if len(evictions) > max_rows:
        console.print(f"  (+{len(evictions) - max_rows} more: see --output json)")


def _usage_cells(used: int, total: int, fmt) -> tuple[Text, Text]:  # type: ignore[no-untyped-def]
    return (
        Text(f"{fmt(used)}/{fmt(total)}"),
        Text(_pct(used, total), style=_usage_style(used, total)),
    )


def _scalar_amount(name: str) -> Callable[[int], str]:
    """How an extended or other scalar resource's amount reads: hugepages in bytes as
    Kubernetes quantities (``2Gi``), anything else as a count."""
    return format_binary if name.startswith("hugepages-") else str


def _nodes_table(nodes: list[NodeReport], console: Console, max_rows: int) -> None:
    by_zone: dict[str, list[NodeReport]] = defaultdict(list)
    for node in nodes:
        by_zone[node.zone or "-"].append(node)
    per_node = len(nodes) <= max_rows
    # Extended resources (nvidia.com/gpu, hugepages-2Mi, ...) get columns as cpu and memory
    # do, but only those some node has or some pod asks for.
    scalars = sorted({name for n in nodes for name in (*n.allocatable.scalar, *n.requested.scalar)})
    title = "Nodes: requested / allocatable" + ("" if per_node else " (per zone)")
    table = _table(
        title,
        [
            ("ZONE", "name"),
            ("NODE" if per_node else "NODES", "name"),
            ("CPU (cores)", "number"),
            ("%", "number"),
            ("MEMORY (GiB)", "number"),
            ("%", "number"),
            *((header, "number") for name in scalars for header in (name, "%")),
            ("PODS", "number"),
            ("%", "number"),
        ],
    )

    def row(zone: str, label: str | Text, group: Iterable[NodeReport]) -> None:
        group = list(group)
        cpu = sum(n.requested.cpu for n in group), sum(n.allocatable.cpu for n in group)
        mem = sum(n.requested.memory for n in group), sum(n.allocatable.memory for n in group)
        pods = sum(n.requested.pods for n in group), sum(n.allocatable.pods for n in group)
        extended = [
            cell
            for name in scalars
            for cell in _usage_cells(
                sum(n.requested.scalar.get(name, 0) for n in group),
                sum(n.allocatable.scalar.get(name, 0) for n in group),
                _scalar_amount(name),
            )
        ]
        table.add_row(
            _cut(zone),
            _cut(label),
            *_usage_cells(*cpu, _cores),
            *_usage_cells(*mem, _gib),
            *extended,
            *_usage_cells(*pods, str),
        )

    for zone in sorted(by_zone):
        group = by_zone[zone]
        if per_node:
            for i, node in enumerate(group):
                label = Text(node.name)
                if node.unschedulable:
                    label.append(" (cordoned)", style="dim")
                row(zone if i == 0 else "", label, [node])
            if len(by_zone) > 1 and len(group) > 1:
                row("", Text(f"zone total ({len(group)})", style="italic"), group)
            table.add_section()
        else:
            row(zone, str(len(group)), group)
    if len(by_zone) > 1 or not per_node:
        row("all", Text(f"total ({len(nodes)})", style="bold"), nodes)
    console.print(table)


def _pending_groups(pending: list[PodReport], console: Console, max_rows: int) -> None:
    """Each pending pod with its diagnosis; pods with the same diagnosis share one line
    (a Deployment's replicas usually do)."""
    groups: dict[str, list[PodReport]] = defaultdict(list)
    for pod in pending:
        diagnosis = pod.message or "-"
        if pod.pod_scheduled_reason == "SchedulingGated":
            diagnosis = f"SchedulingGated ({pod_reason(pod)}): {diagnosis}"
        groups[diagnosis].append(pod)
    ordered = sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    for shown, (message, pods) in enumerate(ordered):
        if shown >= max_rows:
            console.print(f"  ... and {len(groups) - shown} more diagnoses (see --output json)")
            break
        if len(pods) == 1:
            pod = pods[0]
            attempts = _plural(pod.attempts, "attempt")
            line = Text.assemble("  ", (pod.key, "yellow"), f" ({attempts}): ", message)
            if pod.nominated_node:
                line.append(f" [nominated: {pod.nominated_node}]", style="cyan")
        else:
            keys = [p.key for p in pods]
            names = ", ".join(keys[:MAX_PODS_PER_DIAGNOSIS])
            if len(keys) > MAX_PODS_PER_DIAGNOSIS:
                names += f" (+{len(keys) - MAX_PODS_PER_DIAGNOSIS} more)"
            line = Text.assemble("  ", (f"{len(pods)} pods", "yellow"), f" ({names}): ", message)
        console.print(line, soft_wrap=True)


# -- one pod --------------------------------------------------------------------------------


def group_filters(pod: PodReport) -> list[tuple[list[str], str]]:
    """Rejected nodes grouped by (plugin, code, reasons): ``[(nodes, "Plugin: reasons")]``,
    the largest group first."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[str]] = defaultdict(list)
    for f in pod.filters:
        groups[(f.plugin or "-", f.code, tuple(f.reasons))].append(f.node)
    out = []
    for (plugin, code, reasons), nodes in groups.items():
        text = f"{plugin}: {'; '.join(reasons) or code}"
        if code == "UnschedulableAndUnresolvable":
            text += " (preemption would not help)"
        elif code == "Error":
            text += " (plugin error)"
        out.append((nodes, text))
    out.sort(key=lambda g: (-len(g[0]), g[1]))
    return out


def _filter_details(pod: PodReport) -> list[tuple[list[str], str]]:
    """The rejections' details (e.g. DynamicResources per request), nodes grouped by text."""
    groups: dict[str, list[str]] = defaultdict(list)
    for f in pod.filters:
        for d in f.details:
            groups[d].append(f.node)
    return sorted(((nodes, d) for d, nodes in groups.items()), key=lambda g: (-len(g[0]), g[1]))


def extender_lines(calls: list[ExtenderCallReport]) -> list[str]:
    """One line per extender call (``URL verb: result``), then one per node it failed."""
    out = []
    for c in calls:
        out.append(f"{c.extender} {c.verb}: {c.result}")
        out += [f"  {node}: {msg}" for node, msg in sorted(c.failed_nodes.items())]
    return out


def _node_list(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:MAX_NODES_PER_REASON])
    rest = len(nodes) - MAX_NODES_PER_REASON
    return f"{shown} (+{rest} more)" if rest > 0 else shown


def _verdict(a: AttemptReport) -> tuple[object, ...]:
    """What two attempts must share to count as the same verdict: all but their number
    and times."""
    return (
        a.profile,
        a.result,
        a.node,
        a.nominated_node,
        a.message,
        a.all_nodes,
        a.evaluated_nodes,
        a.feasible_nodes,
    )


def attempt_runs(history: list[AttemptReport]) -> list[list[AttemptReport]]:
    """The attempts in runs of consecutive ones with the same verdict, oldest first (a
    pod that fails the same way a hundred times is one run)."""
    runs: list[list[AttemptReport]] = []
    for a in history:
        if runs and _verdict(runs[-1][-1]) == _verdict(a):
            runs[-1].append(a)
        else:
            runs.append([a])
    return runs


def _attempts_table(history: list[AttemptReport], console: Console, all_attempts: bool) -> None:
    """The attempts, one row each, or (unless ``all_attempts``) one row per run of
    consecutive attempts with the same verdict."""
    runs = [[a] for a in history] if all_attempts else attempt_runs(history)
    # Successful attempts have no diagnosis: no column when none failed.
    diagnosed = any(a.message for a in history)
    table = _table(
        "Attempts",
        [
            ("#", "number"),
            ("TIME (s)", "number"),
            ("RESULT", "word"),
            ("NODE", "name"),
            ("NODES", "number"),
            ("EVALUATED", "number"),
            ("FEASIBLE", "number"),
            *([("DIAGNOSIS", "cut")] if diagnosed else []),
        ],
    )
    for run in runs:
        first, last = run[0], run[-1]
        number = str(first.attempt)
        started = f"{first.started_at:g}"
        if len(run) > 1:
            number += f"–{last.attempt}"
            started += f"–{last.started_at:g}"
        table.add_row(
            number,
            started,
            first.result,
            _cut(
                first.node or (first.nominated_node and f"nominated {first.nominated_node}") or "-"
            ),
            str(first.all_nodes),
            str(first.evaluated_nodes),
            str(first.feasible_nodes),
            *([_cut(first.message or "-")] if diagnosed else []),
        )
    console.print(table)
    if len(runs) < len(history):
        console.print(
            f"  Consecutive attempts with the same verdict share a row ({len(history)} "
            f"attempts in {_plural(len(runs), 'row')}); --all-attempts lists each.",
            soft_wrap=True,
        )


def render_explain(
    report: SimulationReport, key: str, console: Console, *, all_attempts: bool = False
) -> None:
    """Why pod ``key`` (namespace/name) ended where it did: its attempts (runs of the
    same verdict on one row unless ``all_attempts``), each filter rejection grouped by
    reason, each feasible node's scores (best first), the node."""
    pod = report.pod(key)
    style = {"scheduled": "green", "pending": "yellow", "preempted": "magenta"}.get(
        pod.result, "red"
    )
    head = Text.assemble(("Pod ", "bold"), (pod.key, "bold"), " — ", (pod.result, style))
    if pod.pod_scheduled_reason:
        head.append(f", {pod.pod_scheduled_reason}", style=style)
    head.append(f" (profile {pod.profile or '?'}, {_plural(pod.attempts, 'attempt')})")
    console.print(head)
    if pod.node:
        where = {"scheduled": "node", "nodeMissing": "missing node"}.get(pod.result, "was on node")
        console.print(Text.assemble(f"  {where}: ", (pod.node, "bold green")))
    if pod.message:
        console.print(f"  message: {pod.message}", soft_wrap=True)
    if pod.nominated_node:
        console.print(f"  nominated node: {pod.nominated_node}")
    if pod.scheduling_gates:
        console.print(f"  scheduling gates: {', '.join(pod.scheduling_gates)}", soft_wrap=True)
    for claim in pod.claims:
        where = f" {claim.volume}" if claim.volume else ""
        topology = f" [{'; '.join(claim.topology)}]" if claim.topology else ""
        console.print(
            Text(
                f"  claim {claim.name}: {claim.phase or 'missing'}{where}, "
                f"{claim_outcome(claim)}{topology}"
            ),
            soft_wrap=True,
        )
    if pod.preempted_by:
        console.print(f"  preempted by: {pod.preempted_by}")
    if pod.preemption and pod.preemption.victims:
        victims = ", ".join(f"{v.namespace}/{v.name} on {v.node}" for v in pod.preemption.victims)
        console.print(f"  preempted to make room: {victims}", soft_wrap=True)
    if pod.preemption and pod.preemption.candidates:
        _print_candidates(console, pod.preemption)
    for dev in pod.devices:
        console.print(
            f"  device: {dev.device} of pool {dev.pool} ({dev.driver}, slice {dev.slice or '?'}) "
            f"for claim {dev.claim}, request {dev.request}",
            soft_wrap=True,
        )

    if pod.history:
        console.print()
        _attempts_table(pod.history, console, all_attempts)
    elif pod.attempts == 0 and pod.result in ("scheduled", "preempted"):
        console.print("  (given already bound: no scheduling attempt)")
    elif pod.attempts and not pod.history:
        console.print("  (no per-attempt detail: run with --detail full)")

    if pod.filters:
        console.print()
        console.print(
            Text(
                f"Filtered out in the last attempt ({_plural(len(pod.filters), 'node')})",
                style="bold",
            )
        )
        for nodes, text in group_filters(pod):
            console.print(
                Text.assemble("  ", (_node_list(nodes), "cyan"), f": {text}"), soft_wrap=True
            )
        for nodes, detail in _filter_details(pod):
            console.print(
                Text.assemble("    ", (_node_list(nodes), "cyan"), f": {detail}"), soft_wrap=True
            )

    calls = pod.history[-1].extenders if pod.history else []
    if calls:
        console.print()
        console.print(Text("Extenders in the last attempt", style="bold"))
        for line in extender_lines(calls):
            console.print(Text(f"  {line}"), soft_wrap=True)

    if pod.scores:
        console.print()
        shown = pod.scores[:MAX_SCORE_NODES]
        title = "Scores in the last attempt, best first"
        if len(pod.scores) > len(shown):
            title += f" (top {len(shown)} of {len(pod.scores)} feasible nodes)"
        table = Table(title=title, title_justify="left", title_style="bold")
        table.add_column("NODE")
        table.add_column("TOTAL", justify="right")
        table.add_column("PLUGIN")
        table.add_column("RAW", justify="right")
        table.add_column("NORMALIZED", justify="right")
        table.add_column("WEIGHT", justify="right")
        table.add_column("WEIGHTED", justify="right")
        chosen = pod.history[-1].node if pod.history else None
        for s in shown:
            node_style = "bold green" if s.node == chosen else ""
            for i, p in enumerate(s.plugins):
                table.add_row(
                    Text(s.node, style=node_style) if i == 0 else "",
                    Text(str(s.total), style=node_style) if i == 0 else "",
                    p.plugin,
                    str(p.raw),
                    str(p.normalized),
                    str(p.weight),
                    str(p.weighted),
                )
            if not s.plugins:
                table.add_row(Text(s.node, style=node_style), str(s.total), "-", "", "", "", "")
            table.add_section()
        console.print(table)
    elif pod.history and pod.history[-1].result == "scheduled":
        console.print()
        console.print("  Scoring skipped: a single node passed the filters.")

    if pod.history:
        last = pod.history[-1]
        console.print()
        if last.node:
            console.print(Text.assemble(("Chosen node: ", "bold"), (last.node, "bold green")))
        else:
            console.print(Text.assemble(("Chosen node: ", "bold"), ("none", "yellow")))
    if pod.eviction is not None:
        _explain_eviction(pod.eviction, console)
    replaced = [e for e in report.evictions if e.replacement == pod.key]
    if replaced:
        e = replaced[-1]
        console.print()
        console.print(
            f"Replaces {e.pod}, evicted from {e.node} at {e.time:g}s by {_EVICTORS[e.by]}.",
            soft_wrap=True,
        )


def _explain_eviction(e: EvictionReport, console: Console) -> None:
    """The eviction, in the order it happened: who, why (the evidence), the grace period,
    then what became of the pod."""
    console.print()
    console.print(
        Text.assemble(
            ("Evicted ", "bold magenta"), f"at {e.time:g}s from node {e.node} by {_EVICTORS[e.by]}"
        )
    )
    console.print(f"  why: {e.reason}", soft_wrap=True)
    d = e.details
    if e.by == "taint-manager" and d.get("scheduledAt") is not None:
        console.print(f"  the taint applied to the pod from {d['scheduledAt']:g}s", soft_wrap=True)
    if e.message and e.message != e.reason:
        console.print(f"  message: {e.message}", soft_wrap=True)
    if e.grace_period_seconds is not None:
        console.print(f"  termination grace period: {e.grace_period_seconds:g}s")
    ranking = d.get("ranking") or []
    if ranking:
        table = Table(
            title="The kubelet's ranking (first is evicted first)",
            title_justify="left",
            title_style="bold",
        )
        for col in ("#", "POD", "USAGE > REQUEST", "PRIORITY", "USAGE", "REQUEST"):
            table.add_column(
                col, justify="right" if col in ("#", "PRIORITY", "USAGE", "REQUEST") else "left"
            )
        for i, r in enumerate(ranking, 1):
            style = "bold magenta" if r["pod"] == e.pod else ""
            name = r["pod"] + (" (critical: skipped)" if r.get("critical") else "")
            amount = format_binary if d.get("resource") in ("memory", "ephemeral-storage") else str
            table.add_row(
                str(i),
                Text(name, style=style),
                "yes" if r["exceedsRequests"] else "no",
                str(r["priority"]),
                amount(r["usage"]),
                amount(r["request"]),
            )
        console.print(table)
    if e.outcome:
        console.print(Text.assemble(("Then: ", "bold"), e.outcome), soft_wrap=True)


def _print_candidates(console: Console, preemption: PreemptionReport) -> None:
    """The candidate nodes of the last preemption attempt and the chosen one."""
    console.print()
    table = _table(
        "Preemption candidates",
        [("NODE", "name"), ("VICTIMS", "text"), ("PDB VIOLATIONS", "number"), ("", "word")],
    )
    for c in preemption.candidates:
        chosen = c.node == preemption.chosen
        table.add_row(
            _cut(c.node, style="bold green" if chosen else ""),
            ", ".join(c.victims) or "-",
            str(c.num_pdb_violations),
            f"chosen ({preemption.decided_by})" if chosen and preemption.decided_by else "",
        )
    console.print(table)
