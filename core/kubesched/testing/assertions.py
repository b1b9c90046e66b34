"""Assertions on statuses and scores that print a per-node table of what differs."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeBatch, PodInfo
from kubesched.testing.framework import batch_verdicts
from kubesched.testing.run import NodesLike, PodLike, as_pod_info, snapshot_of

__all__ = ["assert_batch_matches_per_node", "assert_scores", "assert_statuses"]


def _show_status(status: Status | None) -> str:
    if status is None or status.code is Code.SUCCESS:
        return "Success"
    text = status.code.display
    if status.reasons:
        text += ": " + "; ".join(status.reasons)
    if status.plugin:
        text += f" [{status.plugin}]"
    return text


def _tuple_reasons(expected: tuple) -> tuple[Code, list[str]]:
    # ``(code, "r1", "r2")`` or ``(code, ["r1", "r2"])`` (what ``(s.code, s.reasons)`` gives).
    code, *reasons = expected
    if len(reasons) == 1 and isinstance(reasons[0], list | tuple):
        reasons = list(reasons[0])
    return code, reasons


def _show_expected(expected: Any) -> str:
    if isinstance(expected, tuple):
        code, reasons = _tuple_reasons(expected)
        return _show_status(Status(code, *reasons))
    if isinstance(expected, Code):
        return expected.display + (": *" if expected is not Code.SUCCESS else "")
    if isinstance(expected, str):
        return f"(rejected): {expected}"
    return _show_status(expected)


def _status_matches(actual: Status | None, expected: Any) -> bool:
    code = Code.SUCCESS if actual is None else actual.code
    if expected is None:
        return code is Code.SUCCESS
    if isinstance(expected, Code):
        return code is expected
    if actual is None:
        return isinstance(expected, Status) and expected.code is Code.SUCCESS
    if isinstance(expected, str):
        return code is not Code.SUCCESS and actual.reasons == [expected]
    if isinstance(expected, tuple):
        exp_code, reasons = _tuple_reasons(expected)
        return code is exp_code and actual.reasons == reasons
    if isinstance(expected, Status):
        same = code is expected.code and actual.reasons == expected.reasons
        return same and (expected.plugin is None or expected.plugin == actual.plugin)
    raise TypeError(f"cannot compare a status with {expected!r}")


def _table(
    rows: list[tuple[str, str, str, bool]],
    title: str,
    header: tuple[str, str, str] = ("node", "expected", "actual"),
) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(3)]
    lines = [title, "  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    for node, exp, act, ok in rows:
        mark = "  " if ok else "✗ "
        cells = (v.ljust(w) for v, w in zip((node, exp, act), widths, strict=True))
        lines.append(mark + "  ".join(cells))
    return "\n".join(line.rstrip() for line in lines)


def assert_statuses(actual: Mapping[str, Status | None], expected: Mapping[str, Any]) -> None:
    """Assert each node's status (from ``run_filter``) is as expected.

    An expected value is ``None`` (success), a ``Code`` (that code, any reasons), a
    ``(Code, reason, ...)`` or ``(Code, [reasons])`` tuple, a reason string (any
    rejecting code, exactly that reason), or a ``Status`` (code and reasons, and its
    plugin when set). Both
    mappings must name the same nodes. On failure the message is a table of every
    node with the differing ones marked ``✗``.
    """
    names = list(dict.fromkeys([*expected, *actual]))
    rows = []
    for name in names:
        if name not in actual:
            rows.append((name, _show_expected(expected[name]), "(missing)", False))
        elif name not in expected:
            rows.append((name, "(missing)", _show_status(actual[name]), False))
        else:
            ok = _status_matches(actual[name], expected[name])
            rows.append((name, _show_expected(expected[name]), _show_status(actual[name]), ok))
    bad = sum(not r[3] for r in rows)
    if bad:
        raise AssertionError(_table(rows, f"statuses differ on {bad} of {len(rows)} node(s):"))


def assert_scores(
    actual: Mapping[str, int], expected: Mapping[str, int], *, tolerance: int = 0
) -> None:
    """Assert each node's score (from ``run_score``) equals the expected one, within
    ``tolerance``; on failure print a table of every node with the differences."""
    names = list(dict.fromkeys([*expected, *actual]))
    rows = []
    for name in names:
        exp, act = expected.get(name), actual.get(name)
        ok = exp is not None and act is not None and abs(int(act) - int(exp)) <= tolerance
        diff = "" if ok or exp is None or act is None else f" ({int(act) - int(exp):+d})"
        rows.append(
            (
                name,
                "(missing)" if exp is None else str(exp),
                ("(missing)" if act is None else str(act)) + diff,
                ok,
            )
        )
    bad = sum(not r[3] for r in rows)
    if bad:
        raise AssertionError(_table(rows, f"scores differ on {bad} of {len(rows)} node(s):"))


def _subsets(n: int, seed: int) -> Iterable[list[int]]:
    yield list(range(n))
    if n > 1:
        rng = random.Random(seed)
        rows = list(range(n))
        rng.shuffle(rows)
        yield rows[: max(1, n // 2)]


def assert_batch_matches_per_node(
    fw: Framework,
    plugin: str,
    pod: PodLike,
    nodes: NodesLike,
    *,
    pods: Iterable[PodLike] = (),
    seed: int = 0,
) -> tuple[str, ...]:
    """Assert plugin ``plugin`` of ``fw`` answers the same through its vectorised hooks
    (``filter_nodes``, ``score_nodes``) as through ``filter``/``score`` node by node.

    The profile's PreFilter runs first and PreScore before the scores, so that the
    plugin's cycle state is there, then both forms are compared on the nodes PreFilter
    let through and on a shuffled half of them (a batch need not be the whole table,
    nor in table order). As in the scheduler, a pair is not called when the plugin was
    skipped (PreFilter or PreScore returned ``SKIP``). Returns the vectorised hooks
    compared (empty when every pair was skipped); fails when PreFilter rejects the pod
    or the plugin implements neither vectorised hook.
    """
    runner = fw.runners[plugin]
    snap = snapshot_of(nodes, pods)
    fw.set_snapshot(snap)
    pi: PodInfo = as_pod_info(pod)
    infos = snap.list()
    state = fw.new_cycle_state()
    pre, status, _ = fw.run_pre_filter_plugins(state, pi, infos)
    assert status.is_success(), f"PreFilter rejected the pod: {status!r}"
    if pre is not None and not pre.all_nodes():
        infos = [ni for ni in infos if ni.name in pre.node_names]
    implemented = False
    compared: list[str] = []
    for batch_hook, one_hook in (("filter_nodes", "filter"), ("score_nodes", "score")):
        many = runner.call(batch_hook)
        if many is None:
            continue
        one = runner.call(one_hook)
        assert one is not None, f"{plugin} implements {batch_hook} without {one_hook}"
        implemented = True
        if one_hook == "score":
            status = fw.run_pre_score_plugins(state, pi, infos)
            assert status.is_success(), f"PreScore failed: {status!r}"
            if plugin in state.skip_score_plugins:
                continue
        elif plugin in state.skip_filter_plugins:
            continue
        compared.append(batch_hook)
        for rows in _subsets(len(infos), seed):
            sub = [infos[r] for r in rows]
            batch = NodeBatch(snap.table, [snap.table.index[ni.name] for ni in sub], sub)
            answer = many(state, pi.pod, pi, batch)
            got_many = batch_verdicts(answer, len(sub)) if one_hook == "filter" else list(answer)
            got_one = [one(state, pi.pod, pi, ni) for ni in sub]
            if one_hook == "score":
                got_many = [int(v) for v in got_many]
                got_one = [v if isinstance(v, Status) else int(v) for v in got_one]
            else:
                # An explicit success status and None mean the same.
                got_many = [None if s is not None and not s.code else s for s in got_many]
                got_one = [None if s is not None and not s.code else s for s in got_one]
            if got_many != got_one:
                show = _show_status if one_hook == "filter" else str
                table = [
                    (ni.name, show(b), show(a), b == a)
                    for ni, a, b in zip(sub, got_many, got_one, strict=True)
                ]
                title = f"{plugin}: {batch_hook} disagrees with {one_hook} (rows {rows}):"
                raise AssertionError(_table(table, title, ("node", one_hook, batch_hook)))
    assert implemented, f"{plugin} implements neither filter_nodes nor score_nodes"
    return tuple(compared)
