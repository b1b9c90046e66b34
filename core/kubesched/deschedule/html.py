"""The self-contained HTML page of a deschedule report (``kubesched deschedule --report``)."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from kubesched.deschedule.report import DescheduleReport

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0 2em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.no { color: #a00; } .yes { color: #070; }
"""


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _verdict(ok: bool) -> str:
    return '<span class="yes">yes</span>' if ok else '<span class="no">no</span>'


def render_html(report: DescheduleReport, title: str) -> str:
    """The page: a summary, the evictions with where each pod went, the strategies with
    their goals, and each node's utilisation before and after. Every value is escaped."""
    e = escape
    evicted = sum(1 for x in report.evictions if x.evicted)
    p = report.pods
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{e(title)}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>",
        f"<p>{evicted} pod(s) evicted, {len(report.evictions) - evicted} refused; pods bound "
        f"{p.bound_before} → {p.bound_after}, pending {p.pending_before} → {p.pending_after}.</p>",
        "<h2>Evictions</h2>",
        _table(
            ("pod", "node", "profile", "strategy", "reason", "evicted", "went to"),
            (
                (
                    e(x.pod),
                    e(x.node),
                    e(x.profile),
                    e(x.strategy),
                    e(x.reason),
                    _verdict(x.evicted),
                    e(x.replacement_node or x.outcome),
                )
                for x in report.evictions
            ),
        ),
        "<h2>Strategies</h2>",
        _table(
            (
                "profile",
                "strategy",
                "evicted",
                "refused",
                "wanted before",
                "wanted after",
                "goal met",
            ),
            (
                (
                    e(s.profile),
                    e(s.strategy),
                    str(s.evictions),
                    str(s.refused),
                    str(s.violations_before),
                    str(s.violations_after),
                    _verdict(s.goal_met),
                )
                for s in report.strategies
            ),
        ),
    ]
    parts += [
        f"<p>{e(s.strategy)}: {e(s.utilization.describe())}</p>"
        for s in report.strategies
        if s.utilization is not None
    ]
    parts += [
        "<h2>Node utilisation (requests), before → after</h2>",
        _table(
            ("node", "cpu %", "memory %", "pods %"),
            (
                (
                    e(n.node),
                    *(
                        f"{n.before.get(r, 0):g} → {n.after.get(r, 0):g}"
                        for r in ("cpu", "memory", "pods")
                    ),
                )
                for n in report.nodes
            ),
        ),
    ]
    if report.notices:
        parts.append("<h2>Notices</h2><ul>")
        parts += [f"<li>{e(n)}</li>" for n in report.notices]
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)
